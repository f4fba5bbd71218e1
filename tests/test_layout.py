"""The layout holds: packages are the layers, every import between them points down.

docs/architecture.md and each package's docstring (its `Imports:` line) describe the layers;
`LAYERS` here is their definition. Every import counts: module level, inside a function (lazy)
and under TYPE_CHECKING, since each is a dependency a reader has to follow.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "harness"

# One line per package, lowest first: a package imports only packages above its own line.
LAYERS: tuple[str, ...] = (
    "core",  # model, config, errors, YAML, documents, redaction, processes, memos
    "cache",  # the render cache store, its file format, whole-run replay
    "render",  # kustomize: discovery, the runner, its errors, closures, the render seam
    "flux",  # Flux's controllers: source/, kustomize/, helm/; clusters, the fixed point
    "pipeline",  # a side: one render of a tree, shards, goldens, git refs
    "compare",  # two sides -> changes, moves, inputs, coverage, the verdict
    "hazards",  # engine + rules/
    "graph",  # pictures of the Kustomization graph
    "report",  # formats/ and their layouts
    "api",  # the Python API (render, diff, lint as plain data) and the pytest plugin
    "cli",  # the typer app, commands/
)
# the top-level modules: the package itself (`__version__`), the version file setuptools-scm
# writes at build and install time (pyproject.toml; absent from a bare checkout) and
# `python -m harness`
TOP = {"harness": -1, "harness._version": -1, "harness.__main__": len(LAYERS)}


@functools.cache
def modules() -> dict[str, Path]:
    """Every harness module by name (read when a test asks, never at collection)."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(name: str, path: Path) -> Iterator[str]:
    """Every harness module `name` imports (module level, lazy, TYPE_CHECKING)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = name.split(".")[: len(name.split(".")) - node.level + int(is_package)]
                module = ".".join([*base, module] if module else base)
            # `from pkg import mod` depends on mod (pkg/__init__ is a docstring), else on pkg
            subs = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in modules()]
            targets = subs if len(subs) == len(node.names) else [module, *subs]
        else:
            continue
        for target in targets:
            if target in modules() and target != name:
                yield target


@functools.cache
def graph() -> dict[str, set[str]]:
    """Every module's harness imports: parsing all of harness is for the tests that read it."""
    return {name: set(_imports(name, path)) for name, path in modules().items()}


def layer(name: str) -> int:
    if name in TOP:
        return TOP[name]
    parts = name.split(".")
    # a package's own __init__ is in its layer (harness/api's re-exports its names lazily)
    assert len(parts) >= 2 and parts[1] in LAYERS, f"{name} is in no package of LAYERS"
    return LAYERS.index(parts[1])


def test_every_module_is_in_a_layer_and_imports_only_its_own_or_lower() -> None:
    upward = sorted(
        f"{m} ({LAYERS[layer(m)] if layer(m) < len(LAYERS) else m}) imports {t}"
        for m, targets in graph().items()
        for t in targets
        if t != "harness" and layer(t) > layer(m)
    )
    assert upward == []


def test_no_module_sits_loose_at_the_top_level() -> None:
    assert sorted(m for m in modules() if m.count(".") < 2 and m not in TOP) == [
        f"harness.{p}" for p in sorted(LAYERS)
    ]


def test_each_package_says_what_it_may_import() -> None:
    """A package's docstring ends with `Imports:` naming exactly the layers below it."""
    for index, package in enumerate(LAYERS):
        doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text())) or ""
        found = re.search(r"^Imports: (.*)$", doc, re.MULTILINE)
        assert found, f"harness/{package}/__init__.py: no 'Imports:' line"
        said = found.group(1).rstrip(".")
        if index == 0:
            assert said.startswith("nothing of harness"), package
        elif index == len(LAYERS) - 1:
            assert said.startswith("every other package"), package
        else:
            assert said.split(", ") == list(LAYERS[:index]), package


