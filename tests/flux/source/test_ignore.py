"""Flux's source ignore rules: go-git's gitignore matching, defaults, `.sourceignore`, spec.ignore.

The expected values follow go-git v5.16.4's matcher, which Flux froze as fluxcd/pkg
`sourceignore/gitignore`; cases where that differs from git say so.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.core import config as config_mod
from harness.flux import includes
from harness.flux.kustomize import generator
from harness.flux.source.ignore import (
    DEFAULT_ORIGIN,
    Rules,
    SourceIgnores,
    fnmatch,
    ignore_files,
    parse_pattern,
    read_patterns,
    source_rules,
)
from harness.pipeline.repo import RenderOptions, render_repo
from tests.flux.conftest import by_id, cm, docs, flux_ks, ks_file, new_renderer
from tests.flux.conftest import render_repo as render_flux_repo

Repo = Callable[[dict[str, str | bytes]], Path]
ROOT = Path("/src")
SOPS_CONFIG = "creation_rules:\n  - path_regex: .*.yaml\n    age: age1xyz\n"
CI_WORKFLOW = "name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n"


def excluded(lines: str, path: str, is_dir: bool = False, domain: str = "") -> bool:
    """Whether the patterns (one `.sourceignore`, in `domain`) keep `path` out."""
    parts = tuple(domain.split("/")) if domain else ()
    rules = Rules(ROOT, read_patterns(lines, parts))
    return rules.exclusion(ROOT / path, is_dir) is not None


# -- the matcher -----------------------------------------------------------------------------

MATCHING = [
    # plain names match any component, at any depth
    ("foo.yaml", "foo.yaml", False, True),
    ("foo.yaml", "a/b/foo.yaml", False, True),
    ("foo.yaml", "foo.yml", False, False),
    ("foo", "foo/bar.yaml", False, True),  # a matched directory covers its contents
    ("*.yaml", "a/b.yaml", False, True),
    ("*.yaml", "a.yml", False, False),
    ("*.yaml", "x.yaml/inner.txt", False, True),
    ("a?.yaml", "ab.yaml", False, True),
    ("a?.yaml", "abc.yaml", False, False),
    ("*", "anything/at/all", False, True),
    ("**", "anything", False, True),
    # character classes: Go's filepath.Match syntax
    ("[ab].yaml", "a.yaml", False, True),
    ("[ab].yaml", "c.yaml", False, False),
    ("[a-c]x.yaml", "bx.yaml", False, True),
    ("[^a].yaml", "b.yaml", False, True),
    ("[^a].yaml", "a.yaml", False, False),
    ("[!a].yaml", "!.yaml", False, True),  # git would read [!a] as a negation
    ("[!a].yaml", "b.yaml", False, False),
    ("[\\]]x", "]x", False, True),
    # malformed globs match nothing
    ("[a", "[a", False, False),
    ("[]a]", "]", False, False),
    ("[a-]", "a", False, False),
    ("foo\\", "foo\\", False, False),
    # a leading or middle slash anchors at the file's directory
    ("/foo", "foo", False, True),
    ("/foo", "foo/bar.yaml", False, True),
    ("/foo", "a/foo", False, False),
    ("a/b", "a/b", False, True),
    ("a/b", "a/b/c.yaml", False, True),
    ("a/b", "x/a/b", False, False),
    ("a/*.yaml", "a/x.yaml", False, True),
    ("a/*.yaml", "a/b/x.yaml", False, False),
    ("a//b", "a/b", False, True),
    # a trailing slash: directories only (and what is inside them)
    ("build/", "build", True, True),
    ("build/", "build", False, False),
    ("build/", "build/out.yaml", False, True),
    ("build/", "src/build/out.yaml", False, True),
    ("/build/", "build", True, True),
    ("/build/", "src/build", True, False),
    ("a/b/", "a/b", False, False),
    ("a/b/", "a/b/c.yaml", False, True),
    # ** as a whole component
    ("**/foo", "foo", False, True),
    ("**/foo", "a/b/foo", False, True),
    ("**/foo", "a/foo/x.yaml", False, True),
    ("**/foo/bar", "x/foo/bar", False, True),
    ("**/foo/bar", "x/foo/baz", False, False),
    ("a/**/b", "a/b", False, True),
    ("a/**/b", "a/x/y/b", False, True),
    ("a/**/b", "a/x/b/c.yaml", False, True),
    ("a/**/b", "x/a/b", False, False),
    ("a/**", "a/x", False, True),
    ("a/**", "a/x/y.yaml", False, True),
    ("a/**", "a", False, True),  # go-git: also the file `a` itself (git: only inside)
    ("/**", "anything", False, False),  # go-git: a lone `/**` matches nothing
    ("**/a/b", "a/a/b", False, False),  # go-git binds `a` to its first occurrence
    ("a**/b", "ab/b", False, False),  # `**` inside a component of an anchored pattern
    ("**/.sops.yaml", "clusters/dev/.sops.yaml", False, True),
    # escapes, comments, blank lines, trailing spaces
    ("\\#notes.yaml", "#notes.yaml", False, True),
    ("#notes.yaml", "#notes.yaml", False, False),
    ("\\!important.yaml", "!important.yaml", False, True),
    ("foo.yaml   ", "foo.yaml", False, True),
    ("foo\\ ", "foo ", False, True),
    ("\n\n   \n# only comments\n", "foo.yaml", False, False),
    ("foo.yaml\r\n", "foo.yaml", False, True),
]


@pytest.mark.parametrize(("lines", "path", "is_dir", "expected"), MATCHING)
def test_pattern_matching(lines: str, path: str, is_dir: bool, expected: bool) -> None:
    assert excluded(lines, path, is_dir) is expected


ORDERING = [
    # a `!` line brings back what an earlier line excluded; the last matching line wins
    ("*.yaml\n!keep.yaml", "keep.yaml", False),
    ("*.yaml\n!keep.yaml", "other.yaml", True),
    ("!keep.yaml\n*.yaml", "keep.yaml", True),
    ("*.yaml\n!*.yaml\n*.yaml", "a.yaml", True),
    # Flux (go-git) matches every path on its own, so `!` reaches into an excluded
    # directory; git would keep secrets/public.yaml out
    ("secrets/\n!secrets/public.yaml", "secrets/public.yaml", False),
    ("secrets/\n!secrets/public.yaml", "secrets/private.yaml", True),
    ("secrets/\n!public.yaml", "secrets/public.yaml", False),
    # source-controller's documented example
    ("/*\n!/deploy\n/deploy/**/*.md", "deploy/app.yaml", False),
    ("/*\n!/deploy\n/deploy/**/*.md", "deploy/docs/readme.md", True),
    ("/*\n!/deploy\n/deploy/**/*.md", "deploy/readme.md", True),
    ("/*\n!/deploy\n/deploy/**/*.md", "README.md", True),
    ("/*\n!/deploy\n/deploy/**/*.md", "other/app.yaml", True),
    # the include-list style of the flux2-kustomize-helm-example repo
    ("/*\n!/apps/\n!/clusters/", "apps/base/kustomization.yaml", False),
    ("/*\n!/apps/\n!/clusters/", "LICENSE", True),
]


@pytest.mark.parametrize(("lines", "path", "expected"), ORDERING)
def test_later_lines_win(lines: str, path: str, expected: bool) -> None:
    assert excluded(lines, path) is expected


@pytest.mark.parametrize(
    ("lines", "path", "expected"),
    [
        ("*.yaml", "apps/x.yaml", True),
        ("*.yaml", "apps/sub/x.yaml", True),
        ("*.yaml", "x.yaml", False),  # above the file's directory
        ("*.yaml", "other/x.yaml", False),
        ("/x.yaml", "apps/x.yaml", True),
        ("/x.yaml", "apps/sub/x.yaml", False),
        ("sub/x.yaml", "apps/sub/x.yaml", True),
        ("**/x.yaml", "apps/a/b/x.yaml", True),
        ("*", "apps", False),  # the directory holding the file is not below it
    ],
)
def test_patterns_are_relative_to_their_file(lines: str, path: str, expected: bool) -> None:
    assert excluded(lines, path, domain="apps") is expected


def test_a_remembered_decision_is_the_one_the_patterns_give() -> None:
    """Rules keep each path's decision (a pure function of its parts and kind); asking
    again, in any order, gives what a fresh walk of the patterns gives, and the memo takes
    no part in a Rules' equality, hash or repr (cache keys and memos hold Rules)."""
    lines = "/*\n!/deploy\n/deploy/**/*.md\n!/deploy/keep.md\n*.tmp/\n"
    asked = [
        ("deploy/readme.md", False),
        ("deploy/keep.md", False),
        ("deploy/a.tmp", True),
        ("deploy/a.tmp", False),
        ("README.md", False),
        ("deploy", True),
    ]
    used = Rules(Path("/r"), read_patterns(lines))
    for path, is_dir in [*asked, *reversed(asked), *asked]:
        fresh = Rules(Path("/r"), read_patterns(lines))
        parts = tuple(path.split("/"))
        assert used.decide(parts, is_dir) == fresh.decide(parts, is_dir)
        assert used.exclusion(Path("/r") / path, is_dir) == fresh.exclusion(
            Path("/r") / path, is_dir
        )
    assert used.exclusion(Path("/r/deploy/a.tmp"), True) is not None  # the kind is in the key
    assert used.exclusion(Path("/r/deploy/a.tmp"), False) is None
    untouched = Rules(Path("/r"), read_patterns(lines))
    assert used == untouched and hash(used) == hash(untouched) and repr(used) == repr(untouched)


