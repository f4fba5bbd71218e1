"""Golden store: byte-stable, safe names, atomic under crashes, stale goldens removed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.compare.snapshots import compare
from harness.core import atomic, documents
from harness.core.errors import GoldensError
from harness.core.model import RendererInfo, Snapshot, Target, TargetResult
from harness.pipeline import goldens
from tests.conftest import configmap, kustomization, run_harness, write_tree

RENDERER = RendererInfo("kubectl", "v1.37.1 (kustomize v5.8.1)")


def _result(name: str, *cms: str, kind: str = "path") -> TargetResult:
    docs = tuple(documents.parse_stream("---\n".join(cms)))
    text = "---\n".join(d.text for d in docs)
    return TargetResult(
        Target(name, kind, Path(name)),  # type: ignore[arg-type]
        docs,
        documents.sha256_text(text),
    )


def _snapshot(*results: TargetResult) -> Snapshot:
    return Snapshot(RENDERER, {r.name: r for r in results})


def test_write_then_load_round_trips(tmp_path: Path) -> None:
    snap = _snapshot(
        _result("apps/a", configmap("a"), configmap("b")), _result("infra", configmap("c"))
    )
    report = goldens.write(tmp_path, snap)
    assert sorted(report.written) == ["apps/a", "infra"]
    loaded = goldens.load(tmp_path)
    assert loaded.renderer == RENDERER
    assert loaded.entries["apps/a"].documents == 2
    assert loaded.entries["apps/a"].file == "path/apps/a.yaml"
    assert (tmp_path / "path/apps/a.yaml").read_text() == snap.results["apps/a"].text()
    again = goldens.to_snapshot(loaded, tmp_path)
    assert all(t.status == "match" for t in compare(again, snap).targets)


def test_byte_stable_across_runs(tmp_path: Path) -> None:
    snap = _snapshot(_result("a", configmap("a")), _result("b", configmap("b")))
    goldens.write(tmp_path, snap)
    first = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    report = goldens.write(tmp_path, snap)
    assert report.written == () and sorted(report.unchanged) == ["a", "b"]
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == first
    index = json.loads((tmp_path / "index.json").read_text())
    assert index["schema"] == "harness.goldens/v1"
    assert index["targets"]["a"]["docs"][0]["id"] == "ConfigMap/default/a"


def test_stale_goldens_are_deleted(tmp_path: Path) -> None:
    goldens.write(tmp_path, _snapshot(_result("a/b", configmap("a")), _result("c", configmap("c"))))
    report = goldens.write(tmp_path, _snapshot(_result("c", configmap("c"))))
    assert report.deleted == ("a/b",)
    assert not (tmp_path / "path" / "a").exists()


def test_failed_target_keeps_its_previous_golden(tmp_path: Path) -> None:
    goldens.write(tmp_path, _snapshot(_result("a", configmap("a"))))
    failed = TargetResult(Target("a", "path", Path("a")), error="kustomize: boom")
    report = goldens.write(tmp_path, _snapshot(failed))
    assert report.kept == ("a",)
    assert "a" in goldens.load(tmp_path).entries


@pytest.mark.parametrize("name", [".", "a b/c", "../x", "UPPER", "upper", "weird:name*?", "é"])
def test_safe_file_names(name: str) -> None:
    names = goldens.file_names([(name, "path"), ("upper", "path"), ("UPPER", "path")])
    rel = names[name]
    assert ".." not in Path(rel).parts and not rel.startswith("/")
    assert all(c.isalnum() or c in "._-/%~" for c in rel), rel
    assert len({n.lower() for n in names.values()}) == len(names)


def test_hand_edited_golden_is_reported_not_accepted(tmp_path: Path) -> None:
    snap = _snapshot(_result("a", configmap("a", x="1")))
    goldens.write(tmp_path, snap)
    (tmp_path / "path/a.yaml").write_text(configmap("a", x="2"))
    back = goldens.to_snapshot(goldens.load(tmp_path), tmp_path)
    assert back.results["a"].error is not None
    assert "does not match index.json" in back.results["a"].error


@pytest.mark.parametrize(
    "content", ["{", '{"schema": "other"}', '{"schema": "harness.goldens/v1"}']
)
def test_corrupt_index_is_a_clear_error(tmp_path: Path, content: str) -> None:
    (tmp_path / "index.json").write_text(content)
    with pytest.raises(GoldensError, match=r"index\.json"):
        goldens.load(tmp_path)


def test_crash_at_every_write_never_yields_a_false_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupt update after each possible rename: check never accepts wrong data."""
    old = _snapshot(*(_result(f"t{i}", configmap(f"c{i}", v="old")) for i in range(4)))
    new = _snapshot(*(_result(f"t{i}", configmap(f"c{i}", v="new")) for i in range(3)))
    real_replace = os.replace
    for crash_after in range(6):
        store = tmp_path / f"g{crash_after}"
        goldens.write(store, old)
        calls = 0

        def flaky(src: str, dst: str, _limit: int = crash_after) -> None:
            nonlocal calls
            if calls >= _limit:
                raise KeyboardInterrupt("simulated crash")
            calls += 1
            real_replace(src, dst)

        monkeypatch.setattr(atomic.os, "replace", flaky)
        try:
            goldens.write(store, new)
            finished = True
        except KeyboardInterrupt:
            finished = False
        monkeypatch.setattr(atomic.os, "replace", real_replace)
        assert not list(store.rglob("*.tmp")), "temp files are cleaned up"
        golden = goldens.to_snapshot(goldens.load(store), store)
        against_new = compare(golden, new)
        all_match = all(t.status == "match" for t in against_new.targets)
        assert all_match == finished, crash_after
        against_old = compare(golden, old)
        assert not all(t.status == "match" for t in against_old.targets) or crash_after == 0


