"""Run the hazard rules over a render (lint) or a change (diff); suppress; sort; count gates.

Suppressions come from the config (`suppress: [{rule, id, target, reason}]`): a finding is
suppressed by an entry whose every given key matches: `rule` exactly, `id` exactly or as an
fnmatch glob, `target` (glob) against the finding's cluster, a Kustomization name, a
`cluster/kustomization` pair or a document id. Suppressed findings are kept, with the reason,
so outputs can say what was silenced.

A diff reports the diff rules' findings plus the lint findings the change introduces, both
sides computed from the renders alone (no source files), so a checkout that no longer exists
cannot make an old finding look new; "introduced" compares what findings are about (their
objects, after following renames and moves), not their ids (see introduced.py). Both sides'
lint findings are kept by their inputs (`FindingsMemo`), and each side's per-target facts
(facts.py) are read from the other side's where targets are equal, so the head of a
one-file diff costs what changed.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core.config import DEFAULT_KUBE_VERSION, Config, Preinstalled, Suppression
from harness.core.errors import ConfigError, HarnessError
from harness.core.memo import IdentityMemo
from harness.core.model import Snapshot, TargetResult
from harness.core.outside import ClusterDecl
from harness.flux.ksgraph import ClusterGraph
from harness.hazards.context import DiffContext, LintContext, Rule
from harness.hazards.facts import Facts
from harness.hazards.finding import SEVERITIES, Finding, at_least
from harness.hazards.rules import (
    api_reject,
    crd_order,
    depends_on,
    duplicate_owner,
    helm_crd_upgrade,
    helm_delete,
    overlay_parity,
    ownership_race,
    prune_delete,
    sole_namespace_declarer,
    substitution,
)

if TYPE_CHECKING:  # the inventory is scanned, and introduced.py runs, only when lint passes do
    from harness.cache.store import RenderCache
    from harness.compare.snapshots import Comparison
    from harness.hazards.preinstalled import Inventory, Provision

RULES: tuple[Rule, ...] = (
    prune_delete.RULE,
    ownership_race.RULE,
    sole_namespace_declarer.RULE,
    duplicate_owner.RULE,
    substitution.RULE,
    depends_on.RULE,
    crd_order.RULE,
    overlay_parity.RULE,
    helm_delete.RULE,
    helm_crd_upgrade.RULE,
    api_reject.RULE,
)
RULE_IDS = tuple(r.id for r in RULES)
# a base render's lint findings, by (its id, the inventory, the rules): see `diff`
BaseMemo = dict[tuple[object, ...], tuple[Snapshot, list[Finding]]]
# a rule's head-side findings known without running it (rule id, cluster or None for the
# whole side), or None: see `diff` and `same_views`
Reuse = Callable[[str, str | None], list[Finding] | None]


@dataclass(frozen=True)
class Suppressed:
    finding: Finding
    reason: str


@dataclass(frozen=True)
class Gate:
    """A counted check: `substitution gate: 103 assertions, 0 hazards`."""

    name: str
    assertions: int
    hazards: int

    @property
    def line(self) -> str:
        return f"{self.name} gate: {self.assertions} assertions, {self.hazards} hazards"


@dataclass(frozen=True)
class HazardReport:
    findings: tuple[Finding, ...] = ()
    suppressed: tuple[Suppressed, ...] = ()
    gates: tuple[Gate, ...] = ()
    unchecked: tuple[str, ...] = field(default=())
    preinstalled: tuple[Provision, ...] = ()
    # api-reject's count of what it had no schema for, one line per cluster (lint only)
    not_judged: tuple[str, ...] = ()

    def at_least(self, threshold: str) -> list[Finding]:
        return [f for f in self.findings if at_least(f.severity, threshold)]

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for f in self.findings if f.severity == s) for s in SEVERITIES}


def _matches(s: Suppression, f: Finding) -> bool:
    if s.rule and s.rule != f.rule:
        return False
    if s.id and not (s.id == f.id or fnmatch.fnmatchcase(f.id, s.id)):
        return False
    if s.target:
        names = [f.cluster or "", *f.kustomizations, *f.documents]
        names += [f"{f.cluster}/{k}" for k in f.kustomizations if f.cluster]
        if not any(n and fnmatch.fnmatchcase(n, s.target) for n in names):
            return False
    return True


def check_suppressions(rules: Sequence[Suppression], known: Sequence[str] = RULE_IDS) -> None:
    """A misspelt rule would silently suppress nothing: refuse it."""
    for s in rules:
        if s.rule and s.rule not in known:
            raise ConfigError(
                f"suppress: unknown rule {s.rule!r} (rules: {', '.join(sorted(known))})"
            )


def suppress(
    findings: Iterable[Finding], rules: Sequence[Suppression]
) -> tuple[list[Finding], list[Suppressed]]:
    check_suppressions(rules)
    kept: list[Finding] = []
    silenced: list[Suppressed] = []
    for f in findings:
        match = next((s for s in rules if _matches(s, f)), None)
        if match is None:
            kept.append(f)
        else:
            silenced.append(Suppressed(f, match.reason))
    return kept, silenced


def _unique(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per id (the first wins: diff findings are listed before lint ones)."""
    seen: dict[str, Finding] = {}
    for f in findings:
        seen.setdefault(f.id, f)
    return sorted(seen.values(), key=Finding.sort_key)


