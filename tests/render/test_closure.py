"""Input closures: which files a build reads, remote detection, confinement, digests."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.render.closure import Blobs, EscapeError, Walker, git_blob_id, is_remote
from tests.conftest import configmap, kustomization, write_tree

EVERY_FIELD = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - cm.yaml
  - ../base
  - https://example.com/remote.yaml
bases:
  - ../legacy
components:
  - ../component
crds:
  - crds/crd.yaml
configurations:
  - config/names.yaml
openapi:
  path: schema.json
patchesStrategicMerge:
  - psm.yaml
  - |-
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: inline
patchesJson6902:
  - target: {kind: ConfigMap, name: a}
    path: json6902.yaml
patches:
  - path: patch.yaml
  - patch: |-
      - op: add
        path: /x
        value: y
replacements:
  - path: replacement.yaml
configMapGenerator:
  - name: gen
    files:
      - key=files/a.txt
      - files/b.txt
    envs:
      - env/one.env
secretGenerator:
  - name: secret
    env: env/secret.env
transformers:
  - transformer.yaml
helmCharts:
  - name: local-chart
    valuesFile: values.yaml
    additionalValuesFiles:
      - values-extra.yaml
helmGlobals:
  chartHome: mycharts
"""


def test_every_field_kustomize_reads(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "app/kustomization.yaml": EVERY_FIELD,
            "app/cm.yaml": configmap("a"),
            "base/kustomization.yaml": kustomization("base.yaml"),
            "base/base.yaml": configmap("b"),
            "legacy/kustomization.yml": kustomization("legacy.yaml"),
            "legacy/legacy.yaml": configmap("l"),
            "component/kustomization.yaml": "kind: Component\nresources:\n  - c.yaml\n",
            "component/c.yaml": configmap("c"),
            "app/crds/crd.yaml": "x: 1\n",
            "app/config/names.yaml": "x: 1\n",
            "app/schema.json": "{}\n",
            "app/psm.yaml": "x: 1\n",
            "app/json6902.yaml": "[]\n",
            "app/patch.yaml": "x: 1\n",
            "app/replacement.yaml": "x: 1\n",
            "app/files/a.txt": "a",
            "app/files/b.txt": "b",
            "app/env/one.env": "A=1\n",
            "app/env/secret.env": "B=2\n",
            "app/transformer.yaml": (
                "apiVersion: builtin\nkind: PatchTransformer\npath: tpatch.yaml\n"
            ),
            "app/tpatch.yaml": "x: 1\n",
            "app/values.yaml": "a: 1\n",
            "app/values-extra.yaml": "b: 1\n",
            "app/mycharts/local-chart/Chart.yaml": "name: local-chart\n",
            "app/mycharts/local-chart/templates/cm.yaml": "x: 1\n",
            "app/unrelated.yaml": configmap("never-read"),
        },
    )
    closure = Walker().closure(root / "app", root)
    assert closure.files() == sorted(
        [
            "app/kustomization.yaml",
            "app/cm.yaml",
            "base/kustomization.yaml",
            "base/base.yaml",
            "legacy/kustomization.yml",
            "legacy/legacy.yaml",
            "component/kustomization.yaml",
            "component/c.yaml",
            "app/crds/crd.yaml",
            "app/config/names.yaml",
            "app/schema.json",
            "app/psm.yaml",
            "app/json6902.yaml",
            "app/patch.yaml",
            "app/replacement.yaml",
            "app/files/a.txt",
            "app/files/b.txt",
            "app/env/one.env",
            "app/env/secret.env",
            "app/transformer.yaml",
            "app/tpatch.yaml",
            "app/values.yaml",
            "app/values-extra.yaml",
            "app/mycharts/local-chart/Chart.yaml",
            "app/mycharts/local-chart/templates/cm.yaml",
        ]
    )
    # Helm inflation runs the helm binary, whose version is not in the key: never cached
    assert closure.remote == ("helm:mycharts/local-chart", "https://example.com/remote.yaml")
    assert not closure.cacheable


