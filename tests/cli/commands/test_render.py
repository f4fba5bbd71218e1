"""`harness render`: the targets table, one target's documents, the JSON schema."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result, configmap, kustomization, modules_after

Repo = Callable[[dict[str, str | bytes]], Path]
Cli = Callable[..., Result]


def _repo(make_repo: Repo) -> Path:
    return make_repo(
        {
            "a/kustomization.yaml": kustomization("cm.yaml", "s.yaml"),
            "a/cm.yaml": configmap("a"),
            "a/s.yaml": (
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n"
                "stringData:\n  password: hunter2-very-secret\n"
            ),
            "bad/kustomization.yaml": "resources: [\n",
        }
    )


def test_json_lists_targets_docs_and_errors(make_repo: Repo, cli: Cli) -> None:
    res = cli("render", "--repo", _repo(make_repo), "--output", "json")
    assert res.code == 2
    payload = json.loads(res.stdout)
    assert payload["schema"] == "harness.render/v1"
    assert payload["renderer"]["name"] == "kubectl"
    a = next(t for t in payload["targets"] if t["name"] == "a")
    assert a["kind"] == "path" and a["documents"] == 2
    assert {d["id"] for d in a["docs"]} == {"ConfigMap/default/a", "Secret/s"}
    assert set(a["docs"][0]) >= {"id", "apiVersion", "kind", "namespace", "name", "sha256"}
    bad = next(t for t in payload["targets"] if t["name"] == "bad")
    assert bad["error"].startswith("bad/kustomization.yaml: kustomize:")
    assert payload["errors"] == [{"target": "bad", "message": bad["error"]}]
    assert "hunter2-very-secret" not in res.stdout + res.stderr


def test_one_target_prints_its_documents_without_secret_values(make_repo: Repo, cli: Cli) -> None:
    res = cli("render", "a", "--repo", _repo(make_repo))
    assert res.code == 0
    assert "kind: ConfigMap" in res.stdout
    assert "<redacted sha256:" in res.stdout
    assert "hunter2-very-secret" not in res.stdout


def test_table(make_repo: Repo, cli: Cli) -> None:
    res = cli("render", "--repo", _repo(make_repo))
    assert res.code == 2
    assert "1/2 targets rendered by kubectl v1." in res.stdout
    assert "error: bad:" in res.stderr


def test_the_table_imports_no_json_or_hazard_code(make_repo: Repo, tmp_path: Path) -> None:
    """Start-up before a cold render's first build: the table needs neither JSON output nor
    the hazard engine's types that module brings, nor sharding; `-o json` still has them."""
    repo = _repo(make_repo)
    unwanted = {"harness.report.json_out", "harness.hazards.engine", "harness.pipeline.shard"}
    res, modules = modules_after("render", "--repo", repo, "--no-cache", cwd=tmp_path)
    assert res.code == 2 and "1/2 targets rendered" in res.stdout
    assert not unwanted & modules
    res, modules = modules_after("render", "--repo", repo, "--no-cache", "-o", "json", cwd=tmp_path)
    assert res.code == 2 and json.loads(res.stdout)["targets"]
    assert "harness.report.json_out" in modules


def test_unknown_target_is_an_error(make_repo: Repo, cli: Cli) -> None:
    res = cli("render", "nope", "--repo", _repo(make_repo))
    assert res.code == 2
    assert "no target matches nope" in res.stderr


def test_piped_table_keeps_long_names_whole(make_repo: Repo, cli: Cli) -> None:
    """Off a TTY the table is plain columns: two long names never print alike with "…"."""
    deep = "clusters/production-eu-west/apps/observability/kube-prometheus-stack"
    repo = make_repo(
        {
            f"{deep}-alerts/kustomization.yaml": kustomization("cm.yaml"),
            f"{deep}-alerts/cm.yaml": configmap("a"),
            f"{deep}-rules/kustomization.yaml": kustomization("cm.yaml"),
            f"{deep}-rules/cm.yaml": configmap("b"),
        }
    )
    res = cli("render", "--repo", repo)
    assert res.code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["target", "kind", "documents", "sha256"]
    assert lines[1].split()[:3] == [f"{deep}-alerts", "path", "1"]
    assert lines[2].split()[:3] == [f"{deep}-rules", "path", "1"]
    assert "…" not in res.stdout