def _run(rule: Rule, fn: str, ctx: LintContext | DiffContext) -> list[Finding]:
    try:
        if fn == "lint":
            assert isinstance(ctx, LintContext)
            return rule.check_snapshot(ctx)
        assert isinstance(ctx, DiffContext)
        return rule.check_diff(ctx)
    except HarnessError:
        raise
    except Exception as exc:  # a rule bug must not hide the other rules' findings
        raise HarnessError(f"hazard rule {rule.id} failed: {type(exc).__name__}: {exc}") from exc


def lint_findings(ctx: LintContext, rules: Sequence[Rule] = RULES) -> list[Finding]:
    """Every lint finding of one render, unsuppressed and unsorted."""
    out: list[Finding] = []
    for rule in rules:
        out.extend(_run(rule, "lint", ctx))
    return out


def _report(
    findings: list[Finding], suppressions: Sequence[Suppression], gates_from: LintContext | None
) -> HazardReport:
    kept, silenced = suppress(_unique(findings), suppressions)
    gates: tuple[Gate, ...] = ()
    unchecked: tuple[str, ...] = ()
    provisions: tuple[Provision, ...] = ()
    not_judged: tuple[str, ...] = ()
    if gates_from is not None:
        # info findings are latent (a literal `${}` nothing substitutes), not hazards
        hazards = sum(
            1 for f in kept if f.rule == substitution.RULE.id and at_least(f.severity, "warning")
        )
        gates = (Gate("substitution", substitution.assertions(gates_from), hazards),)
        unchecked = tuple(sorted(set(substitution.analyse(gates_from).unchecked)))
        provisions = gates_from.preinstalled.provisions
        not_judged = tuple(gates_from.memo.get(api_reject.NOT_JUDGED, ()))
    return HazardReport(tuple(kept), tuple(silenced), gates, unchecked, provisions, not_judged)


def lint(
    snapshot: Snapshot,
    *,
    repo: Path | None = None,
    goldens: Path | None = None,
    sources: dict[str, str] | None = None,
    suppressions: Sequence[Suppression] = (),
    rules: Sequence[Rule] = RULES,
    preinstalled: Sequence[Preinstalled] = (),
    config_file: str = "harness.yaml",
    strict: bool = True,
    outside_git: Mapping[str, ClusterDecl] | None = None,
    kube_version: str = DEFAULT_KUBE_VERSION,
    kube_versions: Mapping[str, str] | None = None,
    cache: RenderCache | None = None,
) -> HazardReport:
    """`harness lint`: the lint rules over one render."""
    ctx = LintContext(
        snapshot,
        repo=repo,
        goldens=goldens,
        sources=dict(sources or {}),
        outside_git=dict(outside_git or {}),
        preinstalled_entries=tuple(preinstalled),
        config_file=config_file,
        strict=strict,
        kube_version=kube_version,
        kube_versions=dict(kube_versions or {}),
        cache=cache,
    )
    report = _report(lint_findings(ctx, rules), suppressions, ctx)
    if repo is not None and cache is not None:
        _keep_file_facts(repo, cache)
    return report


