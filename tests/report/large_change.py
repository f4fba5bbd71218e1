"""A large synthetic change (default 5,000 changed documents) over Flux Kustomizations of two
clusters, as real snapshots: the analysis, graph and HTML report run on it unmodified."""

from __future__ import annotations

from harness.core.model import Snapshot
from tests.diffkit import cm, ks, snapshot

SECRET = (
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: tenant-00\n"
    "stringData:\n  token: {token}\n"
)


def _side(documents: int, per: int, value: str, token: str, label: str) -> Snapshot:
    spec: dict[str, list[str]] = {}
    tiers = max(1, documents // (2 * per))
    for cluster in ("dev", "prod"):
        spec[f"{cluster}/flux-system/flux-system"] = [
            ks(
                f"tier-{k:02d}",
                f"./tier-{k:02d}",
                depends=[f"tier-{k - 1:02d}"] if k else [],
                owner="flux-system",
            )
            for k in range(tiers)
        ]
        for k in range(tiers):
            docs = [
                cm(f"cm-{i:04d}", f"tenant-{k:02d}", owner=f"tier-{k:02d}", v=value, i=str(i))
                for i in range(per)
            ]
            if k == 0:
                docs.append(SECRET.format(token=token))
            spec[f"{cluster}/flux-system/tier-{k:02d}"] = docs
    return snapshot(spec, label=label)


def sides(documents: int = 5000, per: int = 100) -> tuple[Snapshot, Snapshot]:
    """Base and head where every ConfigMap value and the one Secret's token change."""
    base = _side(documents, per, "old", "base-token-s3cr3t", "HEAD~1")
    head = _side(documents, per, "new", "head-token-s3cr3t", "working tree")
    return base, head
