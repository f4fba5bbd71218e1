"""memo: memos are declarations (a name, a bound); their data lives in the current run."""

from __future__ import annotations

from harness.core import memo
from harness.core.run import Run


def test_a_memo_is_bounded_and_cleared_when_full() -> None:
    m: memo.Memo[str, int] = memo.Memo("test", 2)
    with Run().entered():
        m.put("a", 1)
        m.put("b", 2)
        assert (m.get("a"), m.get("b"), len(m)) == (1, 2, 2)
        m.put("c", 3)  # full: starts over rather than growing
        assert (m.get("a"), m.get("c"), len(m)) == (None, 3, 1)
        assert m.lookup("a", -1) == -1


def test_an_identity_memo_never_answers_for_another_object() -> None:
    m: memo.IdentityMemo[str] = memo.IdentityMemo("test", 8)
    a, b = ["x"], ["x"]
    with Run().entered():
        m.put(a, "for a")
        m.put(a, "for a, flagged", True)
        assert m.get(a) == "for a" and m.get(a, True) == "for a, flagged"
        assert m.get(b) is None  # equal, not the same object


def test_a_memo_holds_no_data_itself_each_run_has_its_own() -> None:
    m: memo.Memo[str, int] = memo.Memo("test", 4)
    first, second = Run(), Run()
    with first.entered():
        m.put("k", 1)
    with second.entered():
        assert (m.get("k"), len(m)) == (None, 0)
        m.put("k", 2)
    with first.entered():
        assert m.get("k") == 1
    assert first.existing(m) == {"k": 1} and second.existing(m) == {"k": 2}


def test_outside_a_run_a_memo_remembers_nothing() -> None:
    m: memo.Memo[str, int] = memo.Memo("test", 4)
    m.put("k", 1)
    assert (m.get("k"), m.lookup("k", -1), len(m)) == (None, -1, 0)
