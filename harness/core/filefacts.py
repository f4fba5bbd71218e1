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
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

# A file modified this recently may change again within the filesystem's timestamp tick
# without its stat changing (git's "racily clean" rule): such a fact is not remembered.
RACY_SECONDS = 2.0
Stamp = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode
DROP_ALL = 64  # `Held.drop` of more paths than this forgets everything held


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


# one entry of a held directory listing: its name, its own stat (None: it vanished), and
# whether it is a directory and a regular file following a symlink (os.walk's `is_dir()`)
Entry = tuple[str, os.stat_result | None, bool, bool]


class Held:
    """The tree's stats and directory listings held between the answers of a resident
    process (`harness watch`), which says what changed (`drop`) from its file events.

    A process without a watcher has none (`FileFacts.held` is None): every call asks the
    filesystem. Held are only what a change to reports an event for, under `root`: the
    listings of directories reached from it without following a symlink, and the stats of
    regular files in them that are not symlinks (a symlink's target may change with no
    event in the tree: asked every time). The watcher also compares the tree's stats
    with its last look every few seconds and reports what changed without an event
    (cli/watching.py `Audit`), so a missed event is not held wrong for long."""

    def __init__(self, root: str) -> None:
        self.root = os.path.join(root, "")
        self._lists: dict[str, tuple[Entry, ...] | None] = {}
        self._stats: dict[str, os.stat_result] = {}
        self._stamps: dict[str, Stamp] = {}  # `stamp` of each held stat
        self._lock = threading.Lock()

    def listing(self, directory: str) -> tuple[Entry, ...] | None:
        """The entries of `directory` (None when it cannot be listed)."""
        if directory in self._lists:
            return self._lists[directory]
        entries = _listing(directory)
        if self._reached(directory):
            with self._lock:
                self._lists[directory] = entries
                if entries is not None:
                    base = os.path.join(directory, "")
                    for name, st, _is_dir, _is_file in entries:
                        if st is not None and stat.S_ISREG(st.st_mode):
                            self._stats[base + name] = st
                            self._stamps[base + name] = (
                                st.st_size,
                                st.st_mtime_ns,
                                st.st_ctime_ns,
                                st.st_ino,
                            )
        return entries

    def _reached(self, directory: str) -> bool:
        """Whether `directory` is the root, or a directory (not a symlink) in a held
        listing: a change in it is an event under the path the watcher watches."""
        if directory == self.root[:-1]:
            return True
        parent, name = os.path.split(directory)
        entries = self._lists.get(parent)
        if not entries or not directory.startswith(self.root):
            return False
        return any(
            n == name and st is not None and stat.S_ISDIR(st.st_mode) for n, st, _d, _f in entries
        )

    def stat(self, path: str) -> os.stat_result | None:
        """`os.stat(path)` (None on error), held for a file a held listing holds."""
        found = self._stats.get(path)
        if found is not None:
            return found
        try:
            return os.stat(path)
        except OSError:
            return None

    def stamp(self, path: str) -> Stamp | None:
        """`stamp(path)`, held for a file a held listing holds."""
        found = self._stamps.get(path)
        return found if found is not None else stamp(path)

    def drop(self, paths: Iterable[str]) -> None:
        """Forget what `paths` (created, modified, deleted or renamed files or directories)
        may have changed: their stats, their listings and everything under them, and the
        listings of every directory above them up to the root (a polled change names a
        new file, never the new directory it is in). Many paths at once (a checkout of
        another branch) drop everything: cheaper than matching each."""
        paths = list(paths)
        if len(paths) > DROP_ALL:
            self.clear()
            return
        with self._lock:
            for path in paths:
                path = path.rstrip("/")
                self._stats.pop(path, None)
                self._stamps.pop(path, None)
                self._lists.pop(path, None)
                inside = path + "/"
                for table in (self._lists, self._stats, self._stamps):
                    for key in [k for k in table if k.startswith(inside)]:
                        del table[key]
                parent = os.path.dirname(path)
                while parent.startswith(self.root) or parent == self.root[:-1]:
                    self._lists.pop(parent, None)
                    if parent == self.root[:-1]:
                        break
                    parent = os.path.dirname(parent)

    def clear(self) -> None:
        """Forget everything held (an event the watcher cannot map, a fresh start)."""
        with self._lock:
            self._lists.clear()
            self._stats.clear()
            self._stamps.clear()