def test_krm_functions_and_exec_plugins_are_not_cacheable(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "app/kustomization.yaml": "transformers:\n  - fn.yaml\n  - builtin.yaml\n",
            "app/fn.yaml": (
                "apiVersion: example.com/v1\nkind: Mutate\nmetadata:\n  name: m\n"
                "  annotations:\n    config.kubernetes.io/function: |\n"
                "      container:\n        image: example/mutate\n"
            ),
            "app/builtin.yaml": "apiVersion: builtin\nkind: LabelTransformer\nlabels: {a: b}\n",
        },
    )
    closure = Walker().closure(root / "app", root)
    assert closure.remote == ("function:fn.yaml",)


@pytest.mark.parametrize(
    ("ref", "remote"),
    [
        ("https://github.com/org/repo//deploy?ref=v1", True),
        ("http://example.com/x.yaml", True),
        ("file:///etc/x.yaml", True),
        ("git@github.com:org/repo.git//deploy", True),
        ("git::https://example.com/repo.git", True),
        ("github.com/org/repo/deploy?ref=main", True),
        ("deploy/app?ref=main", True),
        ("ssh://git@example.com/repo.git", True),
        ("user@host.example.com:org/repo", True),
        ("../base", False),
        ("./app.yaml", False),
        ("app.yaml", False),
        ("sub/dir", False),
    ],
)
def test_remote_detection(ref: str, remote: bool) -> None:
    assert is_remote(ref) is remote


def test_host_like_path_is_remote_only_when_absent(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "app/kustomization.yaml": kustomization("example.com/org/repo", "local.d/x.yaml"),
            "app/local.d/x.yaml": configmap("x"),
        },
    )
    closure = Walker().closure(root / "app", root)
    assert closure.remote == ("example.com/org/repo",)
    assert "app/local.d/x.yaml" in closure.files()


def test_helm_chart_from_a_repository_is_remote(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "app/kustomization.yaml": (
                "helmCharts:\n  - name: podinfo\n    repo: https://charts.example.com\n"
                "    version: 6.0.0\n"
            ),
        },
    )
    closure = Walker().closure(root / "app", root)
    assert closure.remote == ("helm:https://charts.example.com/podinfo",)


def test_dotdot_escape_names_the_kustomization_and_the_ref(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "repo/app/kustomization.yaml": kustomization("../../outside/x.yaml"),
            "outside/x.yaml": configmap("x"),
        },
    )
    with pytest.raises(EscapeError) as exc:
        Walker().closure(root / "repo" / "app", root / "repo")
    message = str(exc.value)
    assert message.startswith("app/kustomization.yaml: resources '../../outside/x.yaml'")
    assert "outside the source root" in message


@pytest.mark.parametrize(
    "field",
    [
        "patches:\n  - path: ../../outside/p.yaml\n",
        "configMapGenerator:\n  - name: g\n    files:\n      - k=../../outside/p.yaml\n",
        "secretGenerator:\n  - name: g\n    envs:\n      - ../../outside/p.yaml\n",
        "components:\n  - ../../outside\n",
        "crds:\n  - ../../outside/p.yaml\n",
    ],
)
def test_every_field_is_confined(tmp_path: Path, field: str) -> None:
    root = write_tree(
        tmp_path,
        {
            "repo/app/kustomization.yaml": field,
            "outside/p.yaml": "x: 1\n",
            "outside/kustomization.yaml": "kind: Component\n",
        },
    )
    with pytest.raises(EscapeError, match="outside the source root"):
        Walker().closure(root / "repo" / "app", root / "repo")


def test_symlinked_file_out_of_the_root_is_refused(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "repo/app/kustomization.yaml": kustomization("cm.yaml"),
            "outside/secret.yaml": configmap("x"),
        },
    )
    os.symlink(tmp_path / "outside" / "secret.yaml", root / "repo" / "app" / "cm.yaml")
    with pytest.raises(EscapeError) as exc:
        Walker().closure(root / "repo" / "app", root / "repo")
    message = str(exc.value)
    assert "app/cm.yaml resolves through a symlink to" in message
    assert str(tmp_path / "outside" / "secret.yaml") in message