def _keep_file_facts(repo: Path, cache: Any) -> None:
    """What the preinstalled scan learnt of the repo's files (core/filefacts.py), kept in
    the cache directory beside the render's own facts, so that the next process knows
    them by their stat instead of reading every file again."""
    from harness.core import run
    from harness.pipeline.repo import keep_file_facts

    keep_file_facts(repo, cache, run.files())


def diff(
    base: Snapshot,
    head: Snapshot,
    *,
    head_repo: Path | None = None,
    goldens: Path | None = None,
    sources: dict[str, str] | None = None,
    suppressions: Sequence[Suppression] = (),
    comparison: Comparison | None = None,
    rules: Sequence[Rule] = RULES,
    new_lint: bool = True,
    preinstalled: Sequence[Preinstalled] = (),
    strict: bool = True,
    config_file: str = "harness.yaml",
    outside_git: Mapping[str, ClusterDecl] | None = None,
    base_memo: BaseMemo | None = None,
    kube_version: str = DEFAULT_KUBE_VERSION,
    memo: FindingsMemo | None = None,
    kube_versions: Mapping[str, str] | None = None,
) -> HazardReport:
    """`diff`/`check`/`comment`: diff rules, plus lint findings the change introduces.

    What exists before Flux is read once, from the head's repo and config, for every side.
    `base_memo` keeps the base side's lint findings for a caller that diffs one base
    against many heads (`harness watch`): they depend only on the base render, the
    inventory and the settings, which the memo's key holds. `memo`: lint findings kept
    by their inputs across runs (`FindingsMemo`)."""
    src = dict(sources or {})
    decls = dict(outside_git or {})
    kubes = dict(kube_versions or {})
    head_ctx = LintContext(
        head,
        repo=head_repo,
        goldens=goldens,
        sources=src,
        outside_git=decls,
        preinstalled_entries=tuple(preinstalled),
        config_file=config_file,
        strict=strict,
        kube_version=kube_version,
        kube_versions=kubes,
        scan_cache=memo.cache if memo is not None else None,
    )
    ctx = DiffContext(base=base, head=head, head_lint=head_ctx, comparison=comparison)
    findings: list[Finding] = []
    for rule in rules:
        findings.extend(_run(rule, "diff", ctx))
    if new_lint and not same_render(base, head):
        from harness.hazards import introduced

        inventory: Inventory = head_ctx.preinstalled  # scanned only when the lint passes run
        if memo is not None and head_repo is not None:
            _keep_file_facts(head_repo, memo.cache)
        # both sides' graphs are derived once, shared by every context of this diff
        base_graphs, head_graphs = ctx.base_graphs, head_ctx.graphs
        base_digests, head_digests = Digests(base), Digests(head)
        if same_identities(base, head, (base_digests, head_digests)):
            names = introduced.Renames()  # nothing came or went: nothing was renamed
        else:
            names = introduced.renames(base, head, base_graphs, head_graphs)
        # Rules whose findings in a cluster come from that cluster's graph alone run only
        # for the clusters whose render changed: elsewhere both sides find the same. Not
        # when documents or namespaces were renamed (renames apply across clusters).
        scoped: set[str] | None = None
        if not names.documents and not names.namespaces:
            scoped = changed_clusters(base, head, (base_digests, head_digests))

        settings = canonical(
            (sorted(src.items()), decls, strict, kube_version, kubes, inventory.provisions)
        )

        # each side's per-target facts, read from the other side's where targets are equal
        cache = memo.cache if memo is not None else None
        base_digest, head_digest = base_digests.whole, head_digests.whole
        base_facts = Facts(cache, base_digest, (head_digest,))
        head_facts = Facts(cache, head_digest, (base_digest,), keep_own=False)

        def lint_ctx(
            snapshot: Snapshot, keep: Mapping[str, ClusterGraph], facts: Facts
        ) -> LintContext:
            """A lint pass's context of one side, of the clusters `keep` holds."""
            return LintContext(
                snapshot,
                sources=src,
                outside_git=decls,
                inventory=inventory,
                strict=strict,
                known_graphs=keep,
                kube_version=kube_version,
                kube_versions=kubes,
                facts=facts,
            )

        def side(
            snapshot: Snapshot,
            graphs_: Mapping[str, ClusterGraph],
            facts: Facts,
            digests: Digests,
            reuse: Reuse | None = None,
        ) -> list[Finding]:
            def ctx_for(keep: Mapping[str, ClusterGraph]) -> LintContext:
                return lint_ctx(snapshot, keep, facts)

            try:
                if memo is not None:
                    return memo.side(
                        snapshot, graphs_, rules, scoped, settings, ctx_for, digests, reuse
                    )
                # a rule `reuse` answers for (whole or in every cluster) does not run
                known = [r for r in rules if reuse is not None and reuse(r.id, None) is not None]
                run = [r for r in rules if r not in known]
                out = [f for r in known for f in reuse(r.id, None) or ()] if reuse else []
                if scoped is None:
                    return out + lint_findings(ctx_for(graphs_), run)
                local = [r for r in run if getattr(r, "scope", "") == "cluster"]
                rest = [r for r in run if r not in local]
                kept = {c: g for c, g in graphs_.items() if c in scoped}
                out += lint_findings(ctx_for(graphs_), rest)
                return out + lint_findings(ctx_for(kept), local)
            finally:
                facts.save()

        memo_key = (id(base), inventory.provisions, tuple(r.id for r in rules))
        remembered = base_memo.get(memo_key) if base_memo is not None else None
        if remembered is not None and remembered[0] is base:
            before = _in_scope(remembered[1], rules, scoped)
        elif base_memo is not None:  # kept whole, for heads that change other clusters
            whole = lint_findings(
                LintContext(
                    base,
                    sources=src,
                    outside_git=decls,
                    inventory=inventory,
                    strict=strict,
                    known_graphs=base_graphs,
                    kube_version=kube_version,
                    kube_versions=kubes,
                    facts=base_facts,
                ),
                rules,
            )
            base_facts.save()
            base_memo.clear()
            base_memo[memo_key] = (base, whole)
            before = _in_scope(whole, rules, scoped)
        else:
            before = side(base, base_graphs, base_facts, base_digests)
        # a rule that reads the same of every target the change touched finds in head what
        # it found in base: the incremental paths (a memo) ask that where they have no
        # findings kept; the plain path runs every rule
        same: list[set[str]] = []

        def reuse(rule: str, cluster: str | None) -> list[Finding] | None:
            if not same:
                viewer = lint_ctx(head, head_graphs, head_facts)
                same.append(same_views(rules, base, head, (base_digests, head_digests), viewer))
            if rule not in same[0]:
                return None
            if memo is not None:
                memo.same_views += 1
            return [f for f in before if f.rule == rule and cluster in (None, f.cluster)]

        incremental = memo is not None or base_memo is not None
        bare = _unique(
            side(head, head_graphs, head_facts, head_digests, reuse if incremental else None)
        )
        if memo is not None:
            memo.computed_facts += base_facts.computed + head_facts.computed
            memo.reused_facts += base_facts.reused + head_facts.reused
        # what a failed head render hides is unknown, not introduced (a rule's `unjudged`)
        hidden: set[str] = set()
        for rule in rules:
            unjudged = getattr(rule, "unjudged", None)
            if unjudged is not None:
                hidden |= unjudged(ctx)
        bare = [f for f in bare if f.id not in hidden]
        new = introduced.introduced(before, bare, names)
        if new:
            wanted = {f.rule for f in new}  # the repo-aware pass words what is reported
            again = [r for r in rules if r.id in wanted]
            aware = dataclasses.replace(
                head_ctx, inventory=inventory, known_graphs=head_graphs, facts=head_facts
            )
            full = {f.id: f for f in lint_findings(aware, again)} if head_repo else {}
            findings.extend(full.get(f.id) or f for f in new)
    return _report(findings, suppressions, None)


