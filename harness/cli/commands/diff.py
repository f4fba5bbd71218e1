"""`harness diff`: render two sides (git refs, the working tree, or the goldens), explain every
difference, and judge it against `--expect` / `--fail-on-diff`.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

from harness.cli import errors, shared

# the render, compare and hazard modules load when a diff runs, not when the verb is built
# (`harness diff --help`; watch, comment and merge importing this module)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import TypeVar

    from harness.cache import store as cache_mod
    from harness.cli.context import Common
    from harness.compare import gate
    from harness.compare.analyze import Analysis, Origin
    from harness.compare.coverage import BlindSpots
    from harness.core.config import Config
    from harness.core.model import Snapshot
    from harness.hazards import engine as hazard_engine
    from harness.hazards.engine import HazardReport
    from harness.pipeline import gitref, refsnap
    from harness.render.kustomize import Renderer

    Later = Callable[[], Sequence[str] | None]  # a value a background thread may still make
    T = TypeVar("T")

DEFAULT_BASE = "HEAD"


@dataclass(frozen=True)
class DiffOptions:
    """The verb's own options, as typed."""

    base: str | None = None
    head: str | None = None
    goldens: bool = False
    expect: gate.Expectation | None = None
    fail_on_diff: bool = False
    fail_on_hazard: str | None = None
    unified: int | None = None
    output: str = "text"
    fail_on_preexisting_error: bool = False
    html: Path | None = None  # also write the HTML report here


def options_from(
    base: str | None,
    head: str | None,
    use_goldens: bool,
    expect: shared.Expect | None,
    fail_on_diff: bool,
    fail_on_hazard: shared.Severity | None,
    unified: int | None,
    output: str = "text",
    *,
    fail_on_preexisting_error: bool = False,
    html: Path | None = None,
) -> DiffOptions:
    """`diff`, `watch` and `comment` take the same sides and gates."""
    return DiffOptions(
        base=base,
        head=head,
        goldens=use_goldens,
        expect=expect.value if expect is not None else None,
        fail_on_diff=fail_on_diff,
        fail_on_hazard=shared.value(fail_on_hazard),
        unified=unified,
        output=output,
        fail_on_preexisting_error=fail_on_preexisting_error,
        html=html,
    )


app = typer.Typer(add_completion=False)


@app.command(cls=shared.Command)
def diff(
    base: shared.BaseOpt = None,
    head: shared.HeadOpt = None,
    use_goldens: shared.GoldensOpt = False,
    expect: Annotated[shared.Expect | None, shared.expect()] = None,
    fail_on_diff: shared.FailOnDiffOpt = False,
    fail_on_hazard: shared.FailOnHazardOpt = None,
    unified: Annotated[int | None, shared.unified()] = None,
    output: shared.CiOutputOpt = shared.CiOutput.text,
    fail_on_preexisting_error: shared.FailOnPreexistingOpt = False,
    html: shared.HtmlOpt = None,
    shard: shared.ShardOpt = None,
    repo: shared.RepoOpt = None,
    config: shared.ConfigOpt = None,
    kubectl: shared.KubectlOpt = None,
    kustomize: shared.KustomizeOpt = None,
    jobs: shared.JobsOpt = 0,
    timeout: shared.TimeoutOpt = None,
    strict: shared.StrictOpt = None,
    quiet: shared.QuietOpt = False,
    verbose: shared.VerboseOpt = False,
    helm: shared.HelmOpt = None,
    helm_binary: shared.HelmBinaryOpt = None,
    offline: shared.OfflineOpt = False,
    no_cache: shared.NoCacheOpt = False,
    cache_dir: shared.CacheDirOpt = None,
    debug: shared.DebugOpt = False,
) -> None:
    """Render two sides and explain every difference (exit 0 ok, 1 expectation failed, 2 error)."""
    c = shared.common(
        repo=repo,
        config=config,
        kubectl=kubectl,
        kustomize=kustomize,
        jobs=jobs,
        timeout=timeout,
        strict=strict,
        quiet=quiet,
        verbose=verbose,
        helm=helm,
        helm_binary=helm_binary,
        offline=offline,
        no_cache=no_cache,
        cache_dir=cache_dir,
    )
    options = options_from(
        base,
        head,
        use_goldens,
        expect,
        fail_on_diff,
        fail_on_hazard,
        unified,
        output.value,
        fail_on_preexisting_error=fail_on_preexisting_error,
        html=html,
    )
    errors.run(lambda: run(shared.sharded(c, shard), options), debug)


