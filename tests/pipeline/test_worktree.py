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
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cache import store as cache_mod
from harness.core import config as config_mod
from harness.core import documents, redaction
from harness.core.model import DocId, Document, RendererInfo, Snapshot, Target, TargetResult
from harness.core.run import Run
from harness.pipeline import worktree
from harness.pipeline.repo import RenderOptions, render_repo
from harness.render import kustomize as render
from harness.render.seam import Read, Reads
from tests.synthtree import FLUX_OPS, OPS, edit, tree, write


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
        write(root, rel, text)
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
    st.lists(
        st.tuples(st.sampled_from(OPS + FLUX_OPS), st.integers(0, 50)), min_size=2, max_size=5
    ),
    st.booleans(),
)
@pytest.mark.slow
def test_an_incremental_render_is_the_full_render(
    repo: Path,
    tmp_path_factory: pytest.TempPathFactory,
    edits: list[tuple[str, int]],
    resident: bool,
) -> None:
    """Both a fresh process (index from disk) and a resident one (index in memory); the
    edits include a changed Kustomization object, a changed `substituteFrom` ConfigMap and
    Kustomizations added and removed without a file added (the fixed point re-derives them
    while every unchanged build answers from the index)."""
    cache_dir = tmp_path_factory.mktemp("cache")
    keeper = worktree.Keeper()
    _render(repo, cache_dir, keeper)
    done: list[str] = []
    for op, seed in edits:
        done.append(edit(repo, op, seed))
        used = keeper if resident else worktree.Keeper()
        incremental = _render(repo, cache_dir, used)
        full = _render(repo, None, None)
        assert _view(incremental) == _view(full), (done, used.used)


@pytest.mark.parametrize(
    ("op", "seed"),
    [("spec", 0), ("vars", 1), ("inline", 1)],
)
def test_flux_builds_whose_inputs_are_unchanged_read_no_entry(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, op: str, seed: int
) -> None:
    """After a save, a Flux build whose key and files are unchanged is answered from the
    index (its documents a result of the last render, the rest kept beside it): not one of
    the last render's build entries is read, and the answer is the full render's."""
    cache_dir = tmp_path / "cache"
    first = worktree.Keeper()
    _render(repo, cache_dir, first)
    assert first.memory is not None
    remembered = set(first.memory.builds)
    # every Flux build of both clusters: 2 roots and 8 apps, of which the two that do not
    # substitute are one build in both clusters (one key)
    assert len(remembered) == 8
    edit(repo, op, seed)
    read: list[str] = []
    real = cache_mod.RenderCache.get

    def get(self: cache_mod.RenderCache, digest: str) -> object:
        read.append(digest)
        return real(self, digest)

    monkeypatch.setattr(cache_mod.RenderCache, "get", get)
    keeper = worktree.Keeper()
    head = _render(repo, cache_dir, keeper)
    monkeypatch.undo()
    assert keeper.used == "incremental"
    assert remembered.isdisjoint(read)
    assert _view(head) == _view(_render(repo, None, None))


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


def _index_entry(cache_dir: Path) -> Path:
    found = [
        p
        for p in (cache_dir / cache_mod.ENTRIES).rglob("*")
        if p.is_file() and b'"stamps"' in p.read_bytes() and b'"removed"' not in p.read_bytes()
    ]
    assert len(found) == 1
    return found[0]


def test_a_small_change_is_kept_as_a_delta_beside_the_index(repo: Path, tmp_path: Path) -> None:
    """One saved file: the whole entry is not written again, a delta against it is, and
    the next fresh process reads both (the tree is then as the index saw it)."""
    cache_dir = tmp_path / "cache"
    _render(repo, cache_dir, worktree.Keeper())
    entry = _index_entry(cache_dir)
    whole = entry.read_bytes()
    edit(repo, "image", 0)
    head = _render(repo, cache_dir, worktree.Keeper())
    assert entry.read_bytes() == whole
    again = worktree.Keeper()
    assert _view(_render(repo, cache_dir, again)) == _view(head)
    assert again.used == "none-changed"
    for name in ("web", "db", "cache"):  # past 1/8 of the results: written whole again
        edit(repo, "image", ["web", "db", "cache", "queue"].index(name) + 4)
    keeper = worktree.Keeper()
    assert _view(_render(repo, cache_dir, keeper)) == _view(_render(repo, None, None))
    assert keeper.used == "incremental"
    assert _index_entry(cache_dir).read_bytes() != whole