def changed_clusters(
    base: Snapshot, head: Snapshot, digests: tuple[Digests, Digests] | None = None
) -> set[str]:
    """Clusters with a target whose lint input differs between the sides (or exists on one);
    compared by the targets' digests when the caller has both sides' (`Digests`)."""
    out: set[str] = set()
    for name in base.results.keys() | head.results.keys():
        b, h = base.results.get(name), head.results.get(name)
        if b is not None and h is not None:
            if digests is not None:
                if digests[0].targets[name] == digests[1].targets[name]:
                    continue
            elif _lint_input(b) == _lint_input(h):
                continue
        for r in (b, h):
            if r is not None and r.target.cluster is not None:
                out.add(r.target.cluster)
    for name in base.skipped.keys() ^ head.skipped.keys():
        out.add(name.split("/", 1)[0])
    return out


def same_identities(base: Snapshot, head: Snapshot, digests: tuple[Digests, Digests]) -> bool:
    """Whether both sides have the same targets, each rendering or failing alike and the
    same documents' identities in the same order: then no document, namespace or
    Kustomization came or went, and `introduced.renames` finds none (asked of the targets
    whose digests differ alone, not of every document of both sides)."""
    if base.results.keys() != head.results.keys():
        return False
    for name, h in head.results.items():
        if digests[0].targets[name] == digests[1].targets[name]:
            continue
        b = base.results[name]
        if b.ok != h.ok or [d.id for d in b.documents] != [d.id for d in h.documents]:
            return False
    return True


