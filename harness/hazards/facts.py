"""Per-target facts of the lint rules, kept by their inputs' content, so that a side that
mostly equals another costs what differs.

A rule over a whole side (overlay-parity, substitution, api-reject) spends most of its time
on what one target's documents alone decide: which strings of a document match a pattern,
the `${...}` a document holds, what the API server would say of each object. A fact is such
an answer, JSON data (lists, not tuples: a fact read back is the fact computed), stored
under a key its caller makes of everything it depends on (the documents' sha256s, the
pattern, the schemas' digests). Any fact found under its key is right, wherever it was
found, so reuse never depends on which side it came from.

A side's `Facts` answers from, in order: what it already used, the current run's memo
(core/memo.py: `harness watch` keeps its run between answers), the render cache's tables
(one entry per kind and side digest, holding the facts that side used) of the side itself
and of the sides it is diffed with (`seeds`: the head of a one-file diff reads the base's),
and else computes. `save` writes the side's table, and a seed's when that had none (the
base of a diff whose findings came from the findings memo computed no facts of its own),
so the next diff against the same base finds them. A diff's head keeps no table of its own
(`keep_own`): the next diff has a new head and reads the base's, and a head diffed again
has its findings in the findings memo, so writing it would cost every save for nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from harness.core.memo import Memo

KIND = "hazard-facts"
_RUN: Memo[tuple[str, str], Any] = Memo("hazard facts", 262144)
_ABSENT: Any = object()


def content_key(*parts: str | Iterable[str]) -> str:
    """sha256 of the parts (a part may be a list of strings, e.g. documents' sha256s)."""
    h = hashlib.sha256()
    for part in parts:
        for text in [part] if isinstance(part, str) else part:
            h.update(text.encode("utf-8", "surrogateescape"))
            h.update(b"\0")
        h.update(b"\1")
    return h.hexdigest()


class Facts:
    """One side's facts. `cache` is a RenderCache or None (then the run's memo only);
    `digest` names the side, `seeds` the sides whose tables it may read."""

    def __init__(
        self, cache: Any, digest: str, seeds: Sequence[str] = (), *, keep_own: bool = True
    ) -> None:
        self.cache = cache
        self.names = [digest, *(s for s in seeds if s != digest)]
        self.keep_own = keep_own
        self._used: dict[str, dict[str, Any]] = {}
        self._tables: dict[str, dict[str, Any]] = {}
        self._absent: dict[str, set[str]] = {}  # kind -> table names the cache lacks
        self.computed = 0
        self.reused = 0

    def get(self, kind: str, key: str, compute: Callable[[], Any]) -> Any:
        """The fact `kind` under `key`, computed (JSON data) only when nothing has it."""
        used = self._used.setdefault(kind, {})
        found = used.get(key, _ABSENT)
        if found is not _ABSENT:
            return found
        found = _RUN.lookup((kind, key), _ABSENT)
        if found is _ABSENT:
            found = self._table(kind).get(key, _ABSENT)
            if found is _ABSENT:
                found = compute()
                self.computed += 1
            else:
                self.reused += 1
            _RUN.put((kind, key), found)
        else:
            self.reused += 1
        used[key] = found
        return found

    def _table(self, kind: str) -> dict[str, Any]:
        table = self._tables.get(kind)
        if table is not None:
            return table
        table = {}
        absent = self._absent.setdefault(kind, set())
        for name in reversed(self.names):  # the side's own table last: it wins
            payload = self.cache.get(self._entry(kind, name)) if self.cache is not None else None
            facts = payload.get("facts") if payload is not None else None
            if isinstance(facts, dict):
                table.update(facts)
            else:
                absent.add(name)
        self._tables[kind] = table
        return table

    def save(self) -> None:
        """Keep what this side used, when it computed anything: as its own table (unless
        `keep_own` is off), and as a seed's that the cache lacked."""
        if self.cache is None or not self.computed:
            return
        for kind, used in self._used.items():
            if not used:
                continue
            self._table(kind)
            absent = self._absent.get(kind, set())
            for name in self.names:
                if (name == self.names[0] and self.keep_own) or (
                    name != self.names[0] and name in absent
                ):
                    self.cache.put(self._entry(kind, name), {"facts": used})

    @staticmethod
    def _entry(kind: str, name: str) -> str:
        from harness.cache.store import key

        return key(KIND, kind, name)


def fact(facts: Facts | None, kind: str, key: Callable[[], str], compute: Callable[[], Any]) -> Any:
    """`facts.get(kind, key(), compute)`, or just `compute()` where no side keeps facts (its
    key is not even made)."""
    if facts is None:
        return compute()
    return facts.get(kind, key(), compute)