def config_at(cfg: Config, repo: Path) -> Config:
    """The same settings applied to a checkout of the repo at another place."""
    return replace(cfg, repo=repo, goldens=_rebase(cfg.goldens, cfg.repo, repo))


def _rebase(path: Path, old_root: Path, new_root: Path) -> Path:
    try:
        return new_root / path.relative_to(old_root)
    except ValueError:
        return path


def _side(
    common: Common,
    cfg: Config,
    renderer: Renderer,
    ref: str | None,
    cache: cache_mod.RenderCache | None = None,
    resolved: gitref.Resolved | None = None,
    changed: Later | None = None,
) -> Side:
    """Render a ref from a temporary checkout (gone when this returns), or the working tree;
    with the input digests of its failed targets and which of the `changed` files no
    rendered target reads, both taken while the tree exists.

    Both sides share `cache`: a target whose inputs are the same on both is rendered once.
    A ref's file digests come from its git blob ids.
    """
    from harness.cli.context import render_snapshot
    from harness.compare.analyze import Origin
    from harness.pipeline import gitref, worktree

    if ref is None:
        origin = Origin("worktree", "working tree", path=str(cfg.repo))
        snapshot = render_snapshot(
            common,
            cfg,
            renderer,
            label=origin.label,
            cache=cache,
            skips=False,
            index=worktree.Keeper(),
        )
        return _finish(cfg, snapshot, origin, changed)
    key = _ref_key(common, cfg, renderer, ref, cache, resolved)
    files = changed() if changed is not None else None
    found = _remembered(cache, key, ref) if not files else None  # a head needs its tree
    if found is not None:
        return found
    blobs = cache is not None
    with gitref.checkout_ahead(
        cfg.repo, ref, blobs=blobs, background=False, resolved=resolved
    ) as co:
        return _ref_side(common, cfg, renderer, co(), cache, key, changed)


def ref_side(
    common: Common,
    cfg: Config,
    renderer: Renderer,
    ref: str,
    cache: cache_mod.RenderCache | None,
    resolved: gitref.Resolved,
) -> tuple[Snapshot, Origin, dict[str, str]]:
    """One ref's side on its own (`harness watch` holds it while the tree changes)."""
    side = _side(common, cfg, renderer, ref, cache, resolved)
    return side.snapshot, side.origin, side.digests


def _ref_side(
    common: Common,
    cfg: Config,
    renderer: Renderer,
    exported: gitref.Exported,
    cache: cache_mod.RenderCache | None,
    key: refsnap.RefKey | None = None,
    changed: Later | None = None,
) -> Side:
    """`_side` of a ref, from its checkout (still there while this runs); remembered under
    `key` when every target's render is a function of the tree (pipeline/refsnap.py)."""
    from harness.cli.context import render_snapshot
    from harness.compare.analyze import Origin
    from harness.pipeline import refsnap

    checkout = exported.checkout
    origin = Origin("git", checkout.label, ref=checkout.ref, sha=checkout.sha)
    at = config_at(cfg, checkout.repo)
    remote_before = cache.uncacheable if cache is not None else 0
    snapshot = render_snapshot(
        common,
        at,
        renderer,
        label=origin.label,
        cache=cache,
        blob_index=exported.blobs,
        skips=False,
    )
    side = _finish(at, snapshot, origin, changed)
    if key is not None and cache is not None and cache.uncacheable == remote_before:
        refsnap.remember(cache, key, snapshot, at.repo, side.digests)
    return side


class Side(NamedTuple):
    """One rendered side: its snapshot, where it came from, the input digests of its failed
    targets (inputs.py) and the changed files no rendered target reads (coverage.py)."""

    snapshot: Snapshot
    origin: Origin
    digests: dict[str, str]
    uncovered: tuple[str, ...] = ()
    under_failed: dict[str, int] = {}  # noqa: RUF012 - a NamedTuple default, never mutated