def test_parse_pattern_fields() -> None:
    p = parse_pattern("!/deploy/  ", ("apps",), "apps/.sourceignore")
    assert (p.negated, p.dir_only, p.anchored, p.parts, p.domain) == (
        True,
        True,
        True,
        ("", "deploy"),
        ("apps",),
    )
    assert p.text == "!/deploy/  " and p.origin == "apps/.sourceignore"
    assert not parse_pattern("name").anchored


def test_fnmatch_is_per_component() -> None:
    assert fnmatch("*", "abc") and not fnmatch("a*c", "abd")
    assert fnmatch("a*b*c", "aXbYbZc") and not fnmatch("a*b*c", "aXbYbZ")


# -- which patterns apply ----------------------------------------------------------------------


def texts(rules: Rules) -> list[str]:
    return [p.text for p in rules.patterns]


def test_defaults_without_any_pattern() -> None:
    rules = source_rules(ROOT, "GitRepository", ())
    assert texts(rules)[:4] == [".git/", ".gitignore", ".gitmodules", ".gitattributes"]
    assert {p.origin for p in rules.patterns} == {DEFAULT_ORIGIN}
    for path in (
        ".git/config",
        "clusters/dev/.sops.yaml",
        ".sops.yaml",
        ".github/workflows/ci.yaml",
        "apps/.github/x.yaml",
        "docs/diagram.png",
        "charts/app-1.0.tar.gz",
        "ci/cloudbuild.yaml",
        "apps/.goreleaser.yml",
        "apps/.flux.yaml",
        ".gitlab-ci.yml",
    ):
        assert rules.exclusion(ROOT / path, False) is not None, path
    assert rules.exclusion(ROOT / "apps/app.yaml", False) is None