def same_views(
    rules: Sequence[Rule],
    base: Snapshot,
    head: Snapshot,
    digests: tuple[Digests, Digests],
    ctx: LintContext,
) -> set[str]:
    """Ids of the rules whose lint findings are the same on both sides, judged from the
    targets the change touched alone: every such target reads the same to the graph and
    to the rule (`_structure`, and the rule's `view(ctx, result)`, what it reads of a
    target beyond that), and no target or skipped target came or went. A rule without a
    `view` is never among them; nor is one whose view fails (it runs, and says why)."""
    viewers = [r for r in rules if getattr(r, "view", None) is not None]
    if not viewers or base.results.keys() != head.results.keys():
        return set()
    if base.skipped != head.skipped:
        return set()
    changed = [n for n in head.results if digests[0].targets[n] != digests[1].targets[n]]
    pairs = [(base.results[n], head.results[n]) for n in changed]
    if any(_structure(b) != _structure(h) for b, h in pairs):
        return set()
    out: set[str] = set()
    for rule in viewers:
        view = rule.view  # type: ignore[attr-defined]
        try:
            if all(view(ctx, b) == view(ctx, h) for b, h in pairs):
                out.add(rule.id)
        except Exception:  # the rule runs and reports its own failure
            continue
    return out


# document groups whose bytes the graph (ksgraph) and the source resolution read
_STRUCTURAL_GROUPS = frozenset(
    {"kustomize.toolkit.fluxcd.io", "source.toolkit.fluxcd.io", "fluxcd.controlplane.io"}
)


