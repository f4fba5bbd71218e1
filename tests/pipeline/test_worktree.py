"""The dependency index never changes an answer: after any sequence of edits, the render it
re-derives (only the changed files' readers and what the Flux fixed point derives from them)
is the full render, target for target, byte for byte, error for error; and a missing,
corrupt or foreign index is a full render.

The tree is synthetic but shaped like public homelab repos: two clusters sharing app
directories through `${CLUSTER}` substitution and a component, a cluster ConfigMap each
that `substituteFrom` reads, `targetNamespace`, a shared base, a README no build reads.
Every write sets a fresh mtime (a save a second later), so the index sees what a user's
editor makes it see, and the racy window (filefacts.RACY_SECONDS) is closed for the test
by backdating, not by waiting.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cache import store as cache_mod
from harness.core import config as config_mod
from harness.core.model import Snapshot
from harness.pipeline import worktree
from harness.pipeline.repo import RenderOptions, render_repo
from harness.render import kustomize as render

CLUSTERS = ("dev", "prod")
APPS = ("web", "db", "cache", "queue")
_CLOCK = [1_700_000_000.0]


def _write(root: Path, rel: str, text: str) -> None:
    """A save: new content with a new mtime a second after the last one."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    _CLOCK[0] += 1.0
    os.utime(path, (_CLOCK[0], _CLOCK[0]))


def _flux_ks(name: str, path: str, namespace: str, *, subst: bool, component: bool) -> str:
    text = (
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n"
        f"  name: {name}\n  namespace: flux-system\nspec:\n  interval: 10m\n"
        f"  path: {path}\n  prune: true\n  targetNamespace: {namespace}\n"
        "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
    )
    if component:
        text += "  components:\n    - ../../components/labels\n"
    if subst:
        text += "  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-vars\n"
    return text


def tree() -> dict[str, str]:
    files: dict[str, str] = {"README.md": "# homelab\n"}
    files["components/labels/kustomization.yaml"] = (
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
        "labels:\n  - pairs:\n      team: platform\n"
    )
    for app in APPS:
        base = f"apps/{app}"
        files[f"{base}/kustomization.yaml"] = (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            "resources:\n  - deployment.yaml\n  - config.yaml\n"
        )
        files[f"{base}/deployment.yaml"] = (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n"
            f"  name: {app}\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n"
            f"        - name: {app}\n          image: example/{app}:1.0.0\n"
        )
        files[f"{base}/config.yaml"] = (
            f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {app}-config\n"
            "data:\n  cluster: ${CLUSTER:=none}\n  level: info\n"
        )
    for cluster in CLUSTERS:
        entry = f"clusters/{cluster}"
        names = ["sync.yaml", "vars.yaml", *(f"{a}.yaml" for a in APPS)]
        files[f"{entry}/kustomization.yaml"] = (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
            + "".join(f"  - {n}\n" for n in names)
        )
        files[f"{entry}/sync.yaml"] = (
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n"
            "  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n"
            f"  path: ./{entry}\n  prune: true\n"
            "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
        )
        files[f"{entry}/vars.yaml"] = (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-vars\n"
            f"  namespace: flux-system\ndata:\n  CLUSTER: {cluster}\n"
        )
        for i, app in enumerate(APPS):
            files[f"{entry}/{app}.yaml"] = _flux_ks(
                app, f"./apps/{app}", app, subst=i % 2 == 0, component=i % 3 == 0
            )
    return files


def _replace(root: Path, rel: str, old: str, new: str) -> bool:
    path = root / rel
    if not path.is_file():
        return False
    text = path.read_text()
    if old not in text:
        return False
    _write(root, rel, text.replace(old, new, 1))
    return True


def edit(root: Path, op: str, seed: int) -> str:
    """One save of the kind people make; returns what it did (for the failure message)."""
    app = APPS[seed % len(APPS)]
    cluster = CLUSTERS[seed % len(CLUSTERS)]
    if op == "image":
        rel = f"apps/{app}/deployment.yaml"
        text = re.sub(r":\d+\.", f":{seed % 9 + 2}.", (root / rel).read_text(), count=1)
        _write(root, rel, text)
    elif op == "vars":  # a substituteFrom source every substituting app reads
        rel = f"clusters/{cluster}/vars.yaml"
        _replace(root, rel, f"CLUSTER: {cluster}", f"CLUSTER: {cluster}{seed % 5}")
    elif op == "spec":  # a changed Kustomization object
        rel = f"clusters/{cluster}/{app}.yaml"
        _replace(root, rel, f"targetNamespace: {app}", f"targetNamespace: {app}-{seed % 3}")
    elif op == "component":
        rel = "components/labels/kustomization.yaml"
        _replace(root, rel, "team: platform", f"team: t{seed % 4}")
    elif op == "drop":  # a Kustomization removed from its cluster
        rel = f"clusters/{cluster}/kustomization.yaml"
        _replace(root, rel, f"  - {app}.yaml\n", "")
    elif op == "add":  # a new app and its Kustomization
        name = f"extra{seed % 3}"
        rel = f"apps/{name}/kustomization.yaml"
        _write(root, f"apps/{name}/config.yaml", tree()[f"apps/{app}/config.yaml"])
        _write(
            root, rel, tree()[f"apps/{app}/kustomization.yaml"].replace("  - deployment.yaml\n", "")
        )
        _write(
            root,
            f"clusters/{cluster}/{name}.yaml",
            _flux_ks(name, f"./apps/{name}", name, subst=True, component=False),
        )
        _replace(
            root,
            f"clusters/{cluster}/kustomization.yaml",
            "  - sync.yaml\n",
            f"  - sync.yaml\n  - {name}.yaml\n",
        )
    elif op == "break":  # a build that fails: it names a file that does not exist
        rel = f"apps/{app}/kustomization.yaml"
        _replace(root, rel, "  - config.yaml\n", "  - config.yaml\n  - missing.yaml\n")
    elif op == "mend":
        rel = f"apps/{app}/kustomization.yaml"
        _replace(root, rel, "  - missing.yaml\n", "")
    elif op == "readme":
        rel = "README.md"
        _write(root, rel, f"# homelab {seed}\n")
    else:  # "none": a save that changes nothing
        rel = "-"
    return f"{op} {rel}"


