"""Two snapshots -> per-target differences by identity and sha256."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from harness.core.memo import Memo
from harness.core.model import DocId, Document, Snapshot, TargetResult

Status = Literal["match", "changed", "added", "removed", "error"]


@dataclass(frozen=True)
class TargetDiff:
    """One target's difference; `error` set means it is not compared at all.

    `repaired` is the base side's error of a target the head repairs: it failed on the base
    and renders on the head (`added`: every document it renders now arrives) or is gone
    (`removed`, with nothing to remove). Such a target is compared, not an error.
    """

    name: str
    kind: str
    cluster: str | None
    status: Status
    documents_before: int | None = None
    documents_after: int | None = None
    added: tuple[Document, ...] = ()
    removed: tuple[Document, ...] = ()
    changed: tuple[tuple[Document, Document], ...] = ()
    unchanged: int = 0
    error: str | None = None
    error_side: str | None = None
    repaired: str | None = None

    @property
    def differs(self) -> bool:
        return self.status in ("changed", "added", "removed")

    def counts(self) -> str:
        parts = []
        if self.changed:
            parts.append(f"{len(self.changed)} changed")
        if self.added:
            parts.append(f"{len(self.added)} added")
        if self.removed:
            parts.append(f"{len(self.removed)} removed")
        return ", ".join(parts) or "no document changes"


@dataclass(frozen=True)
class Comparison:
    base: Snapshot
    head: Snapshot
    targets: tuple[TargetDiff, ...] = field(default_factory=tuple)

    @property
    def errors(self) -> list[TargetDiff]:
        return [t for t in self.targets if t.status == "error"]

    @property
    def differing(self) -> list[TargetDiff]:
        return [t for t in self.targets if t.differs]


def _by_id(docs: Iterable[Document]) -> dict[DocId, list[Document]]:
    grouped: dict[DocId, list[Document]] = defaultdict(list)
    for doc in docs:
        grouped[doc.id].append(doc)
    return grouped


def compare_documents(
    before: Iterable[Document], after: Iterable[Document]
) -> tuple[list[Document], list[Document], list[tuple[Document, Document]], int]:
    """(added, removed, changed, unchanged) by identity; duplicates are matched by sha first."""
    old, new = _by_id(before), _by_id(after)
    added: list[Document] = []
    removed: list[Document] = []
    changed: list[tuple[Document, Document]] = []
    unchanged = 0
    for doc_id in sorted(set(old) | set(new)):
        olds, news = list(old.get(doc_id, [])), list(new.get(doc_id, []))
        for doc in list(olds):
            match = next((n for n in news if n.sha256 == doc.sha256), None)
            if match is not None:
                olds.remove(doc)
                news.remove(match)
                unchanged += 1
        while olds and news:
            changed.append((olds.pop(0), news.pop(0)))
        removed.extend(olds)
        added.extend(news)
    return added, removed, changed, unchanged


def same_documents(before: TargetResult | None, after: TargetResult | None) -> bool:
    """Whether a target renders, on both sides, the very same documents in the same order
    (identities and sha256, what `compare_documents` matches by) and no error: then nothing
    of it can differ, so its comparison, image uses and ownership need no document walk."""
    if before is None or after is None or not before.ok or not after.ok:
        return False
    old, new = before.documents, after.documents
    if len(old) != len(new) or (before.sha256 and after.sha256 and before.sha256 != after.sha256):
        return False  # a differing stream digest only saves the walk below
    return [a.sha256 for a in old] == [b.sha256 for b in new] and [a.id for a in old] == [
        b.id for b in new
    ]


# (base, head) -> the names `same_targets` gives, per run: the comparison and the image
# changes ask it of the same two sides
_SAME: Memo[tuple[int, int], tuple[Snapshot, Snapshot, frozenset[str]]] = Memo("same targets", 64)


def same_targets(base: Snapshot, head: Snapshot) -> frozenset[str]:
    """The targets for which `same_documents` holds between the two sides."""
    key = (id(base), id(head))
    known = _SAME.get(key)
    if known is not None and known[0] is base and known[1] is head:
        return known[2]
    found = frozenset(
        name for name, r in base.results.items() if same_documents(r, head.results.get(name))
    )
    _SAME.put(key, (base, head, found))
    return found


def compare_target(
    name: str, before: TargetResult | None, after: TargetResult | None, repairs: bool = False
) -> TargetDiff:
    """One target's difference. With `repairs` (a diff of two renders), a base failure the
    head renders or removes is a repair; otherwise (goldens, whose failures are a broken
    store) any failure is an error."""
    ref = after or before
    assert ref is not None
    kind, cluster = ref.target.kind, ref.target.cluster
    if same_documents(before, after):  # most targets of a diff: what the walk below would say
        return _matched(name, ref)
    repaired = None
    if repairs and before is not None and not before.ok and (after is None or after.ok):
        repaired, before = before.error or "render failed", None  # the head repairs it
        if after is None:
            return TargetDiff(name, kind, cluster, "removed", repaired=repaired)
    for side, result in (("base", before), ("head", after)):
        if result is not None and not result.ok:
            return TargetDiff(
                name,
                kind,
                cluster,
                "error",
                documents_before=_count(before),
                documents_after=_count(after),
                error=result.error,
                error_side=side,
            )
    if before is None:
        assert after is not None
        return TargetDiff(
            name,
            kind,
            cluster,
            "added",
            documents_after=len(after.documents),
            added=after.documents,
            repaired=repaired,
        )
    if after is None:
        return TargetDiff(
            name,
            kind,
            cluster,
            "removed",
            documents_before=len(before.documents),
            removed=before.documents,
        )
    added, removed, changed, unchanged = compare_documents(before.documents, after.documents)
    status: Status = "changed" if (added or removed or changed) else "match"
    return TargetDiff(
        name,
        kind,
        cluster,
        status,
        documents_before=len(before.documents),
        documents_after=len(after.documents),
        added=tuple(added),
        removed=tuple(removed),
        changed=tuple(changed),
        unchanged=unchanged,
    )


def _matched(name: str, after: TargetResult) -> TargetDiff:
    """`compare_target` of a target whose documents are the same on both sides."""
    count = len(after.documents)
    return TargetDiff(
        name,
        after.target.kind,
        after.target.cluster,
        "match",
        documents_before=count,
        documents_after=count,
        unchanged=count,
    )


def _count(result: TargetResult | None) -> int | None:
    return len(result.documents) if result is not None and result.ok else None


def compare(base: Snapshot, head: Snapshot, *, repairs: bool = False) -> Comparison:
    """Targets in reading order: path targets, then flux targets, then helm targets, by name.
    `repairs`: see `compare_target` (diff asks for them, check never)."""
    names = set(base.results) | set(head.results)
    same = same_targets(base, head)
    diffs = [
        _matched(n, head.results[n])
        if n in same
        else compare_target(n, base.results.get(n), head.results.get(n), repairs)
        for n in names
    ]
    diffs.sort(key=lambda t: (t.kind != "path", t.kind == "helm", t.name))
    return Comparison(base=base, head=head, targets=tuple(diffs))