def _structure(r: TargetResult) -> tuple[object, ...]:
    """What every lint rule reads of a target through the context: the target, its
    failure, duplicates and notes, its documents' identities and apiVersions, the bytes of
    the Flux documents the graph is made of (Kustomizations, ResourceSets, sources) and of
    a HelmRelease what the graph takes (`spec.dependsOn`, `spec.kubeConfig`)."""
    from harness.flux.ksgraph import is_helm_release, parse

    docs: list[object] = []
    for d in r.documents:
        if d.id.group in _STRUCTURAL_GROUPS:
            docs.append((d.id, d.api_version, d.sha256))
        elif is_helm_release(d.id):
            spec = parse(d).get("spec")
            spec = spec if isinstance(spec, dict) else {}
            docs.append((d.id, d.api_version, spec.get("dependsOn"), spec.get("kubeConfig")))
        else:
            docs.append((d.id, d.api_version))
    t = r.target
    return (t.name, t.kind, t.cluster, r.error, r.duplicates, r.notes, docs)


def _in_scope(
    findings: list[Finding], rules: Sequence[Rule], scoped: set[str] | None
) -> list[Finding]:
    """A whole side's findings as `diff` computes them for the changed clusters."""
    if scoped is None:
        return findings
    local = {r.id for r in rules if getattr(r, "scope", "") == "cluster"}
    return [f for f in findings if f.rule not in local or f.cluster in scoped]


def same_render(base: Snapshot, head: Snapshot) -> bool:
    """Whether two renders are the same input to every lint rule: then a diff introduces no
    lint finding and both lint passes (about half of a warm no-change `check`) are skipped.

    Lint rules see only the snapshot's results and skipped targets (plus sources, inventory
    and strictness, which both sides share), so equal ones give equal findings; with no
    renames between equal renders, `introduced` finds nothing new among equal lists (every
    head finding's atoms are known at its own severity). tests/hazards/test_engine.py checks
    this against the full path. A target's `path` and `helm` info are left out: goldens
    record neither, no lint rule reads `helm` (only the helm diff rules do) and `path` is
    read only to scan a repo, which these lint passes never get.
    """
    if base.skipped != head.skipped or base.results.keys() != head.results.keys():
        return False
    return all(_lint_input(r) == _lint_input(head.results[n]) for n, r in base.results.items())


def _lint_input(r: TargetResult) -> tuple[object, ...]:
    t = r.target
    return (t.name, t.kind, t.cluster, r.documents, r.error, r.duplicates, r.notes)


def diff_for(
    cfg: Config,
    base: Snapshot,
    head: Snapshot,
    head_repo: Path | None,
    base_memo: BaseMemo | None = None,
    memo: FindingsMemo | None = None,
) -> HazardReport:
    """`diff` for a command: the config's sources, goldens and suppressions."""
    return diff(
        base,
        head,
        base_memo=base_memo,
        memo=memo,
        head_repo=head_repo,
        goldens=cfg.goldens,
        sources=cfg.sources,
        suppressions=cfg.suppress,
        preinstalled=cfg.preinstalled,
        strict=cfg.strict,
        config_file=cfg.source_file.name if cfg.source_file else "harness.yaml",
        outside_git=cfg.outside_git,
        kube_version=cfg.helm_kube_version,
        kube_versions=cfg.helm_kube_versions,
    )


def lint_for(
    cfg: Config, snapshot: Snapshot, repo: Path | None, cache: RenderCache | None = None
) -> HazardReport:
    """`lint` for a command or an API call: the config's sources, goldens, suppressions and
    each cluster's Kubernetes version, so every caller judges one render alike."""
    return lint(
        snapshot,
        repo=repo,
        goldens=cfg.goldens,
        sources=cfg.sources,
        suppressions=cfg.suppress,
        preinstalled=cfg.preinstalled,
        config_file=cfg.source_file.name if cfg.source_file else "harness.yaml",
        strict=cfg.strict,
        outside_git=cfg.outside_git,
        kube_version=cfg.helm_kube_version,
        kube_versions=cfg.helm_kube_versions,
        cache=cache,
    )