def test_symlinked_directory_out_of_the_root_is_refused(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "repo/app/kustomization.yaml": kustomization("../shared"),
            "outside/kustomization.yaml": kustomization("x.yaml"),
            "outside/x.yaml": configmap("x"),
        },
    )
    os.symlink(tmp_path / "outside", root / "repo" / "shared")
    with pytest.raises(EscapeError, match="shared resolves through a symlink"):
        Walker().closure(root / "repo" / "app", root / "repo")


def test_symlink_inside_the_root_is_fine_and_digests_the_target(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "app/kustomization.yaml": kustomization("cm.yaml"),
            "shared/cm.yaml": configmap("x"),
        },
    )
    os.symlink(root / "shared" / "cm.yaml", root / "app" / "cm.yaml")
    walker = Walker()
    before = walker.closure(root / "app", root).digest(Blobs())
    (root / "shared" / "cm.yaml").write_text(configmap("y"))
    after = Walker().closure(root / "app", root).digest(Blobs())
    assert before != after


def test_digest_is_content_and_relative_paths_only(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "app/kustomization.yaml": kustomization("cm.yaml", "../base"),
        "app/cm.yaml": configmap("a"),
        "base/kustomization.yaml": kustomization("b.yaml"),
        "base/b.yaml": configmap("b"),
        "other/x.yaml": configmap("x"),
    }
    one = write_tree(tmp_path / "one", files)
    two = write_tree(tmp_path / "elsewhere" / "two", files)

    def digest(root: Path) -> str:
        return Walker().closure(root / "app", root).digest(Blobs())

    assert digest(one) == digest(two)
    (two / "other" / "x.yaml").write_text(configmap("changed"))
    assert digest(one) == digest(two)  # not in the closure
    (two / "base" / "b.yaml").write_text(configmap("changed"))
    assert digest(one) != digest(two)
    (two / "base" / "b.yaml").write_text(configmap("b"))
    (two / "app" / "kustomization.yml").write_text("")  # a second kustomization file
    assert digest(one) != digest(two)


def test_missing_file_appearing_changes_the_digest(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {"app/kustomization.yaml": kustomization("cm.yaml")})
    before = Walker().closure(root / "app", root).digest(Blobs())
    (root / "app" / "cm.yaml").write_text(configmap("a"))
    assert Walker().closure(root / "app", root).digest(Blobs()) != before


def test_generated_kustomization_replaces_the_one_on_disk(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "app/kustomization.yaml": kustomization("a.yaml"),
            "app/a.yaml": configmap("a"),
            "app/b.yaml": configmap("b"),
        },
    )
    generated = ("kustomization.yaml", kustomization("a.yaml", "b.yaml"))
    closure = Walker().closure(root / "app", root, generated=generated)
    assert closure.files() == ["app/a.yaml", "app/b.yaml"]
    other = Walker().closure(root / "app", root, generated=("kustomization.yaml", "x: 1\n"))
    assert closure.digest(Blobs()) != other.digest(Blobs())


