"""`compare(base, head)`: per-target statuses by identity and sha256 (what `check` relies on)."""

from __future__ import annotations

from dataclasses import replace

from harness.compare.snapshots import (
    TargetDiff,
    compare,
    compare_documents,
    compare_target,
    same_documents,
    same_targets,
)
from harness.core.documents import parse_stream
from harness.core.model import TargetResult
from harness.core.run import Run
from tests.diffkit import cm, result, snapshot


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


def _walked(before: TargetResult | None, after: TargetResult | None) -> TargetDiff:
    """compare_target's answer by the document walk, the same-documents shortcut bypassed."""
    if before is None or after is None or not before.ok or not after.ok:
        return compare_target("t", before, after, repairs=True)
    added, removed, changed, unchanged = compare_documents(before.documents, after.documents)
    status = "changed" if (added or removed or changed) else "match"
    return TargetDiff(
        "t",
        after.target.kind,
        after.target.cluster,
        status,
        documents_before=len(before.documents),
        documents_after=len(after.documents),
        added=tuple(added),
        removed=tuple(removed),
        changed=tuple(changed),
        unchanged=unchanged,
    )


def test_the_same_documents_shortcut_is_the_walk() -> None:
    """Only the very same identities and bytes in order skip the walk: a reorder, one
    byte, an identity with the same bytes, a failure each take it."""
    one = result("t", [cm("a"), cm("b")])
    cases = [
        (one, result("t", [cm("a"), cm("b")])),  # equal, other objects: the shortcut
        (one, result("t", [cm("b"), cm("a")])),  # reordered: walked, still a match
        (one, result("t", [cm("a"), cm("b", k="2")])),
        (one, result("t", [cm("a")])),
        (one, result("t", "kustomize: boom")),
        (result("t", "kustomize: boom"), one),  # a repair
    ]
    renamed = one.documents[1]
    other_id = replace(renamed, id=replace(renamed.id, name="c"))  # same bytes, other identity
    cases.append((one, replace(one, documents=(one.documents[0], other_id))))
    for before, after in cases:
        assert compare_target("t", before, after, repairs=True) == _walked(before, after)
    assert same_documents(*cases[0]) and not any(same_documents(*c) for c in cases[1:])


def test_same_targets_are_remembered_per_pair_of_sides_in_a_run() -> None:
    base = snapshot({"same": [cm("a")], "edit": [cm("a")], "bad": "boom"})
    head = snapshot({"same": [cm("a")], "edit": [cm("a", k="2")], "bad": "boom"})
    with Run().entered():
        assert same_targets(base, head) == {"same"}
        assert same_targets(base, head) is same_targets(base, head)
        assert same_targets(head, base) == {"same"}
    assert [t.status for t in compare(base, head).targets] == ["error", "changed", "match"]
