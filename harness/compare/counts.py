"""The one counting model behind every diff output (text, comment, JSON, JUnit, GitHub).

Stated in docs/json-schemas.md ("Counting"); every headline number is a field here:

- **Targets.** Every target of either side is exactly one of: `targets_changed` (compared
  and its documents differ: changed, new or gone), `targets_unchanged`, `targets_error` (a
  render error that counts), `targets_preexisting_error` (failing the same way on both
  sides with unchanged inputs) or `targets_not_judged` (helm targets whose chart cannot be
  fetched on either side, inputs unchanged). `targets_compared` = changed + unchanged.
  `targets_repaired` counts, among the changed, the targets that failed on the base and
  render on the head (their documents are added) or are gone.
- **Documents** are the objects one target renders, Flux Kustomization objects included,
  counted once per target that renders them (`documents_before`/`documents_after`, the
  per-target tables).
- **Changes** are what the verdict judges: documents (Flux Kustomization objects apart)
  changed, added, removed, or moved with changes, and, counted apart, Flux Kustomization
  objects whose change is real; `change_targets` are the targets those changes are in. A
  relocation or move with the same content is no change. Headlines never add documents and
  Kustomizations together.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from harness.compare.analyze import Analysis

if TYPE_CHECKING:  # annotations only: `check` prints without loading the diff gate
    from harness.compare.gate import Verdict

DOCUMENT_COUNTERS = ("changed", "added", "removed", "moved_with_changes")


@dataclass(frozen=True)
class Counts:
    targets: int
    targets_compared: int
    targets_changed: int
    targets_unchanged: int
    targets_error: int
    targets_preexisting_error: int
    targets_repaired: int
    documents_before: int
    documents_after: int
    changed: int
    added: int
    removed: int
    moved_with_changes: int
    kustomizations_changed: int
    duplicates: int
    change_targets: int
    targets_not_judged: int = 0

    @property
    def documents_changing(self) -> int:
        return self.changed + self.added + self.removed + self.moved_with_changes

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "documents_changing": self.documents_changing}


def count(analysis: Analysis, verdict: Verdict) -> Counts:
    targets = analysis.targets
    preexisting = {p.target for p in analysis.preexisting}
    errors = {e.target for e in analysis.errors}
    tally = verdict.tally
    document_targets = {
        r.target for r in verdict.reasons if r.target is not None and r.counter in DOCUMENT_COUNTERS
    }
    changed = sum(1 for t in targets if t.differs)
    unchanged = sum(1 for t in targets if t.status == "match")
    return Counts(
        targets=len(targets),
        targets_compared=changed + unchanged,
        targets_changed=changed,
        targets_unchanged=unchanged,
        targets_error=len(errors),
        targets_preexisting_error=len(preexisting),
        targets_repaired=len(analysis.repairs),
        documents_before=sum(t.documents_before or 0 for t in targets),
        documents_after=sum(t.documents_after or 0 for t in targets),
        changed=tally.changed,
        added=tally.added,
        removed=tally.removed,
        moved_with_changes=tally.moved_with_changes,
        kustomizations_changed=tally.flux_kustomizations,
        duplicates=tally.duplicates,
        change_targets=len(document_targets),
        targets_not_judged=sum(len(n.targets) for n in analysis.not_judged),
    )


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def targets_line(c: Counts) -> str:
    """`6 targets: 1 differs, 4 unchanged, 0 render errors, 1 pre-existing error`."""
    line = (
        f"{plural(c.targets, 'target')}: {c.targets_changed} "
        f"{'differs' if c.targets_changed == 1 else 'differ'}, {c.targets_unchanged} unchanged, "
        f"{plural(c.targets_error, 'render error')}"
    )
    if c.targets_preexisting_error:
        line += f", {plural(c.targets_preexisting_error, 'pre-existing error')}"
    if c.targets_not_judged:
        line += f", {c.targets_not_judged} not judged (chart unreachable)"
    if c.targets_repaired:
        line += f", {c.targets_repaired} repaired"
    return line