def test_any_pattern_replaces_the_defaults_but_not_vcs() -> None:
    files = read_patterns("docs/", (), "/src/.sourceignore")
    rules = source_rules(ROOT, "GitRepository", files)
    assert texts(rules) == [".git/", ".gitignore", ".gitmodules", ".gitattributes", "docs/"]
    assert rules.exclusion(ROOT / ".sops.yaml", False) is None
    assert rules.exclusion(ROOT / ".git/HEAD", False) is not None
    only_spec = source_rules(ROOT, "GitRepository", (), "*.md", "spec.ignore of X")
    assert texts(only_spec)[-1] == "*.md" and ".github/" not in texts(only_spec)
    assert only_spec.patterns[-1].origin == "spec.ignore of X"


def test_spec_ignore_without_a_pattern_keeps_the_defaults() -> None:
    for spec in ("", "# nothing\n\n"):
        assert ".github/" in texts(source_rules(ROOT, "GitRepository", (), spec))


def test_spec_ignore_comes_after_sourceignore_files() -> None:
    files = read_patterns("*.yaml", (), "/src/.sourceignore")
    rules = source_rules(ROOT, "GitRepository", files, "!keep.yaml")
    assert rules.exclusion(ROOT / "keep.yaml", False) is None
    assert rules.exclusion(ROOT / "drop.yaml", False) is not None