def test_no_import_cycles() -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph()[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(graph()):
        if name not in index:
            visit(name)
    assert cycles == []


def test_the_scan_sees_lazy_and_type_checking_imports() -> None:
    """The two tests above would pass vacuously on a scan that missed imports."""
    assert "harness.cli.app" in graph()["harness.cli.entry"]  # imported inside main()
    assert "harness.hazards.sources" in graph()["harness.hazards.context"]  # lazy
    assert "harness.hazards.sources" in graph()["harness.hazards.preinstalled"]  # TYPE_CHECKING
    assert layer("harness.cli.commands.diff") > layer("harness.report.formats.text")
    assert layer("harness.core.config") < layer("harness.render.discover")


def test_tests_mirror_the_layout() -> None:
    """Every test module sits where the package it tests does (tests/<package path>/)."""
    tests = PACKAGE.parent / "tests"
    packages = {p.parent.relative_to(PACKAGE) for p in PACKAGE.rglob("__init__.py")}
    for directory in sorted({p.parent for p in tests.rglob("test_*.py")}):
        rel = directory.relative_to(tests)
        assert rel == Path(".") or rel in packages, f"tests/{rel} mirrors no harness package"


def _private_uses(tree: ast.AST) -> Iterator[str]:
    """Imports of another package's private module or name, writes of a private attribute
    on an object harness does not own, and edits of `sys.modules`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            names = [a.name for a in node.names]
            paths = [module] if module else names
            for path in paths:
                if path is None or path.split(".")[0] in ("harness", "__future__"):
                    continue
                parts = path.split(".")
                if any(p.startswith("_") and not p.startswith("__") for p in parts):
                    yield f"imports {path}"
                if isinstance(node, ast.ImportFrom):
                    hidden = [n for n in names if n.startswith("_") and not n.startswith("__")]
                    yield from (f"imports {path}.{n}" for n in hidden)
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and target.attr.startswith("_")
                and not target.attr.startswith("__")
                and not (isinstance(target.value, ast.Name) and target.value.id in ("self", "cls"))
            ):
                yield f"writes .{target.attr}"
            if (
                isinstance(target, ast.Subscript)
                and isinstance(target.value, ast.Attribute)
                and target.value.attr == "modules"
            ):
                yield "writes sys.modules"
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and str(node.args[1].value).startswith("_")
        ):
            yield f"setattr {node.args[1].value}"


def test_no_private_internals_of_other_libraries() -> None:
    """harness relies only on other packages' public API (issue 24: typer's `_coercion`,
    a private attribute on click parameters, and a `sys.modules` edit around an import)."""
    found = sorted(
        f"{name}: {use}"
        for name, path in modules().items()
        for use in _private_uses(ast.parse(path.read_text(encoding="utf-8")))
    )
    assert found == []


def test_the_private_scan_sees_what_it_forbids() -> None:
    """The test above would pass vacuously on a scan that saw nothing."""
    sample = (
        "from typer import _coercion\nimport typer._click\nfrom a.b import _x\n"
        "param._runtime_param = 1\nsys.modules['pydantic'] = None\nsetattr(p, '_y', 2)\n"
        "self._ok = 1\nfrom harness.core import _fine\n"
    )
    assert sorted(_private_uses(ast.parse(sample))) == [
        "imports a.b._x",
        "imports typer._click",
        "imports typer._coercion",
        "setattr _y",
        "writes ._runtime_param",
        "writes sys.modules",
    ]


# Modules without a test module of their own name, and the test module that covers each
# (through the verb, the stage or the sibling that uses it). A module that gets its own
# tests/<package>/test_<module>.py leaves this table; the test below says so.
COVERED_BY: dict[str, str] = {
    "harness.cache.fileformat": "tests/cache/test_store.py",
    "harness.cli.commands.cache": "tests/cli/test_faults.py",
    "harness.cli.context": "tests/cli/commands/test_check.py",
    "harness.cli.shared": "tests/cli/test_flags.py",
    "harness.core.errors": "tests/cli/test_app.py",
    "harness.flux.helm.cached": "tests/flux/helm/test_rendercache.py",
    "harness.flux.helm.dependencies": "tests/flux/helm/test_targets.py",
    "harness.flux.helm.postrender": "tests/flux/helm/test_targets.py",
    "harness.flux.helm.sdk": "tests/flux/helm/test_engine.py",
    "harness.flux.helm.stage": "tests/flux/helm/test_targets.py",
    "harness.flux.helm.worker": "tests/flux/helm/test_engine.py",
    "harness.flux.includes": "tests/flux/kustomize/test_build.py",
    "harness.flux.source.chartcache": "tests/flux/helm/test_fetch.py",
    "harness.flux.source.charts": "tests/flux/helm/test_fetch.py",
    "harness.flux.source.fetch": "tests/flux/helm/test_fetch.py",
    "harness.graph.dot": "tests/graph/test_formats.py",
    "harness.graph.json_doc": "tests/graph/test_formats.py",
    "harness.graph.mermaid": "tests/graph/test_formats.py",
    "harness.graph.style": "tests/graph/test_view.py",
    "harness.graph.svg": "tests/graph/test_formats.py",
    "harness.hazards.context": "tests/hazards/rules/test_crd_order.py",
    "harness.hazards.finding": "tests/hazards/test_engine.py",
    "harness.hazards.k8s": "tests/hazards/rules/test_crd_order.py",
    "harness.hazards.rules.helm_crd_upgrade": "tests/flux/helm/test_scenarios.py",
    "harness.hazards.rules.helm_delete": "tests/flux/helm/test_scenarios.py",
    "harness.hazards.scope": "tests/hazards/test_preinstalled.py",
    "harness.report.diff_json": "tests/report/test_diff_text.py",
    "harness.report.formats.github": "tests/report/test_github.py",
    "harness.report.formats.html": "tests/report/test_html.py",
    "harness.report.formats.json": "tests/cli/commands/test_check.py",
    "harness.report.formats.junit": "tests/report/test_junit.py",
    "harness.report.formats.text": "tests/cli/commands/test_check.py",
    "harness.report.json_out": "tests/cli/commands/test_check.py",
    "harness.report.lint_text": "tests/cli/commands/test_lint.py",
    "harness.report.text": "tests/cli/commands/test_check.py",
}


def _own_test(name: str) -> Path:
    """tests/<package path>/test_<module>.py for harness.<package path>.<module>."""
    *package, module = name.split(".")[1:]
    return PACKAGE.parent.joinpath("tests", *package, f"test_{module}.py")


def test_every_module_has_its_own_test_module_or_says_which_covers_it() -> None:
    root = PACKAGE.parent
    untested = sorted(
        name
        for name, path in modules().items()
        if name not in TOP and path.name != "__init__.py" and not _own_test(name).is_file()
    )
    assert untested == sorted(COVERED_BY)  # a new module: a test module, or a line above
    missing = {m: f for m, f in COVERED_BY.items() if not (root / f).is_file()}
    assert missing == {}
    assert _own_test("harness.report.formats.json") == root / "tests/report/formats/test_json.py"


# what the CLI once did to its framework (issue 34): rewrote a function's signature and
# annotations, rebound click's help-option hook, copied a typer app's command list
REWRITTEN = frozenset({"__signature__", "get_help_option", "registered_commands"})


def _framework_rewrites(tree: ast.AST) -> Iterator[str]:
    """Touches of a signature, an annotations assignment, click's help-option hook or typer's
    command list, and a value name (`metavar`) set on an object harness does not own. A
    subclass overriding a documented method (a `def`) is not one of them."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in REWRITTEN:
            yield f"touches .{node.attr}"
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if not isinstance(target, ast.Attribute):
                continue
            own = isinstance(target.value, ast.Name) and target.value.id in ("self", "cls")
            if target.attr == "__annotations__" or (target.attr == "metavar" and not own):
                yield f"writes .{target.attr}"
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in {*REWRITTEN, "__annotations__", "metavar"}
        ):
            yield f"setattr {node.args[1].value}"


def test_the_cli_uses_its_frameworks_as_documented() -> None:
    """Options are declared in signatures and help is shaped through documented hooks
    (typer's `cls=`, `metavar=`): nothing rewrites a signature or a click object after the
    fact, and no typer app's command list is read or replaced."""
    found = sorted(
        f"{name}: {use}"
        for name, path in modules().items()
        for use in _framework_rewrites(ast.parse(path.read_text(encoding="utf-8")))
    )
    assert found == []


def test_the_framework_scan_sees_what_it_forbids() -> None:
    sample = (
        "command.__signature__ = sig\ncommand.__annotations__ = {}\n"
        "cmd.get_help_option = wrap(cmd.get_help_option)\napp.registered_commands = []\n"
        "param.metavar = 'DIR'\nsetattr(param, 'metavar', '')\nself.metavar = 'N'\n"
        "class Command:\n    def get_help_option(self, ctx): ...\n"
    )
    assert sorted(_framework_rewrites(ast.parse(sample))) == [
        "setattr metavar",
        "touches .__signature__",
        "touches .get_help_option",
        "touches .get_help_option",
        "touches .registered_commands",
        "writes .__annotations__",
        "writes .metavar",
    ]
