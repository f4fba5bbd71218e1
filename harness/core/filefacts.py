"""Facts about files, validated by their stat: the one memo kept across runs, on purpose.

A fact derived from a file's bytes (its git blob id, whether it is a kustomize Component)
is as good as the file's stat says it is: git's index makes the same bet. So these facts
are not run state: the process keeps one `FileFacts` (`run.PROCESS.files`), every `Run`
uses it, and a later run in the process (the tests' CLI runner, `harness watch` starting
afresh) is answered from it only for files whose stat is unchanged.
"""

from __future__ import annotations

import os
import stat
import time
from typing import Any

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


def directory_stamp(path: str) -> Stamp | None:
    """`stamp` of a directory: its mtime and ctime move when an entry is added, removed or
    renamed in it, so an unchanged stamp means the same names (not the same contents)."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


class FileFacts:
    """Facts derived from a file's bytes (its git blob id, whether it is a kustomize
    Component), remembered by (path, size, mtime, ctime, inode) across runs.

    Every lookup checks the file's stat first, so a changed file is never answered from
    it, and a file modified within `RACY_SECONDS` of being read is not remembered at all.
    A resident process (`harness watch`) and consecutive runs in one process skip reading
    unchanged files; `export`/`load` carry the facts between CLI runs (pipeline/repo.py
    keeps them in the cache directory, and `loaded` says which roots' facts came in).
    """

    def __init__(self, limit: int = 200_000) -> None:
        self.limit = limit
        self._data: dict[tuple[str, str], tuple[Stamp, str]] = {}
        self.changed = False
        self.loaded: set[str] = set()  # roots whose exported facts `load` has read

    def get(self, path: str, fact: str) -> tuple[Stamp | None, str | None]:
        """(the file's stamp now, the remembered value when the stamp still matches)."""
        now = stamp(path)
        if now is None:
            return None, None
        found = self._data.get((path, fact))
        if found is not None and found[0] == now:
            return now, found[1]
        return now, None

    def at(self, path: str, fact: str, now: Stamp) -> str | None:
        """The remembered value when the file's stamp, just taken by the caller, matches
        (`get` without a second stat of a file the caller already stat'ed)."""
        found = self._data.get((path, fact))
        return found[1] if found is not None and found[0] == now else None

    def put(self, path: str, fact: str, at: Stamp | None, value: str) -> None:
        """Remember `value`, derived from the file as it was at stamp `at`."""
        if at is None or time.time() - at[1] / 1e9 < RACY_SECONDS:
            return
        if len(self._data) >= self.limit:
            self._data.clear()
        self._data[(path, fact)] = (at, value)
        self.changed = True

    def export(self, prefix: str) -> dict[str, list[Any]]:
        """The facts about files under `prefix`, as JSON-ready columns (paths, facts, the
        stamps' four numbers each in one flat list, values): read back at C speed."""
        chosen = [(k, v) for k, v in self._data.items() if k[0].startswith(prefix)]
        return {
            "paths": [path for (path, _), _ in chosen],
            "facts": [fact for (_, fact), _ in chosen],
            "stamps": [n for _, (at, _) in chosen for n in at],
            "values": [value for _, (_, value) in chosen],
        }

    def load(self, columns: object) -> None:
        """Columns from `export`; anything else (a foreign, older or hostile entry) is
        ignored whole: a miss only costs a read. Facts already known stay."""
        if type(columns) is not dict or columns.keys() != _COLUMNS:
            return
        paths, facts, stamps, values = (columns[k] for k in ("paths", "facts", "stamps", "values"))
        if not all(type(c) is list for c in (paths, facts, stamps, values)):
            return
        n = len(paths)
        if len(facts) != n or len(values) != n or len(stamps) != 4 * n:
            return
        if not (
            {str}.issuperset(map(type, paths))
            and {str}.issuperset(map(type, facts))
            and {str}.issuperset(map(type, values))
            and {int}.issuperset(map(type, stamps))
        ):
            return
        numbers = iter(stamps)
        loaded: dict[tuple[str, str], tuple[Stamp, str]] = dict(
            zip(
                zip(paths, facts, strict=True),
                zip(zip(numbers, numbers, numbers, numbers, strict=True), values, strict=True),
                strict=True,
            )
        )
        loaded.update(self._data)
        self._data = loaded


_COLUMNS = frozenset(["paths", "facts", "stamps", "values"])