AWKWARD = (
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: awkward\n  namespace: default\n"
    "data:\n"
    '  a: "\\\\[(x)\\\\]"\n'  # YAML for \[(x)\]: a backslash before a bracket, no tag after
    "  b: '[bold]not bold[/bold] [red]x[/] \\[link=y]'\n"
    "  c: ends with a backslash \\\n"
    "  d: 'emoji 🚀 :smile: :rocket:'\n"
    '  script: |\n    case $1 in\n    \tx) echo "${a}" \\\n      [x];;\n    esac\n'
)


def test_one_targets_documents_print_as_the_bytes_kustomize_wrote(
    make_repo: Repo, cli: Cli, kubectl: Path
) -> None:
    """Issue 33: documents went through console markup (`\\[` read as an escaped bracket);
    what `render TARGET` prints is kustomize's output, each document under its
    `# id  sha256:` line and `---` (kustomize writes a tab as `\\t`, rich would expand
    a real one)."""
    repo = make_repo({"a/kustomization.yaml": kustomization("cm.yaml"), "a/cm.yaml": AWKWARD})
    proc = subprocess.run(
        [str(kubectl), "kustomize", str(repo / "a")], capture_output=True, text=True, check=True
    )
    assert "a: \\[(x)\\]\n" in proc.stdout  # the awkward bytes got there
    res = cli("render", "a", "--repo", repo)
    assert res.code == 0, res.stderr
    head, body = res.stdout.split("\n---\n", 1)
    assert head.startswith("# ConfigMap/default/awkward  sha256:")
    assert body == proc.stdout


def _with_external(make_repo: Repo) -> Path:
    """A cluster whose one Kustomization has an external source (skipped, an `info:` line)
    beside a path target of its own."""
    return make_repo(
        {
            "harness.yaml": (
                "clusters: [clusters/dev]\noutside_git:\n  '*':\n    sources:\n"
                "      GitRepository/flux-system/other: external\n"
            ),
            "clusters/dev/kustomization.yaml": kustomization("other.yaml"),
            "clusters/dev/other.yaml": (
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
                "metadata:\n  name: other\n  namespace: flux-system\nspec:\n  interval: 1h\n"
                "  path: ./\n  prune: true\n  sourceRef:\n    kind: GitRepository\n"
                "    name: other\n"
            ),
            "apps/web/kustomization.yaml": kustomization("cm.yaml"),
            "apps/web/cm.yaml": configmap("web"),
        }
    )


def test_quiet_prints_errors_and_the_verdict_only(make_repo: Repo, cli: Cli) -> None:
    """Issue 32: `-q` still said which Kustomizations were skipped; the table counts them."""
    repo = _with_external(make_repo)
    loud = cli("render", "--repo", repo)
    assert loud.code == 0, loud.stderr
    assert loud.stderr == (
        "info: dev/flux-system/other: skipped, source GitRepository/flux-system/other is "
        "external (harness.yaml outside_git)\n"
    )
    quiet = cli("render", "--repo", repo, "-q")
    assert (quiet.code, quiet.stderr) == (0, "")
    assert quiet.stdout == loud.stdout


def test_a_directory_named_on_render_renders_that_target_alone(
    make_repo: Repo, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32: `render --no-cache DIR` rendered every target; a directory (as the shell
    completes it, `./apps/web/`) is its path target's name, and that target renders alone:
    no Flux fixed point, so no skipped-Kustomization line either."""
    repo = _with_external(make_repo)
    monkeypatch.chdir(repo)
    res = cli("render", "--no-cache", "./apps/web/")
    assert res.code == 0, res.stderr
    assert res.stdout.startswith("# ConfigMap/default/web  sha256:")
    assert res.stderr == ""
    table = cli("render", "--no-cache", "apps/web", "-o", "json")
    assert [t["name"] for t in json.loads(table.stdout)["targets"]] == ["apps/web"]
