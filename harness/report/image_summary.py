"""A diff's "Images" summary, laid out for every output: text lines, the diff JSON's `images[]`
entries and the words the comment's block uses. First in each: renovate PRs are mostly image
bumps, and which image moved where is what a reviewer reads first. Written references are
shown as written, digests shortened in text (whole in JSON).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.compare.images import ImageChange, version_line
from harness.core.imageref import ImageRef

PLACES_SHOWN = 3  # workloads named per change line before "and N more"


def ref_dict(ref: ImageRef) -> dict[str, Any]:
    """A reference as written and its parts (`identity`: what references compare by)."""
    return {
        "image": ref.text,
        "registry": ref.registry or None,
        "repository": ref.repository,
        "identity": ref.identity,
        "tag": ref.tag or None,
        "digest": ref.digest or None,
    }


def places_phrase(change: ImageChange, limit: int | None = PLACES_SHOWN) -> str:
    """`apps/Deployment/media/sonarr in dev, prod; ... and 2 more` (path targets' without
    a cluster)."""
    clusters: dict[str, list[str]] = {}
    for p in change.places:
        clusters.setdefault(str(p.workload), [])
        if p.cluster and p.cluster not in clusters[str(p.workload)]:
            clusters[str(p.workload)].append(p.cluster)
    names = [f"{w} in {', '.join(cs)}" if cs else w for w, cs in clusters.items()]
    if limit is not None and len(names) > limit:
        return "; ".join(names[:limit]) + f"; and {len(names) - limit} more"
    return "; ".join(names)


def change_line(change: ImageChange, limit: int | None = PLACES_SHOWN) -> str:
    """One image change: `ghcr.io/org/app: 1.0 -> 1.1 (apps/Deployment/ns/app in main)`."""
    return f"{change.repository}: {version_line(change)} ({places_phrase(change, limit)})"


def summary_title(changes: Sequence[ImageChange]) -> str:
    """`images: 2 changes in 6 containers` (OCIRepository artifacts counted apart)."""
    places = [p for c in changes for p in c.places]
    artifacts = sum(1 for p in places if p.workload.kind == "OCIRepository")
    where = [_plural(len(places) - artifacts, "container")] if len(places) > artifacts else []
    where += [_plural(artifacts, "OCI artifact")] if artifacts else []
    n = len(changes)
    return f"images: {n} change{'s' if n != 1 else ''} in {' and '.join(where)}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def change_dict(change: ImageChange) -> dict[str, Any]:
    """One `images[]` entry of the diff JSON (docs/json-schemas.md)."""
    return {
        "op": change.op,
        "repository": change.repository,
        "before": ref_dict(change.before) if change.before is not None else None,
        "after": ref_dict(change.after) if change.after is not None else None,
        "workloads": [
            {"cluster": p.cluster or None, "workload": str(p.workload), "container": p.container}
            for p in change.places
        ],
        "clusters": [c for c in change.clusters if c],
    }
