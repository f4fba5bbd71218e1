"""`--shard K/N`: split one run's targets over N CI jobs; `harness merge` puts them together.

The CI matrix is the distributed engine; harness stays a single-process tool. Every shard
computes the same plan from the same checkout, so every target belongs to exactly one shard:

- a *unit* is what one shard renders whole: each path target alone; the Flux Kustomizations
  of one cluster together when `clusters:` lists the clusters (a cluster's discovery and
  its substitution variables need every Kustomization of the cluster); all Flux targets
  together when clusters are found automatically (whether a candidate directory is a cluster
  at all depends on what the other candidates' Kustomizations reach);
- units are assigned greedily, most expensive first, to the least loaded shard (cost: one
  kustomize run per path target plus its files; one run per Flux Kustomization a cluster
  declares); a unit the plan has never seen (a target only one side of a diff has) goes
  to a shard by a stable hash of its name;
- a shard renders and compares only its units, and its JSON output carries both sides of
  its part in full (`shard` key, `harness.shard/v1`), so `harness merge` rebuilds the
  whole run and analyses it exactly as the unsharded run would: moves between targets,
  cross-cluster hazards and the verdict come out identical.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.core.config import Config
from harness.core.errors import HarnessError
from harness.core.model import DocId, Document, RendererInfo, Snapshot, Target, TargetResult
from harness.flux import clusters as clusters_mod
from harness.flux.includes import MANIFEST_SUFFIXES, Includes, manifest_files

SCHEMA = "harness.shard/v1"
FLUX_UNIT = "flux"
_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class ShardError(HarnessError):
    """A bad --shard value or shard files that do not make one run."""


@dataclass(frozen=True)
class ShardSpec:
    """Shard `index` (1-based) of `total`."""

    index: int
    total: int

    @classmethod
    def parse(cls, text: str) -> ShardSpec:
        match = _SPEC.match(text)
        if match is None:
            raise ShardError(f"--shard {text!r}: expected K/N, e.g. 2/4")
        index, total = int(match.group(1)), int(match.group(2))
        if total < 1 or not 1 <= index <= total:
            raise ShardError(f"--shard {text}: K must be between 1 and N (N >= 1)")
        return cls(index, total)

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


@dataclass(frozen=True)
class Unit:
    name: str
    cost: float


@dataclass(frozen=True)
class Plan:
    """Which shard owns which unit, and how targets map to units."""

    spec: ShardSpec
    owners: Mapping[str, int]
    explicit_clusters: bool
    cluster_units: Mapping[str, str] = field(default_factory=dict)  # cluster name -> unit
    # repo-relative cluster dir -> unit: the same at a diff's two sides (two checkouts)
    dir_units: Mapping[str, str] = field(default_factory=dict)

    def owner(self, unit: str) -> int:
        found = self.owners.get(unit)
        return found if found is not None else stable_shard(unit, self.spec.total)

    def unit_of(self, target: Target) -> str:
        if target.kind == "path":
            return path_unit(target.name)
        if not self.explicit_clusters:
            return FLUX_UNIT
        cluster = target.cluster or ""
        return self.cluster_units.get(cluster, cluster_unit(cluster))

    def owns(self, target: Target) -> bool:
        return self.owner(self.unit_of(target)) == self.spec.index

    def owns_flux(self) -> bool:
        """Whether this shard renders any Flux target at all."""
        if not self.explicit_clusters:
            return self.owner(FLUX_UNIT) == self.spec.index
        return any(self.owner(u) == self.spec.index for u in self.dir_units.values())

    def owns_cluster_dir(self, directory: Path, repo: Path) -> bool:
        """Whether this shard builds the configured cluster at `directory` of `repo`."""
        unit = self.dir_units.get(_relative(directory, repo))
        return unit is not None and self.owner(unit) == self.spec.index

    def restrict(self, snapshot: Snapshot) -> Snapshot:
        """This shard's part of a snapshot (goldens, or a side rendered before planning)."""
        kept = {n: r for n, r in snapshot.results.items() if self.owns(r.target)}
        return replace(snapshot, results=kept)

    def owned_units(self) -> list[str]:
        return sorted(u for u, k in self.owners.items() if k == self.spec.index)


