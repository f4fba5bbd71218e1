"""memo: one bounded, registered mechanism for the run's in-memory memos."""

from __future__ import annotations

from harness.cache import memo, parsed


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