def _listing(directory: str) -> tuple[Entry, ...] | None:
    try:
        with os.scandir(directory) as it:
            raw = list(it)
    except OSError:
        return None
    out: list[Entry] = []
    for entry in raw:
        try:
            st: os.stat_result | None = entry.stat(follow_symlinks=False)
        except OSError:
            st = None  # gone since the listing: os.walk's is_dir() would fail the same way
        if st is None:
            is_dir = is_file = False
        elif not stat.S_ISLNK(st.st_mode):
            is_dir, is_file = stat.S_ISDIR(st.st_mode), stat.S_ISREG(st.st_mode)
        else:
            try:
                is_dir, is_file = entry.is_dir(), entry.is_file()
            except OSError:
                is_dir = is_file = False
        out.append((entry.name, st, is_dir, is_file))
    return tuple(out)


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
        # the tree's stats and listings, while a resident process watches it (`Held`)
        self.held: Held | None = None
        # root -> (renders of it under way, the listings they took): `listed_once`
        self._renders: dict[str, tuple[int, dict[str, tuple[Entry, ...] | None]]] = {}
        self._renders_lock = threading.Lock()

    def stamp(self, path: str) -> Stamp | None:
        """`stamp(path)`, from the held stats while a watcher holds them."""
        held = self.held
        return stamp(path) if held is None else held.stamp(path)

    def is_file(self, path: str) -> bool:
        """`os.path.isfile(path)`, from the held stats while a watcher holds them."""
        held = self.held
        if held is None:
            return os.path.isfile(path)
        st = held.stat(path)
        return st is not None and stat.S_ISREG(st.st_mode)

    def listing(self, directory: str) -> tuple[Entry, ...] | None:
        """The entries of `directory` (None when it cannot be listed), held while a
        watcher holds them, and within `listed_once` of a tree holding it."""
        held = self.held
        if held is not None:
            return held.listing(directory)
        if self._renders:
            for root, (_n, kept) in list(self._renders.items()):
                if directory == root[:-1] or directory.startswith(root):
                    if directory not in kept:  # None (not listable) is kept too
                        kept[directory] = _listing(directory)
                    return kept[directory]
        return _listing(directory)

    @contextmanager
    def listed_once(self, root: str) -> Iterator[None]:
        """Inside the block each directory under `root` is listed once (without a
        watcher's `Held`): a render's stat of the tree (pipeline/worktree.py `walk`) and
        its sources' ignore-file walks (flux/source/ignore.py) list the same ~500
        directories, a stat per entry each. One render of one tree: no listing outlives
        the last block open on it, so the next run, or a watch's next answer, lists again;
        directories outside `root` (a Flux build's workspace, written as it runs) are
        never kept."""
        key = os.path.join(root, "")
        with self._renders_lock:
            count, kept = self._renders.get(key, (0, {}))
            self._renders[key] = (count + 1, kept)
        try:
            yield
        finally:
            with self._renders_lock:
                count, kept = self._renders[key]
                if count == 1:
                    del self._renders[key]
                else:
                    self._renders[key] = (count - 1, kept)

    def walk(self, top: str) -> Iterator[tuple[str, list[str], list[str]]]:
        """`os.walk(top)` (top-down, no symlinked directory entered, an unlistable one
        skipped), from the held listings while a watcher holds them; the caller may
        prune the directory names, as with os.walk."""
        if self.held is None:
            yield from os.walk(top)
            return
        entries = self.held.listing(top)
        if entries is None:
            return
        dirs = [name for name, _st, is_dir, _f in entries if is_dir]
        files = [name for name, _st, is_dir, _f in entries if not is_dir]
        links = {
            name
            for name, st, is_dir, _f in entries
            if is_dir and st is not None and stat.S_ISLNK(st.st_mode)
        }
        yield top, dirs, files
        for name in dirs:
            if name not in links:
                yield from self.walk(os.path.join(top, name))

    def get(self, path: str, fact: str) -> tuple[Stamp | None, str | None]:
        """(the file's stamp now, the remembered value when the stamp still matches)."""
        now = self.stamp(path)
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
