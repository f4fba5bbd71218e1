"""render_errors: kustomize's failures as one line with the cause, the place and a hint.

The cases are built as real directories and run through the real kubectl (from the wheel),
so the expectations follow what kustomize actually prints.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.render import errors as render_errors
from harness.render import kustomize as render
from harness.render.errors import MAX_CHARS, summarize
from tests.conftest import configmap, kustomization, write_tree

CM = configmap("a")
CHARTS = "helmCharts:\n  - name: podinfo\n    repo: https://example.invalid\n    version: 6.0.0\n"
BARE = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"


def _error(renderer: render.Renderer, root: Path, files: dict[str, str], build: str) -> str:
    write_tree(root, files)
    error = renderer.build(root / build).error
    assert error is not None and error.startswith("kustomize: ")
    return error.removeprefix("kustomize: ").replace(str(root.resolve()), ".")


def test_a_deprecation_warning_is_never_the_error(
    renderer: render.Renderer, tmp_path: Path
) -> None:
    files = {"app/kustomization.yaml": "commonLabels:\n  a: b\nresources:\n  - nope.yaml\n"}
    error = _error(renderer, tmp_path, files, "app")
    assert error == "nope.yaml: no such file or directory"
    assert "Warning" not in error and "deprecated" not in error


def test_a_duplicate_key_names_the_file_the_line_and_the_key(
    renderer: render.Renderer, tmp_path: Path
) -> None:
    files = {
        "app/kustomization.yaml": kustomization("../base"),
        "base/kustomization.yaml": kustomization("cm.yaml"),
        "base/cm.yaml": BARE + "data:\n  x: '1'\n  x: '2'\n",
    }
    error = _error(renderer, tmp_path, files, "app")
    line = len(BARE.splitlines()) + 3
    assert error.startswith(f'../base/cm.yaml:{line}: mapping key "x" already defined at line')
    assert "(hint: a key appears twice in one YAML mapping" in error


def test_a_duplicate_key_is_found_when_a_transformer_moved_kustomizes_line_numbers(
    renderer: render.Renderer, tmp_path: Path
) -> None:
    """kustomize counts lines in the object as it re-serialised it: a `namespace:` adds
    one, so no file has the key on the lines it names; the file is still found, with its
    own line numbers."""
    files = {
        "app/kustomization.yaml": "namespace: apps\n" + kustomization("../base"),
        "base/kustomization.yaml": kustomization("ok.yaml", "cm.yaml"),
        "base/ok.yaml": BARE.replace("name: b", "name: ok") + "data:\n  x: '1'\n",
        "base/cm.yaml": "# a comment\n" + BARE + "data:\n  y: '0'\n  x: '1'\n  x: '2'\n",
    }
    error = _error(renderer, tmp_path, files, "app")
    assert error.startswith('../base/cm.yaml:9: mapping key "x" already defined at line 8'), error


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("a:\n  x: 1\n  x: 2\n", (3, 2)),
        ("a:\n  x: 1\nb:\n  x: 2\n", None),  # two mappings
        ("- x: 1\n  y: 2\n- x: 3\n", None),  # two list items
        ("- name: a\n  x: 1\n  z:\n    q: 1\n  x: 2\n", (5, 2)),
        ("x: 1\n---\nx: 2\n", None),  # two documents
        ("x: 1\n# x: 3\nx: 2\n", (3, 1)),
    ],
)
def test_a_key_twice_in_one_mapping(text: str, found: tuple[int, int] | None) -> None:
    pattern = re.compile(r"^(\s*)(- )?['\"]?x['\"]?\s*:")
    assert render_errors._twice(text.splitlines(), pattern) == found


def test_a_cycle_keeps_its_cause_and_the_chain_that_led_to_it(
    renderer: render.Renderer, tmp_path: Path
) -> None:
    files = {
        "one/kustomization.yaml": kustomization("../two"),
        "two/kustomization.yaml": kustomization("../one"),
    }
    error = _error(renderer, tmp_path, files, "one")
    assert error.startswith("../two -> ../one: cycle detected: candidate root './one'")
    assert "break the loop" in error


def test_helm_charts_without_enable_helm_says_why_and_what_to_do(
    renderer: render.Renderer, tmp_path: Path
) -> None:
    files = {"charts/kustomization.yaml": CHARTS}
    error = _error(renderer, tmp_path, files, "charts")
    assert error.startswith("helmCharts: must specify --enable-helm (hint: ")
    assert "HelmRelease" in error and "`exclude:`" in error
    assert "trouble configuring" not in error  # kustomize's wrapper, not the cause


def test_a_missing_base_deep_in_the_chain(renderer: render.Renderer, tmp_path: Path) -> None:
    files = {
        "app/kustomization.yaml": kustomization("../base"),
        "base/kustomization.yaml": kustomization("cm.yaml", "../gone"),
        "base/cm.yaml": CM,
    }
    error = _error(renderer, tmp_path, files, "app")
    assert error == "../base -> ../gone: no such file or directory"


def test_an_unknown_field_is_kustomize_s_own_words(
    renderer: render.Renderer, tmp_path: Path
) -> None:
    files = {"app/kustomization.yaml": "resourcez:\n  - cm.yaml\n", "app/cm.yaml": CM}
    assert _error(renderer, tmp_path, files, "app") == (
        'invalid Kustomization: json: unknown field "resourcez"'
    )


@pytest.mark.parametrize(
    ("stderr", "code", "expected"),
    [
        ("", -9, "killed by signal 9"),
        ("# Warning: 'x' is deprecated.\n", 1, "exited with code 1 and no message"),
        ("Error: panic: boom\ngoroutine 1 [running]:\n\tmain.go:1\n", 2, "panic: boom"),
        (
            "error: yaml: unmarshal errors:\n  line 3: a\n  line 4: b\n",
            1,
            "yaml: unmarshal errors: line 3: a; line 4: b",
        ),
    ],
)
def test_streams_without_a_directory(stderr: str, code: int, expected: str) -> None:
    assert summarize(stderr, code) == expected


def test_a_long_cause_is_cut_with_a_mark(tmp_path: Path) -> None:
    line = summarize("error: " + "x" * (MAX_CHARS * 2), 1)
    assert len(line) == MAX_CHARS and line.endswith("...")


def test_the_target_error_line_through_the_cli(
    make_repo: Callable[[dict[str, str | bytes]], Path], cli: Callable[..., object]
) -> None:
    repo = make_repo(
        {
            "apps/ok/kustomization.yaml": kustomization("cm.yaml"),
            "apps/ok/cm.yaml": CM,
            "apps/charts/kustomization.yaml": CHARTS,
        }
    )
    res = cli("render", "--repo", repo, "-q")
    assert res.code == 2  # type: ignore[attr-defined]
    stderr: str = res.stderr  # type: ignore[attr-defined]
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert errors[0].startswith(
        "error: apps/charts: apps/charts/kustomization.yaml: kustomize: "
        "helmCharts: must specify --enable-helm (hint: the directory inflates a chart"
    )
    assert "apps/ok" in res.stdout  # type: ignore[attr-defined]  # the other target still renders


def test_a_directory_resource_reports_its_build_s_cause_not_the_file_attempt(
    renderer: render.Renderer, tmp_path: Path
) -> None:
    """kustomize first tries a resource as a file (`must resolve to a file`), then builds it
    as a directory; the directory's failure is the cause."""
    files = {
        "app/kustomization.yaml": kustomization("dash"),
        "app/dash/kustomization.yaml": (
            "configMapGenerator:\n  - name: d\n    files: [missing.json]\n"
        ),
    }
    error = _error(renderer, tmp_path, files, "app")
    assert error.startswith("dash: ")
    assert "must resolve to a file" not in error and "missing.json" in error


