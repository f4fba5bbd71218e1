"""The persistent, content-addressed render cache: a directory of checksummed entries.

An entry is one build's result, addressed by the sha256 of its key (renderer identity and
version, flags, harness version, input-closure digest and, for Flux targets, the
Kustomization spec and substitution variables; see seam.py). Entries hold what
harness keeps after redaction: Secret values never reach the disk in plaintext.

Safe to share between concurrent runs without locks: an entry is written to a temp file
in its final directory and renamed into place, so readers see a whole entry or none; two
runs writing the same key write the same bytes. Every entry starts with the sha256 of its
body, so a truncated or corrupt file is detected, removed and rebuilt, never trusted. The
size cap is kept by deleting the least recently used entries (a hit touches its mtime), in
a walk of the store that a run makes only when a size estimate kept beside the entries says
it may be over the cap, or every few minutes (`Store.keep_under_cap`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from harness import __version__
from harness.cache import fileformat
from harness.core import atomic, limits, redaction

ENV_DIR = fileformat.ENV_DIR
ENV_MAX = "HARNESS_CACHE_MAX_MB"
FORMAT = fileformat.FORMAT
ENTRIES = fileformat.ENTRIES
META = "meta"
DEFAULT_MAX_BYTES = 1024 * 1024 * 1024
STALE_TEMP_SECONDS = 3600.0
# A run that wrote entries walks the whole store to keep it under its cap only when the
# running estimate of its size says it may be over, or the last walk is this old: the walk
# costs a stat per entry (tens of ms on a big cache), the estimate one small meta read.
PRUNE_EVERY_SECONDS = 600.0
USAGE = "usage"  # the meta entry holding the estimate: {"bytes": int, "walked": float}
_TMP_SUFFIX = fileformat.TMP_SUFFIX
T = TypeVar("T")
Packed = tuple[dict[str, Any], list[str]]  # a packed entry's payload and strings


def default_dir() -> Path:
    """`$HARNESS_CACHE_DIR`, else `$XDG_CACHE_HOME/harness`, else `~/.cache/harness`."""
    return Path(fileformat.default_dir())


def default_max_bytes() -> int:
    raw = os.environ.get(ENV_MAX)
    if raw:
        try:
            return max(0, int(float(raw) * 1024 * 1024))
        except ValueError:
            pass
    return DEFAULT_MAX_BYTES


# process-wide: harness's own source, which no repo or run changes
@functools.cache
def code_fingerprint() -> str:
    """sha256 of harness's own source: a changed harness never reuses an older one's renders,
    even an editable install whose version string did not move."""
    package = Path(__file__).resolve().parent.parent  # harness/
    h = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        h.update(path.relative_to(package).as_posix().encode() + b"\0")
        with contextlib.suppress(OSError):
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def key(*parts: str) -> str:
    """sha256 of the parts, each length-prefixed so no two part lists collide."""
    # entries hold markers (core/redaction.py): a run under another HARNESS_MASK_KEY writes
    # other ones, so it keys its entries apart
    h = hashlib.sha256(
        f"{FORMAT}\0harness {__version__} {code_fingerprint()}\0{redaction.mode()}\0".encode()
    )
    for part in parts:
        data = part.encode("utf-8", "surrogateescape")
        h.update(b"%d:" % len(data))
        h.update(data)
    return h.hexdigest()


@dataclass(frozen=True)
class Info:
    directory: Path
    entries: int
    bytes: int
    max_bytes: int
    oldest: float | None = None
    newest: float | None = None


@dataclass(frozen=True)
class Pruned:
    removed: int
    freed: int
    remaining: int
    remaining_bytes: int
    failed: int = 0  # entries the OS refused to delete (a read-only cache)
    error: str | None = None  # the first refusal's reason


class Store:
    """Entries under `directory/v1/<2 hex>/<62 hex>.json`."""

    def __init__(self, directory: Path, max_bytes: int | None = None) -> None:
        self.directory = directory
        self.max_bytes = default_max_bytes() if max_bytes is None else max_bytes
        self.entries = directory / ENTRIES
        self.written = 0
        self.corrupt = 0
        self.dropped: str | None = None  # the first entry that was not a file harness wrote
        # an entry holds one renderer output: the output cap (core/limits.py) bounds it
        self.entry_cap = limits.current().output_bytes
        self.problem: str | None = None  # why it cannot be written; then nothing is
        # writes held back while `harness watch` answers (`hold`): path -> the write
        self._held: dict[str, Callable[[], None]] | None = None
        self._held_lock = threading.Lock()

    def hold(self) -> None:
        """Hold every write back until `flush`: a resident process (`harness watch`) prints
        its answer first and writes (encodes) its entries after, before the next wait. A
        read of a held entry writes it first, so what is read is what a write-through
        store would give; held writes are lost only if the process dies before `flush`
        (a cache entry is only ever a shortcut)."""
        with self._held_lock:
            if self._held is None:
                self._held = {}

    def flush(self) -> None:
        """Write what `hold` held back, in order; writes go through again from now on."""
        with self._held_lock:
            held, self._held = self._held, None
        for write in (held or {}).values():
            write()

    def later(self, name: str, work: Callable[[], None]) -> None:
        """`work` now, or at `flush` while writes are held (the last of one `name` wins):
        for a writer whose payload costs to build (the file facts' columns)."""
        if not self._deferred(f"later:{name}", work):
            work()

    def _deferred(self, path: str, write: Callable[[], None]) -> bool:
        """Whether `write` (of `path`) was held back; the last write of a path wins."""
        with self._held_lock:
            if self._held is None:
                return False
            self._held.pop(path, None)  # kept in the order of the last writes
            self._held[path] = write
            return True

    def _unheld(self, path: str) -> None:
        """Write `path` now if a write of it is held back (a read is about to look)."""
        with self._held_lock:
            write = self._held.pop(path, None) if self._held is not None else None
        if write is not None:
            write()

    def check(self) -> str | None:
        """Why this cache cannot be used (not a directory, read-only, full), else None.

        Asked once when a run opens it: a temp file is made and removed in the entries
        directory, the same operations an entry's write needs."""
        try:
            os.makedirs(self.entries, exist_ok=True)
            probe = atomic.temp_beside(str(self.entries / "probe"))
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            os.unlink(probe)
        except OSError as exc:
            self.problem = _reason(exc)
        return self.problem

    def _path(self, digest: str) -> Path:
        return Path(fileformat.entry_path(str(self.directory), digest))

    def empty(self) -> bool:
        """Whether no entry was ever written here (a fresh directory: not one shard)."""
        try:
            with os.scandir(self.entries) as found:
                return next(found, None) is None
        except OSError:
            return True

    def get(self, digest: str) -> dict[str, Any] | None:
        """The payload stored under `digest`; None if absent, unreadable or corrupt."""
        return self._get(digest, fileformat.decode)

    def get_packed(self, digest: str) -> Packed | None:
        """The payload and strings of a packed entry (fileformat.py: a whole render); None
        if absent, unreadable, corrupt or of another format."""
        return self._get(digest, fileformat.decode_packed)

    def _get(self, digest: str, decode: Callable[[bytes, str], T | None]) -> T | None:
        path = self._path(digest)
        if self._held is not None:
            self._unheld(str(path))
        try:
            raw = fileformat.read_entry(str(path), self.entry_cap)
        except fileformat.NotAnEntry as exc:  # a poisoned cache: dropped, never read whole
            self.corrupt += 1
            self.dropped = self.dropped or str(exc)
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        except OSError:
            return None
        payload = decode(raw, digest)
        if payload is None:
            self.corrupt += 1
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # least recently *used* goes first
        return payload

    def put(self, digest: str, payload: dict[str, Any]) -> None:
        """Write atomically; the first failure (read-only dir, full disk) is kept as
        `problem` and the run writes nothing more: it goes on uncached."""
        self._put(digest, payload, fileformat.encode)

    def put_packed(self, digest: str, payload: dict[str, Any], strings: list[str]) -> None:
        """`put` of a packed entry."""
        self._put(digest, (payload, strings), _encode_packed)

    def _put(self, digest: str, payload: T, encode: Callable[[T, str], bytes]) -> None:
        if self.problem is not None:
            return
        path = self._path(digest)
        if self._deferred(str(path), lambda: self._write(path, digest, payload, encode)):
            return
        self._write(path, digest, payload, encode)

    def _write(
        self, path: Path, digest: str, payload: T, encode: Callable[[T, str], bytes]
    ) -> None:
        if self.problem is not None:
            return
        data = encode(payload, digest)
        try:
            atomic.write(path, data)
        except OSError as exc:
            self.problem = _reason(exc)
            return
        self.written += len(data)

    def get_meta(self, digest: str) -> dict[str, Any] | None:
        """A run's small fact kept beside the entries (the renderer's version): not a render,
        so not counted, pruned by size or least-recent use; gone with `clear`."""
        path = str(self.directory / META / f"{digest}.json")
        if self._held is not None:
            self._unheld(path)
        try:
            raw = fileformat.read_entry(path)
        except OSError:
            return None
        return fileformat.decode(raw, digest)

    def put_meta(self, digest: str, payload: dict[str, Any]) -> None:
        path = str(self.directory / META / f"{digest}.json")

        def write() -> None:
            fileformat.write_atomic(path, fileformat.encode(payload, digest))

        if not self._deferred(path, write):
            write()

    def _files(self) -> Iterator[tuple[Path, os.stat_result]]:
        try:
            shards = sorted(os.scandir(self.entries), key=lambda e: e.name)
        except OSError:
            return
        for shard in shards:
            if not shard.is_dir(follow_symlinks=False):
                continue
            try:
                with os.scandir(shard.path) as entries:
                    for entry in entries:
                        with contextlib.suppress(OSError):
                            yield Path(entry.path), entry.stat(follow_symlinks=False)
            except OSError:
                continue

    def info(self) -> Info:
        count = size = 0
        oldest: float | None = None
        newest: float | None = None
        for path, st in self._files():
            if path.name.endswith(_TMP_SUFFIX):
                continue
            count += 1
            size += st.st_size
            oldest = st.st_mtime if oldest is None else min(oldest, st.st_mtime)
            newest = st.st_mtime if newest is None else max(newest, st.st_mtime)
        return Info(self.directory, count, size, self.max_bytes, oldest, newest)

    def prune(self, max_bytes: int | None = None) -> Pruned:
        """Delete least recently used entries until the total is at most `max_bytes`.

        Temp files older than an hour (a writer that died) go too. An entry another run
        is reading may vanish under it: that run sees a miss and renders.
        """
        cap = self.max_bytes if max_bytes is None else max_bytes
        now = time.time()
        live: list[tuple[float, int, Path]] = []
        removed = freed = 0
        failed = 0
        error: str | None = None
        for path, st in self._files():
            if path.name.endswith(_TMP_SUFFIX):
                # a dead writer's temp file (its pid is gone, or it is an hour old)
                if atomic.abandoned(path.name) or now - st.st_mtime > STALE_TEMP_SECONDS:
                    with contextlib.suppress(OSError):
                        path.unlink()
                continue
            live.append((st.st_mtime, st.st_size, path))
        total = sum(size for _, size, _ in live)
        for _mtime, size, path in sorted(live):
            if total <= cap:
                break
            try:
                path.unlink()
            except FileNotFoundError:  # another run pruned it first
                pass
            except OSError as exc:
                failed += 1
                error = error or _reason(exc)
                continue
            else:
                removed += 1
                freed += size
            total -= size
        return Pruned(removed, freed, len(live) - removed, total, failed, error)

    def keep_under_cap(self) -> Pruned | None:
        """`prune` when it may be due, else only the size estimate updated (None).

        The estimate is the last walk's total plus what runs wrote since; runs closing at
        once may each miss the other's bytes, so it errs low, and the walk every
        PRUNE_EVERY_SECONDS (or on a missing, malformed or future record) corrects it."""
        now = time.time()
        record = self.get_meta(USAGE) or {}
        estimate, walked = record.get("bytes"), record.get("walked")
        if (
            type(estimate) is int
            and estimate >= 0
            and isinstance(walked, float)
            and 0.0 <= now - walked < PRUNE_EVERY_SECONDS
            and estimate + self.written <= self.max_bytes
        ):
            self.put_meta(USAGE, {"bytes": estimate + self.written, "walked": walked})
            return None
        done = self.prune()
        self.put_meta(USAGE, {"bytes": done.remaining_bytes, "walked": now})
        return done

    def clear(self) -> Pruned:
        with contextlib.suppress(OSError):
            for path in (self.directory / META).iterdir():
                with contextlib.suppress(OSError):
                    path.unlink()
        return self.prune(0)


def _encode_packed(packed: Packed, digest: str) -> bytes:
    return fileformat.encode_packed(packed[0], packed[1], digest)


def _reason(exc: OSError) -> str:
    where = exc.filename if isinstance(exc.filename, str) else ""
    reason = exc.strerror or type(exc).__name__
    return f"{where}: {reason}" if where else reason


@dataclass(frozen=True)
class Settings:
    """What a command passes: whether to cache, where, and how big."""

    enabled: bool = True
    directory: Path | None = None
    max_bytes: int | None = None

    def store(self) -> Store | None:
        if not self.enabled:
            return None
        return Store(self.directory or default_dir(), self.max_bytes)


class RenderCache:
    """One run's view of the cache: an in-memory layer in front of an optional store.

    The memory layer is what lets `diff` reuse, for the base side, every result the head
    side already produced for the same key, even with no store on disk.
    """

    def __init__(self, store: Store | None) -> None:
        self.store = store
        self._memory: dict[str, dict[str, Any]] = {}
        self._packed: dict[str, Packed] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.uncacheable = 0
        self.unusable: str | None = None
        self._warned = False

    def warning(self) -> str | None:
        """One line, once per run, when the cache could not be used or stopped being
        writable (a full disk): the run goes on uncached."""
        if self._warned:
            return None
        message = self.unusable
        if message is None and self.store is not None and self.store.problem is not None:
            message = (
                f"render cache {self.store.directory} cannot be written ({self.store.problem})"
            )
        if message is None:
            if self.store is not None and self.store.dropped is not None:
                self._warned = True
                return f"render cache entry dropped as corrupt: {self.store.dropped}"
            return None
        self._warned = True
        return f"{message}: running uncached"

    def get(self, digest: str) -> dict[str, Any] | None:
        return self._lookup(self._memory, digest, self.store.get if self.store else None)

    def empty(self) -> bool:
        """Whether nothing is cached at all, in memory or on disk: every probe of the run
        misses (the pipeline then starts its first builds before their keys are known)."""
        with self._lock:
            if self._memory or self._packed:
                return False
        return self.store is None or self.store.empty()

    def _lookup(
        self, table: dict[str, T], digest: str, read: Callable[[str], T | None] | None
    ) -> T | None:
        """An entry from memory, else from the store (then kept in memory), counted."""
        with self._lock:
            found = table.get(digest)
        if found is None and read is not None:
            found = read(digest)
            if found is not None:
                with self._lock:
                    table[digest] = found
        with self._lock:
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
        return found

    def put(self, digest: str, payload: dict[str, Any]) -> None:
        with self._lock:
            self._memory[digest] = payload
        if self.store is not None:
            self.store.put(digest, payload)

    def get_packed(self, digest: str) -> Packed | None:
        """`get` of a packed entry (a whole render: Store.get_packed), kept in memory once
        read. Shared: nobody may mutate it."""
        return self._lookup(self._packed, digest, self.store.get_packed if self.store else None)

    def has_packed(self, digest: str) -> bool:
        """Whether `get_packed` may find the entry (in memory, or a file of its name): a
        stat, not a read, and not counted."""
        with self._lock:
            if digest in self._packed:
                return True
        return self.store is not None and os.path.isfile(self.store._path(digest))

    def put_packed(self, digest: str, payload: dict[str, Any], strings: list[str]) -> None:
        with self._lock:
            self._packed[digest] = (payload, strings)
        if self.store is not None:
            self.store.put_packed(digest, payload, strings)

    def skip(self) -> None:
        with self._lock:
            self.uncacheable += 1

    def close(self) -> None:
        """Keep the store under its cap when this run wrote to it (Store.keep_under_cap)."""
        if self.store is not None and self.store.written:
            self.store.keep_under_cap()


def open_cache(settings: Settings) -> RenderCache | None:
    """None means `--no-cache`: every target renders, nothing is reused even within a run.

    A cache that cannot be used (Store.check) gives a run without a store: it goes on
    uncached, and `warning()` says so once."""
    if not settings.enabled:
        return None
    store = settings.store()
    if store is not None and store.check() is not None:
        cache = RenderCache(None)
        cache.unusable = f"render cache {store.directory} is unusable ({store.problem})"
        return cache
    return RenderCache(store)