def test_bucket_has_no_defaults() -> None:
    assert texts(source_rules(ROOT, "Bucket", ())) == []
    assert texts(source_rules(ROOT, "Bucket", (), "x/")) == ["x/"]
    assert ".git/" in texts(source_rules(ROOT, "OCIRepository", ()))


def test_ignore_files_order_and_skips(make_repo: Repo) -> None:
    repo = make_repo(
        {
            ".sourceignore": "a\n",
            "b/.sourceignore": "b\n",
            "b/c/.sourceignore": "c\n",
            "a/.sourceignore": "a2\n",
            ".git/.sourceignore": "never\n",
            "elsewhere/.sourceignore": "linked\n",
        }
    )
    os.symlink(repo / "elsewhere", repo / "link")
    assert [p.relative_to(repo).as_posix() for p in ignore_files(repo)] == [
        ".sourceignore",
        "a/.sourceignore",
        "b/.sourceignore",
        "b/c/.sourceignore",
        "elsewhere/.sourceignore",
    ]
    assert ignore_files(repo, recursive=False) == (repo / ".sourceignore",)


def test_cache_reads_each_root_once(make_repo: Repo) -> None:
    repo = make_repo({"apps/.sourceignore": "*.txt\n"})
    cache = SourceIgnores()
    first = cache.rules(repo, "GitRepository")
    (repo / "apps/.sourceignore").write_text("*.md\n", encoding="utf-8")
    again = cache.rules(repo, "GitRepository", "x")
    assert first is cache.rules(repo, "GitRepository")
    assert texts(again)[-2:] == ["*.txt", "x"]
    assert first.patterns[-1].domain == ("apps",)
    assert first.patterns[-1].origin == str(repo / "apps/.sourceignore")


# -- the generator scan ----------------------------------------------------------------------


def repo_rules(repo: Path, spec_ignore: str | None = None) -> Rules:
    return SourceIgnores().rules(repo, "GitRepository", spec_ignore)


def test_scan_skips_default_exclusions(make_repo: Repo) -> None:
    repo = make_repo(
        {
            "app/a.yaml": cm("a"),
            "app/.sops.yaml": SOPS_CONFIG,
            "app/.github/workflows/ci.yaml": CI_WORKFLOW,
            "app/cloudbuild.yaml": "steps: []\n",
        }
    )
    with pytest.raises(generator.GeneratorError, match="failed to decode"):
        generator.scan(repo / "app")  # what harness did before
    assert generator.scan(repo / "app", repo_rules(repo)) == ["./a.yaml"]


def test_scan_follows_reinclusion_into_excluded_directory(make_repo: Repo) -> None:
    repo = make_repo(
        {
            ".sourceignore": "drafts/\n!app/drafts/ready.yaml\n",
            "app/a.yaml": cm("a"),
            "app/drafts/wip.yaml": "not: [yaml",
            "app/drafts/ready.yaml": cm("ready"),
        }
    )
    assert generator.scan(repo / "app", repo_rules(repo)) == ["./a.yaml", "./drafts/ready.yaml"]


