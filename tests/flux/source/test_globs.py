"""The two glob dialects of ArtifactGenerator copies: Go's fs.Glob and doublestar."""

from __future__ import annotations

import pytest

from harness.flux.source import globs

# an artifact's listing: directories end with "/"
LISTING = (
    "apps/",
    "apps/a/",
    "apps/a/cm.yaml",
    "apps/a/deep/",
    "apps/a/deep/x.yaml",
    "apps/b.yaml",
    "apps/c.json",
    "readme.md",
)


def _kind(path: str) -> str | None:
    if path == ".":
        return "dir"
    if f"{path}/" in LISTING:
        return "dir"
    return "file" if path in LISTING else None


def _entries(directory: str) -> list[str]:
    prefix = "" if directory == "." else f"{directory}/"
    names = {p[len(prefix) :].split("/")[0] for p in LISTING if p.startswith(prefix)}
    return sorted(n for n in names if n)


def test_fs_glob_stays_in_one_segment_and_double_star_is_a_star() -> None:
    assert globs.fs_glob("apps/*.yaml", _kind, _entries) == ["apps/b.yaml"]
    assert globs.fs_glob("apps/*", _kind, _entries) == ["apps/a", "apps/b.yaml", "apps/c.json"]
    assert globs.fs_glob("apps/**", _kind, _entries) == ["apps/a", "apps/b.yaml", "apps/c.json"]
    assert globs.fs_glob("*/a/*.yaml", _kind, _entries) == ["apps/a/cm.yaml"]
    assert globs.fs_glob("apps/?.json", _kind, _entries) == ["apps/c.json"]
    assert globs.fs_glob("apps/[ab]*", _kind, _entries) == ["apps/a", "apps/b.yaml"]


def test_fs_glob_of_a_plain_path_is_that_path_when_it_exists() -> None:
    assert globs.fs_glob("readme.md", _kind, _entries) == ["readme.md"]
    assert globs.fs_glob("missing.md", _kind, _entries) == []


def test_a_malformed_pattern_is_go_s_bad_pattern() -> None:
    with pytest.raises(globs.PatternError):
        globs.fs_glob("apps/[", _kind, _entries)
    with pytest.raises(globs.PatternError):
        globs.doublestar("{a,b")
    assert not globs.doublestar_match("apps/[", "apps/a")


def test_walk_is_lexical_with_a_directory_before_its_content() -> None:
    assert list(globs.walk("apps", _kind, _entries)) == [
        "apps/a",
        "apps/a/cm.yaml",
        "apps/a/deep",
        "apps/a/deep/x.yaml",
        "apps/b.yaml",
        "apps/c.json",
    ]


def test_doublestar_spans_directories_only_as_a_whole_segment() -> None:
    assert globs.doublestar_glob("**/*.yaml", _kind, _entries) == [
        "apps/a/cm.yaml",
        "apps/a/deep/x.yaml",
        "apps/b.yaml",
    ]
    assert globs.doublestar_match("apps/**", "apps")  # the directory itself
    assert globs.doublestar_match("apps/**", "apps/a/deep/x.yaml")
    assert not globs.doublestar_match("apps/a**", "apps/a/deep")  # not a whole segment: `*`
    assert globs.doublestar_match("apps/a**", "apps/abc")
    assert not globs.doublestar_match("*.yaml", "apps/b.yaml")  # `*` never crosses `/`


def test_doublestar_alternatives_and_classes() -> None:
    assert globs.doublestar_match("apps/*.{yaml,json}", "apps/c.json")
    assert not globs.doublestar_match("apps/*.{yaml,json}", "apps/readme.md")
    assert globs.doublestar_match("apps/[!b]*", "apps/c.json")
    assert not globs.doublestar_match("apps/[!b]*", "apps/b.yaml")
    assert globs.doublestar_match("apps/[^b]*", "apps/c.json")
    assert globs.doublestar_match(r"apps/\*", "apps/*")
    assert not globs.doublestar_match(r"apps/\*", "apps/b.yaml")


def test_has_glob_decides_between_a_path_and_a_pattern() -> None:
    assert globs.has_glob("apps/*.yaml") and globs.has_glob("apps/[ab]")
    assert not globs.has_glob("apps/a/cm.yaml")
