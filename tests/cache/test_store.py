"""The cache store: atomic checksummed entries, LRU pruning, locations, `harness cache`."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.cache import fileformat
from harness.cache import store as cache
from tests.conftest import PROJECT, Result


def test_roundtrip_and_key_parts_do_not_collide(tmp_path: Path) -> None:
    store = cache.Store(tmp_path)
    assert cache.key("ab", "c") != cache.key("a", "bc")
    digest = cache.key("x")
    assert store.get(digest) is None
    store.put(digest, {"documents": [["", "ConfigMap", "ns", "a", "v1", "text: é\n", "0"]]})
    assert store.get(digest) == {
        "documents": [["", "ConfigMap", "ns", "a", "v1", "text: é\n", "0"]]
    }


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[: len(raw) // 2],  # truncated
        lambda raw: raw.replace(b"payload", b"paYload"),  # a flipped byte
        lambda raw: b"",  # empty
        lambda raw: raw.split(b"\n", 1)[1],  # checksum line lost
    ],
)
def test_corrupt_entry_is_detected_and_removed(
    tmp_path: Path, damage: Callable[[bytes], bytes]
) -> None:
    store = cache.Store(tmp_path)
    digest = cache.key("y")
    store.put(digest, {"payload": "value"})
    (entry,) = (tmp_path / cache.ENTRIES).rglob("*.json")
    entry.write_bytes(damage(entry.read_bytes()))
    assert store.get(digest) is None
    assert store.corrupt == 1
    assert not entry.exists()


@pytest.mark.parametrize("poison", ["/dev/zero", "fifo", "huge"])
def test_an_entry_that_is_no_file_harness_wrote_is_dropped_unread(
    tmp_path: Path, poison: str
) -> None:
    """A poisoned CI cache: a symlink to /dev/zero, a FIFO, a file past the cap. Never read
    to its end (no MemoryError, no hang): dropped as corrupt, with one warning."""
    store = cache.Store(tmp_path)
    digest = cache.key("z")
    store.put(digest, {"payload": "value"})
    (entry,) = (tmp_path / cache.ENTRIES).rglob("*.json")
    entry.unlink()
    if poison == "fifo":
        os.mkfifo(entry)
    elif poison == "huge":
        with open(entry, "wb") as fh:
            fh.truncate(store.entry_cap + 1)  # sparse
    else:
        entry.symlink_to(poison)
    run = cache.RenderCache(store)
    assert run.get(digest) is None
    assert store.corrupt == 1
    assert not entry.exists() and not entry.is_symlink()
    why = "not a regular file" if poison != "huge" else f"{store.entry_cap + 1} bytes, over the"
    warning = run.warning()
    assert warning is not None
    assert warning.startswith(f"render cache entry dropped as corrupt: {entry}: {why}")
    assert run.warning() is None  # once per run


def test_entry_under_another_key_is_not_trusted(tmp_path: Path) -> None:
    store = cache.Store(tmp_path)
    one, two = cache.key("one"), cache.key("two")
    store.put(one, {"v": 1})
    (entry,) = (tmp_path / cache.ENTRIES).rglob("*.json")
    target = tmp_path / cache.ENTRIES / two[:2] / f"{two[2:]}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(entry.read_bytes())
    assert store.get(two) is None


def test_prune_drops_least_recently_used_first(tmp_path: Path) -> None:
    store = cache.Store(tmp_path)
    keys = [cache.key(str(i)) for i in range(4)]
    for i, digest in enumerate(keys):
        store.put(digest, {"blob": "x" * 1000, "i": i})
    now = time.time()
    for i, digest in enumerate(keys):
        path = tmp_path / cache.ENTRIES / digest[:2] / f"{digest[2:]}.json"
        os.utime(path, (now - 100 + i, now - 100 + i))
    assert store.get(keys[0]) is not None  # a hit makes the oldest the newest
    size = store.info().bytes // 4
    done = store.prune(size * 2 + 10)
    assert done.removed == 2
    assert store.get(keys[0]) is not None
    assert store.get(keys[3]) is not None
    assert store.get(keys[1]) is None and store.get(keys[2]) is None


def test_clear_and_stale_temp_files(tmp_path: Path) -> None:
    store = cache.Store(tmp_path)
    store.put(cache.key("a"), {"a": 1})
    shard = next((tmp_path / cache.ENTRIES).iterdir())
    stale = shard / ".dead.tmp"
    stale.write_text("half")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    fresh = shard / ".writing.tmp"
    fresh.write_text("half")
    assert store.info().entries == 1
    done = store.clear()
    assert done.removed == 1
    assert not stale.exists()
    assert fresh.exists()  # another run may be writing it right now
    assert store.info().entries == 0


def test_run_prunes_to_its_cap_when_it_wrote(tmp_path: Path) -> None:
    store = cache.Store(tmp_path, max_bytes=0)
    run = cache.RenderCache(store)
    run.put(cache.key("a"), {"a": 1})
    assert store.info().entries == 1
    run.close()
    assert store.info().entries == 0


def test_concurrent_writers_and_readers_never_see_partial_entries(tmp_path: Path) -> None:
    """Threads here, processes below: same key, same bytes, readers see all or nothing."""
    digest = cache.key("shared")
    payload = {"blob": "z" * 200_000}

    def write_and_read(_: int) -> bool:
        store = cache.Store(tmp_path)
        store.put(digest, payload)
        found = store.get(digest)
        return found == payload and store.corrupt == 0

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(write_and_read, range(32)))
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(PROJECT)!r})
        from pathlib import Path
        from harness.cache import store as cache
        store = cache.Store(Path({str(tmp_path)!r}))
        payload = {{"blob": "z" * 200_000}}
        for _ in range(30):
            store.put({digest!r}, payload)
            assert store.get({digest!r}) == payload, "partial entry"
            assert store.corrupt == 0
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script]) for _ in range(3)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0]
    assert cache.Store(tmp_path).info().entries == 1


def test_default_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.default_dir() == tmp_path / "explicit"
    monkeypatch.delenv("HARNESS_CACHE_DIR")
    assert cache.default_dir() == tmp_path / "xdg" / "harness"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # XDG: relative paths are invalid
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.default_dir() == tmp_path / "home" / ".cache" / "harness"


def test_size_cap_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_CACHE_MAX_MB", "2")
    assert cache.default_max_bytes() == 2 * 1024 * 1024
    monkeypatch.setenv("HARNESS_CACHE_MAX_MB", "lots")
    assert cache.default_max_bytes() == cache.DEFAULT_MAX_BYTES


def test_cache_commands(cli: Callable[..., Result], tmp_path: Path) -> None:
    store = cache.Store(tmp_path)
    for i in range(3):
        store.put(cache.key(str(i)), {"blob": "x" * 2000})
    res = cli("cache", "info", "--cache-dir", tmp_path, "--output", "json")
    assert res.code == 0, res.stderr
    info = json.loads(res.stdout)
    assert info["schema"] == "harness.cache-info/v1"
    assert info["directory"] == str(tmp_path)
    assert info["entries"] == 3
    assert info["bytes"] > 6000
    assert info["max_bytes"] == cache.DEFAULT_MAX_BYTES
    res = cli("cache", "info", "--cache-dir", tmp_path)
    assert res.stdout.splitlines()[:2] == [f"cache: {tmp_path}", "entries: 3"]
    res = cli("cache", "prune", "--cache-dir", tmp_path, "--max-size", "0.004")
    assert res.code == 0
    assert res.stdout.startswith("removed 2 entries")
    assert cache.Store(tmp_path).info().entries == 1
    res = cli("cache", "clear", "--cache-dir", tmp_path)
    assert res.code == 0 and res.stdout.startswith("removed 1 entries")
    assert cache.Store(tmp_path).info().entries == 0


def test_cache_info_defaults_to_the_environment(cli: Callable[..., Result]) -> None:
    res = cli("cache", "info", "-o", "json")
    assert json.loads(res.stdout)["directory"] == os.environ["HARNESS_CACHE_DIR"]


# -- packed entries: a JSON payload beside its strings (the whole-render entries) ----------

_PAYLOAD = {"rows": [["", "ConfigMap", "ns", "a", 0, 1]], "stamps": [[33188, 12, 1, 2, 3], None]}
_STRINGS = ["text: é\n", '{"kind":"ConfigMap"}', "", "line\nbreak \udcff \u2028 \x00"]


def test_a_packed_entry_round_trips(tmp_path: Path) -> None:
    """Strings of any content (newlines, NUL, a lone surrogate, non-ASCII) come back."""
    store = cache.Store(tmp_path)
    digest = cache.key("packed")
    store.put_packed(digest, _PAYLOAD, _STRINGS)
    assert store.get_packed(digest) == (_PAYLOAD, _STRINGS)
    run = cache.RenderCache(store)
    assert run.get_packed(digest) == (_PAYLOAD, _STRINGS)
    (entry,) = (tmp_path / cache.ENTRIES).rglob("*.json")
    assert b"text: \xc3\xa9\n" in entry.read_bytes()  # the strings as they are: unescaped
    entry.unlink()
    assert run.get_packed(digest) == (_PAYLOAD, _STRINGS)  # kept in the run's memory
    assert (run.hits, run.misses) == (2, 0)


def _entry(tmp_path: Path, digest: str, body: bytes) -> Path:
    """An entry framed as fileformat.encode_packed frames one around `body`: whole and
    checksummed, as a hostile writer of the cache directory could make it."""
    data = f"{fileformat.FORMAT} {digest} packed\n".encode() + body
    path = tmp_path / cache.ENTRIES / digest[:2] / f"{digest[2:]}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(hashlib.sha256(data).hexdigest().encode() + b"\n" + data)
    return path


@pytest.mark.parametrize(
    "body",
    [
        b'{"strings":[3,4]}\nabc',  # sizes past the end
        b'{"strings":[3]}\nabcdef',  # bytes left over
        b'{"strings":[-1,4]}\nabc',  # a negative size
        b'{"strings":[true]}\na',  # a size of another type
        b'{"strings":[2]}\n\xff\xfe',  # not UTF-8
        b'{"strings":[]}',  # no separator
        b'["strings"]\n',  # not an object
        b'{"v":1}\n',  # no sizes
        b"[" * 100_000 + b"\n",  # nested past the parser's depth
        b"\x80\x04garbage\n",  # not JSON (a pickle's first bytes)
    ],
)
def test_a_hostile_packed_entry_is_a_miss_never_a_crash(tmp_path: Path, body: bytes) -> None:
    store = cache.Store(tmp_path)
    digest = cache.key("hostile")
    path = _entry(tmp_path, digest, body)
    assert store.get_packed(digest) is None
    assert store.corrupt == 1 and not path.exists()


def test_a_well_formed_hand_made_entry_is_read(tmp_path: Path) -> None:
    """The framing the hostile cases break, whole: the layout is what this test says."""
    digest = cache.key("framed")
    _entry(tmp_path, digest, b'{"strings":[1,0,2],"v":[1]}\nabc')
    assert cache.Store(tmp_path).get_packed(digest) == ({"v": [1]}, ["a", "", "bc"])


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[: len(raw) // 2],  # truncated
        lambda raw: raw[:-1],  # the last byte of the last string lost
        lambda raw: raw.replace(b"ConfigMap", b"ConfigMaP"),  # a flipped byte
        lambda raw: raw.split(b"\n", 1)[1],  # checksum line lost
    ],
)
def test_a_damaged_packed_entry_is_a_miss(tmp_path: Path, damage: Callable[[bytes], bytes]) -> None:
    store = cache.Store(tmp_path)
    digest = cache.key("damaged")
    store.put_packed(digest, _PAYLOAD, _STRINGS)
    (entry,) = (tmp_path / cache.ENTRIES).rglob("*.json")
    entry.write_bytes(damage(entry.read_bytes()))
    assert store.get_packed(digest) is None
    assert store.corrupt == 1


def test_json_and_packed_entries_are_not_each_other(tmp_path: Path) -> None:
    """An entry of the older (JSON) format under a packed one's digest is a miss, and back;
    so is a packed entry moved under another key."""
    store = cache.Store(tmp_path)
    one, two = cache.key("json"), cache.key("packed")
    store.put(one, {"v": [1]})
    store.put_packed(two, {"v": [1]}, ["s"])
    assert store.get_packed(one) is None
    assert store.get(two) is None
    other = cache.key("moved")
    store.put_packed(other, {"v": [1]}, ["s"])
    (moved,) = [p for p in (tmp_path / cache.ENTRIES).rglob("*.json") if other[2:] in p.name]
    target = tmp_path / cache.ENTRIES / two[:2] / f"{two[2:]}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(moved.read_bytes())
    assert store.get_packed(two) is None


def _usage(tmp_path: Path) -> dict[str, object] | None:
    return cache.Store(tmp_path).get_meta(cache.USAGE)


def test_a_run_under_its_estimate_does_not_walk_the_store(tmp_path: Path) -> None:
    """The first close walks the store and keeps its size; a later run whose writes keep the
    estimate under the cap only adds them to it (no entry is listed, none deleted)."""
    first = cache.RenderCache(cache.Store(tmp_path, max_bytes=10_000_000))
    first.put(cache.key("a"), {"a": 1})
    first.close()
    kept = _usage(tmp_path)
    assert kept is not None
    size = cache.Store(tmp_path).info().bytes
    assert kept["bytes"] == size
    store = cache.Store(tmp_path, max_bytes=10_000_000)
    second = cache.RenderCache(store)
    second.put(cache.key("b"), {"b": 2})
    assert store.keep_under_cap() is None  # not walked
    now = _usage(tmp_path)
    assert now is not None
    assert now["walked"] == kept["walked"]
    assert now["bytes"] == size + store.written


def test_an_estimate_over_the_cap_prunes(tmp_path: Path) -> None:
    store = cache.Store(tmp_path, max_bytes=10_000_000)
    run = cache.RenderCache(store)
    run.put(cache.key("a"), {"a": "x" * 1000})
    run.close()  # walked: the estimate is this entry
    small = cache.Store(tmp_path, max_bytes=1500)
    again = cache.RenderCache(small)
    again.put(cache.key("b"), {"b": "y" * 1000})  # estimate now about 2 KB: over 1.5 KB
    done = small.keep_under_cap()
    assert done is not None and done.removed == 1
    assert small.info().entries == 1


@pytest.mark.parametrize(
    "record",
    [None, {"bytes": "10", "walked": 1.0}, {"bytes": -1, "walked": 1.0}, {"bytes": 1}, "stale"],
)
def test_a_missing_malformed_or_old_estimate_walks_the_store(
    tmp_path: Path, record: object
) -> None:
    """Without a record it can trust, a run walks the store, prunes and keeps a new one:
    a hand-edited or stale record never keeps a cache over its cap."""
    store = cache.Store(tmp_path, max_bytes=0)
    if record == "stale":
        store.put_meta(cache.USAGE, {"bytes": 0, "walked": time.time() - 3600.0})
    elif isinstance(record, dict):
        store.put_meta(cache.USAGE, record)
    run = cache.RenderCache(store)
    run.put(cache.key("a"), {"a": 1})
    assert store.info().entries == 1
    done = store.keep_under_cap()
    assert done is not None and done.removed == 1
    kept = _usage(tmp_path)
    assert kept is not None and kept["bytes"] == 0


def test_has_packed_asks_memory_then_the_store_without_reading(tmp_path: Path) -> None:
    store = cache.Store(tmp_path)
    run = cache.RenderCache(store)
    digest = cache.key("a render")
    assert not run.has_packed(digest)
    run.put_packed(digest, {"a": 1}, ["text"])
    assert run.has_packed(digest)
    fresh = cache.RenderCache(cache.Store(tmp_path))
    assert fresh.has_packed(digest)
    assert (fresh.hits, fresh.misses) == (0, 0)  # a stat, not a lookup
    assert not cache.RenderCache(None).has_packed(digest)


def test_held_writes_wait_for_flush_and_a_read_writes_them_first(tmp_path: Path) -> None:
    """`harness watch` prints its answer before it writes (cache/store.py `hold`): nothing is
    on disk until `flush`, the last write of a key wins, and a read of a held entry sees it."""
    store = cache.Store(tmp_path / "c")
    store.hold()
    a, b = cache.key("a"), cache.key("b")
    store.put(a, {"v": 1})
    store.put(a, {"v": 2})
    store.put_meta(b, {"m": 1})
    store.put_packed(b, {"p": [0]}, ["text"])
    assert not any(p.is_file() for p in (tmp_path / "c").rglob("*"))
    assert store.get_meta(b) == {"m": 1}  # written first, then read
    assert store.get(a) == {"v": 2}
    assert cache.Store(tmp_path / "c").get(a) == {"v": 2}  # the read wrote it
    assert cache.Store(tmp_path / "c").get_packed(b) is None  # not read: still held
    store.put(a, {"v": 3})
    store.flush()
    fresh = cache.Store(tmp_path / "c")
    assert fresh.get(a) == {"v": 3}
    assert fresh.get_packed(b) == ({"p": [0]}, ["text"])
    store.put(a, {"v": 4})  # after flush, writes go through again
    assert fresh.get(a) == {"v": 4}
    built: list[int] = []
    store.hold()
    store.later("facts", lambda: built.append(1))
    store.later("facts", lambda: built.append(2))  # the last one of a name wins
    assert built == []
    store.flush()
    store.later("facts", lambda: built.append(3))  # not held: now
    assert built == [2, 3]


def test_a_cache_is_empty_until_its_first_entry_in_memory_or_on_disk(tmp_path: Path) -> None:
    """What lets a cold render start builds before their keys are known (pipeline/repo.py):
    only a directory no entry was ever written to, and no entry held in memory."""
    store = cache.Store(tmp_path / "c")
    assert store.empty() and store.check() is None and store.empty()  # the probe is gone
    assert cache.RenderCache(store).empty() and cache.RenderCache(None).empty()
    in_memory = cache.RenderCache(None)
    in_memory.put("a" * 64, {"x": 1})
    assert not in_memory.empty()
    cache.RenderCache(store).put("b" * 64, {"x": 1})
    assert not cache.Store(tmp_path / "c").empty() and not cache.RenderCache(store).empty()
    store.clear()
    assert cache.Store(tmp_path / "c").info().entries == 0