OPS = ("image", "vars", "spec", "component", "drop", "add", "break", "mend", "readme", "none")


def _view(snapshot: Snapshot) -> dict[str, object]:
    return {
        name: (r.target, [d.text for d in r.documents], r.sha256, r.error, r.notes, r.duplicates)
        for name, r in snapshot.results.items()
    } | {"skipped": snapshot.skipped, "warnings": snapshot.warnings}


@pytest.fixture(autouse=True)
def _no_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test's saves carry their own mtimes (a second apart), so none is racy."""
    monkeypatch.setattr(worktree, "RACY_SECONDS", -1e12)


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "repo"
    for rel, text in tree().items():
        _write(root, rel, text)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _render(root: Path, cache_dir: Path | None, keeper: worktree.Keeper | None) -> Snapshot:
    cfg = config_mod.load(root)
    renderer = render.resolve(flags=cfg.kubectl_flags, timeout=cfg.timeout)
    cache = (
        cache_mod.open_cache(cache_mod.Settings(enabled=True, directory=cache_dir))
        if cache_dir is not None
        else None
    )
    try:
        return render_repo(cfg, renderer, RenderOptions(jobs=2, cache=cache, index=keeper))
    finally:
        if cache is not None:
            cache.close()


@settings(
    max_examples=int(os.environ.get("HARNESS_PROPERTY_EXAMPLES", "3")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 50)), min_size=2, max_size=5),
    st.booleans(),
)
@pytest.mark.slow
def test_an_incremental_render_is_the_full_render(
    repo: Path,
    tmp_path_factory: pytest.TempPathFactory,
    edits: list[tuple[str, int]],
    resident: bool,
) -> None:
    """Both a fresh process (index from disk) and a resident one (index in memory)."""
    cache_dir = tmp_path_factory.mktemp("cache")
    keeper = worktree.Keeper()
    _render(repo, cache_dir, keeper)
    done: list[str] = []
    for op, seed in edits:
        done.append(edit(repo, op, seed))
        incremental = _render(repo, cache_dir, keeper if resident else worktree.Keeper())
        full = _render(repo, None, None)
        assert _view(incremental) == _view(full), done


def test_an_unchanged_tree_is_answered_by_the_index(repo: Path, tmp_path: Path) -> None:
    first = worktree.Keeper()
    before = _render(repo, tmp_path / "cache", first)
    assert first.used == "full"
    again = worktree.Keeper()
    assert _view(_render(repo, tmp_path / "cache", again)) == _view(before)
    assert again.used == "none-changed"


def test_one_saved_file_rerenders_its_readers_only(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The image of one app: its path target and its two Flux builds run kustomize, and
    no other target's closure is walked."""
    _render(repo, tmp_path / "cache", worktree.Keeper())
    edit(repo, "image", 0)  # apps/web/deployment.yaml
    walked: set[str] = set()
    real = worktree.Reuse.unchanged

    def unchanged(self: worktree.Reuse, read: worktree.Read) -> bool:
        answer = real(self, read)
        if not answer:
            walked.add(read.digest)
        return answer

    monkeypatch.setattr(worktree.Reuse, "unchanged", unchanged)
    keeper = worktree.Keeper()
    head = _render(repo, tmp_path / "cache", keeper)
    assert keeper.used == "incremental"
    assert len(walked) == 3  # apps/web as a path target, and in each cluster
    texts = [d.text for d in head.results["apps/web"].documents]
    assert "image: example/web:2.0.0" in texts[1]


@pytest.mark.parametrize("damage", ["missing", "corrupt", "foreign"])
def test_a_missing_or_corrupt_index_is_a_full_render(
    repo: Path, tmp_path: Path, damage: str
) -> None:
    cache_dir = tmp_path / "cache"
    _render(repo, cache_dir, worktree.Keeper())
    edit(repo, "image", 1)
    entries = [
        p
        for p in (cache_dir / cache_mod.ENTRIES).rglob("*")
        if p.is_file() and b'"stamps"' in p.read_bytes()
    ]
    assert len(entries) == 1
    if damage == "missing":
        entries[0].unlink()
    elif damage == "corrupt":
        entries[0].write_bytes(entries[0].read_bytes()[:-40])
    else:  # a well-formed entry of another shape: checksummed, but not an index
        cache = cache_mod.open_cache(cache_mod.Settings(enabled=True, directory=cache_dir))
        assert cache is not None
        cache.put(entries[0].parent.name + entries[0].stem, {"stamps": [["x", "y"]]})
        cache.close()
    keeper = worktree.Keeper()
    head = _render(repo, cache_dir, keeper)
    assert keeper.used == "full"
    assert _view(head) == _view(_render(repo, None, None))


def test_a_new_file_is_a_full_render(repo: Path, tmp_path: Path) -> None:
    _render(repo, tmp_path / "cache", worktree.Keeper())
    edit(repo, "add", 0)
    keeper = worktree.Keeper()
    head = _render(repo, tmp_path / "cache", keeper)
    assert keeper.used == "full"
    assert "apps/extra0" in head.results
