"""inputs.py: the digest that decides whether a failure on both sides is pre-existing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from harness.compare import inputs
from harness.compare.analyze import analyze
from harness.compare.gate import exit_code, judge
from harness.core.model import RendererInfo, Snapshot, Target, TargetResult
from tests.conftest import Result, configmap, kustomization, write_tree
from tests.diffkit import ks, snapshot
from tests.gitkit import commit_all, init

Cli = Callable[..., Result]

RENDERER = RendererInfo("kubectl", "v1.0.0")


def _failed(repo: Path, name: str, kind: str = "path", cluster: str | None = None) -> Snapshot:
    target = Target(name, "flux" if kind == "flux" else "path", repo / "app", cluster)
    return Snapshot(RENDERER, {name: TargetResult(target, error="kustomize: boom")})


def _tree(root: Path) -> Path:
    return write_tree(
        root,
        {
            "app/kustomization.yaml": kustomization("../base", "cm.yaml"),
            "app/cm.yaml": configmap("a"),
            "base/kustomization.yaml": kustomization("missing.yaml")
            + "patches:\n  - path: patch.yaml\n",
            "base/patch.yaml": configmap("p"),
            "base/notes.yaml": configmap("n"),
            "unrelated/cm.yaml": configmap("u"),
        },
    )


def test_same_files_in_two_places_digest_alike(tmp_path: Path) -> None:
    one, two = _tree(tmp_path / "one"), _tree(tmp_path / "two")
    a = inputs.side_digests(one, _failed(one, "app"))
    b = inputs.side_digests(two, _failed(two, "app"))
    assert a.keys() == {"app"} and a == b
    assert inputs.same_inputs(a, b) == {"app"}


def test_a_referenced_directory_outside_the_target_counts(tmp_path: Path) -> None:
    one, two = _tree(tmp_path / "one"), _tree(tmp_path / "two")
    (two / "base/patch.yaml").write_text(configmap("p", v="2"))
    a = inputs.side_digests(one, _failed(one, "app"))
    b = inputs.side_digests(two, _failed(two, "app"))
    assert not inputs.inputs_unchanged("app", a, b)


def test_an_unrelated_file_does_not_count(tmp_path: Path) -> None:
    one, two = _tree(tmp_path / "one"), _tree(tmp_path / "two")
    (two / "unrelated/cm.yaml").write_text(configmap("u", v="2"))
    (two / "base/notes.yaml").write_text(configmap("n", v="2"))  # beside a base, unread
    (two / "README.md").write_text("docs\n")
    a = inputs.side_digests(one, _failed(one, "app"))
    b = inputs.side_digests(two, _failed(two, "app"))
    assert inputs.inputs_unchanged("app", a, b)


def test_unknown_counts_as_changed() -> None:
    assert not inputs.inputs_unchanged("app", {}, {"app": "x"})
    assert not inputs.inputs_unchanged("app", {"app": "x"}, {})


def test_a_flux_target_includes_its_kustomization_spec(tmp_path: Path) -> None:
    one, two = _tree(tmp_path / "one"), _tree(tmp_path / "two")
    name = "dev/flux-system/apps"

    def side(root: Path, extra: str) -> dict[str, str]:
        snap = snapshot({"dev/flux-system/flux-system": [ks("apps", "./app", extra=extra)]})
        target = Target(name, "flux", root / "app", "dev")
        failed = TargetResult(target, error="kustomize: boom")
        snap = replace(snap, results={**snap.results, name: failed})
        return inputs.side_digests(root, snap)

    assert inputs.inputs_unchanged(name, side(one, ""), side(two, ""))
    changed = side(two, "  targetNamespace: other\n")
    assert not inputs.inputs_unchanged(name, side(one, ""), changed)


def test_preexisting_needs_same_message_and_same_inputs() -> None:
    base = snapshot({"a": "kustomize: boom", "b": "kustomize: boom", "c": "kustomize: old"})
    head = snapshot({"a": "kustomize: boom", "b": "kustomize: boom", "c": "kustomize: new"})
    analysis = analyze(base, head, same_inputs={"a", "c"})
    assert [p.target for p in analysis.preexisting] == ["a"]
    assert {(e.target, e.side) for e in analysis.errors} == {
        ("b", "base"),
        ("b", "head"),
        ("c", "base"),
        ("c", "head"),
    }
    only_a = analyze(
        snapshot({"a": "kustomize: boom"}), snapshot({"a": "kustomize: boom"}), same_inputs={"a"}
    )
    verdict = judge(only_a)
    assert verdict.verdict == "no-change" and verdict.reasons == ()
    assert "1 pre-existing render error" in verdict.notes[0]
    assert exit_code(only_a, verdict, "no-change", False) == 0
    assert exit_code(only_a, verdict, None, False, fail_on_preexisting=True) == 2


def test_a_file_only_the_closure_knows_counts(tmp_path: Path) -> None:
    """A base in another directory runs a generator plugin whose config names a data file
    in a subdirectory: no kustomization file names that file, only the closure follows it."""

    def tree(root: Path) -> Path:
        return write_tree(
            root,
            {
                "app/kustomization.yaml": kustomization("../base", "missing.yaml"),
                "base/kustomization.yaml": kustomization() + "generators:\n  - gen.yaml\n",
                "base/gen.yaml": (
                    "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n"
                    "  name: settings\nfiles:\n  - data/settings.conf\n"
                ),
                "base/data/settings.conf": "level=info\n",
            },
        )

    one, two = tree(tmp_path / "one"), tree(tmp_path / "two")
    assert inputs.same_inputs(
        inputs.side_digests(one, _failed(one, "app")), inputs.side_digests(two, _failed(two, "app"))
    ) == {"app"}
    (two / "base/data/settings.conf").write_text("level=debug\n")
    a = inputs.side_digests(one, _failed(one, "app"))
    b = inputs.side_digests(two, _failed(two, "app"))
    assert not inputs.inputs_unchanged("app", a, b)
    analysis = analyze(
        _failed(one, "app"), _failed(two, "app"), same_inputs=inputs.same_inputs(a, b)
    )
    assert not analysis.preexisting, "a changed input makes the error the change's"
    assert exit_code(analysis, judge(analysis), None, False) == 2


def test_a_flux_directory_scan_counts_its_yaml_files(tmp_path: Path) -> None:
    """A Flux path without a kustomization file builds what Flux's generator lists: a new
    YAML file in a subdirectory is an input, a README is not."""
    name = "dev/flux-system/apps"

    def side(root: Path) -> dict[str, str]:
        snap = snapshot({"dev/flux-system/flux-system": [ks("apps", "./scan")]})
        target = Target(name, "flux", root / "scan", "dev")
        failed = TargetResult(target, error="kustomize: boom")
        snap = replace(snap, results={**snap.results, name: failed})
        return inputs.side_digests(root, snap)

    def tree(root: Path) -> Path:
        return write_tree(root, {"scan/a.yaml": configmap("a"), "scan/sub/b.yaml": configmap("b")})

    one, two = tree(tmp_path / "one"), tree(tmp_path / "two")
    assert inputs.inputs_unchanged(name, side(one), side(two))
    (two / "scan/sub/README.md").write_text("docs\n")
    assert inputs.inputs_unchanged(name, side(one), side(two))
    (two / "scan/sub/c.yaml").write_text(configmap("c"))
    assert not inputs.inputs_unchanged(name, side(one), side(two))


def test_a_build_escaping_its_root_has_no_digest(tmp_path: Path) -> None:
    repo = write_tree(
        tmp_path / "repo",
        {"app/kustomization.yaml": kustomization("../../outside.yaml")},
    )
    (tmp_path / "outside.yaml").write_text(configmap("o"))
    assert inputs.side_digests(repo, _failed(repo, "app")) == {}


def test_a_synthesised_root_digests_the_cluster_directory_as_flux_builds_it(
    tmp_path: Path,
) -> None:
    """The bootstrap root has no rendered declaration when its own build fails: its inputs
    are the directory as Flux scans it (no kustomization file here)."""
    name = "dev/flux-system/flux-system"

    def side(root: Path) -> dict[str, str]:
        target = Target(name, "flux", root / "clusters/dev", "dev")
        snap = Snapshot(RENDERER, {name: TargetResult(target, error="kustomize: boom")})
        return inputs.side_digests(root, snap)

    def tree(root: Path) -> Path:
        return write_tree(root, {"clusters/dev/apps.yaml": configmap("a")})

    one, two = tree(tmp_path / "one"), tree(tmp_path / "two")
    assert inputs.inputs_unchanged(name, side(one), side(two))
    (two / "clusters/dev/README.md").write_text("docs\n")
    assert inputs.inputs_unchanged(name, side(one), side(two))
    (two / "clusters/dev/infra.yaml").write_text(configmap("i"))
    assert not inputs.inputs_unchanged(name, side(one), side(two))


def test_through_the_cli_a_failure_is_judged_by_the_input_it_names(
    tmp_path: Path, cli: Cli
) -> None:
    """A broken target stays pre-existing across a commit that edits nothing it reads and
    across one that edits a data file only its closure follows (the failure names
    `missing.yaml` of `app/kustomization.yaml`, not that file); it becomes the change's
    error (exit 2) when the kustomization the failure names changes."""
    root = init(tmp_path / "git")
    write_tree(
        root,
        {
            "app/kustomization.yaml": kustomization("../base", "missing.yaml"),
            "base/kustomization.yaml": kustomization() + "generators:\n  - gen.yaml\n",
            "base/gen.yaml": (
                "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n"
                "  name: settings\nfiles:\n  - data/settings.conf\n"
            ),
            "base/data/settings.conf": "level=info\n",
            "ok/kustomization.yaml": kustomization("cm.yaml"),
            "ok/cm.yaml": configmap("ok"),
        },
    )
    commit_all(root, "base")
    (root / "README.md").write_text("docs\n")
    (root / "base/notes.txt").write_text("unread\n")
    commit_all(root, "docs only")
    preexisting = (
        "1 pre-existing render error (failing the same way on both sides, inputs unchanged; "
        "not judged): app;"
    )
    docs_only = cli("diff", "--repo", root, "--base", "HEAD~1", "--head", "HEAD")
    assert docs_only.code == 0, docs_only.stdout + docs_only.stderr
    assert preexisting in docs_only.stdout
    (root / "base/data/settings.conf").write_text("level=debug\n")
    commit_all(root, "closure-only data change")
    data = cli("diff", "--repo", root, "--base", "HEAD~1", "--head", "HEAD")
    assert data.code == 0, data.stdout + data.stderr
    assert preexisting in data.stdout
    (root / "app/kustomization.yaml").write_text(
        "# still broken\n" + kustomization("../base", "missing.yaml")
    )
    commit_all(root, "the failing kustomization edited")
    touched = cli("diff", "--repo", root, "--base", "HEAD~1", "--head", "HEAD")
    assert touched.code == 2, touched.stdout + touched.stderr
    assert "pre-existing" not in touched.stdout + touched.stderr


def _helm_side(values_cm: str, url: str, unreachable: bool = True) -> tuple[Snapshot, Target]:
    """A cluster rendering a HelmRelease (valuesFrom a ConfigMap, chart from a HelmRepository)
    and its helm target, failed because the chart could not be fetched."""
    from harness.core.model import HelmInfo
    from tests.hazards.snap import cm, flux, helmrelease, obj
    from tests.hazards.snap import snapshot as snap

    release = helmrelease("web", "apps")
    release["spec"]["chart"]["spec"]["sourceRef"] = {"kind": "HelmRepository", "name": "charts"}
    release["spec"]["chart"]["spec"]["sourceRef"]["namespace"] = "flux-system"
    release["spec"]["valuesFrom"] = [{"kind": "ConfigMap", "name": "web-values"}]
    repository = obj(
        "HelmRepository", "charts", "flux-system", "source.toolkit.fluxcd.io/v1", spec={"url": url}
    )
    infra = flux(
        "prod", "infra", repository, cm("web-values", "apps", **{"values.yaml": values_cm})
    )
    apps = flux("prod", "apps", release)
    info = HelmInfo(
        owner="prod/flux-system/apps",
        chart="web",
        version="1.0.0",
        source="HelmRepository/flux-system/charts",
        url=url,
        unreachable=unreachable,
    )
    target = Target("prod/apps/web", "helm", Path("/repo"), "prod", helm=info)
    side = snap(infra, apps, TargetResult(target, error=f"{url}: connection refused"))
    return side, target


def test_an_unreachable_chart_digests_release_values_and_chart_reference() -> None:
    def digest(values_cm: str, url: str, unreachable: bool = True) -> str | None:
        side, target = _helm_side(values_cm, url, unreachable)
        return inputs.target_digest(Path("/repo"), side, side.results[target.name])

    same = digest("replicas: 1\n", "http://127.0.0.1:9")
    assert same is not None
    assert digest("replicas: 1\n", "http://127.0.0.1:9") == same
    assert digest("replicas: 2\n", "http://127.0.0.1:9") != same  # values inputs
    assert digest("replicas: 1\n", "http://127.0.0.1:10") != same  # the chart reference
    assert digest("replicas: 1\n", "http://127.0.0.1:9", unreachable=False) is None


def test_a_build_from_an_external_artifact_has_no_digest(tmp_path: Path) -> None:
    """Its tree is what a generator copied from anywhere: a failure there is this side's."""
    name = "dev/flux-system/apps"
    declaration = ks("apps", "./staging").replace("kind: GitRepository", "kind: ExternalArtifact")
    snap = snapshot({"dev/flux-system/flux-system": [declaration]})
    root = write_tree(tmp_path / "repo", {"apps/staging/cm.yaml": configmap("a")})
    target = Target(name, "flux", root / "apps/staging", "dev")
    failed = TargetResult(target, error="kustomize: boom")
    snap = replace(snap, results={**snap.results, name: failed})
    assert name not in inputs.side_digests(root, snap)
    assert inputs.target_digest(root, snap, snap.results[name]) is None