class Sharder:
    """One `--shard` for one command: the plan is made once and shared by both diff sides."""

    def __init__(self, spec: ShardSpec) -> None:
        self.spec = spec
        self._plan: Plan | None = None

    def plan(self, config: Config, path_targets: Sequence[Target]) -> Plan:
        if self._plan is None:
            self._plan = make_plan(self.spec, config, path_targets)
        return self._plan

    @property
    def current(self) -> Plan | None:
        return self._plan


def path_unit(name: str) -> str:
    return f"path:{name}"


def cluster_unit(name: str) -> str:
    return f"cluster:{name}"


def stable_shard(unit: str, total: int) -> int:
    digest = hashlib.sha256(unit.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % total + 1


def make_plan(spec: ShardSpec, config: Config, path_targets: Sequence[Target]) -> Plan:
    """Units with their costs, assigned most expensive first to the least loaded shard."""
    incl = Includes()
    units = [Unit(path_unit(t.name), _path_cost(t.path, incl)) for t in path_targets]
    explicit = bool(config.clusters)
    cluster_units: dict[str, str] = {}
    dir_units: dict[str, str] = {}
    declared = _declared_kustomizations(config)
    if explicit:
        named = clusters_mod.names(clusters_mod.configured(config), config.repo)
        for cluster in named:
            unit = cluster_unit(cluster.name)
            cluster_units[cluster.name] = unit
            dir_units[_relative(cluster.path, config.repo)] = unit
            others = [c.path for c in named if c.path != cluster.path]
            cost = sum(n for f, n in declared.items() if not _under_any(f, others))
            units.append(Unit(unit, 1.0 + cost))
    elif declared:
        units.append(Unit(FLUX_UNIT, 1.0 + sum(declared.values())))
    return Plan(spec, assign(units, spec.total), explicit, cluster_units, dir_units)


def assign(units: Iterable[Unit], total: int) -> dict[str, int]:
    """Longest-processing-time-first greedy partition; ties go to the lower shard index."""
    load = [0.0] * total
    owners: dict[str, int] = {}
    for unit in sorted(units, key=lambda u: (-u.cost, u.name)):
        index = min(range(total), key=lambda i: (load[i], i))
        load[index] += unit.cost
        owners[unit.name] = index + 1
    return owners


def _path_cost(directory: Path, incl: Includes) -> float:
    """One kustomize run plus a little per file it reads (process start dominates)."""
    try:
        files = len(manifest_files(incl.closure([directory])))
    except OSError:
        files = 0
    return 1.0 + 0.05 * files


def _declared_kustomizations(config: Config) -> dict[Path, int]:
    """Flux Kustomization documents per repo file: the cost of building a cluster."""
    found: dict[Path, int] = {}
    skip = config.goldens.resolve()
    for dirpath, dirnames, filenames in os.walk(config.repo):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and (here / d).resolve() != skip
        )
        for name in filenames:
            if not name.endswith(MANIFEST_SUFFIXES):
                continue
            try:
                text = (here / name).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if clusters_mod.declares_flux_kustomization(text):
                found[here / name] = max(1, text.count("kustomize.toolkit.fluxcd.io/"))
    return found


def _relative(path: Path, repo: Path) -> str:
    try:
        return path.relative_to(repo).as_posix()
    except ValueError:
        return str(path)


def _under_any(path: Path, directories: Iterable[Path]) -> bool:
    return any(path.is_relative_to(d) for d in directories)


# -- the `shard` block of a shard's JSON output ------------------------------------------


def block(
    plan: Plan,
    verb: str,
    sides: Mapping[str, Snapshot],
    repo: Path,
    extra: Mapping[str, Any],
    same_inputs: Iterable[str] = (),
) -> dict[str, Any]:
    """What `harness merge` needs from one shard: its part of both sides, in full, and (diff)
    which of its failed targets read the same inputs on both sides (pre-existing errors)."""
    return {
        "schema": SCHEMA,
        "verb": verb,
        "index": plan.spec.index,
        "total": plan.spec.total,
        "units": plan.owned_units(),
        "options": dict(extra),
        "sides": {name: snapshot_json(s, repo) for name, s in sides.items()},
        "same_inputs": sorted(same_inputs),
    }