@pytest.mark.slow
def test_sigkill_during_update_leaves_a_set_check_handles(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {}
    for i in range(40):
        files[f"t{i:02d}/kustomization.yaml"] = kustomization("cm.yaml")
        files[f"t{i:02d}/cm.yaml"] = configmap(f"c{i}", v="old")
    repo = write_tree(tmp_path / "repo", files)
    assert run_harness("update", "--repo", repo, "-j", "2").code == 0
    for i in range(40):
        (repo / f"t{i:02d}/cm.yaml").write_text(configmap(f"c{i}", v="new"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "update", "--repo", str(repo), "-j", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    index = repo / "goldens" / "index.json"
    before = index.stat().st_mtime_ns
    deadline = time.monotonic() + 300  # a hang guard: the loop ends on a file or the exit
    # Kill as soon as the first new golden file lands, before the index is rewritten.
    while proc.poll() is None:
        if any(p.stat().st_mtime_ns > before for p in (repo / "goldens" / "path").glob("*.yaml")):
            break
        assert time.monotonic() < deadline, "update wrote no golden"
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    result = run_harness("check", "--repo", repo)
    assert "Traceback" not in result.stderr
    if index.stat().st_mtime_ns == before:
        # Killed mid-write: the old index no longer matches some files; never a pass.
        assert result.code == 2, result.stdout + result.stderr
        assert "does not match index.json" in result.stderr
    else:  # pragma: no cover - update won the race; the set is complete and correct
        assert result.code == 0


def test_documents_from_the_index_equal_a_full_parse() -> None:
    """`check` skips re-parsing goldens; the shortcut must give exactly the parsed documents."""
    from tests.conftest import GOLDENS

    golden = goldens.load(GOLDENS)
    assert golden.entries
    for entry in golden.entries.values():
        text = goldens.read_verified(golden, entry)
        assert goldens._indexed_documents(entry, text) == documents.parse_stream(text), entry.name


def test_index_that_does_not_line_up_falls_back_to_parsing(tmp_path: Path) -> None:
    snap = _snapshot(_result("a", configmap("a"), configmap("b")))
    goldens.write(tmp_path, snap)
    golden = goldens.load(tmp_path)
    entry = golden.entries["a"]
    short = goldens.GoldenEntry(**{**entry.__dict__, "docs": entry.docs[:1]})
    assert goldens._indexed_documents(short, goldens.read_verified(golden, entry)) is None
    back = goldens.to_snapshot(goldens.GoldenSet(tmp_path, RENDERER, {"a": short}), tmp_path)
    assert [str(d.id) for d in back.results["a"].documents] == [
        "ConfigMap/default/a",
        "ConfigMap/default/b",
    ]


@pytest.mark.parametrize("verb", [("check",), ("update",), ("diff", "--goldens")])
def test_a_goldens_path_that_is_a_file_is_one_clear_error(tmp_path: Path, verb: tuple[str]) -> None:
    """Before: `check` said "no goldens, run harness update" (exit 1) and `update` crashed
    with FileExistsError."""
    repo = write_tree(
        tmp_path / "repo",
        {
            "a/kustomization.yaml": kustomization("cm.yaml"),
            "a/cm.yaml": configmap("a"),
            "harness.yaml": "goldens: gfile\n",
            "gfile": "not a directory\n",
        },
    )
    res = run_harness(*verb, "--repo", repo, "--no-cache")
    assert (res.code, res.stderr) == (
        2,
        f"error: {repo / 'harness.yaml'}: goldens 'gfile' ({repo / 'gfile'}) is not a directory\n",
    )
    assert (repo / "gfile").read_text() == "not a directory\n"