class FindingsMemo:
    """Lint findings kept by their inputs, in the render cache: a rule's findings over a
    whole side by that side's digest, a cluster-scoped rule's (`scope = "cluster"`: its
    findings in a cluster come from that cluster's graph alone) per cluster by the digest
    of that cluster's targets. A diff then runs a rule only where its inputs are new: for
    the base side a later diff has seen, nothing; for the head, the clusters it changed.
    Any rule is covered as it is registered, keyed by its id; the keys hold harness's own
    code (cache/store.py), so a changed rule never reuses an older one's findings, and the
    settings in a canonical order (`canonical`). A missing or malformed entry is computed
    again. Where a rule does run, over a head that mostly equals its base, its per-target
    facts come from the base's (facts.py): `computed_facts` and `reused_facts` count them."""

    KIND = "lint-findings"

    def __init__(self, cache: Any) -> None:
        self.cache = cache  # a cache_mod.RenderCache (hazards may not name the type here)
        self.hits = 0
        self.misses = 0
        self.computed_facts = 0  # per-target facts (facts.py) derived, and found kept
        self.reused_facts = 0
        self.same_views = 0  # head-side rule runs a diff left out (`same_views`)

    def side(
        self,
        snapshot: Snapshot,
        graphs: Mapping[str, ClusterGraph],
        rules: Sequence[Rule],
        scoped: set[str] | None,
        settings: str,
        ctx_for: Callable[[Mapping[str, ClusterGraph]], LintContext],
        digests: Digests | None = None,
        reuse: Reuse | None = None,
    ) -> list[Finding]:
        """What `diff`'s lint pass of one side finds (the clusters in `scoped` for the
        cluster-scoped rules; every cluster when None). `digests`: the side's, when the
        caller has them. `reuse`: asked on a miss for findings known without running the
        rule (kept then like computed ones)."""
        out: list[Finding] = []
        whole: LintContext | None = None
        if digests is None:
            digests = Digests(snapshot)
        side_digest = digests.whole
        for rule in rules:
            if getattr(rule, "scope", "") == "cluster":
                continue
            key = self._key(rule.id, settings, side_digest)
            found = self._get(key)
            if found is None:
                found = reuse(rule.id, None) if reuse is not None else None
                if found is None:
                    whole = whole or ctx_for(graphs)
                    found = lint_findings(whole, [rule])
                self._put(key, found)
            out.extend(found)
        local = [r for r in rules if getattr(r, "scope", "") == "cluster"]
        for cluster, graph in graphs.items():
            if scoped is not None and cluster not in scoped:
                continue
            one: LintContext | None = None
            cluster_digest = digests.of(cluster)
            for rule in local:
                key = self._key(rule.id, settings, cluster_digest)
                found = self._get(key)
                if found is None:
                    found = reuse(rule.id, cluster) if reuse is not None else None
                    if found is None:
                        one = one or ctx_for({cluster: graph})
                        found = lint_findings(one, [rule])
                    self._put(key, found)
                out.extend(found)
        return out

    def _key(self, rule: str, settings: str, digest: str) -> str:
        from harness.cache.store import key

        return key(self.KIND, rule, settings, digest)

    def _get(self, key: str) -> list[Finding] | None:
        payload = self.cache.get(key)
        rows = payload.get("findings") if payload is not None else None
        if not isinstance(rows, list):
            self.misses += 1
            return None
        try:
            found = [_finding(row) for row in rows]
        except (TypeError, ValueError):
            self.misses += 1
            return None
        self.hits += 1
        return found

    def _put(self, key: str, findings: list[Finding]) -> None:
        rows = [
            [f.id, f.rule, f.severity, f.cluster, [*f.kustomizations], [*f.documents], f.message]
            for f in findings
        ]
        for row, f in zip(rows, findings, strict=True):
            row.append(f.cause)
        self.cache.put(key, {"findings": rows})