def test_scan_descends_into_a_directory_whose_kustomization_is_excluded(make_repo: Repo) -> None:
    repo = make_repo(
        {
            ".sourceignore": "app/sub/kustomization.yaml\n",
            "app/sub/kustomization.yaml": ks_file("x.yaml"),
            "app/sub/x.yaml": cm("x"),
            "app/sub/y.yaml": cm("y"),
        }
    )
    assert generator.scan(repo / "app") == ["./sub"]
    assert generator.scan(repo / "app", repo_rules(repo)) == ["./sub/x.yaml", "./sub/y.yaml"]


def test_file_refs_names_every_local_path(make_repo: Repo) -> None:
    body = {
        "resources": ["a.yaml", "../base", "https://example.invalid/x.yaml"],
        "components": ["../comp"],
        "crds": ["crd.yaml"],
        "patches": [{"path": "p1.yaml"}, {"patch": "inline: true"}],
        "patchesStrategicMerge": ["p2.yaml", "kind: X\nmetadata: {}\n"],
        "patchesJson6902": [{"path": "p3.yaml"}],
        "configMapGenerator": [{"name": "c", "files": ["k=f1.txt", "f2.txt"], "envs": ["e.env"]}],
        "secretGenerator": [{"name": "s", "env": "s.env"}],
        "replacements": [{"path": "r.yaml"}],
        "transformers": ["t.yaml"],
        "configurations": ["conf.yaml"],
        "openapi": {"path": "schema.json"},
    }
    repo = make_repo({"app/kustomization.yaml": yaml.safe_dump(body)})
    names = [
        p.relative_to(repo).as_posix() for p in includes.file_refs(repo / "app/kustomization.yaml")
    ]
    assert names == [
        "app/a.yaml",
        "base",
        "comp",
        "app/crd.yaml",
        "app/p2.yaml",
        "app/conf.yaml",
        "app/t.yaml",
        "app/p1.yaml",
        "app/p3.yaml",
        "app/r.yaml",
        "app/f1.txt",
        "app/f2.txt",
        "app/e.env",
        "app/s.env",
        "app/schema.json",
    ]


# -- whole clusters, real kubectl ----------------------------------------------------------------


def git_repository(ignore: str | None = None, name: str = "flux-system") -> str:
    spec: dict[str, Any] = {"interval": "1m", "url": "https://example.invalid/repo", "ref": {}}
    if ignore is not None:
        spec["ignore"] = ignore
    return yaml.safe_dump(
        {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": name, "namespace": "flux-system"},
            "spec": spec,
        },
        sort_keys=False,
    )


def cluster(ignore: str | None = None, **files: str) -> dict[str, str | bytes]:
    """clusters/dev bootstrapped with a GitRepository, and an `apps` Kustomization."""
    out: dict[str, str | bytes] = {
        "clusters/dev/flux-system/kustomization.yaml": ks_file("gotk-sync.yaml"),
        "clusters/dev/flux-system/gotk-sync.yaml": docs(
            git_repository(ignore), flux_ks("flux-system", "./clusters/dev")
        ),
        "clusters/dev/apps.yaml": flux_ks("apps", "./apps"),
    }
    out.update(files)
    return out


def test_defaults_let_a_generated_path_hold_sops_and_ci_files(make_repo: Repo) -> None:
    repo = make_repo(
        cluster(
            **{
                "apps/a.yaml": cm("a", "default"),
                "apps/.sops.yaml": SOPS_CONFIG,
                "apps/.github/workflows/ci.yaml": CI_WORKFLOW,
                "apps/logo.png": "not an image",
            }
        )
    )
    results = render_flux_repo(repo)
    assert list(by_id(results["dev/flux-system/apps"])) == ["ConfigMap/default/a"]