def _finish(cfg: Config, snapshot: Snapshot, origin: Origin, changed: Later | None) -> Side:
    """What must be read from a side's tree while it still exists."""
    from harness.compare import inputs
    from harness.compare.coverage import uncovered, under_failed

    digests = inputs.side_digests(cfg.repo, snapshot)
    hidden = under_failed(cfg.repo, snapshot)
    files = changed() if changed is not None else None
    if not files:
        return Side(snapshot, origin, digests, (), hidden)
    missed = uncovered(cfg.repo, snapshot, files, cfg.goldens)
    return Side(snapshot, origin, digests, missed, hidden)


def _ref_key(
    common: Common,
    cfg: Config,
    renderer: Renderer,
    ref: str,
    cache: cache_mod.RenderCache | None,
    resolved: gitref.Resolved | None,
) -> refsnap.RefKey | None:
    """Where the whole render of `ref` is remembered; None when it cannot be (no cache,
    helm targets, a shard, or a checkout that may differ from the tree)."""
    from harness.core.errors import HarnessError
    from harness.pipeline import gitref, refsnap
    from harness.render.seam import known_version

    if cache is None or resolved is None or cfg.helm or common.shard is not None:
        return None
    sha = resolved.shas.get(ref)
    if sha is None:
        return None
    if cache.store is not None:
        known_version(renderer, cache.store)  # a version an earlier run asked is not asked
    try:
        sub = gitref.subdirectory(resolved.root, cfg.repo)
        info = renderer.info()
    except HarnessError:
        return None
    identity = f"{info.name}\0{info.version}\0{' '.join(renderer.flags)}"
    options = {"strict": cfg.strict, "flux": True, "selection": ""}
    return refsnap.ref_key(
        cfg, resolved.root, sub, sha, renderer_identity=identity, options=options
    )


def _remembered(
    cache: cache_mod.RenderCache | None, key: refsnap.RefKey | None, ref: str
) -> Side | None:
    """A ref's remembered render, as `_ref_side` would have made it (its skipped targets
    are said with the run's, once)."""
    from harness.compare.analyze import Origin
    from harness.pipeline import refsnap

    if cache is None or key is None:
        return None
    origin = Origin("git", f"{ref} ({key.sha[:12]})", ref=ref, sha=key.sha)
    found = refsnap.load(cache, key, origin.label)
    if found is None:
        return None
    snapshot, digests = found
    return Side(snapshot, origin, digests)


def _sides(
    common: Common,
    cfg: Config,
    renderer: Renderer,
    base_ref: str,
    head_ref: str | None,
    cache: cache_mod.RenderCache | None,
    stack: contextlib.ExitStack,
    resolved: gitref.Resolved | None = None,
    changed: Later | None = None,
) -> tuple[Side, Side]:
    """Both sides of a ref diff. Against the working tree, git exports the base in the
    background while the working tree renders (the head goes first; through the shared
    cache either order gives the same results), and the export is removed in the background
    while the caller analyses (`stack` holds it until then). A base remembered whole
    (pipeline/refsnap.py) needs no checkout at all."""
    from harness.pipeline import gitref, refsnap

    if head_ref is not None:
        base = _side(common, cfg, renderer, base_ref, cache, resolved)
        return base, _side(common, cfg, renderer, head_ref, cache, resolved, changed)
    key = _ref_key(common, cfg, renderer, base_ref, cache, resolved)
    head: Side | None = None
    if cache is not None and key is not None and refsnap.stored(cache, key):
        # read in a thread while the tree renders: the render mostly waits on kustomize
        base_key = key
        pending = _later(lambda: _remembered(cache, base_key, base_ref))
        head = _side(common, cfg, renderer, None, cache, changed=changed)
        remembered = pending()
        if remembered is not None:
            return remembered, head
        # the entry was not whole after all: the ref is rendered from a checkout
    co = stack.enter_context(
        gitref.checkout_ahead(cfg.repo, base_ref, blobs=cache is not None, resolved=resolved)
    )
    if head is None:
        head = _side(common, cfg, renderer, None, cache, changed=changed)
    base = _ref_side(common, cfg, renderer, co(), cache, key)
    co.release()
    return base, head