def canonical(value: object) -> str:
    """`repr` with every set and mapping in sorted order: the same text in every process.

    A memo key made of `repr` would differ between processes wherever it holds a set (a
    set's order follows string hashing, which Python randomises per process), so a fresh
    `harness diff` would never find what the previous one kept."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = ", ".join(
            f"{f.name}={canonical(getattr(value, f.name))}" for f in dataclasses.fields(value)
        )
        return f"{type(value).__name__}({fields})"
    if isinstance(value, Mapping):
        items = sorted(f"{canonical(k)}: {canonical(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, set | frozenset):
        return "{" + ", ".join(sorted(canonical(v) for v in value)) + "}"
    if isinstance(value, list | tuple):
        inner = ", ".join(canonical(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return repr(value)


def _finding(row: Any) -> Finding:
    fid, rule, severity, cluster, kustomizations, documents, message, cause = row
    texts = (fid, rule, message, cause)
    if not all(isinstance(t, str) for t in texts) or severity not in SEVERITIES:
        raise ValueError("not a finding")
    if cluster is not None and not isinstance(cluster, str):
        raise ValueError("not a finding")
    return Finding(
        fid,
        rule,
        severity,
        cluster,
        tuple(str(k) for k in kustomizations),
        tuple(str(d) for d in documents),
        message,
        cause,
    )


def _digest(snapshot: Snapshot, cluster: str | None) -> str:
    """What the lint rules read of `snapshot` (every target's `_lint_input` and the
    skipped targets), of one cluster's targets when `cluster` is given."""
    digests = Digests(snapshot)
    return digests.whole if cluster is None else digests.of(cluster)


class Digests:
    """`_digest` of a side, whole and of every cluster, from one pass over its targets
    (each target digested once however many digests it is part of)."""

    def __init__(self, snapshot: Snapshot) -> None:
        import hashlib

        whole = hashlib.sha256()
        clusters: dict[str, Any] = {}
        self.targets: dict[str, bytes] = {}  # each target's part
        for name, r in snapshot.results.items():
            part = self.targets[name] = _target_digest(name, r)
            whole.update(part)
            whole.update(b"\0")
            cluster = r.target.cluster
            if cluster is not None:
                h = clusters.get(cluster)
                if h is None:
                    h = clusters[cluster] = hashlib.sha256()
                h.update(part)
                h.update(b"\0")
        for name, reason in snapshot.skipped.items():
            text = repr((name, reason)).encode()
            whole.update(text)
            cluster = name.split("/", 1)[0]
            h = clusters.get(cluster)
            if h is None:
                h = clusters[cluster] = hashlib.sha256()
            h.update(text)
        self.whole = whole.hexdigest()
        self._clusters: dict[str, str] = {c: str(h.hexdigest()) for c, h in clusters.items()}
        self._empty = hashlib.sha256().hexdigest()

    def of(self, cluster: str) -> str:
        return self._clusters.get(cluster, self._empty)


_TARGET_DIGESTS: IdentityMemo[bytes] = IdentityMemo("lint input digests", 65536)


def _target_digest(name: str, r: TargetResult) -> bytes:
    """One target's part of `_digest`, once per (shared) result: a diff digests each side
    whole and per cluster."""
    found = _TARGET_DIGESTS.get(r, name)
    if found is None:
        import hashlib

        t = r.target
        # plain strings' repr (C), not the dataclasses' generated one (the slow part): six
        # strings a document, in one flat list (no tuple per document)
        docs: list[str] = []
        for d in r.documents:
            i = d.id
            docs += (i.group, i.kind, i.namespace, i.name, d.api_version, d.sha256)
        dups = [(d.group, d.kind, d.namespace, d.name) for d in r.duplicates]
        text = repr((name, t.kind, t.cluster, docs, r.error, dups, r.notes))
        found = _TARGET_DIGESTS.put(r, hashlib.sha256(text.encode()).digest(), name)
    return found
