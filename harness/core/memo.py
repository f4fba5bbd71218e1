"""Per-run memos: the one mechanism for remembering run data in memory.

Some values are asked for again and again within one run: a kustomization file's object
(discovery, every build's closure, both sides of a diff), a rendered document's object
(every hazard rule), a document's strings joined for a search. Each such memo is a `Memo`:
a dict bounded by a size (cleared when full, so memory stays flat on huge repos) and
registered here, so `reset()` empties every one when a run starts: a memo never carries
one run's data into the next run of the same process (the tests' CLI runner). Every memo
is keyed by content (a text, a shared object), so `harness watch` keeps them between the
answers it gives for one tree and resets them when it starts afresh. `FILES` (below) is
the one exception to `reset()`: facts about files, checked against each file's stat.
Values are shared: whoever reads one must not mutate it.
"""

from __future__ import annotations

import os
import stat
import time
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


# -- facts about files, validated by their stat ---------------------------------------------

# A file modified this recently may change again within the filesystem's timestamp tick
# without its stat changing (git's "racily clean" rule): such a fact is not remembered.
RACY_SECONDS = 2.0
Stamp = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode


def stamp(path: str) -> Stamp | None:
    """What identifies a file's content without reading it; None when it cannot be stat'ed
    or is not a regular file."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


class FileFacts:
    """Facts derived from a file's bytes (its git blob id, whether it declares a Flux
    Kustomization), remembered by (path, size, mtime, ctime, inode) across runs.

    The one memo `reset()` keeps: every lookup checks the file's stat first, so a changed
    file is never answered from it, and a file modified within `RACY_SECONDS` of being read
    is not remembered at all. A resident process (`harness watch`) and consecutive runs in one
    process skip reading unchanged files; `export`/`load` carry the facts between CLI runs
    (pipeline.py keeps them in the cache directory).
    """

    def __init__(self, limit: int = 200_000) -> None:
        self.limit = limit
        self._data: dict[tuple[str, str], tuple[Stamp, str]] = {}
        self.changed = False

    def get(self, path: str, fact: str) -> tuple[Stamp | None, str | None]:
        """(the file's stamp now, the remembered value when the stamp still matches)."""
        now = stamp(path)
        if now is None:
            return None, None
        found = self._data.get((path, fact))
        if found is not None and found[0] == now:
            return now, found[1]
        return now, None

    def put(self, path: str, fact: str, at: Stamp | None, value: str) -> None:
        """Remember `value`, derived from the file as it was at stamp `at`."""
        if at is None or time.time() - at[1] / 1e9 < RACY_SECONDS:
            return
        if len(self._data) >= self.limit:
            self._data.clear()
        self._data[(path, fact)] = (at, value)
        self.changed = True

    def export(self, prefix: str) -> list[list[object]]:
        """The facts about files under `prefix`, as JSON-ready rows."""
        return [
            [path, fact, *at, value]
            for (path, fact), (at, value) in self._data.items()
            if path.startswith(prefix)
        ]

    def load(self, rows: object) -> None:
        """Rows from `export` (a malformed row is skipped: a miss only costs a read)."""
        if not isinstance(rows, list):
            return
        for row in rows:
            if (
                isinstance(row, list)
                and len(row) == 7
                and isinstance(row[0], str)
                and isinstance(row[1], str)
                and all(isinstance(v, int) for v in row[2:6])
                and isinstance(row[6], str)
            ):
                at = (row[2], row[3], row[4], row[5])
                self._data.setdefault((row[0], row[1]), (at, row[6]))


FILES = FileFacts()