def test_a_corrupt_delta_leaves_the_index_it_was_made_against(repo: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    _render(repo, cache_dir, worktree.Keeper())
    edit(repo, "spec", 1)
    _render(repo, cache_dir, worktree.Keeper())
    deltas = [
        p
        for p in (cache_dir / cache_mod.ENTRIES).rglob("*")
        if p.is_file() and b'"removed"' in p.read_bytes()
    ]
    assert len(deltas) == 1
    deltas[0].write_bytes(deltas[0].read_bytes()[:-40])
    edit(repo, "vars", 0)
    keeper = worktree.Keeper()
    assert _view(_render(repo, cache_dir, keeper)) == _view(_render(repo, None, None))
    assert keeper.used == "incremental"


def test_a_delta_of_another_shape_leaves_the_index_it_was_made_against(
    repo: Path, tmp_path: Path
) -> None:
    """A delta whose checksum holds but whose fields do not: the entry is read whole (its
    own stat and reads, not skipped for the delta's), as if there were no delta."""
    cache_dir = tmp_path / "cache"
    _render(repo, cache_dir, worktree.Keeper())
    edit(repo, "spec", 1)
    _render(repo, cache_dir, worktree.Keeper())
    [delta] = [
        p
        for p in (cache_dir / cache_mod.ENTRIES).rglob("*")
        if p.is_file() and b'"removed"' in p.read_bytes()
    ]
    store = cache_mod.Store(cache_dir)
    digest = delta.parent.name + delta.stem
    packed = store.get_packed(digest)
    assert packed is not None
    store.put_packed(digest, {**packed[0], "removed": [1]}, packed[1])
    edit(repo, "vars", 0)
    keeper = worktree.Keeper()
    assert _view(_render(repo, cache_dir, keeper)) == _view(_render(repo, None, None))
    assert keeper.used == "incremental"


def test_an_index_read_twice_through_one_cache_is_the_same_index(tmp_path: Path) -> None:
    """The cache shares what it read (nobody may change it): a second load in the process
    finds the entry as the first did."""
    stamps, snapshot, reads = _index_parts(tmp_path)
    store = cache_mod.Store(tmp_path / "cache")
    with Run().entered():
        worktree.remember(
            cache_mod.RenderCache(store), "ab" * 32, stamps, snapshot, reads, tmp_path
        )
    cache = cache_mod.RenderCache(store)  # a fresh process, which loads it twice
    with Run().entered():
        first = worktree.load(cache, "ab" * 32, tmp_path, "")
        second = worktree.load(cache, "ab" * 32, tmp_path, "")
    assert first is not None and second is not None
    assert first == second and first.base == second.base


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
        if p.is_file() and b"stamps" in p.read_bytes()
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


def test_an_answer_from_the_index_teaches_the_scrub(repo: Path, tmp_path: Path) -> None:
    """The run's scrub knows every Secret value of the tree however the render was made."""
    write(
        repo,
        "apps/web/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: web\n"
        "stringData:\n  password: wobbly-lantern-4417\n",
    )
    edit(repo, "none", 0)
    kfile = repo / "apps/web/kustomization.yaml"
    write(repo, "apps/web/kustomization.yaml", kfile.read_text() + "  - secret.yaml\n")
    _render(repo, tmp_path / "cache", worktree.Keeper())
    run = Run()
    keeper = worktree.Keeper()
    with run.entered():
        cfg = config_mod.load(repo)
        renderer = render.resolve(flags=cfg.kubectl_flags, timeout=cfg.timeout)
        cache = cache_mod.open_cache(cache_mod.Settings(enabled=True, directory=tmp_path / "cache"))
        render_repo(cfg, renderer, RenderOptions(cache=cache, index=keeper, run=run))
        assert keeper.used == "none-changed"
        assert redaction.known().scrub("pw wobbly-lantern-4417") != "pw wobbly-lantern-4417"


# -- the entry: a packed value (cache/fileformat.py) -----------------------------------------


def _index_parts(root: Path) -> tuple[dict[str, worktree.Stamp | None], Snapshot, Reads]:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: é\n"
    doc = Document(DocId("", "ConfigMap", "", "a"), "v1", text, documents.sha256_text(text))
    ok = TargetResult(Target("apps/a", "path", root / "apps/a"), (doc,), "1" * 64)
    bad = TargetResult(Target("apps/b", "path", root / "apps/b"), error="missing.yaml")
    snapshot = Snapshot(
        renderer=RendererInfo("kubectl", "v1.31.0", ("kubectl",)),
        results={"apps/a": ok, "apps/b": bad},
        warnings=("a warning",),
    )
    reads = Reads()
    files = (("file", "kustomization.yaml"), ("file", "cm.yaml"), ("dir", "."))
    reads.paths["apps/a"] = Read(str(root / "apps/a"), files, (("env", "a.env"),), "d" * 64)
    reads.flux["k" * 64] = Read(str(root / "apps/a"), files[:1], (), "e" * 64)
    stamps = {"apps": (0o40755, 4096, 1, 2, 3), "apps/a/cm.yaml": (0o100644, 9, 4, 5, 6)}
    return {**stamps, "apps/a/new.yaml": None}, snapshot, reads


def test_an_index_reads_back_equal(tmp_path: Path) -> None:
    stamps, snapshot, reads = _index_parts(tmp_path)
    store = cache_mod.Store(tmp_path / "cache")
    with Run().entered():
        kept = worktree.remember(
            cache_mod.RenderCache(store), "ab" * 32, stamps, snapshot, reads, tmp_path
        )
    assert kept is not None
    with Run().entered():  # a fresh process
        loaded = worktree.load(cache_mod.RenderCache(store), "ab" * 32, tmp_path, "")
    assert loaded == kept
    assert loaded.snapshot == snapshot and loaded.stamps == stamps
    assert loaded.paths == reads.paths and loaded.flux == reads.flux
    assert loaded.items.keys() == {"apps/a", "apps/b"}
    with Run().entered():  # stored again from what was read: the same entry
        again = worktree.remember(
            cache_mod.RenderCache(store), "cd" * 32, stamps, snapshot, reads, tmp_path, loaded
        )
    assert again == kept
    assert store.get_packed("cd" * 32) == store.get_packed("ab" * 32)


def _bent(path: tuple[object, ...], value: object) -> Callable[[dict[str, Any]], None]:
    def change(payload: dict[str, Any]) -> None:
        at: Any = payload
        for step in path[:-1]:
            at = at[step]
        at[path[-1]] = value

    return change


@pytest.mark.parametrize(
    "change",
    [
        _bent(("stamps", 0), ["apps"]),  # fewer paths than stamps
        _bent(("stamps", 1, 0), [1, 2, 3]),
        _bent(("stamps", 1, 0, 0), "40755"),
        _bent(("stamps", 1, 0, 0), True),
        _bent(("stamps", 0, 0), 7),
        _bent(("warnings",), "a warning"),
        _bent(("paths", "apps/a", 1), ["file"]),  # an odd number of halves of pairs
        _bent(("paths", "apps/a", 1, 0), None),
        _bent(("paths", "apps/a"), ["root", [], []]),
        _bent(("flux",), [1]),
        _bent(("snapshot", "results", 0, 4), 1),
        _bent(("snapshot", "documents", 0, 6), 5),  # a text past the strings
        _bent(("extra",), 1),
        _bent(("token",), 1),  # the entry's token is a string or no index
        _bent(("token",), None),
        lambda payload: payload.pop("token"),  # an entry of v2, which had none
    ],
)
def test_an_index_of_another_shape_is_no_index(
    tmp_path: Path, change: Callable[[dict[str, Any]], None]
) -> None:
    stamps, snapshot, reads = _index_parts(tmp_path)
    store = cache_mod.Store(tmp_path / "cache")
    with Run().entered():
        worktree.remember(
            cache_mod.RenderCache(store), "ab" * 32, stamps, snapshot, reads, tmp_path
        )
    packed = store.get_packed("ab" * 32)
    assert packed is not None
    change(packed[0])
    store.put_packed("ab" * 32, *packed)
    with Run().entered():
        assert worktree.load(cache_mod.RenderCache(store), "ab" * 32, tmp_path, "") is None


def test_an_index_of_the_first_format_is_no_index(tmp_path: Path) -> None:
    """A JSON entry (the first layout, KIND v1) under the index's digest is a miss."""
    store = cache_mod.Store(tmp_path / "cache")
    store.put("ab" * 32, {"stamps": [], "snapshot": {}, "warnings": [], "paths": {}, "flux": {}})
    assert worktree.load(cache_mod.RenderCache(store), "ab" * 32, tmp_path, "") is None
    assert worktree.KIND == "worktree-index-v4"


@pytest.mark.parametrize(("op", "builds"), [("image", False), ("vars", True), ("spec", True)])
def test_the_fixed_point_takes_unchanged_outcomes_from_its_trace(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, op: str, builds: bool
) -> None:
    """After an image tag is saved, only the Kustomizations reading that file are built
    (the trace answers the rest without a prekey); a changed substituteFrom source or
    Kustomization object changes what the fixed point reads back, so the trace ends and
    the rest is derived as without it. Either way the answer is the full render's."""
    from harness.flux import targets

    cache_dir = tmp_path / "cache"
    first = worktree.Keeper()
    _render(repo, cache_dir, first)
    assert first.memory is not None and first.memory.trace is not None
    nodes = len(first.memory.trace.nodes)
    edit(repo, op, 0)
    built: list[object] = []
    real = targets._build_node

    def counted(*args: object, **kwargs: object) -> object:
        built.append(args[1])
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(targets, "_build_node", counted)
    keeper = worktree.Keeper()
    head = _render(repo, cache_dir, keeper)
    monkeypatch.undo()
    assert keeper.used == "incremental"
    assert (len(built) > nodes // 2) is builds, (len(built), nodes)
    assert _view(head) == _view(_render(repo, None, None))
    assert keeper.memory is not None and keeper.memory.trace is not None


def test_a_round_starts_the_builds_its_trace_cannot_answer_first(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a round the trace mostly answers, the Kustomizations whose files changed are
    probed (and their builds started) before the others are answered, so a build runs
    while its siblings are taken from the index; the answer is the full render's."""
    from harness.flux import targets

    cache_dir = tmp_path / "cache"
    _render(repo, cache_dir, worktree.Keeper())
    edit(repo, "image", 0)  # apps/web/deployment.yaml: one Kustomization per cluster
    events: list[tuple[str, object]] = []
    real_round, real_answer, real_build = targets._round, targets._Trace.answer, targets._build_node

    def round_(batch: Any, *args: Any, **kwargs: Any) -> Any:
        events.append(("round", len(batch)))
        return real_round(batch, *args, **kwargs)

    def answer(self: Any, run: Any, node: Any) -> Any:
        found = real_answer(self, run, node)
        events.append(("answered" if found is not None else "unanswered", node.key))
        return found

    def build(run: Any, node: Any, *args: Any, **kwargs: Any) -> Any:
        events.append(("probe" if kwargs.get("probe") else "build", node.key))
        return real_build(run, node, *args, **kwargs)

    monkeypatch.setattr(targets, "_round", round_)
    monkeypatch.setattr(targets._Trace, "answer", answer)
    monkeypatch.setattr(targets, "_build_node", build)
    keeper = worktree.Keeper()
    head = _render(repo, cache_dir, keeper)
    monkeypatch.undo()
    assert keeper.used == "incremental"
    rounds: list[list[tuple[str, object]]] = []
    for kind, what in events:
        if kind == "round":
            rounds.append([])
        elif kind != "build":  # a build runs in the pool: its place in the list is the pool's
            rounds[-1].append((kind, what))
    mixed = [r for r in rounds if {"answered", "unanswered"} <= {k for k, _ in r}]
    assert mixed, rounds  # the edit's round: some answered, some not
    for r in mixed:
        kinds = [k for k, _ in r]
        last_unanswered = max(i for i, k in enumerate(kinds) if k == "unanswered")
        assert "answered" not in kinds[:last_unanswered], r
    assert _view(head) == _view(_render(repo, None, None))