def snapshot_json(snapshot: Snapshot, repo: Path) -> dict[str, Any]:
    return {
        "label": snapshot.label,
        "renderer": {
            "name": snapshot.renderer.name,
            "version": snapshot.renderer.version,
            "argv": list(snapshot.renderer.argv),
        },
        "results": [_result_json(r, repo) for r in snapshot.results.values()],
    }


def _result_json(result: TargetResult, repo: Path) -> dict[str, Any]:
    target = result.target
    try:
        path = target.path.relative_to(repo).as_posix()
        relative = True
    except ValueError:
        path, relative = str(target.path), False
    return {
        "name": target.name,
        "kind": target.kind,
        "path": path,
        "relative": relative,
        "cluster": target.cluster,
        "sha256": result.sha256,
        "error": result.error,
        "notes": list(result.notes),
        "duplicates": [_docid_json(d) for d in result.duplicates],
        "documents": [
            {
                "id": _docid_json(d.id),
                "apiVersion": d.api_version,
                "text": d.text,
                "sha256": d.sha256,
            }
            for d in result.documents
        ],
    }


def _docid_json(doc_id: DocId) -> list[str]:
    return [doc_id.group, doc_id.kind, doc_id.namespace, doc_id.name]


def snapshot_from_json(data: Mapping[str, Any], repo: Path) -> Snapshot:
    info = data["renderer"]
    results: dict[str, TargetResult] = {}
    for item in data["results"]:
        path = repo / item["path"] if item["relative"] else Path(item["path"])
        target = Target(item["name"], item["kind"], path, item["cluster"])
        docs = tuple(
            Document(DocId(*d["id"]), d["apiVersion"], d["text"], d["sha256"])
            for d in item["documents"]
        )
        results[target.name] = TargetResult(
            target,
            documents=docs,
            sha256=item["sha256"],
            error=item["error"],
            duplicates=tuple(DocId(*d) for d in item["duplicates"]),
            notes=tuple(item["notes"]),
        )
    renderer = RendererInfo(info["name"], info["version"], tuple(info["argv"]))
    return Snapshot(renderer=renderer, results=results, label=data["label"])


@dataclass(frozen=True)
class Merged:
    """N shard blocks put back together: one run's both sides, as the unsharded run had them."""

    verb: str
    options: Mapping[str, Any]
    sides: Mapping[str, Snapshot]
    same_inputs: frozenset[str] = frozenset()


def merge_blocks(blocks: Sequence[tuple[str, Mapping[str, Any]]], repo: Path) -> Merged:
    """Check that the blocks are shards 1..N of one run, then join their sides."""
    if not blocks:
        raise ShardError("merge: no shard files given")
    first_name, first = blocks[0]
    verb, total, options = first["verb"], first["total"], first["options"]
    seen: dict[int, str] = {}
    for name, b in blocks:
        if b.get("schema") != SCHEMA:
            raise ShardError(f"{name}: not a {SCHEMA} shard block")
        if (b["verb"], b["total"], b["options"]) != (verb, total, options):
            raise ShardError(
                f"{name}: shard of another run than {first_name} "
                f"({b['verb']} {b['index']}/{b['total']} vs {verb} {first['index']}/{total})"
            )
        if b["index"] in seen:
            raise ShardError(f"{name}: shard {b['index']}/{total} also in {seen[b['index']]}")
        seen[b["index"]] = name
    missing = sorted(set(range(1, total + 1)) - set(seen))
    if missing:
        raise ShardError(f"merge: shard(s) {', '.join(f'{i}/{total}' for i in missing)} missing")
    sides: dict[str, Snapshot] = {}
    for side in first["sides"]:
        parts = [snapshot_from_json(b["sides"][side], repo) for _, b in blocks]
        results: dict[str, TargetResult] = {}
        for part in parts:
            for target_name, result in part.results.items():
                if target_name in results:
                    raise ShardError(f"merge: target {target_name} is in two shards")
                results[target_name] = result
        renderer = next((p.renderer for p in parts if p.results), parts[0].renderer)
        sides[side] = Snapshot(renderer, dict(sorted(results.items())), parts[0].label)
    same = frozenset(str(n) for _, b in blocks for n in b.get("same_inputs") or ())
    return Merged(verb, options, sides, same)
