"""Memos: the one mechanism for remembering run data in memory.

Some values are asked for again and again within one run: a kustomization file's object
(discovery, every build's closure, both sides of a diff), a rendered document's object
(every hazard rule), a document's strings joined for a search. Each such memo is declared
once, at module level, as a `Memo`: a name and a bound. Its data lives in the current run
(core/run.py), a dict cleared when it reaches the bound (so memory stays flat on huge
repos): a memo never carries one run's data into the next run of the same process (the
tests' CLI runner), and outside a run it remembers nothing. Every memo is keyed by content
(a text, a shared object), so `harness watch` keeps its run between the answers it gives
for one tree and starts a new one when it starts afresh. Facts about files, checked
against each file's stat, are the one memo kept across runs: core/filefacts.py.
Values are shared: whoever reads one must not mutate it.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from harness.core.run import current

K = TypeVar("K")
V = TypeVar("V")


class Memo(Generic[K, V]):
    """A bounded dict of the current run's; thread-safe for the single dict operations it
    makes. The declaration holds no data: two runs never see each other's."""

    __slots__ = ("limit", "name")

    def __init__(self, name: str, limit: int) -> None:
        self.name = name
        self.limit = limit

    def get(self, key: K) -> V | None:
        run = current()
        table = run.existing(self) if run is not None else None
        return table.get(key) if table is not None else None

    def lookup(self, key: K, default: V) -> V:
        """`get` with a sentinel of the caller's, for memos whose values may be None."""
        run = current()
        table = run.existing(self) if run is not None else None
        return table.get(key, default) if table is not None else default

    def put(self, key: K, value: V) -> None:
        run = current()
        if run is None:
            return
        table = run.table(self)
        if len(table) >= self.limit:
            table.clear()
        table[key] = value

    def __len__(self) -> int:
        run = current()
        table = run.existing(self) if run is not None else None
        return len(table) if table is not None else 0


class IdentityMemo(Generic[V]):
    """Results of a pure function of a shared, never-mutated object, keyed by its identity.

    Parsed documents are shared (parsed.py), so the same document rendered on both sides of
    a diff, or in every cluster from one path target, is one object: a walk of it runs once
    per run. An entry holds its object, so the id cannot be reused while the entry lives.
    `flag` tells apart two functions of the same object.
    """

    __slots__ = ("_memo",)

    def __init__(self, name: str, limit: int) -> None:
        self._memo: Memo[tuple[int, object], tuple[object, V]] = Memo(name, limit)

    def get(self, obj: object, flag: object = None) -> V | None:
        found = self._memo.get((id(obj), flag))
        return found[1] if found is not None and found[0] is obj else None

    def put(self, obj: object, value: V, flag: object = None) -> V:
        self._memo.put((id(obj), flag), (obj, value))
        return value
