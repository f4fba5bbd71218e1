"""Parsed objects of rendered document texts, known before anything parses them again.

The hazard rules read every rendered document as an object (`hazards.model.parse`, YAML by
text); on a warm run whose renders all come from the cache, that parse was most of the lint
passes. So the object travels with its text: parsing a rendered stream or the goldens
remembers `text -> object` here, a cache entry stores each document's object beside its text
as JSON (when JSON gives back an equal object, keys in their order), and a cache hit hands
that JSON back, decoded only if something asks. An object is always what
`yamlload.load(text)` gives for exactly that text, so a reader gets the same object either
way; it is shared, so nobody may mutate it.

Per run (memos, core/memo.py: the data lives in the current run), bounded; the render
threads only do single dict operations.
"""

from __future__ import annotations

import json
import re
from typing import Any

from harness.core import yamlload
from harness.core.memo import Memo

LIMIT = 32768
_OBJECTS: Memo[str, Any] = Memo("parsed objects", LIMIT)
_JSON: Memo[str, str] = Memo("parsed JSON", LIMIT)  # from cache entries, decoded on first use
_ABSENT: Any = object()


def remember(text: str, obj: Any) -> None:
    """`obj` is `yamlload.load(text)` (the caller's promise) and nobody will mutate it."""
    _OBJECTS.put(text, obj)


def remember_json(text: str, encoded: str) -> None:
    """`encoded` is a `stored(text)` from a cache entry (checksummed, so as written)."""
    _JSON.put(text, encoded)


def load(text: str) -> Any:
    """`yamlload.load(text)`, from memory when the text's object is known; YAMLError as
    `yamlload.load` raises it. Shared: one parse of a kustomization file however many walks
    read it (discovery, the closure of every build, both sides of a diff)."""
    found = _OBJECTS.lookup(text, _ABSENT)
    if found is _ABSENT:
        encoded = _JSON.get(text)
        found = json.loads(encoded) if encoded is not None else yamlload.load(text)
        remember(text, found)
    return found


# Text the dumper emits that the loader reads back as the same object: printable ASCII and
# newlines (characters outside it are escaped in double quotes, or the text is not plain).
# Raw non-ASCII (in a block scalar, YAML folds some line breaks) or a control character
# leaves the text to `stored`'s parse: the round trip is only taken on trust where it is
# plain.
_NOT_ROUND_TRIP = re.compile(r"[^\n\x20-\x7e]")


def remember_dumped(text: str, obj: Any) -> None:
    """`text` is `yamlload.dump(obj)` of an object harness rebuilt (Flux post-build): its
    JSON is what `stored(text)` would give, without parsing the text back. A cold render
    dumps every Flux document and its cache entry then wanted the text parsed again (a
    fifth of the cold Flux CPU). JSON is taken now, while `obj` is as dumped (its owner
    may change it later); kept only when the text is plain (`_NOT_ROUND_TRIP`: the
    dumper's quoting then makes the load give `obj` back, tests/core/test_parsed.py)
    and JSON gives back an equal object, as `stored` requires."""
    if _NOT_ROUND_TRIP.search(text) is not None or _JSON.get(text) is not None:
        return
    try:
        encoded = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        if json.loads(encoded) != obj:
            return
    except (TypeError, ValueError):
        return
    _JSON.put(text, encoded)


def fresh(text: str) -> Any:
    """`yamlload.load(text)` as a new object the caller may change: decoded from the cache
    entry's JSON when there is one (several times faster than YAML), else parsed."""
    encoded = _JSON.get(text)
    return json.loads(encoded) if encoded is not None else yamlload.load(text)


def stored(text: str) -> str | None:
    """What a cache entry keeps beside `text`: its object as JSON, or None when JSON would
    not give back an equal object (timestamps, NaN, non-string keys) or the text does not
    parse."""
    encoded = _JSON.get(text)
    if encoded is not None:
        return encoded
    try:
        obj = load(text)
    except yamlload.YAMLError:
        return None
    try:
        encoded = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        if json.loads(encoded) == obj:
            return encoded
    except (TypeError, ValueError):
        pass
    return None
