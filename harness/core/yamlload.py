"""A YAML loader for what real repos and kustomize emit, not only what `yaml.safe_load` likes.

Two legal inputs break `safe_load`: a redefined anchor (YAML 1.2 allows it; PyYAML refuses)
and a plain `=` scalar (PyYAML resolves it to its `value` tag, which kustomize emits for
`matchType: =`). The fast libyaml loader is used when present; the pure-Python composer is
only needed for duplicate anchors.

A cold render parses every kustomize output and dumps every object Flux post-build rebuilt,
and PyYAML spends most of that in Python (its constructor's and representer's generic walk,
one method call per node, even over libyaml). Plain trees (mappings, sequences and the
safe scalar tags, no alias, merge key or other tag) take a direct walk here (`_construct`,
`_represent`) that makes the same objects and nodes with the same per-tag functions;
anything else goes PyYAML's way. tests/core/test_yamlload.py compares both on every
object of the example and on generated ones.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

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

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
# scalar tags whose safe constructor returns its value (no generator, no loader state)
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{t}" for t in ("null", "bool", "int", "float", "binary", "timestamp")
) | {"tag:yaml.org,2002:value"}


class _Unusual(Exception):
    """A node the direct walk leaves to PyYAML's constructor or representer."""


def _resolver(base: Any) -> Any:
    """`base.resolve` for a class without path resolvers (the safe ones): the same tag from
    the same implicit resolvers, each first character's list joined once, not per scalar."""
    implicit = base.yaml_implicit_resolvers
    wildcard = implicit.get(None, [])
    by_first = {first: tuple(rs + wildcard) for first, rs in implicit.items() if first is not None}
    none = tuple(wildcard)
    scalar, sequence, mapping = (
        base.DEFAULT_SCALAR_TAG,
        base.DEFAULT_SEQUENCE_TAG,
        base.DEFAULT_MAPPING_TAG,
    )

    plain: dict[str, str] = {}  # a pure function of the value: kept, bounded

    def resolve(self: Any, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is ScalarNode:
            if not implicit[0]:
                return scalar
            found = plain.get(value)
            if found is None:
                found = scalar
                for tag, regexp in by_first.get(value[:1], none):
                    if regexp.match(value):
                        found = tag
                        break
                if len(plain) >= _RESOLVED_LIMIT:
                    plain.clear()
                plain[value] = found
            return found
        if kind is SequenceNode:
            return sequence
        return mapping if kind is MappingNode else None

    return resolve


_RESOLVED_LIMIT = 1 << 16


def _construct(loader: Any, node: Node) -> Any:
    """What `construct_document` gives for an alias-free node: dicts, lists and scalars made
    by the loader's own per-tag constructors; `_Unusual` for anything else (merge keys,
    other tags, unhashable keys), which the caller constructs PyYAML's way."""
    tag = node.tag
    kind = type(node)
    if tag == _STR and kind is ScalarNode:
        return node.value
    if tag == _MAP and kind is MappingNode:
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if type(key_node) is not ScalarNode:
                raise _Unusual
            key = key_node.value if key_node.tag == _STR else _scalar(loader, key_node)
            if value_node.tag == _STR and type(value_node) is ScalarNode:
                out[key] = value_node.value  # the common case, without a call
            else:
                out[key] = _construct(loader, value_node)
        return out
    if tag == _SEQ and kind is SequenceNode:
        return [_construct(loader, item) for item in node.value]
    if type(node) is ScalarNode:
        return _scalar(loader, node)
    raise _Unusual


def _scalar(loader: Any, node: Node) -> Any:
    if node.tag not in _SCALAR_TAGS:  # `<<` (merge) included: flatten_mapping's
        raise _Unusual
    return loader.yaml_constructors[node.tag](loader, node)


def _document(loader: Any, node: Node) -> Any:
    """`loader.construct_document(node)` for a node graph that shares no node."""
    try:
        return _construct(loader, node)
    except (_Unusual, RecursionError):
        return loader.construct_document(node)


def _resolving(base: Any) -> Any:
    """Loader or dumper class `base` with `_resolver`'s resolve, when it has no path
    resolvers (with them, tags depend on a node's place, not only its value)."""
    if base.yaml_path_resolvers:  # pragma: no cover - the safe classes have none
        return base

    class Resolving(base):  # type: ignore[misc]
        resolve = _resolver(base)

        def descend_resolver(self, current_node: Any, current_index: Any) -> None:
            return None

        def ascend_resolver(self) -> None:
            return None

    return Resolving


if _CLoader is not None:

    class _FastLoader(_CLoader):  # type: ignore[misc]
        pass

    _FastLoader.add_constructor("tag:yaml.org,2002:value", _construct_value)
    _FAST: Any = _FastLoader
else:  # pragma: no cover - libyaml missing
    _FAST = _PyLoader
_RESOLVING: Any = _resolving(_FAST)


def _is_duplicate_anchor(exc: ComposerError) -> bool:
    return "found duplicate anchor" in str(exc)


# Aliases may add at most this many nodes to a stream over its own: a "billion laughs"
# (ten anchors of ten aliases each) is a few hundred bytes that expand to 10^9 nodes, and
# whoever walks the loaded objects (a dump, a digest, a masking pass) walks them all.
MAX_ALIAS_NODES = 1_000_000


class AliasBomb(yaml.YAMLError):
    """A document whose aliases expand past MAX_ALIAS_NODES: rejected, never expanded."""


# Where an alias (`*name`) may start: at the start or after a blank, a flow indicator, an
# indicator or a quote; the name is at least one of [0-9A-Za-z_-] (libyaml's and PyYAML's
# scanners alike). A text with no match has no alias: no node of it is shared.
_MAY_ALIAS = re.compile(r"(?:^|[\s\[\]{},:?'\"\-\ufeff])\*[0-9A-Za-z_\-]")


def load_all(text: str) -> list[Any]:
    """Every document of a YAML stream, accepting duplicate anchors and `=` scalars;
    `AliasBomb` (a YAMLError) when aliases would expand it past MAX_ALIAS_NODES."""
    # no anchor or no alias: nothing shared, nothing to expand
    checked = "&" in text and _MAY_ALIAS.search(text) is not None
    try:
        return _load_all(text, _FAST, checked)
    except ComposerError as exc:
        if not _is_duplicate_anchor(exc):
            raise
    return _load_all(text, _PyLoader, checked)


def _load_all(text: str, loader_class: Any, checked: bool) -> list[Any]:
    loader = (_RESOLVING if loader_class is _FAST else loader_class)(text)
    try:  # what yaml.load_all does, with each document's node graph measured first
        docs = []
        budget = MAX_ALIAS_NODES
        while loader.check_node():
            node = loader.get_node()
            if checked:
                grown = _expansion(node)
                budget -= grown
                if budget < 0:
                    raise AliasBomb(
                        f"YAML aliases expand this document past {MAX_ALIAS_NODES:,} nodes "
                        "or without end (a billion-laughs document?): rejected, not expanded"
                    )
                if grown:  # shared nodes: PyYAML's constructor shares their objects
                    docs.append(loader.construct_document(node))
                    continue
            docs.append(_document(loader, node))
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


def _str_style(data: str) -> str | None:
    return "|" if "\n" in data and not any(c in data for c in "\r\t") else None


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    return dumper.represent_scalar(_STR, data, style=_str_style(data))


_PyDumper.add_representer(str, _str_representer)
_CDumperBase: Any = getattr(yaml, "CSafeDumper", None)
# scalar types the safe representer never aliases (ignore_aliases), by their exact type
_PLAIN_SCALARS = (bool, int, float, type(None))


def _represent(dumper: Any, data: Any, seen: set[int]) -> Node:
    """The node `represent_data` makes for a tree of dicts, lists, strings and plain scalars
    none of whose dicts or lists appears twice (PyYAML would alias it); `_Unusual` else."""
    kind = type(data)
    if kind is str:
        style = _str_style(data)
        return ScalarNode(_STR, data, style=dumper.default_style if style is None else style)
    if kind is dict or kind is list:
        if id(data) in seen:
            raise _Unusual
        seen.add(id(data))
        best = True
        node: Node
        if kind is dict:
            pairs: list[tuple[Node, Node]] = []
            node = MappingNode(_MAP, pairs)
            for key, value in data.items():
                key_node = _represent(dumper, key, seen)
                value_node = _represent(dumper, value, seen)
                if best and not (_plain_node(key_node) and _plain_node(value_node)):
                    best = False
                pairs.append((key_node, value_node))
        else:
            items: list[Node] = []
            node = SequenceNode(_SEQ, items)
            for item in data:
                item_node = _represent(dumper, item, seen)
                if best and not _plain_node(item_node):
                    best = False
                items.append(item_node)
        flow = dumper.default_flow_style
        node.flow_style = best if flow is None else flow
        return node
    if kind in _PLAIN_SCALARS:
        dumper.alias_key = None
        return dumper.yaml_representers[kind](dumper, data)  # type: ignore[no-any-return]
    raise _Unusual


def _plain_node(node: Node) -> bool:
    return isinstance(node, ScalarNode) and not node.style


def _direct_dumper(base: Any) -> Any:
    """A subclass of dumper class `base` (with `_str_representer`) that represents plain,
    alias-free trees directly (`_represent`) and everything else PyYAML's way."""

    class Direct(_resolving(base)):  # type: ignore[misc]
        def represent(self, data: Any) -> None:
            if self.sort_keys:
                super().represent(data)
                return
            try:
                node = _represent(self, data, set())
            except (_Unusual, RecursionError):
                super().represent(data)
                return
            self.serialize(node)  # and reset as `represent` does
            self.represented_objects: dict[int, Node] = {}
            self.object_keeper: list[Any] = []
            self.alias_key = None

    Direct.add_representer(str, _str_representer)
    return Direct


if _CDumperBase is not None:

    class _CDumper(_CDumperBase):  # type: ignore[misc]
        """libyaml's emitter: the same bytes as `_PyDumper` (tested), about 4x faster."""

    _CDumper.add_representer(str, _str_representer)
    _DUMPER: Any = _direct_dumper(_CDumper)
else:  # pragma: no cover - libyaml missing
    _DUMPER = _direct_dumper(_PyDumper)


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
