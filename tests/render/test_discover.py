"""Path targets: every kustomization dir, Components and dot-dirs skipped, config globs."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from harness.core import config
from harness.render import discover
from tests.conftest import configmap, kustomization

COMPONENT = "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"


def test_finds_all_three_file_names_and_skips_components(
    make_repo: Callable[[dict[str, str | bytes]], Path],
) -> None:
    repo = make_repo(
        {
            "a/kustomization.yaml": kustomization("cm.yaml"),
            "a/cm.yaml": configmap("a"),
            "b/c/kustomization.yml": kustomization(),
            "d/Kustomization": kustomization(),
            "comp/kustomization.yaml": COMPONENT,
            ".git/x/kustomization.yaml": kustomization(),
            ".hidden/kustomization.yaml": kustomization(),
            "plain/file.yaml": configmap("p"),
        }
    )
    cfg = config.load(repo)
    assert [t.name for t in discover.path_targets(cfg)] == ["a", "b/c", "d"]


def test_repo_root_target_is_dot(make_repo: Callable[[dict[str, str | bytes]], Path]) -> None:
    repo = make_repo({"kustomization.yaml": kustomization()})
    assert [t.name for t in discover.path_targets(config.load(repo))] == ["."]


def test_include_exclude_globs(make_repo: Callable[[dict[str, str | bytes]], Path]) -> None:
    repo = make_repo(
        {
            "apps/x/kustomization.yaml": kustomization(),
            "apps/y/kustomization.yaml": kustomization(),
            "infra/kustomization.yaml": kustomization(),
        }
    )
    cfg = config.load(repo)
    assert [t.name for t in discover.path_targets(replace(cfg, include=("apps/**",)))] == [
        "apps/x",
        "apps/y",
    ]
    assert [t.name for t in discover.path_targets(replace(cfg, exclude=("apps/y",)))] == [
        "apps/x",
        "infra",
    ]


def test_goldens_directory_is_not_scanned(
    make_repo: Callable[[dict[str, str | bytes]], Path],
) -> None:
    repo = make_repo(
        {"goldens/kustomization.yaml": kustomization(), "a/kustomization.yaml": kustomization()}
    )
    assert [t.name for t in discover.path_targets(config.load(repo))] == ["a"]


def test_matches_dir_star_star_includes_the_dir_itself() -> None:
    assert discover.matches("apps", ("apps/**",))
    assert discover.matches("apps/a/b", ("apps/**",))
    assert not discover.matches("application", ("apps/**",))


def test_symlinks_are_found_as_before_and_goldens_skipped_through_a_linked_root(
    make_repo: Callable[[dict[str, str | bytes]], Path], tmp_path: Path
) -> None:
    """A kustomization file that is a symlink counts, a dangling one or a directory of that
    name does not, a symlinked directory is not descended; the goldens are skipped even
    when the repo is reached through a symlink."""
    import os

    repo = make_repo(
        {
            "goldens/x/kustomization.yaml": kustomization(),
            "a/kustomization.yaml": kustomization(),
            "real/k.yaml": kustomization(),
            "dangling/cm.yaml": configmap("d"),
            "dir-named/kustomization.yaml/cm.yaml": configmap("n"),
        }
    )
    os.symlink("k.yaml", repo / "real" / "kustomization.yaml")
    os.symlink("missing.yaml", repo / "dangling" / "kustomization.yaml")
    os.symlink("a", repo / "linked-dir")
    link = tmp_path / "repo-link"
    os.symlink(repo, link)
    for where in (repo, link):
        names = [t.name for t in discover.path_targets(config.load(where))]
        assert names == ["a", "real"], where


def test_walk_prunes_by_real_path_even_from_a_symlinked_root(tmp_path: Path) -> None:
    real = tmp_path / "real"
    for d in ("apps/a", "goldens/x", ".git/objects", "node_modules/m", "b"):
        (real / d).mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    walked = [
        os.path.relpath(dirpath, link)
        for dirpath, _dirs, _files in discover.walk(link, [real / "goldens"], {"node_modules"})
    ]
    assert walked == [".", "apps", "apps/a", "b"]


def test_secret_variables_are_those_a_secret_of_the_tree_takes(
    make_repo: Callable[[dict[str, str | bytes]], Path],
) -> None:
    """What a Kustomization's inline substitute masks (issue 28): a `${NAME}` in a Secret's
    data or stringData, in a List, or in a Flux patch that is a Secret; not elsewhere."""
    patch = (
        "apiVersion: v1\\nkind: Secret\\nmetadata: {name: s}\\nstringData: {k: '${IN_PATCH}'}\\n"
    )
    repo = make_repo(
        {
            "a/s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"
            "stringData: {password: 'x-${DB_PASS}'}\ndata: {blob: '${BLOB}'}\n",
            "a/list.yaml": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: V1\n  kind: Secret\n"
            "  metadata: {name: t}\n  stringData: {t: '${IN_LIST:=x}'}\n",
            "a/ks.yaml": "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
            "metadata: {name: k}\nspec:\n  patches:\n  - target: {kind: Secret}\n"
            f'    patch: "{patch}"\n',
            "a/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Secret}\n"
            "data: {region: '${REGION}'}\n",
            "goldens/s.yaml": "kind: Secret\nstringData: {k: '${IN_GOLDENS}'}\n",
        }
    )
    names = discover.secret_variables(config.load(repo))
    assert names == {"DB_PASS", "BLOB", "IN_LIST", "IN_PATCH"}


def test_one_listing_lists_a_tree_once_for_every_walk_inside_it(tmp_path: Path) -> None:
    """Inside the block a second walk is the first one's listing (a directory made
    between them is not in it), given out as copies; outside it every walk lists anew."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "kustomization.yaml").write_text("resources: []\n")

    def names() -> list[str]:
        return [os.path.relpath(d, tmp_path) for d, _, _ in discover.walk(tmp_path)]

    with discover.one_listing():
        first = list(discover.walk(tmp_path))
        first[0][1].clear()  # a caller's edit of what it was given
        first[0][2].append("x")
        (tmp_path / "b").mkdir()
        assert names() == [".", "a"]
        again = list(discover.walk(tmp_path))
        assert again[0][1] == ["a"] and "x" not in again[0][2]
    assert names() == [".", "a", "b"]
