"""Option values coerced without Pydantic: typer's coercion, minus ~130 ms of start-up.

typer (0.2x) turns every non-flag option value, defaults included, into its Python type
through a Pydantic TypeAdapter: the first one imports Pydantic (~120 ms) and each adapter
costs about a millisecond, on every `harness` run. The values harness takes are simple
(strings, non-negative numbers, paths, enum choices, lists of those), so `install` gives
each such parameter a coercion that returns exactly what typer's would for well-formed
input and hands anything else (a malformed number, an unknown choice, an out-of-range
value) to typer's own coercion, so errors and their wording stay typer's. A typer without
this machinery (older or newer internals) is left as it is.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args, get_origin

_SLOW: Any = object()  # "not a case the direct coercion decides": ask typer
_INT = re.compile(r"0|[1-9][0-9]*")
_FLOAT = re.compile(r"(0|[1-9][0-9]*)(\.[0-9]+)?")


def install(command: Any) -> int:
    """Give every typer parameter of `command` (and its subcommands) the direct coercion.

    Returns how many parameters got it (0 with a typer that has no runtime coercion).
    """
    try:
        from typer import _coercion, _param_types
    except ImportError:  # pragma: no cover - a typer without Pydantic coercion
        return 0
    if not hasattr(_coercion, "RuntimeParam") or not hasattr(_param_types, "coerce_cli_path"):
        return 0  # pragma: no cover
    direct_type = _direct_class(_coercion, _param_types)

    def give(param: Any) -> bool:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", False) is not None:
            return False
        leaf = _leaf(descriptor.annotation, descriptor.parameter_info, _param_types)
        if leaf is None:
            return False
        param._runtime_param = direct_type(
            parameter_info=descriptor.parameter_info,
            annotation=descriptor.annotation,
            leaf=leaf,
            descriptor=descriptor,
        )
        return True

    count = 0
    stack = [command]
    while stack:
        cmd = stack.pop()
        stack.extend(getattr(cmd, "commands", {}).values())
        count += sum(give(param) for param in getattr(cmd, "params", ()))
        if callable(getattr(cmd, "get_help_option", None)):
            cmd.get_help_option = _help_option_giving(cmd.get_help_option, give)
    return count


def _help_option_giving(original: Any, give: Callable[[Any], bool]) -> Any:
    """click makes the --help option on first use, per command: it gets the coercion then."""

    def get_help_option(ctx: Any) -> Any:
        option = original(ctx)
        if option is not None:
            give(option)
        return option

    return get_help_option


Leaf = Callable[[Any, Any, Any], Any]  # (value, param, ctx) -> coerced value or _SLOW


def _leaf(annotation: Any, info: Any, param_types: Any) -> Leaf | None:
    """The direct coercion of one annotation, or None when typer should keep it."""
    if getattr(info, "parser", None) is not None or getattr(info, "click_type", None):
        return None
    if get_origin(annotation) is list:
        args = get_args(annotation)
        item = _leaf(args[0], info, param_types) if len(args) == 1 else None
        if item is None:
            return None
        return _list_of(item)
    if not isinstance(annotation, type):
        return None
    if issubclass(annotation, enum.Enum):
        return _choice(annotation, info, param_types)
    if annotation is str:
        return lambda value, _p, _c: value if isinstance(value, str) else _SLOW
    if annotation is bool:  # a flag's value is a bool already; None never gets here
        return lambda value, _p, _c: value if isinstance(value, bool) else _SLOW
    if annotation in (int, float):
        return _number(annotation, info)
    if annotation is Path and info.path_type in (None, Path):
        return _path(info, param_types)
    return None


def _list_of(item: Leaf) -> Leaf:
    def coerce(value: Any, param: Any, ctx: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            return _SLOW
        out = []
        for v in value:  # in order, so an error is the one typer would raise first
            coerced = item(v, param, ctx)
            if coerced is _SLOW:
                return _SLOW
            out.append(coerced)
        return out

    return coerce


def _choice(annotation: type[enum.Enum], info: Any, param_types: Any) -> Leaf:
    choices = tuple(annotation)

    def coerce(value: Any, _param: Any, ctx: Any) -> Any:
        if isinstance(value, annotation):
            return value
        if not isinstance(value, str):
            return _SLOW
        try:
            return param_types.coerce_cli_choice(
                value, choices=choices, case_sensitive=info.case_sensitive, ctx=ctx
            )
        except ValueError:
            return _SLOW  # typer words the error

    return coerce


def _number(kind: type[Any], info: Any) -> Leaf | None:
    if info.clamp:
        return None
    pattern = _INT if kind is int else _FLOAT

    def coerce(value: Any, _param: Any, _ctx: Any) -> Any:
        if isinstance(value, str) and pattern.fullmatch(value):
            number = kind(value)
        elif type(value) is kind:
            number = value
        else:
            return _SLOW
        if (info.min is not None and number < info.min) or (
            info.max is not None and number > info.max
        ):
            return _SLOW  # typer words the range error
        return number

    return coerce


def _path(info: Any, param_types: Any) -> Leaf:
    def coerce(value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, str) and value:
            value = Path(value)
        if not isinstance(value, Path):
            return _SLOW
        # typer's own checks (exists, file_okay, dir_okay, ...) on the converted value
        return param_types.coerce_cli_path(value, info, path_type=Path, param=param, ctx=ctx)

    return coerce


def _direct_class(coercion: Any, param_types: Any) -> type[Any]:
    """A RuntimeParam subclass (typer's contract: `_coerce_value` of a non-None value)."""

    @dataclass(frozen=True)
    class Direct(coercion.RuntimeParam):  # type: ignore[misc]
        leaf: Leaf = field(default=lambda v, p, c: _SLOW)
        descriptor: Any = None
        _typer: list[Any] = field(default_factory=list, compare=False, repr=False)

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            coerced = self.leaf(value, param, ctx)
            if coerced is not _SLOW:
                return coerced
            if not self._typer:  # typer's Pydantic coercion, built once on demand
                self._typer.append(coercion.build_runtime_param(self.descriptor))
            return self._typer[0]._coerce_value(value, param=param, ctx=ctx)

    return Direct
