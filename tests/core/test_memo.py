"""memo: one bounded, registered mechanism for the run's in-memory memos."""

from __future__ import annotations

import os
import time
from pathlib import Path

from harness.core import memo, parsed


def test_a_memo_is_bounded_and_cleared_when_full() -> None:
    m: memo.Memo[str, int] = memo.Memo("test", 2)
    m.put("a", 1)
    m.put("b", 2)
    assert (m.get("a"), m.get("b"), len(m)) == (1, 2, 2)
    m.put("c", 3)  # full: starts over rather than growing
    assert (m.get("a"), m.get("c"), len(m)) == (None, 3, 1)
    assert m.lookup("a", -1) == -1


def test_an_identity_memo_never_answers_for_another_object() -> None:
    m: memo.IdentityMemo[str] = memo.IdentityMemo("test", 8)
    a, b = ["x"], ["x"]
    m.put(a, "for a")
    m.put(a, "for a, flagged", True)
    assert m.get(a) == "for a" and m.get(a, True) == "for a, flagged"
    assert m.get(b) is None  # equal, not the same object


def test_reset_empties_every_registered_memo_so_no_run_sees_the_last_ones() -> None:
    text = "kind: ConfigMap\n"
    first = parsed.load(text)
    assert parsed.load(text) is first
    own: memo.Memo[str, int] = memo.Memo("test", 4)
    own.put("k", 1)
    memo.reset()
    assert own.get("k") is None
    again = parsed.load(text)
    assert again == first and again is not first  # parsed anew after the reset


def test_file_facts_hold_while_the_stat_holds(tmp_path: Path) -> None:
    """A fact about a file is answered only while its size, mtime, ctime and inode are what
    they were; a file modified within RACY_SECONDS is not remembered at all."""
    facts = memo.FileFacts()
    path = tmp_path / "f.yaml"
    path.write_text("a: 1\n")
    old = time.time() - 10
    os.utime(path, (old, old))
    at, known = facts.get(str(path), "blob")
    assert at is not None and known is None
    facts.put(str(path), "blob", at, "id-1")
    assert facts.get(str(path), "blob") == (at, "id-1")
    assert facts.get(str(path), "other") == (at, None)
    path.write_text("a: 2\n")  # same size, new content, new mtime
    now, known = facts.get(str(path), "blob")
    assert known is None and now != at
    facts.put(str(path), "blob", now, "id-2")  # just modified: racy, not remembered
    assert facts.get(str(path), "blob")[1] is None
    rows = facts.export(str(tmp_path))
    fresh = memo.FileFacts()
    fresh.load([*rows, ["bad"], "junk"])
    assert fresh.get(str(path), "blob")[1] is None
    assert facts.get(str(tmp_path / "absent"), "blob") == (None, None)


def test_file_facts_survive_reset_and_travel_between_processes(tmp_path: Path) -> None:
    facts = memo.FileFacts()
    path = tmp_path / "k.yaml"
    path.write_text("kind: Component\n")
    old = time.time() - 10
    os.utime(path, (old, old))
    at, _ = facts.get(str(path), "component")
    facts.put(str(path), "component", at, "1")
    memo.reset()
    assert facts.get(str(path), "component")[1] == "1"
    other = memo.FileFacts()
    other.load(facts.export(str(tmp_path)))
    assert other.get(str(path), "component")[1] == "1"
    assert other.export("/elsewhere") == []