def test_defaults_apply_to_the_cluster_directory_itself(make_repo: Repo) -> None:
    repo = make_repo(
        {
            "clusters/dev/apps.yaml": flux_ks("apps", "./apps"),
            "clusters/dev/.sops.yaml": SOPS_CONFIG,
            "apps/a.yaml": cm("a", "default"),
        }
    )
    results = render_flux_repo(repo)
    root = results["dev/flux-system/flux-system"]
    assert list(by_id(root)) == ["kustomize.toolkit.fluxcd.io/Kustomization/flux-system/apps"]
    assert list(by_id(results["dev/flux-system/apps"])) == ["ConfigMap/default/a"]


def test_a_sourceignore_line_drops_the_defaults_as_in_flux(make_repo: Repo) -> None:
    repo = make_repo(
        cluster(
            **{
                ".sourceignore": "docs/\n",
                "apps/a.yaml": cm("a", "default"),
                "apps/.sops.yaml": SOPS_CONFIG,
            }
        )
    )
    result = render_flux_repo(repo)["dev/flux-system/apps"]
    assert result.error == ("failed to decode Kubernetes YAML from apps/.sops.yaml: missing kind")


def test_nested_sourceignore_files(make_repo: Repo) -> None:
    repo = make_repo(
        cluster(
            **{
                ".sourceignore": "*.draft.yaml\n",
                "apps/.sourceignore": "/local/\n# a comment\n!keep.draft.yaml\n",
                "apps/a.yaml": cm("a", "default"),
                "apps/b.draft.yaml": "broken: [",
                "apps/keep.draft.yaml": cm("keep", "default"),
                "apps/local/x.yaml": "broken: [",
                "apps/nested/local/y.yaml": cm("y", "default"),
                "other/local/z.yaml": cm("z", "default"),
            }
        )
    )
    results = render_flux_repo(repo)
    assert sorted(by_id(results["dev/flux-system/apps"])) == [
        "ConfigMap/default/a",
        "ConfigMap/default/keep",
        "ConfigMap/default/y",
    ]


def test_spec_ignore_of_the_bootstrap_repository(make_repo: Repo) -> None:
    repo = make_repo(
        cluster(
            ignore="# generated files\n/apps/generated/\n",
            **{
                "apps/a.yaml": cm("a", "default"),
                "apps/generated/out.yaml": "broken: [",
                "apps/.sops.yaml": SOPS_CONFIG,
            },
        )
    )
    result = render_flux_repo(repo)["dev/flux-system/apps"]
    # spec.ignore replaces the defaults too, so .sops.yaml is back in the artifact
    assert result.error == ("failed to decode Kubernetes YAML from apps/.sops.yaml: missing kind")
    (repo / "apps/.sops.yaml").unlink()
    assert list(by_id(render_flux_repo(repo)["dev/flux-system/apps"])) == ["ConfigMap/default/a"]


def test_excluded_file_read_by_a_kustomization_fails_the_flux_target(make_repo: Repo) -> None:
    repo = make_repo(
        cluster(
            **{
                "apps/.sourceignore": "secret.yaml\n",
                "apps/kustomization.yaml": ks_file("a.yaml", "secret.yaml"),
                "apps/a.yaml": cm("a", "default"),
                "apps/secret.yaml": cm("s", "default"),
            }
        )
    )
    snapshot = render_repo(config_mod.load(repo), new_renderer(), RenderOptions(jobs=2))
    assert snapshot.results["apps"].ok  # the path target renders the tree as it is
    assert snapshot.results["dev/flux-system/apps"].error == (
        "apps/secret.yaml is excluded from the source artifact by 'secret.yaml' "
        "in apps/.sourceignore"
    )