def _later(make: Callable[[], T]) -> Callable[[], T]:
    """`make()` started in a thread of its own (core/parallel.py); the returned callable
    waits for it and returns its value or raises what it raised, on every call."""
    from harness.core import parallel

    box: list[Any] = []

    def work() -> None:
        try:
            box.append((True, make()))
        except BaseException as exc:  # re-raised in the caller's thread
            box.append((False, exc))

    worker = parallel.thread(work, name="harness-later", daemon=True)
    worker.start()

    def result() -> T:
        worker.join()
        ok, value = box[0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    return result


@dataclass(frozen=True)
class DiffRun:
    """Everything a report of one diff needs (`diff` prints it, `comment` lays it out)."""

    analysis: Analysis
    verdict: gate.Verdict
    base: Origin
    head: Origin
    code: int
    elapsed: float = 0.0
    config: Config | None = None
    hazards: HazardReport | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # JSON keys of a shard (its block)
    blind: BlindSpots | None = None  # what the run did not judge (coverage.py)


def run(common: Common, options: DiffOptions) -> int:
    return report(compute(common, options), options, common.verbose)


def _chart_metadata(config: Config | None) -> tuple[str, ...]:
    """The labels and annotations a chart bump is said once by (config helm.chart_metadata)."""
    from harness.core.config import DEFAULT_CHART_METADATA

    return DEFAULT_CHART_METADATA if config is None else config.helm_chart_metadata


def report(result: DiffRun, options: DiffOptions, verbose: bool = False) -> int:
    """Print one diff in the chosen output; the exit code. A shard's block joins the JSON."""
    from harness.report import formats

    view = formats.DiffResult(
        result.analysis,
        result.verdict,
        result.base,
        result.head,
        result.code,
        result.elapsed,
        result.hazards,
        expect=options.expect,
        fail_on_diff=options.fail_on_diff,
        fail_on_preexisting_error=options.fail_on_preexisting_error,
        extra=result.extra,
        blind=result.blind,
        verbose=verbose,
        chart_metadata=_chart_metadata(result.config),
    )
    formats.report("diff", options.output, view, options.html)
    return result.code


def compute(common: Common, options: DiffOptions) -> DiffRun:
    """Render both sides, analyse, judge; no output."""
    from harness.cache import replay
    from harness.cache import store as cache_mod
    from harness.cli.context import (
        cache_settings,
        confined,
        load_config,
        print_skipped,
        renderer_for,
        warn_cache,
    )
    from harness.compare import inputs
    from harness.compare.analyze import Origin, ignore_patterns
    from harness.core.errors import HarnessError
    from harness.pipeline import gitref

    started = time.monotonic()
    confined(common, options.html, "--html")
    cfg = load_config(common)
    ignore_patterns(cfg)  # a bad pattern fails before anything renders
    if options.goldens and (options.base or options.head):
        raise HarnessError(
            "--goldens compares the goldens with the working tree: drop --base/--head"
        )
    if options.unified is not None and options.unified < 0:
        raise HarnessError("--unified must be >= 0")
    base_ref = None if options.goldens else (options.base or DEFAULT_BASE)
    resolved = None
    if base_ref is not None or options.head is not None:
        # a typo fails before anything renders; the checkouts reuse git's answers
        refs = [ref for ref in (base_ref, options.head) if ref is not None]
        resolved = gitref.resolve_refs(cfg.repo, refs)
        replay.note_git(cfg.repo, resolved.root, resolved.shas)  # a replayed diff checks them
    renderer = renderer_for(common, cfg)
    changed: Later | None = None  # files the change touches, to say which no target reads
    if base_ref is not None and resolved is not None:
        head_sha = resolved.shas[options.head] if options.head is not None else None
        # git lists them in the background while the base's key and render are looked up
        root, base_sha = resolved.root, resolved.shas[base_ref]
        changed = _later(lambda: gitref.changed_files(root, cfg.repo, base_sha, head_sha))
    base_digests: dict[str, str] = {}  # goldens hold no failures: nothing is pre-existing
    if options.goldens:
        from harness.pipeline import goldens

        base = goldens.to_snapshot(goldens.load(cfg.goldens), cfg.repo)
        base_origin = Origin("goldens", f"goldens ({cfg.goldens})", path=str(cfg.goldens))
    cache = cache_mod.open_cache(cache_settings(common))
    warn_cache(cache)
    with contextlib.ExitStack() as stack:  # a base export being removed meanwhile
        try:
            # one cache for both sides: the head reuses every base result whose inputs match
            if base_ref is not None:
                pair = _sides(
                    common, cfg, renderer, base_ref, options.head, cache, stack, resolved, changed
                )
                base, base_origin, base_digests = pair[0][:3]
                head_side = pair[1]
            else:
                head_side = _side(common, cfg, renderer, options.head, cache)
        finally:
            if cache is not None:
                cache.close()
        head, head_origin, head_digests = head_side.snapshot, head_side.origin, head_side.digests
        from harness.compare.coverage import BlindSpots

        same_inputs = inputs.same_inputs(base_digests, head_digests)
        blind = BlindSpots(  # before a shard's restriction
            dict(head.skipped), head_side.uncovered, head_side.under_failed
        )
        extra: dict[str, Any] = {}
        plan = common.shard.current if common.shard is not None else None
        if plan is None and common.shard is not None:  # nothing rendered (--goldens vs no targets)
            plan = common.shard.plan(cfg, [])
        if plan is not None:  # this shard's part; `harness merge` rebuilds the whole run
            from harness.pipeline import shard

            base, head = plan.restrict(base), plan.restrict(head)
            same_inputs = frozenset(n for n in same_inputs if n in base.results)
            recorded = {
                **{k: v for k, v in asdict(options).items() if k not in ("output", "html")},
                "base_origin": asdict(base_origin),
                "head_origin": asdict(head_origin),
                "not_judged": asdict(blind),  # the whole head's, the same in every shard
            }
            sides = {"base": base, "head": head}
            extra = {"shard": shard.block(plan, "diff", sides, cfg.repo, recorded, same_inputs)}
        print_skipped(common, base, head)
        memo_cache = cache_mod.open_cache(cache_settings(common)) if cache is not None else None
        try:
            from harness.hazards import engine as hazard_engine

            memo = hazard_engine.FindingsMemo(memo_cache) if memo_cache is not None else None
            result = conclude(
                cfg, options, base, head, base_origin, head_origin, started, same_inputs, memo=memo
            )
        finally:
            if memo_cache is not None:
                memo_cache.close()
        return replace(result, extra=extra, blind=blind)


def conclude(
    cfg: Config,
    options: DiffOptions,
    base: Snapshot,
    head: Snapshot,
    base_origin: Origin,
    head_origin: Origin,
    started: float,
    same_inputs: frozenset[str] = frozenset(),
    base_memo: hazard_engine.BaseMemo | None = None,
    *,
    memo: hazard_engine.FindingsMemo | None = None,
) -> DiffRun:
    """Analyse two rendered sides and judge them (shared with `harness merge`); `same_inputs`
    names the failed targets whose inputs did not change (their errors are pre-existing)."""
    from harness.cli.context import hazard_gate
    from harness.compare import gate
    from harness.compare.analyze import analyze, ignore_patterns
    from harness.hazards import engine as hazard_engine

    ignore = ignore_patterns(cfg)
    analysis = analyze(
        base,
        head,
        ignore=ignore,
        unified=options.unified,
        same_inputs=same_inputs,
        repairs=base_origin.source != "goldens",  # a broken goldens store stays an error
    )
    verdict = gate.judge(analysis)
    hazards = hazard_engine.diff_for(
        cfg, base, head, cfg.repo if options.head is None else None, base_memo, memo
    )
    code = hazard_gate(
        gate.exit_code(
            analysis,
            verdict,
            options.expect,
            options.fail_on_diff,
            fail_on_preexisting=options.fail_on_preexisting_error,
        ),
        hazards,
        options.fail_on_hazard,
    )
    elapsed = time.monotonic() - started
    return DiffRun(analysis, verdict, base_origin, head_origin, code, elapsed, cfg, hazards)
