"""A YAML loader for what real repos and kustomize emit, not only what `yaml.safe_load` likes.

Two legal inputs break `safe_load`: a redefined anchor (YAML 1.2 allows it; PyYAML refuses)
and a plain `=` scalar (PyYAML resolves it to its `value` tag, which kustomize emits for
`matchType: =`). The fast libyaml loader is used when present; the pure-Python composer is
only needed for duplicate anchors.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.nodes import Node

_CLoader: Any = getattr(yaml, "CSafeLoader", None)


def _construct_value(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


class _PyLoader(yaml.SafeLoader):
    """Pure-Python safe loader that lets a later anchor shadow an earlier one."""

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        anchor = getattr(event, "anchor", None)
        if anchor is not None and anchor in self.anchors and not isinstance(event, yaml.AliasEvent):
            del self.anchors[anchor]
        return super().compose_node(parent, index)


_PyLoader.add_constructor("tag:yaml.org,2002:value", _construct_value)

if _CLoader is not None:

    class _FastLoader(_CLoader):  # type: ignore[misc]
        pass

    _FastLoader.add_constructor("tag:yaml.org,2002:value", _construct_value)
    _FAST: Any = _FastLoader
else:  # pragma: no cover - libyaml missing
    _FAST = _PyLoader


def _is_duplicate_anchor(exc: ComposerError) -> bool:
    return "found duplicate anchor" in str(exc)


# Aliases may add at most this many nodes to a stream over its own: a "billion laughs"
# (ten anchors of ten aliases each) is a few hundred bytes that expand to 10^9 nodes, and
# whoever walks the loaded objects (a dump, a digest, a masking pass) walks them all.
MAX_ALIAS_NODES = 1_000_000


class AliasBomb(yaml.YAMLError):
    """A document whose aliases expand past MAX_ALIAS_NODES: rejected, never expanded."""


def load_all(text: str) -> list[Any]:
    """Every document of a YAML stream, accepting duplicate anchors and `=` scalars;
    `AliasBomb` (a YAMLError) when aliases would expand it past MAX_ALIAS_NODES."""
    checked = "&" in text and "*" in text  # no anchor, no alias: nothing to expand
    try:
        return _load_all(text, _FAST, checked)
    except ComposerError as exc:
        if not _is_duplicate_anchor(exc):
            raise
    return _load_all(text, _PyLoader, checked)


def _load_all(text: str, loader_class: Any, checked: bool) -> list[Any]:
    if not checked:
        return list(yaml.load_all(text, Loader=loader_class))
    loader = loader_class(text)
    try:  # what yaml.load_all does, with each document's node graph measured first
        docs = []
        budget = MAX_ALIAS_NODES
        while loader.check_node():
            node = loader.get_node()
            budget -= _expansion(node)
            if budget < 0:
                raise AliasBomb(
                    f"YAML aliases expand this document past {MAX_ALIAS_NODES:,} nodes or "
                    "without end (a billion-laughs document?): rejected, not expanded"
                )
            docs.append(loader.construct_document(node))
        return docs
    finally:
        loader.dispose()


def _expansion(root: Node) -> int:
    """How many nodes aliases add to a document (its tree size less its distinct nodes),
    counted without expanding it: each node's expanded size is computed once. A node that
    contains itself expands without end."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    active: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in _children(node))
            continue
        if key in sizes:
            continue
        if key in active:
            return MAX_ALIAS_NODES + 1  # a recursive alias
        active.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in sizes)
    return sizes[id(root)] - len(sizes)


def _children(node: Node) -> list[Node]:
    value = node.value
    if isinstance(node, yaml.MappingNode):
        return [part for pair in value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(value)
    return []


def load(text: str) -> Any:
    """One YAML document (the first, if several)."""
    docs = load_all(text)
    return docs[0] if docs else None


class _PyDumper(yaml.SafeDumper):
    """Block style like kustomize: 2-space indent, sequences flush with their key."""


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data and not any(c in data for c in "\r\t") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_PyDumper.add_representer(str, _str_representer)
_CDumperBase: Any = getattr(yaml, "CSafeDumper", None)

if _CDumperBase is not None:

    class _CDumper(_CDumperBase):  # type: ignore[misc]
        """libyaml's emitter: the same bytes as `_PyDumper` (tested), about 4x faster."""

    _CDumper.add_representer(str, _str_representer)
    _DUMPER: Any = _CDumper
else:  # pragma: no cover - libyaml missing
    _DUMPER = _PyDumper


def dump(obj: Any, *, dumper: Any = None) -> str:
    """Serialise one object the way kustomize prints it, as far as PyYAML allows."""
    return yaml.dump(
        obj,
        Dumper=dumper or _DUMPER,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 20,
    )


YAMLError = yaml.YAMLError


def strings(value: Any) -> list[str]:
    """The strings of a YAML list (a kustomization's `resources:`), [] for anything else."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def mappings(value: Any) -> list[dict[str, Any]]:
    """The mappings of a YAML list (`patches:`, `replacements:`), [] for anything else."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
