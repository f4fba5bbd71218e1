"""A verb's plain command line read into its function's arguments without typer's coercion.

typer 0.29 coerces every option value through a Pydantic TypeAdapter it builds while it
parses (`typer/_coercion.py` `build_runtime_param`): every option that is not a bool flag
already holding a bool, `parser=` included, so no declaration avoids it, and importing
pydantic and building a verb's ~25 adapters is ~0.07-0.1 s of a fresh `diff`. A command
line whose every word is a long or short option the verb declares, each value one typer
would take unchanged (a str, a plain number within `min=`, a path its checks accept, an enum
member's exact value), is read here into the very keyword arguments typer would pass, and the
verb's function is called with them. Anything else (-h/--help, a cluster such as `-qv`, `--`,
an argument, an unknown option, a value typer would reject or coerce) is left to typer, so
--help, every usage error and its message stay typer's own.

Only a verb whose every parameter is an option this module understands is read (its
declarations are checked against a bare `typer.Option()`: a callback, an envvar or a prompt
makes typer the reader). tests/cli/test_direct.py checks on generated command lines that the
arguments read here are those typer's own context holds.
"""

from __future__ import annotations

import enum
import inspect
import os
import re
import stat
import sys
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from typer.models import OptionInfo

# what a declaration may set and still be read here; any other setting leaves it to typer
_READ = frozenset({"param_decls", "help", "metavar", "min", "file_okay", "dir_okay", "default"})
_BARE = vars(typer.Option())
_INT = re.compile(r"(?:0|[1-9][0-9]{0,17})")
_FLOAT = re.compile(r"(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,17})?")
# typer's shell-completion switch (`_<PROG>_COMPLETE`): set, typer answers instead
COMPLETE_VAR = "_HARNESS_COMPLETE"


class Declined(Exception):
    """The command line is not one this module reads: typer reads it."""


@dataclass(frozen=True)
class Option:
    """One option of a verb's function, as typer would build it."""

    param: str  # the function's parameter (typer's `ctx.params` key)
    kind: type  # bool, str, int, float, Path or an Enum
    value: bool | None  # a flag: the value its name sets; None: takes a value
    minimum: float | None = None
    file_okay: bool = True
    dir_okay: bool = True

    def read(self, word: str) -> Any:
        """`word` as typer would pass it, or Declined where typer would refuse or coerce."""
        if self.kind is str:
            return word
        if self.kind is int or self.kind is float:
            pattern = _INT if self.kind is int else _FLOAT
            if pattern.fullmatch(word) is None:
                raise Declined(word)
            number = self.kind(word)
            if self.minimum is not None and number < self.minimum:
                raise Declined(word)
            return number
        if self.kind is Path:
            return self._path(word)
        if issubclass(self.kind, enum.Enum):
            for member in self.kind:
                if str(member.value) == word:
                    return member
        raise Declined(word)

    def _path(self, word: str) -> Path:
        """typer's checks of a path that need not exist (`exists=False`, readable)."""
        if not word or "\0" in word:
            raise Declined(word)
        try:
            mode = os.stat(word).st_mode
        except OSError:
            return Path(word)  # typer, too, takes a path it cannot stat
        if not self.file_okay and stat.S_ISREG(mode):
            raise Declined(word)
        if not self.dir_okay and stat.S_ISDIR(mode):
            raise Declined(word)
        if not os.access(word, os.R_OK):
            raise Declined(word)
        return Path(word)


@dataclass(frozen=True)
class Spec:
    """What a verb's command line may hold: option string -> option; every parameter's
    default (what typer passes for an option not given)."""

    options: dict[str, Option]
    defaults: dict[str, Any]