def test_a_value_kustomize_quotes_in_its_error_is_left_out(
    renderer: render.Renderer, tmp_path: Path
) -> None:
    """A replacement whose `options.index` misses quotes its source's value, here a
    Secret's: the error line reaches every output and log, so the value is not in it."""
    files = {
        "app/kustomization.yaml": (
            kustomization("cm.yaml")
            + "secretGenerator:\n- name: s\n  literals: [pw=TopSecretValue99]\n"
            + "replacements:\n- source: {kind: Secret, name: s, fieldPath: data.pw,"
            + " options: {delimiter: ':', index: 3}}\n"
            + "  targets: [{select: {kind: ConfigMap}, fieldPaths: [data.x]}]\n"
        ),
        "app/cm.yaml": CM,
    }
    error = _error(renderer, tmp_path, files, "app")
    assert error == "options.index 3 is out of bounds for value ***"
    assert "VG9wU2VjcmV0VmFsdWU5OQ" not in error


@pytest.mark.parametrize(
    ("stderr", "expected"),
    [
        (
            "Error: wrong node kind: expected MappingNode but got ScalarNode: node contents:\n"
            "hunter2\n",
            "wrong node kind: expected MappingNode but got ScalarNode",
        ),
        (
            "Error: map[string]interface {}(nil): yaml: unmarshal errors:\n"
            "  line 4: cannot unmarshal !!str `hunter2` into int\n",
            "map[string]interface {}(nil): yaml: unmarshal errors: "
            "line 4: cannot unmarshal !!str *** into int",
        ),
    ],
)
def test_quoted_node_contents_and_scalars_are_left_out(stderr: str, expected: str) -> None:
    assert summarize(stderr, 1) == expected
