"""ArtifactGenerator copy semantics, table-driven from source-watcher's builder behaviour.

Each case is a set of source trees (alias -> files), the copy operations of one artifact,
and the artifact tree that source-watcher publishes (or the error it reports). The cases
restate the upstream builder, merge and extract tests and the pathPattern tests in our own
words, plus the readings of the code no upstream test pins (marked "code").
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.flux.source import artifacts
from harness.flux.source.artifacts import Copy, GeneratorError, Output, Tree
from harness.flux.source.ignore import SourceIgnores

Files = dict[str, str | bytes]


def write_tree(root: Path, files: Files) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = root / rel
        if rel.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


def tarball(files: dict[str, str]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue())


def published(root: Path) -> tuple[dict[str, str], set[str]]:
    files: dict[str, str] = {}
    dirs: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            dirs.add((Path(dirpath) / name).relative_to(root).as_posix())
        for name in filenames:
            path = Path(dirpath) / name
            files[path.relative_to(root).as_posix()] = path.read_text(errors="replace")
    return files, dirs


def op(source: str, to: str, *exclude: str, strategy: str = "Overwrite") -> Copy:
    return Copy(source, to, tuple(exclude), strategy)


def build(tmp_path: Path, sources: dict[str, Files], *ops: Copy) -> tuple[dict[str, str], set[str]]:
    trees = {
        alias: Tree(write_tree(tmp_path / "src" / alias, files), None)
        for alias, files in sources.items()
    }
    staging = tmp_path / "out"
    staging.mkdir()
    artifacts.build(Output("a", ops), trees, staging)
    return published(staging)


INFRA: Files = {
    "infrastructure/controllers/descheduler/release.yaml": "d",
    "infrastructure/controllers/descheduler/kustomization.yaml": "k",
    "infrastructure/controllers/sealed-secrets/release.yaml": "s",
    "infrastructure/configs/cluster-issuer.yaml": "c",
}

# (id, sources, ops, expected files) -- files map path -> content
CASES: list[tuple[str, dict[str, Files], list[Copy], dict[str, str]]] = [
    (
        "single file",
        {"source": {"config.yaml": "x"}},
        [op("@source/config.yaml", "@artifact/")],
        {"config.yaml": "x"},
    ),
    (
        "two sources into two dirs",
        {"git": {"app.yaml": "g"}, "oci": {"config.json": "o"}},
        [op("@git/app.yaml", "@artifact/manifests/"), op("@oci/config.json", "@artifact/config/")],
        {"manifests/app.yaml": "g", "config/config.json": "o"},
    ),
    (
        "glob of files",
        {"source": {"deployment.yaml": "d", "service.yaml": "s", "configmap.yaml": "c"}},
        [op("@source/*.yaml", "@artifact/manifests/")],
        {
            "manifests/deployment.yaml": "d",
            "manifests/service.yaml": "s",
            "manifests/configmap.yaml": "c",
        },
    ),
    (
        "source root contents",
        {"source": {"root.yaml": "r", "subdir/nested.yaml": "n"}},
        [op("@source/", "@artifact/")],
        {"root.yaml": "r", "subdir/nested.yaml": "n"},
    ),
    (
        "** at the top is every entry, directories copied whole",
        {"source": {"root.yaml": "r", "subdir/nested.yaml": "n"}},
        [op("@source/**", "@artifact/")],
        {"root.yaml": "r", "subdir/nested.yaml": "n"},
    ),
    (
        "later source wins per file, directories are unioned",
        {
            "source1": {"config/app.yaml": "s1", "config/database.yaml": "s1"},
            "source2": {"config/app.yaml": "s2", "config/network.yaml": "s2"},
        },
        [op("@source1/**", "@artifact/"), op("@source2/**", "@artifact/")],
        {"config/app.yaml": "s2", "config/database.yaml": "s1", "config/network.yaml": "s2"},
    ),
    (
        "a directory lands under its own name (no slashes)",
        {"source": {"config/app.yaml": "a", "config/db.yaml": "d"}},
        [op("@source/config", "@artifact/dest")],
        {"dest/config/app.yaml": "a", "dest/config/db.yaml": "d"},
    ),
    (
        "a directory lands under its own name (slashes)",
        {"source": {"config/app.yaml": "a", "config/db.yaml": "d"}},
        [op("@source/config/", "@artifact/dest/")],
        {"dest/config/app.yaml": "a", "dest/config/db.yaml": "d"},
    ),
    (
        "a file into a directory",
        {"source": {"config.yaml": "x"}},
        [op("@source/config.yaml", "@artifact/dest/")],
        {"dest/config.yaml": "x"},
    ),
    (
        "dir/** drops the dir prefix",
        {"source": {"config/app.yaml": "a", "config/subdir/db.yaml": "d"}},
        [op("@source/config/**", "@artifact/dest/")],
        {"dest/app.yaml": "a", "dest/subdir/db.yaml": "d"},
    ),
    (
        "a file renamed when the destination does not exist",
        {
            "chart": {"Chart.yaml": "chart", "values.yaml": "defaults"},
            "repo": {"charts/podinfo/values-prod.yaml": "env: production"},
        },
        [
            op("@chart/**", "@artifact/"),
            op("@repo/charts/podinfo/values-prod.yaml", "@artifact/podinfo/values.yaml"),
        ],
        {
            "Chart.yaml": "chart",
            "values.yaml": "defaults",
            "podinfo/values.yaml": "env: production",
        },
    ),
    (
        "a file into a directory an earlier copy made",
        {"source": {"file1.txt": "1", "subdir/file2.txt": "2"}},
        [op("@source/subdir/", "@artifact/"), op("@source/file1.txt", "@artifact/subdir")],
        {"subdir/file1.txt": "1", "subdir/file2.txt": "2"},
    ),
    (
        "exclude by extension at any depth",
        {"source": {"app.yaml": "a", "config.json": "c", "README.md": "r", "notes.md": "n"}},
        [op("@source/**", "@artifact/", "*.md")],
        {"app.yaml": "a", "config.json": "c"},
    ),
    (
        "exclude a directory anywhere",
        {
            "source": {
                "app.yaml": "a",
                "testdata/test.yaml": "t",
                "testdata/fixture.json": "f",
                "configs/prod.yaml": "p",
            }
        },
        [op("@source/**", "@artifact/", "**/testdata/**")],
        {"app.yaml": "a", "configs/prod.yaml": "p"},
    ),
    (
        "glob plus exclude",
        {"source": {"app.yaml": "a", "config.yaml": "c", "secret.yaml": "s", "other.json": "o"}},
        [op("@source/*.yaml", "@artifact/configs/", "secret.yaml")],
        {"configs/app.yaml": "a", "configs/config.yaml": "c"},
    ),
    (
        "an excluded single file copies nothing",
        {"source": {"secret.yaml": "s"}},
        [op("@source/secret.yaml", "@artifact/config.yaml", "secret.yaml")],
        {},
    ),
    (
        "exclude anchored at the source root",
        {"source": INFRA},
        [
            op(
                "@source/infrastructure/**",
                "@artifact/",
                "infrastructure/controllers/descheduler/**",
            )
        ],
        {"controllers/sealed-secrets/release.yaml": "s", "configs/cluster-issuer.yaml": "c"},
    ),
    (
        "the same exclude on a plain directory copy",
        {"source": INFRA},
        [op("@source/infrastructure", "@artifact/", "infrastructure/controllers/descheduler/**")],
        {
            "infrastructure/controllers/sealed-secrets/release.yaml": "s",
            "infrastructure/configs/cluster-issuer.yaml": "c",
        },
    ),
    (
        "exclude anchored at the selection root",
        {"source": INFRA},
        [op("@source/infrastructure/**", "@artifact/", "controllers/descheduler/**")],
        {"controllers/sealed-secrets/release.yaml": "s", "configs/cluster-issuer.yaml": "c"},
    ),
    (
        "exclude anchored at a plain directory's root",
        {"source": INFRA},
        [op("@source/infrastructure", "@artifact/", "controllers/descheduler/**")],
        {
            "infrastructure/controllers/sealed-secrets/release.yaml": "s",
            "infrastructure/configs/cluster-issuer.yaml": "c",
        },
    ),
    (
        "a walked directory is never an anchor",
        {
            "source": {
                "infrastructure/descheduler/release.yaml": "top",
                "infrastructure/controllers/descheduler/release.yaml": "nested",
                "infrastructure/controllers/sealed-secrets/release.yaml": "s",
            }
        },
        [op("@source/infrastructure/**", "@artifact/", "descheduler/**")],
        {
            "controllers/descheduler/release.yaml": "nested",
            "controllers/sealed-secrets/release.yaml": "s",
        },
    ),
    (
        "exclude one nested file by its full path",
        {
            "source": {
                "infrastructure/configs/app.yaml": "a",
                "infrastructure/configs/secret.yaml": "s",
            }
        },
        [op("@source/infrastructure/**", "@artifact/", "infrastructure/configs/secret.yaml")],
        {"configs/app.yaml": "a"},
    ),
    (
        "merge: maps merge, lists and scalars replace",
        {
            "s1": {
                "config.yaml": "name: app\nports: [80, 443]\nlabels: {env: dev, keep: me}\n"
                "version: 1.0.0\nreplicas: 3\n"
            },
            "s2": {
                "config.yaml": "replicas: 5\nports: [8080]\nlabels: {env: prod}\nenv: production\n"
            },
        },
        [
            op("@s1/config.yaml", "@artifact/config.yaml"),
            op("@s2/config.yaml", "@artifact/config.yaml", strategy="Merge"),
        ],
        {
            "config.yaml": "env: production\nlabels:\n  env: prod\n  keep: me\nname: app\n"
            "ports:\n- 8080\nreplicas: 5\nversion: 1.0.0\n"
        },
    ),
    (
        "merge JSON into YAML",
        {"s1": {"config.yaml": "a: b\n"}, "s2": {"config.json": '{"c":{"d":"e"},"a":"override"}'}},
        [
            op("@s1/config.yaml", "@artifact/config.yaml"),
            op("@s2/config.json", "@artifact/config.yaml", strategy="Merge"),
        ],
        {"config.yaml": "a: override\nc:\n  d: e\n"},
    ),
    (
        "merge per glob match",
        {
            "source1": {
                "config1.yaml": "env: dev\nregion: us-west-1\n",
                "config2.yaml": "version: 1.0.0\nimage: my-app:latest\n",
            },
            "source2": {"config1.yaml": "env: prod\n", "config2.yaml": "replicas: 5\n"},
        },
        [op("@source1/**", "@artifact/"), op("@source2/**", "@artifact/", strategy="Merge")],
        {
            "config1.yaml": "env: prod\nregion: us-west-1\n",
            "config2.yaml": "image: my-app:latest\nreplicas: 5\nversion: 1.0.0\n",
        },
    ),
    (
        "merge with an exclude keeps the base file",
        {
            "s1": {"config.yaml": "env: dev\nregion: us-west-1\n", "secret.yaml": "token: base\n"},
            "s2": {"config.yaml": "env: prod\n", "secret.yaml": "token: leak\n"},
        },
        [op("@s1/**", "@artifact/"), op("@s2/**", "@artifact/", "secret.yaml", strategy="Merge")],
        {"config.yaml": "env: prod\nregion: us-west-1\n", "secret.yaml": "token: base\n"},
    ),
    (
        "merge without a destination copies bytes",
        {"source": {"config.yaml": "a:   b # kept\n"}},
        [op("@source/config.yaml", "@artifact/config.yaml", strategy="Merge")],
        {"config.yaml": "a:   b # kept\n"},
    ),
    (
        "code: ** is not recursive outside Extract",
        {"source": {"a.yaml": "a", "x/b.yaml": "b", "x/y/c.yaml": "c"}},
        [op("@source/**/*.yaml", "@artifact/")],
        {"x/b.yaml": "b"},
    ),
    (
        "code: a glob keeps the matched path",
        {"source": {"configs/a.yaml": "a", "configs/b.yaml": "b"}},
        [op("@source/configs/*.yaml", "@artifact/apps/")],
        {"apps/configs/a.yaml": "a", "apps/configs/b.yaml": "b"},
    ),
    (
        "code: * matches directories, copied at their full path",
        {"source": {"apps/x/k.yaml": "x", "apps/y/k.yaml": "y"}},
        [op("@source/apps/*", "@artifact/")],
        {"apps/x/k.yaml": "x", "apps/y/k.yaml": "y"},
    ),
    (
        "code: a deep directory copy adds its basename again",
        {"repo": {"apps/base/ns/app1/app/kustomization.yaml": "k"}},
        [op("@repo/apps/base/ns/app1/app/", "@artifact/apps/base/ns/app1/app/")],
        {"apps/base/ns/app1/app/app/kustomization.yaml": "k"},
    ),
    (
        "code: files inside a matched directory are overwritten, not merged",
        {"s1": {"d/v.yaml": "a: 1\nb: 1\n"}, "s2": {"d/v.yaml": "b: 2\n"}},
        [op("@s1/**", "@artifact/"), op("@s2/**", "@artifact/", strategy="Merge")],
        {"d/v.yaml": "b: 2\n"},
    ),
    (
        "code: the published tarball drops default-ignored files",
        {
            "source": {
                "kustomization.yaml": "k",
                "logo.png": "png",
                ".sops.yaml": "s",
                ".github/workflows/ci.yaml": "ci",
            }
        },
        [op("@source/**", "@artifact/")],
        {"kustomization.yaml": "k"},
    ),
    (
        "code: hidden files match *",
        {"source": {".hidden": "h", "a.yaml": "a"}},
        [op("@source/*", "@artifact/")],
        {".hidden": "h", "a.yaml": "a"},
    ),
    (
        "code: doublestar alternatives in exclude",
        {"source": {"a.yaml": "a", "b.json": "b", "c.txt": "c"}},
        [op("@source/*", "@artifact/", "*.{json,txt}")],
        {"a.yaml": "a"},
    ),
]


@pytest.mark.parametrize(
    ("sources", "ops", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_copy_operations(
    tmp_path: Path, sources: dict[str, Files], ops: list[Copy], expected: dict[str, str]
) -> None:
    files, _dirs = build(tmp_path, sources, *ops)
    assert files == expected


def test_excluded_files_leave_their_directory_empty(tmp_path: Path) -> None:
    source: Files = {
        "app.yaml": "a",
        "README.md": "r",
        "temp.tmp": "t",
        ".hidden": "h",
        "docs/guide.md": "g",
        "tests/test.go": "t",
    }
    files, dirs = build(
        tmp_path,
        {"source": source},
        op("@source/**", "@artifact/", "*.md", "*.tmp", "**/.*", "**/tests/**"),
    )
    assert files == {"app.yaml": "a"}
    assert dirs == {"docs"}


def test_exclude_with_a_trailing_slash_matches_nothing(tmp_path: Path) -> None:
    files, _ = build(
        tmp_path,
        {"source": {"tests/a.yaml": "a", "b.yaml": "b"}},
        op("@source/**", "@artifact/", "tests/"),
    )
    assert files == {"tests/a.yaml": "a", "b.yaml": "b"}


ERRORS: list[tuple[str, dict[str, Files], list[Copy], str]] = [
    (
        "missing file",
        {"source": {"a.yaml": "a"}},
        [op("@source/test.yaml", "@artifact/")],
        "source 'test.yaml' does not exist",
    ),
    (
        "glob without match",
        {"source": {"a.json": "a"}},
        [op("@source/*.yaml", "@artifact/")],
        "no files match pattern '*.yaml' in source 'source'",
    ),
    (
        "malformed glob",
        {"source": {"a.json": "a"}},
        [op("@source/[", "@artifact/")],
        "syntax error in pattern",
    ),
    (
        "unknown alias",
        {"source": {"a.json": "a"}},
        [op("@missing/file.yaml", "@artifact/")],
        "source alias 'missing' not found",
    ),
    (
        "all excluded",
        {"source": {"test.md": "t", "other.md": "o"}},
        [op("@source/*.md", "@artifact/", "*.md")],
        "all files matching pattern '*.md' in source 'source' were excluded",
    ),
    (
        "malformed exclude",
        {"source": {"test.md": "t"}},
        [op("@source/*.md", "@artifact/", "[*.md")],
        "invalid exclude pattern '[*.md'",
    ),
    (
        "merge into non-YAML",
        {"s1": {"config.env": "A=B\n"}, "s2": {"config.yaml": "a: b\n"}},
        [
            op("@s1/config.env", "@artifact/config.yaml"),
            op("@s2/config.yaml", "@artifact/config.yaml", strategy="Merge"),
        ],
        "cannot unmarshal YAML document",
    ),
    (
        "extract a directory",
        {"source": {"dir/a.yaml": "a"}},
        [op("@source/dir", "@artifact/", strategy="Extract")],
        "extract strategy is not supported for directories",
    ),
    (
        "extract a plain file",
        {"source": {"config.yaml": "a: b"}},
        [op("@source/config.yaml", "@artifact/", strategy="Extract")],
        "requires tarball file",
    ),
    (
        "extract a broken tarball",
        {"source": {"invalid.tgz": "not gzip"}},
        [op("@source/invalid.tgz", "@artifact/", strategy="Extract")],
        "failed to extract tarball",
    ),
    (
        "extract glob without tarball",
        {"source": {"a.yaml": "a"}},
        [op("@source/*.tgz", "@artifact/", strategy="Extract")],
        "no files match pattern '*.tgz'",
    ),
    (
        "destination escapes",
        {"source": {"a.yaml": "a"}},
        [op("@source/a.yaml", "@artifact/../x.yaml")],
        "escapes the artifact",
    ),
]


@pytest.mark.parametrize(
    ("sources", "ops", "message"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS]
)
def test_copy_errors(
    tmp_path: Path, sources: dict[str, Files], ops: list[Copy], message: str
) -> None:
    with pytest.raises(GeneratorError, match="failed to apply copy operation") as caught:
        build(tmp_path, sources, *ops)
    assert message in str(caught.value)


def test_extract_unpacks_tarballs_in_order(tmp_path: Path) -> None:
    manifests = tarball({"config.yaml": "root", "prod/config.yaml": "prod"})
    files, _ = build(
        tmp_path,
        {"source": {"manifests.tgz": manifests}},
        op("@source/manifests.tgz", "@artifact/manifests", strategy="Extract"),
    )
    assert files == {"manifests/config.yaml": "root", "manifests/prod/config.yaml": "prod"}

    many = {
        "manifests1.tgz": tarball({"config.yaml": "1", "prod/config.yaml": "p"}),
        "manifests2.TAR.GZ": tarball({"int/config.yaml": "i"}),
        "readme.txt": "r",
    }
    files, _ = build(
        tmp_path / "b", {"source": many}, op("@source/*", "@artifact/", strategy="Extract")
    )
    assert files == {"config.yaml": "1", "prod/config.yaml": "p", "int/config.yaml": "i"}

    nested = {
        "prod/manifests.tgz": tarball({"p.yaml": "p"}),
        "int/manifests.tgz": tarball({"i.yaml": "i"}),
    }
    files, _ = build(
        tmp_path / "c", {"source": nested}, op("@source/**", "@artifact/", strategy="Extract")
    )
    assert files == {"p.yaml": "p", "i.yaml": "i"}  # no prod/ or int/ prefix

    order = {
        "first.tgz": tarball({"config.yaml": "first"}),
        "second.tgz": tarball({"config.yaml": "second"}),
        "int.tgz": tarball({"x.yaml": "x"}),
    }
    files, _ = build(
        tmp_path / "d",
        {"source": order},
        op("@source/*.tgz", "@artifact/", "int.tgz", strategy="Extract"),
    )
    assert files == {"config.yaml": "second"}


def test_inputs_are_the_source_artifact(tmp_path: Path) -> None:
    """Ignore rules and symlinks: the generator reads what source-controller archived."""
    root = write_tree(
        tmp_path / "repo",
        {
            "apps/a.yaml": "a",
            "apps/skip.yaml": "s",
            "apps/keep.md": "k",
            ".sourceignore": "apps/skip.yaml\n",
        },
    )
    (root / "apps" / "link.yaml").symlink_to(root / "apps" / "a.yaml")
    rules = SourceIgnores().rules(root, "GitRepository")
    staging = tmp_path / "out"
    staging.mkdir()
    artifacts.build(
        Output("a", (op("@repo/apps/**", "@artifact/"),)), {"repo": Tree(root, rules)}, staging
    )
    assert published(staging)[0] == {"a.yaml": "a", "keep.md": "k"}


def test_a_reincluded_file_keeps_its_excluded_directory(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "repo",
        {"apps/a.yaml": "a", "apps/b.yaml": "b", ".sourceignore": "/apps\n!/apps/b.yaml\n"},
    )
    tree = Tree(root, SourceIgnores().rules(root, "GitRepository"))
    assert tree.entries("apps") == ["b.yaml"]
    assert tree.kind("apps/a.yaml") is None


def generator(**spec: Any) -> dict[str, Any]:
    body = {"sources": [{"alias": "repo", "kind": "GitRepository", "name": "flux-system"}], **spec}
    return {
        "apiVersion": "source.extensions.fluxcd.io/v1beta1",
        "kind": "ArtifactGenerator",
        "metadata": {"name": "gen", "namespace": "flux-system"},
        "spec": body,
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {
                "sources": [
                    {"alias": "a", "kind": "GitRepository", "name": "x"},
                    {"alias": "a", "kind": "GitRepository", "name": "y"},
                ],
                "artifacts": [{"name": "n", "copy": [{"from": "@a/", "to": "@artifact/"}]}],
            },
            "duplicate source alias 'a'",
        ),
        (
            {"artifacts": [{"name": "n", "copy": [{"from": "@repo/", "to": "@artifact/"}]}] * 2},
            "duplicate artifact name 'n'",
        ),
        (
            {
                "artifacts": [
                    {"name": "Not_A_Name", "copy": [{"from": "@repo/", "to": "@artifact/"}]}
                ]
            },
            "not a valid Kubernetes object name",
        ),
        (
            {
                "artifacts": [
                    {
                        "name": "n",
                        "revision": "@other",
                        "copy": [{"from": "@repo/", "to": "@artifact/"}],
                    }
                ]
            },
            "revision source alias 'other' not found",
        ),
        (
            {"artifacts": [{"name": "n", "copy": [{"from": "@repo", "to": "@artifact/"}]}]},
            "must read @alias/path",
        ),
        (
            {"artifacts": [{"name": "n", "copy": [{"from": "@repo/", "to": "artifact/"}]}]},
            "must start with '@artifact/'",
        ),
        (
            {
                "artifacts": [
                    {
                        "name": "n",
                        "copy": [{"from": "@repo/", "to": "@artifact/", "strategy": "Append"}],
                    }
                ]
            },
            "strategy must be one of",
        ),
        ({"artifacts": []}, "at least one artifact"),
    ],
)
def test_spec_validation(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(GeneratorError, match=message):
        artifacts.parse(generator(**spec))


def test_origin_revision_with_an_unknown_alias_is_accepted() -> None:
    parsed = artifacts.parse(
        generator(
            artifacts=[
                {
                    "name": "n",
                    "originRevision": "@nope",
                    "copy": [{"from": "@repo/", "to": "@artifact/"}],
                }
            ]
        )
    )
    assert parsed.outputs[0].name == "n"
    assert parsed.artifact("n").namespace == "flux-system"


def expand(
    tmp_path: Path,
    files: Files,
    pattern: str,
    name: str,
    source: str = "@repo/apps/{app}/**",
    to: str = "@artifact/",
) -> tuple[artifacts.Output, ...]:
    root = write_tree(tmp_path / "repo", files)
    gen = artifacts.parse(
        generator(
            pathPattern=pattern, artifacts=[{"name": name, "copy": [{"from": source, "to": to}]}]
        )
    )
    return artifacts.expand(gen, {"repo": Tree(root, None)})


def test_path_pattern_expands_per_directory(tmp_path: Path) -> None:
    files: Files = {
        "apps/auth/envs/dev/a.yaml": "a",
        "apps/auth/envs/prod/a.yaml": "a",
        "apps/payments/p.yaml": "p",
        "apps/ignore/envs/dev": "a file",
    }
    found = expand(tmp_path, files, "@repo/apps/{app}", "app-{app}")
    assert [o.name for o in found] == ["app-auth", "app-ignore", "app-payments"]
    assert found[0].labels == (("app", "auth"),)
    assert found[0].copy[0].source == "@repo/apps/auth/**"
    two = expand(
        tmp_path / "b",
        files,
        "@repo/apps/{app}/envs/{env}",
        "{app}-{env}",
        "@repo/apps/{app}/envs/{env}/**",
        "@artifact/{app}/{env}/",
    )
    assert [o.name for o in two] == ["auth-dev", "auth-prod"]


def test_path_pattern_lower_cases_names_not_paths(tmp_path: Path) -> None:
    files: Files = {"apps/Auth/envs/Dev/a.yaml": "a", "apps/Payments/envs/Prod/p.yaml": "p"}
    found = expand(
        tmp_path,
        files,
        "@repo/apps/{app}/envs/{env}",
        "{app}-{env}",
        "@repo/apps/{app}/envs/{env}/**",
        "@artifact/{app}/{env}/",
    )
    assert [o.name for o in found] == ["auth-dev", "payments-prod"]
    assert found[0].labels == (("app", "auth"), ("env", "dev"))
    assert found[0].copy[0] == Copy("@repo/apps/Auth/envs/Dev/**", "@artifact/Auth/Dev/")


@pytest.mark.parametrize(
    ("pattern", "name", "message"),
    [
        ("@repo/apps/{}", "x", "empty capture"),
        ("@repo/apps/{app-name}", "x", "must match"),
        ("@repo/apps/{1app}", "x", "must match"),
        ("@repo/apps/{app", "x", "missing closing brace"),
        ("@repo/apps/app}", "x", "missing opening brace"),
        ("@repo/{app}/envs/{app}", "x", "duplicate capture"),
        ("@repo/apps/{_app}", "x", "label key"),
        ("@repo/apps/{app}", "{missing}", "not defined by pathPattern"),
    ],
)
def test_path_pattern_errors(tmp_path: Path, pattern: str, name: str, message: str) -> None:
    with pytest.raises(GeneratorError, match=message):
        expand(tmp_path, {"apps/auth/a.yaml": "a"}, pattern, name)


def test_path_pattern_name_collision(tmp_path: Path) -> None:
    with pytest.raises(GeneratorError, match="both resolve to artifact name 'auth'"):
        expand(
            tmp_path,
            {"apps/Auth/a.yaml": "a", "apps/auth/a.yaml": "a"},
            "@repo/apps/{app}",
            "{app}",
        )


def test_store_stops_at_the_first_failing_artifact(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", {"apps/a.yaml": "a"})
    gen = artifacts.parse(
        generator(
            artifacts=[
                {"name": "broken", "copy": [{"from": "@repo/missing/**", "to": "@artifact/"}]},
                {"name": "fine", "copy": [{"from": "@repo/apps/**", "to": "@artifact/"}]},
            ]
        )
    )
    store = artifacts.Store(tmp_path / "store")
    (tmp_path / "store").mkdir()
    trees = {"repo": Tree(root, None)}
    with pytest.raises(GeneratorError, match="no files match pattern 'missing/\\*\\*'"):
        store.build(gen, gen.outputs, 0, trees)
    with pytest.raises(GeneratorError, match="stops at artifact 'broken' before building 'fine'"):
        store.build(gen, gen.outputs, 1, trees)


def test_store_names_artifact_paths_by_their_origin(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", {"apps/staging/kustomization.yaml": "k"})
    gen = artifacts.parse(
        generator(
            artifacts=[
                {
                    "name": "apps",
                    "copy": [{"from": "@repo/apps/staging/**", "to": "@artifact/staging/"}],
                }
            ]
        )
    )
    (tmp_path / "store").mkdir()
    store = artifacts.Store(tmp_path / "store")
    built = store.build(gen, gen.outputs, 0, {"repo": Tree(repo, None)})
    assert built.origin_dir("staging") == repo / "apps/staging"
    message = f"open {built.root}/staging/kustomization.yaml: x; {built.root}/base: missing"
    assert store.display(message, repo) == (
        "open apps/staging/kustomization.yaml: x; ExternalArtifact/flux-system/apps:base: missing"
    )
    assert yaml.safe_load((built.root / "staging/kustomization.yaml").read_text()) == "k"