def _kind(hint: Any) -> type | None:
    """The type typer coerces to (`X | None` is X), if one read here."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        if len(args) != 1:
            return None
        hint = args[0]
    if hint in (bool, str, int, float, Path):
        return typing.cast(type, hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint
    return None


def spec(fn: Callable[..., Any]) -> Spec | None:
    """The options of a verb's typer function, or None when any is not one read here."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # an annotation typer alone can resolve: it reads the line
        return None
    options: dict[str, Option] = {}
    defaults: dict[str, Any] = {}
    for name, parameter in inspect.signature(fn).parameters.items():
        hint = hints.get(name)
        if typing.get_origin(hint) is not typing.Annotated:
            return None
        base, *meta = typing.get_args(hint)
        infos = [m for m in meta if isinstance(m, OptionInfo)]
        kind = _kind(base)
        if len(infos) != 1 or kind is None or parameter.default is inspect.Parameter.empty:
            return None
        info = infos[0]
        if any(v != _BARE.get(k, _READ) for k, v in vars(info).items() if k not in _READ):
            return None
        # in `Annotated`, typer takes Option's first positional (its `default`) as a name
        first = () if info.default is ... else (info.default,)
        decls = (*first, *(info.param_decls or ()))
        if not decls or not all(isinstance(d, str) and d.startswith("-") for d in decls):
            return None
        defaults[name] = parameter.default
        for decl in decls:
            on, slash, off = decl.partition("/")
            if slash and kind is not bool:
                return None
            pairs = [(on, True), (off, False)] if slash else [(on, True)]
            for word, flag in pairs:
                word = word.strip()
                long_name = word.startswith("--") and len(word) > 2
                short_name = len(word) == 2 and word[0] == "-" and word[1] != "-"
                if word in options or not (long_name or short_name):
                    return None  # click reads `-foo` as a long option: typer's to read
                options[word] = Option(
                    name,
                    kind,
                    flag if kind is bool else None,
                    minimum=info.min,
                    file_okay=info.file_okay,
                    dir_okay=info.dir_okay,
                )
    return Spec(options, defaults)


def arguments(found: Spec, words: Sequence[str]) -> dict[str, Any] | None:
    """The keyword arguments typer would call the verb with, or None to leave it to typer.

    Read as click's parser reads: `--name value`, `--name=value`, `-n value`, `-nVALUE` and
    clusters of short flags (`-qv`, `-qj2`); the last of an option given twice wins."""
    given: dict[str, Any] = {}
    pending = list(reversed(words))
    try:
        while pending:
            word = pending.pop()
            if word.startswith("--") and len(word) > 2:
                name, eq, value = word.partition("=")
                option = found.options.get(name)
                if option is None:
                    return None
                if option.value is not None:  # a flag: `--quiet=1` is typer's error
                    if eq:
                        return None
                    given[option.param] = option.value
                    continue
                if not eq:
                    if not pending:
                        return None
                    value = pending.pop()
                given[option.param] = _value(option, value)
            elif word.startswith("-") and len(word) > 1 and not word.startswith("--"):
                for k in range(1, len(word)):
                    option = found.options.get("-" + word[k])
                    if option is None:
                        return None
                    if option.value is not None:
                        given[option.param] = option.value
                        continue
                    value = word[k + 1 :]
                    if not value:
                        if not pending:
                            return None
                        value = pending.pop()
                    given[option.param] = _value(option, value)
                    break
            else:
                return None  # an argument, `--`, `-`
    except Declined:
        return None
    return {**found.defaults, **given}


def _value(option: Option, word: str) -> Any:
    if word.startswith("-"):
        raise Declined(word)  # typer would take `--base -x`; said by typer, not guessed here
    return option.read(word)


def call(fn: Callable[..., Any], words: Sequence[str]) -> None:
    """Run the verb `fn` with `words` read here and exit as typer would; returns only when
    typer must read them."""
    if COMPLETE_VAR in os.environ:
        return
    found = spec(fn)
    kwargs = arguments(found, words) if found is not None else None
    if kwargs is None:
        return
    try:
        fn(**kwargs)
    except typer.Exit as exc:  # every verb ends so (errors.run); what typer's main does
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:  # before the verb's runner took over, as typer's main
        sys.exit(130)
    sys.exit(0)
