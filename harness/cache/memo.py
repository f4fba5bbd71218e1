"""Per-run memos: the one mechanism for remembering run data in memory.

Some values are asked for again and again within one run: a kustomization file's object
(discovery, every build's closure, both sides of a diff), a rendered document's object
(every hazard rule), a document's strings joined for a search. Each such memo is a `Memo`:
a dict bounded by a size (cleared when full, so memory stays flat on huge repos) and
registered here, so `reset()` empties every one when a run starts: a memo never carries
one run's data into the next run of the same process (the tests' CLI runner, `watch`).
Values are shared: whoever reads one must not mutate it.
"""

from __future__ import annotations

from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

_MEMOS: list[Memo[object, object]] = []


class Memo(Generic[K, V]):
    """A bounded, registered dict; thread-safe for the single dict operations it makes."""

    def __init__(self, name: str, limit: int) -> None:
        self.name = name
        self.limit = limit
        self._data: dict[K, V] = {}
        _MEMOS.append(self)  # type: ignore[arg-type]

    def get(self, key: K) -> V | None:
        return self._data.get(key)

    def lookup(self, key: K, default: V) -> V:
        """`get` with a sentinel of the caller's, for memos whose values may be None."""
        return self._data.get(key, default)

    def put(self, key: K, value: V) -> None:
        if len(self._data) >= self.limit:
            self._data.clear()
        self._data[key] = value

    def clear(self) -> None:
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


class IdentityMemo(Generic[V]):
    """Results of a pure function of a shared, never-mutated object, keyed by its identity.

    Parsed documents are shared (parsed.py), so the same document rendered on both sides of
    a diff, or in every cluster from one path target, is one object: a walk of it runs once
    per run. An entry holds its object, so the id cannot be reused while the entry lives.
    `flag` tells apart two functions of the same object.
    """

    def __init__(self, name: str, limit: int) -> None:
        self._memo: Memo[tuple[int, object], tuple[object, V]] = Memo(name, limit)

    def get(self, obj: object, flag: object = None) -> V | None:
        found = self._memo.get((id(obj), flag))
        return found[1] if found is not None and found[0] is obj else None

    def put(self, obj: object, value: V, flag: object = None) -> V:
        self._memo.put((id(obj), flag), (obj, value))
        return value


def reset() -> None:
    """Empty every memo: a run starts."""
    for memo in _MEMOS:
        memo.clear()