def test_git_blob_ids_match_git(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_bytes(b"a: 1\n\xff\n")
    out = subprocess.run(
        ["git", "hash-object", str(path)], capture_output=True, text=True, check=True
    )
    assert git_blob_id(path.read_bytes()) == out.stdout.strip()


def test_blob_index_is_used_instead_of_reading(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text("a: 1\n")
    blobs = Blobs({str(path): "feed"})
    assert blobs.of(path) == "feed"
    assert blobs.read == 0
    assert Blobs().of(tmp_path / "absent") is None


def test_the_closure_collects_replacements_vars_and_var_references(tmp_path: Path) -> None:
    """Every declaration by which kustomize copies a value between objects, from the built
    directory and what it reads, so secretflow can mask Secret values copied out; the
    files they live in count as inputs."""
    source = {"kind": "Secret", "name": "creds", "fieldPath": "data.pw"}
    target = "  targets: [{select: {kind: Deployment}, fieldPaths: [metadata.name]}]\n"
    write_tree(
        tmp_path,
        {
            "app/kustomization.yaml": (
                "resources: [../base]\n"
                "transformers: [transformer.yaml]\n"
                "configurations: [refs.yaml]\n"
                f"replacements:\n- source: {source}\n{target}"
            ),
            "app/transformer.yaml": (
                "apiVersion: builtin\nkind: ReplacementTransformer\nmetadata: {name: r}\n"
                "replacements: [{path: from-transformer.yaml}]\n"
            ),
            "app/from-transformer.yaml": (
                f"source: {{kind: Secret, name: other}}\n{target.lstrip()}"
            ),
            "app/refs.yaml": "varReference: [{path: data, kind: ConfigMap}]\n",
            "base/kustomization.yaml": (
                "vars:\n- name: PW\n  objref: {kind: Secret, name: creds, apiVersion: v1}\n"
                "  fieldref: {fieldpath: data.pw}\n"
                "replacements: [{path: more.yaml}]\n"
            ),
            "base/more.yaml": f"- source: {{kind: ConfigMap, name: c}}\n{target}",
        },
    )
    closure = Walker().closure(tmp_path / "app", tmp_path)
    flows = closure.flows
    assert sorted(r.source.name for r in flows.replacements) == ["c", "creds", "other"]
    assert [(v.name, v.source.kind, v.field_path) for v in flows.vars] == [
        ("PW", "Secret", "data.pw")
    ]
    assert [(f.path, f.kind) for f in flows.var_references] == [("data", "ConfigMap")]
    assert {"app/from-transformer.yaml", "app/refs.yaml", "base/more.yaml"} <= set(closure.files())
    plain = write_tree(tmp_path / "plain", {"kustomization.yaml": kustomization("cm.yaml")})
    assert not Walker().closure(plain, tmp_path).flows


def test_a_replacement_transformer_reading_outside_the_root_fails_the_build(
    tmp_path: Path,
) -> None:
    write_tree(
        tmp_path,
        {
            "app/kustomization.yaml": "transformers: [t.yaml]\n",
            "app/t.yaml": (
                "apiVersion: builtin\nkind: ReplacementTransformer\nmetadata: {name: r}\n"
                "replacements: [{path: ../../outside.yaml}]\n"
            ),
        },
    )
    with pytest.raises(EscapeError, match="outside the source root"):
        Walker().closure(tmp_path / "app", tmp_path)


def _fifo_behind_a_symlink(path: str) -> None:
    os.mkfifo(path + ".fifo")
    os.symlink(os.path.basename(path) + ".fifo", path)  # inside the root: confinement passes


def _sparse_past_the_cap(path: str) -> None:
    with open(path, "wb") as fh:
        fh.truncate(16 * 1024 * 1024 + 1)


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (os.mkfifo, "a FIFO"),
        (_fifo_behind_a_symlink, "a FIFO"),
        (
            _sparse_past_the_cap,
            "16.0 MiB, over the 16 MiB file size cap (limits.file_bytes in harness.yaml)",
        ),
    ],
)
def test_a_file_kustomize_could_not_finish_reading_fails_the_build_first(
    tmp_path: Path, make: Callable[[str], None], what: str
) -> None:
    """A FIFO would hang kustomize, /dev/zero or a huge file fill its memory: the build
    fails before it runs, naming the file."""
    root = write_tree(
        tmp_path,
        {"repo/app/kustomization.yaml": kustomization("cm.yaml", "bad.yaml")},
    )
    (root / "repo" / "app" / "cm.yaml").write_text(configmap("a"))
    make(str(root / "repo" / "app" / "bad.yaml"))
    with pytest.raises(EscapeError) as exc:
        Walker().closure(root / "repo" / "app", root / "repo")
    assert str(exc.value) == (
        f"app/kustomization.yaml: resources 'bad.yaml': app/bad.yaml is {what}"
    )


def test_a_device_in_a_chart_home_fails_the_build(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "repo/app/kustomization.yaml": "helmCharts:\n  - name: c\n",
            "repo/app/charts/c/Chart.yaml": "name: c\n",
        },
    )
    os.mkfifo(root / "repo" / "app" / "charts" / "c" / "values.yaml")
    with pytest.raises(EscapeError) as exc:
        Walker().closure(root / "repo" / "app", root / "repo")
    assert str(exc.value) == (
        "app/kustomization.yaml: 'app/charts/c/values.yaml': app/charts/c/values.yaml is a FIFO"
    )
