"""`compare(base, head)`: per-target statuses by identity and sha256 (what `check` relies on)."""

from __future__ import annotations

from harness.compare.snapshots import compare, compare_documents
from harness.core.documents import parse_stream
from tests.diffkit import cm, snapshot


def test_statuses_and_counts() -> None:
    base = snapshot(
        {"same": [cm("a")], "edit": [cm("a"), cm("b")], "gone": [cm("c")], "bad": [cm("d")]}
    )
    head = snapshot(
        {
            "same": [cm("a")],
            "edit": [cm("a", k="2"), cm("n")],
            "new": [cm("e")],
            "bad": "kustomize: boom",
        }
    )
    by_name = {t.name: t for t in compare(base, head).targets}
    assert {n: t.status for n, t in by_name.items()} == {
        "bad": "error",
        "edit": "changed",
        "gone": "removed",
        "new": "added",
        "same": "match",
    }
    edit = by_name["edit"]
    assert (len(edit.changed), len(edit.added), len(edit.removed), edit.unchanged) == (1, 1, 1, 0)
    assert edit.counts() == "1 changed, 1 added, 1 removed"
    assert by_name["bad"].error == "kustomize: boom" and by_name["bad"].error_side == "head"
    assert by_name["bad"].removed == ()


def test_duplicate_identities_match_by_sha_first() -> None:
    before = parse_stream("---\n".join([cm("x", k="1"), cm("x", k="2")]))
    after = parse_stream("---\n".join([cm("x", k="2"), cm("x", k="3")]))
    added, removed, changed, unchanged = compare_documents(before, after)
    assert unchanged == 1 and not added and not removed
    [(old, new)] = changed
    assert "'1'" in old.text and "'3'" in new.text