@pytest.mark.parametrize(
    ("ignore", "files", "message"),
    [
        (
            "/base/\n",
            {},
            "base is excluded from the source artifact by '/base/' in "
            "spec.ignore of GitRepository/flux-system/flux-system",
        ),
        (
            "base/kustomization.yaml\n",
            {},
            "base/kustomization.yaml is excluded from the source artifact by "
            "'base/kustomization.yaml' in spec.ignore of GitRepository/flux-system/flux-system",
        ),
        (
            None,
            {"base/kustomization.yaml": ks_file("cm.yaml", patches=[{"path": "logo.png"}])},
            "base/logo.png is excluded from the source artifact by '*.png' in default exclusions",
        ),
        (
            "values.env\n",
            {
                "base/kustomization.yaml": ks_file(
                    "cm.yaml", configMapGenerator=[{"name": "v", "envs": ["values.env"]}]
                )
            },
            "base/values.env is excluded from the source artifact by 'values.env' in "
            "spec.ignore of GitRepository/flux-system/flux-system",
        ),
    ],
)
def test_excluded_reads_through_resources_patches_and_generators(
    make_repo: Repo, ignore: str | None, files: dict[str, str], message: str
) -> None:
    base = {
        "apps/kustomization.yaml": ks_file("../base"),
        "base/kustomization.yaml": ks_file("cm.yaml"),
        "base/cm.yaml": cm("a", "default"),
        "base/logo.png": "- op: add\n  path: /data/x\n  value: y\n",
        "base/values.env": "A=1\n",
    }
    repo = make_repo(cluster(ignore, **{**base, **files}))
    assert render_flux_repo(repo)["dev/flux-system/apps"].error == message


def test_generated_kustomization_checks_its_subdirectories(make_repo: Repo) -> None:
    repo = make_repo(
        cluster(
            **{
                ".sourceignore": "*.secret.yaml\n",
                "apps/plain.yaml": cm("plain", "default"),
                "apps/sub/kustomization.yaml": ks_file("db.secret.yaml"),
                "apps/sub/db.secret.yaml": cm("db", "default"),
            }
        )
    )
    assert render_flux_repo(repo)["dev/flux-system/apps"].error == (
        "apps/sub/db.secret.yaml is excluded from the source artifact by '*.secret.yaml' "
        "in .sourceignore"
    )


def test_excluded_kustomization_file_makes_flux_generate_one(make_repo: Repo) -> None:
    repo = make_repo(
        cluster(
            **{
                ".sourceignore": "/apps/kustomization.yaml\n",
                "apps/kustomization.yaml": ks_file("a.yaml"),
                "apps/a.yaml": cm("a", "default"),
                "apps/b.yaml": cm("b", "default"),
            }
        )
    )
    result = render_flux_repo(repo)["dev/flux-system/apps"]
    assert sorted(by_id(result)) == ["ConfigMap/default/a", "ConfigMap/default/b"]
    assert (repo / "apps/kustomization.yaml").read_text(encoding="utf-8") == ks_file("a.yaml")


def test_mapped_source_has_its_own_rules(make_repo: Repo) -> None:
    repo = make_repo(
        {
            "clusters/dev/team.yaml": docs(
                git_repository("/ignored.yaml\n", name="team"),
                flux_ks("team", "./", source="team"),
            ),
            ".sourceignore": "team-repo/\n",  # the main repo's rules do not apply there
            "team-repo/a.yaml": cm("a", "default"),
            "team-repo/ignored.yaml": "broken: [",
            "team-repo/.sops.yaml": SOPS_CONFIG,
            "harness.yaml": "sources:\n  GitRepository/flux-system/team: team-repo\n",
        }
    )
    results = render_flux_repo(repo)
    # team's spec.ignore replaced its defaults: .sops.yaml is in its artifact
    assert results["dev/flux-system/team"].error == (
        "failed to decode Kubernetes YAML from team-repo/.sops.yaml: missing kind"
    )
    (repo / "team-repo/.sops.yaml").unlink()
    assert list(by_id(render_flux_repo(repo)["dev/flux-system/team"])) == ["ConfigMap/default/a"]
