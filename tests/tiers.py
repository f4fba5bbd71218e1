"""Which tier a test is in: `unit` (in-process, small inputs) or `integration` (the rest).

`tests/conftest.py` marks every collected test with one of the two, so `pytest -m unit` is
the quick loop and `.ci/run` runs both. A test is `integration` when it carries the mark
itself (or `slow`, which implies it), or when its own code or one of its fixtures reaches,
through the helpers under `tests/`:

- a process of its own: `subprocess` (the CLI as a user runs it, `git` through
  `tests/gitkit.py`, a fake kubectl, a registry), `multiprocessing`;
- a browser (`playwright`) or a server (`http.server`, `socketserver`);
- a real repo: `examples/homelab` or the project's goldens (`EXAMPLE`, `GOLDENS` of
  `tests/conftest.py`), or the generated 250-Kustomization repo (`tests/bigrepo.py`).

It is derived from what the code names rather than listed, so a test written elsewhere at
the same time lands in the right tier without anyone remembering to mark it; what harness
itself starts (kubectl for a render) does not count, since that is what unit tests test.
The derivation reads only public attributes (`__code__`, `__globals__`, `__wrapped__`).
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

# a name rooted in one of these means a process, a browser or a server of the test's own
OWN_PROCESSES = frozenset({"subprocess", "multiprocessing", "playwright", "http", "socketserver"})
# modules of tests/ whose every function builds or starts something big
BIG = frozenset({"tests.bigrepo"})
EXPLICIT = frozenset({"integration", "slow"})


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """A code object and those nested in it (comprehensions, inner functions, lambdas)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


class Reach:
    """Memoised: does a function reach, through `tests/` helpers, something integration?"""

    def __init__(self, real_repos: Iterable[object]) -> None:
        self._real = [id(obj) for obj in real_repos]
        self._seen: dict[int, str | None] = {}
        self._params: dict[int, tuple[str, ...]] = {}

    def why(self, fn: Callable[..., Any]) -> str | None:
        """What makes `fn` integration (a short reason), or None."""
        fn = inspect.unwrap(getattr(fn, "__func__", fn))
        inner = getattr(getattr(fn, "hypothesis", None), "inner_test", None)
        if inner is not None:  # a @given test: its body is the inner test
            fn = inspect.unwrap(inner)
        key = id(fn)
        if key in self._seen:
            return self._seen[key]
        self._seen[key] = None  # a cycle of helpers reaches nothing new
        code = getattr(fn, "__code__", None)
        found = None if code is None else self._scan(code, getattr(fn, "__globals__", {}))
        self._seen[key] = found
        return found

    def requests(self, fixture: Callable[..., Any]) -> tuple[str, ...]:
        """The fixtures a fixture function asks for (its parameters)."""
        key = id(fixture)
        if key not in self._params:
            try:
                params = tuple(inspect.signature(inspect.unwrap(fixture)).parameters)
            except (TypeError, ValueError):
                params = ()
            self._params[key] = params
        return self._params[key]

    def _scan(self, code: types.CodeType, globals_: Mapping[str, Any]) -> str | None:
        for sub in _codes(code):
            names = sub.co_names
            # `gitkit.init(...)`: the attribute names of a helper module of tests/ used here
            helpers = [
                vars(obj)
                for name in names
                if isinstance(obj := globals_.get(name), types.ModuleType)
                and obj.__name__.startswith("tests.")
            ]
            for name in names:
                if name.split(".")[0] in OWN_PROCESSES:  # `subprocess.run`, a local import
                    return name
                for space in (globals_, *helpers):
                    if name in space and (found := self._global(name, space[name])) is not None:
                        return found
        return None

    def _global(self, name: str, obj: object) -> str | None:
        if id(obj) in self._real:
            return name
        module = obj.__name__ if isinstance(obj, types.ModuleType) else None
        module = module or getattr(obj, "__module__", None) or ""
        if module.split(".")[0] in OWN_PROCESSES:  # `from subprocess import run`
            return f"{module}.{name}"
        if module in BIG:
            return module
        if not module.startswith("tests."):
            return None
        if isinstance(obj, type):  # a helper class: what its methods do
            for member in vars(obj).values():
                if inspect.isfunction(member) and (found := self.why(member)) is not None:
                    return found
            return None
        if inspect.isfunction(obj):
            found = self.why(obj)
            return None if found is None else f"{name} -> {found}"
        return None


def fixture_function(name: str, places: Iterable[types.ModuleType]) -> list[Any]:
    """The definition a fixture name resolves to: the first of `places` (the test's module,
    then its conftest modules nearest first, as pytest looks) that defines it; none for
    pytest's own fixtures."""
    for module in places:
        obj = vars(module).get(name)
        if obj is not None and callable(obj):
            return [obj]
    return []


def conftests_for(path: Path, plugins: Iterable[object]) -> list[types.ModuleType]:
    """The conftest modules that apply to a test at `path`, nearest first."""
    found = [
        m
        for m in plugins
        if isinstance(m, types.ModuleType)
        and Path(m.__file__ or "").name == "conftest.py"
        and path.is_relative_to(Path(m.__file__ or "").parent)
    ]
    return sorted(found, key=lambda m: -len(Path(m.__file__ or "").parts))


def tier(
    marks: Iterable[str],
    test: Callable[..., Any] | None,
    fixtures: Iterable[str],
    resolve: Callable[[str], list[Any]],
    reach: Reach,
) -> tuple[str, str | None]:
    """(`unit` or `integration`, the reason for `integration`)."""
    marks = set(marks)
    if marks & EXPLICIT:
        return "integration", f"marked {sorted(marks & EXPLICIT)[0]}"
    if test is not None and (found := reach.why(test)) is not None:
        return "integration", found
    pending, seen = list(fixtures), set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for fixture in resolve(name):
            if (found := reach.why(fixture)) is not None:
                return "integration", f"fixture {name}: {found}"
            pending.extend(p for p in reach.requests(fixture) if p not in seen)
    return "unit", None
