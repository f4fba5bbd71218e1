"""The resident loop answers what a fresh `harness diff` answers, after any sequence of edits.

A small Flux repo shaped like public homelab repos (a cluster ConfigMap feeding postBuild
substitution, apps with targetNamespace, a component, a directory without a kustomization
file) in git; random edits in place, by rename (as editors save), new and deleted files; after
each batch the watcher's answer is compared with `diff.compute` run fresh, with its own
render cache. Directories are made, removed and renamed too, each reported by its own path
alone (a watcher may miss the events of files made in a new directory): the listings and
stats the watcher holds between answers (core/filefacts.py `Held`) must follow.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import watching
from harness.cli.commands import diff as diff_cmd
from harness.cli.context import Common
from harness.core.model import Snapshot
from harness.core.run import PROCESS
from tests.cli.commands.conftest import private_tmpdir
from tests.conftest import configmap
from tests.fluxrepo import ROOT_KS, flux_ks, kustomization
from tests.gitkit import commit_all, init

APPS = ("web", "db", "cache")


def _settings(cluster: str) -> str:
    return (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-settings\n"
        f"  namespace: flux-system\ndata:\n  CLUSTER: {cluster}\n"
    )


def _app_ks(app: str) -> str:
    return flux_ks(app, f"./apps/{app}", target_namespace=app) + (
        "  postBuild:\n    substituteFrom:\n    - kind: ConfigMap\n      name: cluster-settings\n"
    )


def write_repo(root: Path) -> Path:
    files = {
        "clusters/dev/kustomization.yaml": kustomization(
            "flux-system.yaml", "settings.yaml", *(f"{a}.yaml" for a in APPS)
        ),
        "clusters/dev/flux-system.yaml": ROOT_KS,
        "clusters/dev/settings.yaml": _settings("dev"),
        **{f"clusters/dev/{a}.yaml": _app_ks(a) for a in APPS},
        "apps/web/kustomization.yaml": kustomization("cm.yaml"),
        "apps/web/cm.yaml": configmap("web", v="1", cluster="${CLUSTER}"),
        "apps/db/kustomization.yaml": kustomization("cm.yaml", "extra.yaml"),
        "apps/db/cm.yaml": configmap("db", v="1"),
        "apps/db/extra.yaml": configmap("db-extra", w="1"),
        "apps/cache/cm.yaml": configmap("cache", v="1"),  # no kustomization file: Flux scans
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    commit_all(root, "base")
    return root


# an edit: (what, app, value)
EDITS = st.tuples(
    st.sampled_from(
        [
            "value",
            "rename-save",
            "same",
            "add",
            "delete",
            "cluster",
            "kfile",
            "newdir",
            "rmdir",
            "mvdir",
        ]
    ),
    st.sampled_from(APPS),
    st.integers(0, 3),
)


def apply(root: Path, edit: tuple[str, str, int]) -> set[str]:
    """Make one edit; the absolute paths a file watcher would report."""
    what, app, value = edit
    cm = root / "apps" / app / "cm.yaml"
    extra = root / "apps" / app / "new.yaml"
    if what == "value":
        cm.write_text(configmap(app, v=str(value), cluster="${CLUSTER}"))
        return {str(cm)}
    if what == "rename-save":  # write a temp file, rename it over the original
        tmp = cm.with_name("cm.yaml.tmp")
        tmp.write_text(configmap(app, v=f"r{value}"))
        os.replace(tmp, cm)
        return {str(cm), str(tmp)}
    if what == "same":
        cm.write_text(cm.read_text())
        return {str(cm)}
    if what == "add":
        extra.write_text(configmap(f"{app}-new", n=str(value)))
        return {str(extra)}
    if what == "delete":
        if extra.exists():
            extra.unlink()
        return {str(extra)}
    made = [root / "apps" / f"{app}-{n}" for n in ("x", "y")]
    if what == "newdir":  # a new path target: a directory with its files
        target = made[value % 2]
        target.mkdir(exist_ok=True)
        (target / "kustomization.yaml").write_text(kustomization("cm.yaml"))
        (target / "cm.yaml").write_text(configmap(f"{app}-made", v=str(value)))
        return {str(target)}
    if what == "rmdir":
        for target in made:
            shutil.rmtree(target, ignore_errors=True)
        return {str(t) for t in made}
    if what == "mvdir":  # one reported path per end, nothing of what is inside
        there = [t for t in made if t.exists()]
        if not there:
            return set()
        source = there[0]
        dest = made[1] if source == made[0] else made[0]
        shutil.rmtree(dest, ignore_errors=True)
        os.rename(source, dest)
        return {str(source), str(dest)}
    if what == "cluster":
        path = root / "clusters/dev/settings.yaml"
        path.write_text(_settings(f"c{value}"))
        return {str(path)}
    kfile = root / "apps" / app / "kustomization.yaml"
    listed = ["cm.yaml", *(["new.yaml"] if extra.exists() and value % 2 else [])]
    if app == "db":
        listed.append("extra.yaml")
    kfile.write_text(kustomization(*listed))
    return {str(kfile)}


def _side(snapshot: Snapshot) -> dict[str, tuple[object, ...]]:
    """A side as compared: every result but where its (temporary) checkout lived."""
    return {
        name: (r.target.kind, r.target.cluster, r.documents, r.sha256, r.error, r.notes)
        for name, r in snapshot.results.items()
    }


def _same(watched: diff_cmd.DiffRun, fresh: diff_cmd.DiffRun) -> None:
    assert watched.code == fresh.code
    assert watched.verdict == fresh.verdict
    assert _side(watched.analysis.base) == _side(fresh.analysis.base)
    assert _side(watched.analysis.head) == _side(fresh.analysis.head)
    blank = Snapshot(renderer=watched.analysis.base.renderer)
    assert replace(watched.analysis, base=blank, head=blank) == replace(
        fresh.analysis, base=blank, head=blank
    )
    assert watched.hazards == fresh.hazards


@pytest.mark.slow
@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batches=st.lists(st.lists(EDITS, min_size=1, max_size=3), min_size=1, max_size=2))
def test_watch_answers_as_a_fresh_diff(
    batches: list[list[tuple[str, str, int]]],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tmp = tmp_path_factory.mktemp("watch")
    monkeypatch.setenv("TMPDIR", str(private_tmpdir(tmp)))
    monkeypatch.setattr("tempfile.tempdir", None)
    root = write_repo(init(tmp / "git"))
    options = diff_cmd.DiffOptions()
    watcher = watching.Watcher(Common(repo=root, quiet=True, cache_dir=tmp / "cache"), options)
    first = watcher.answer()
    _same(first.run, diff_cmd.compute(Common(repo=root, quiet=True, no_cache=True), options))
    for batch in batches:
        changed: set[str] = set()
        for edit in batch:
            changed |= apply(root, edit)
        answer = watcher.answer(changed)
        watcher.settle()  # as the loop does: the held cache writes, after the answer
        # a new run, with a cache of its own (cached == uncached is tested in tests/cache)
        fresh = diff_cmd.compute(Common(repo=root, quiet=True, cache_dir=tmp / "fresh"), options)
        _same(answer.run, fresh)
    assert list((tmp / "tmp").iterdir()) == []  # no checkout or workspace left behind


def test_a_save_that_changes_no_output_says_so(tmp_path: Path) -> None:
    root = write_repo(init(tmp_path / "git"))
    watcher = watching.Watcher(
        Common(repo=root, quiet=True, cache_dir=tmp_path / "cache"), diff_cmd.DiffOptions()
    )
    assert watcher.answer().output_changed
    cm = root / "apps/web/cm.yaml"
    cm.write_text(cm.read_text() + "# a comment\n")
    same = watcher.answer({str(cm)})
    assert not same.output_changed and same.run.code == 0
    cm.write_text(configmap("web", v="2", cluster="${CLUSTER}"))
    changed = watcher.answer({str(cm)})
    assert changed.output_changed
    assert changed.run.analysis != same.run.analysis


def test_answers_of_one_tree_keep_their_run_and_a_fresh_start_makes_a_new_one(
    tmp_path: Path,
) -> None:
    """Memos are keyed by content, so a save answered in place keeps the run (core/run.py);
    a file that comes or goes starts afresh, as a new command would."""
    root = write_repo(init(tmp_path / "git"))
    watcher = watching.Watcher(
        Common(repo=root, quiet=True, cache_dir=tmp_path / "cache"), diff_cmd.DiffOptions()
    )
    watcher.answer()
    first = watcher.run
    cm = root / "apps/web/cm.yaml"
    cm.write_text(configmap("web", v="2", cluster="${CLUSTER}"))
    assert watcher.answer({str(cm)}).output_changed and watcher.run is first
    added = root / "apps/web/other.yaml"
    added.write_text(configmap("other"))
    watcher.answer({str(added)})
    assert watcher.run is not first


def test_editor_files_and_git_are_not_changes(tmp_path: Path) -> None:
    root = write_repo(init(tmp_path / "git"))
    watcher = watching.Watcher(
        Common(repo=root, quiet=True, cache_dir=tmp_path / "cache"), diff_cmd.DiffOptions()
    )
    noise = [str(root / "apps/web/.cm.yaml.swp"), str(root / ".git/index"), str(root / "4913")]
    assert watcher.classify(noise) == ([], False)
    added = root / "apps/web/other.yaml"
    added.write_text(configmap("other"))
    assert watcher.classify([str(added)]) == ([], True)
    assert watcher.classify([str(root / "apps/web/cm.yaml")]) == (
        [str(root / "apps/web/cm.yaml")],
        False,
    )


def test_goldens_base_is_read_again_when_the_goldens_change(tmp_path: Path) -> None:
    from harness.cli.commands import update

    root = write_repo(init(tmp_path / "git"))
    common = Common(repo=root, quiet=True, cache_dir=tmp_path / "cache")
    assert update.run(common) == 0
    options = diff_cmd.DiffOptions(goldens=True, fail_on_diff=True)
    watcher = watching.Watcher(common, options)
    assert watcher.answer().run.code == 0
    cm = root / "apps/web/cm.yaml"
    cm.write_text(configmap("web", v="5", cluster="${CLUSTER}"))
    assert watcher.answer({str(cm)}).run.code == 1
    assert update.run(common) == 0  # new goldens: the tree matches them again
    goldens = [str(p) for p in (root / "goldens").rglob("*") if p.is_file()]
    assert watcher.answer(goldens).run.code == 0


def test_a_save_is_answered_through_the_index_kept_in_memory(tmp_path: Path) -> None:
    """Between saves the dependency index (pipeline/worktree.py) stays in the process: the
    next answer re-derives the head from it, with the answer of a fresh diff."""
    root = write_repo(init(tmp_path / "git"))
    common = Common(repo=root, quiet=True, cache_dir=tmp_path / "cache")
    watcher = watching.Watcher(common, diff_cmd.DiffOptions())
    watcher.answer()
    assert watcher.index.used == "full" and watcher.index.memory is not None
    cm = root / "apps/web/cm.yaml"
    cm.write_text(configmap("web", v="7", cluster="${CLUSTER}"))
    answer = watcher.answer({str(cm)})
    assert watcher.index.used == "incremental"
    fresh = diff_cmd.compute(replace(common, cache_dir=tmp_path / "fresh"), diff_cmd.DiffOptions())
    _same(answer.run, fresh)


def test_a_change_no_event_reported_is_found_and_answered(tmp_path: Path) -> None:
    """Between answers the watcher holds the tree's listings and stats, told what changed
    by file events; a change without one (an inotify overflow) is found by the audit's
    look at the tree, and its answer is a fresh diff's again."""
    root = write_repo(init(tmp_path / "git"))
    common = Common(repo=root, quiet=True, cache_dir=tmp_path / "cache")
    watcher = watching.Watcher(common, diff_cmd.DiffOptions())
    audit = watching.Audit(root, grace_ns=0)
    audit.start()
    watcher.answer()
    cm = root / "apps/web/cm.yaml"
    cm.write_text(configmap("web", v="9", cluster="${CLUSTER}"))
    stale = watcher.answer(set())  # no event came: what is held still says the old tree
    assert PROCESS.files.held is None  # held in the watcher's own facts: a fresh run sees all
    fresh = diff_cmd.compute(replace(common, cache_dir=tmp_path / "fresh"), diff_cmd.DiffOptions())
    assert _side(stale.run.analysis.head) != _side(fresh.analysis.head)
    missed = audit.check()
    assert missed == {str(cm)}
    watcher.missed()
    _same(watcher.answer(missed).run, fresh)
    assert audit.check() == set()


def test_the_audit_counts_what_events_reported(tmp_path: Path) -> None:
    """A change an event named, or a directory above or below it named, is no missed
    change; a young one waits for the next look (its event may be on its way)."""
    root = write_repo(init(tmp_path / "git"))
    audit = watching.Audit(root, grace_ns=0)
    audit.start()
    cm = root / "apps/web/cm.yaml"
    cm.write_text("changed\n")
    audit.reported([str(cm)])
    made = root / "apps/new"
    made.mkdir()
    (made / "x.yaml").write_text("x\n")
    audit.reported([str(made)])  # the directory alone: its file and its parent explained
    moved = root / "apps/db2"
    os.rename(root / "apps/db", moved)
    audit.reported([str(root / "apps/db"), str(moved)])
    assert audit.check() == set()
    quiet = root / "apps/cache/cm.yaml"
    quiet.write_text("unreported\n")
    waiting = watching.Audit(root)  # the default grace: a change this young waits
    waiting.start()
    quiet.write_text("unreported again\n")
    assert waiting.check() == set()
    assert audit.check() == {str(quiet)}
    time.sleep(0.01)
    assert audit.check() == set()  # reported once, not again
