"""filefacts: facts about files, kept across runs while each file's stat holds."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from harness.core import filefacts, run
from harness.core.run import Run


def test_file_facts_hold_while_the_stat_holds(tmp_path: Path) -> None:
    """A fact about a file is answered only while its size, mtime, ctime and inode are what
    they were; a file modified within RACY_SECONDS is not remembered at all."""
    facts = filefacts.FileFacts()
    path = tmp_path / "f.yaml"
    path.write_text("a: 1\n")
    old = time.time() - 10
    os.utime(path, (old, old))
    at, known = facts.get(str(path), "blob")
    assert at is not None and known is None
    facts.put(str(path), "blob", at, "id-1")
    assert facts.get(str(path), "blob") == (at, "id-1")
    assert facts.get(str(path), "other") == (at, None)
    path.write_text("a: 2\n")  # same size, new content, new mtime
    now, known = facts.get(str(path), "blob")
    assert known is None and now != at
    facts.put(str(path), "blob", now, "id-2")  # just modified: racy, not remembered
    assert facts.get(str(path), "blob")[1] is None
    columns = facts.export(str(tmp_path))
    fresh = filefacts.FileFacts()
    fresh.load(columns)
    assert fresh.get(str(path), "blob")[1] is None
    assert facts.get(str(tmp_path / "absent"), "blob") == (None, None)


def test_file_facts_travel_between_processes(tmp_path: Path) -> None:
    facts = filefacts.FileFacts()
    path = tmp_path / "k.yaml"
    path.write_text("kind: Component\n")
    old = time.time() - 10
    os.utime(path, (old, old))
    at, _ = facts.get(str(path), "component")
    facts.put(str(path), "component", at, "1")
    assert facts.get(str(path), "component")[1] == "1"
    other = filefacts.FileFacts()
    other.load(facts.export(str(tmp_path)))
    assert other.get(str(path), "component")[1] == "1"
    assert other.export("/elsewhere") == {"paths": [], "facts": [], "stamps": [], "values": []}


def test_every_run_uses_the_process_facts_unless_given_its_own(tmp_path: Path) -> None:
    """The one thing runs share, on purpose: a fact one run learnt answers the next run."""
    path = tmp_path / "k.yaml"
    path.write_text("kind: Component\n")
    old = time.time() - 10
    os.utime(path, (old, old))
    with Run().entered():
        at, _ = run.files().get(str(path), "component")
        run.files().put(str(path), "component", at, "1")
    assert Run().files is run.PROCESS.files is run.files()  # outside a run too
    assert Run().files.get(str(path), "component")[1] == "1"
    own = filefacts.FileFacts()
    with Run(files=own).entered():
        assert run.files() is own and own.get(str(path), "component")[1] is None


def test_a_directory_stamp_moves_when_its_names_change(tmp_path: Path) -> None:
    """What the preinstalled scan's record trusts: a directory whose stamp holds lists the
    same names; a file added, removed or renamed in it moves the stamp, an edit in place of
    a file does not (the file's own stamp says that)."""
    (tmp_path / "a.yaml").write_text("a: 1\n")
    old = time.time() - 10
    os.utime(tmp_path, (old, old))
    at = filefacts.directory_stamp(str(tmp_path))
    assert at is not None and filefacts.stamp(str(tmp_path)) is None  # not a regular file
    assert filefacts.directory_stamp(str(tmp_path / "a.yaml")) is None
    (tmp_path / "a.yaml").write_text("a: 2\n")
    assert filefacts.directory_stamp(str(tmp_path)) == at
    for change in (
        lambda: (tmp_path / "b.yaml").write_text("b\n"),
        lambda: (tmp_path / "b.yaml").rename(tmp_path / "c.yaml"),
        lambda: (tmp_path / "c.yaml").unlink(),
    ):
        change()
        now = filefacts.directory_stamp(str(tmp_path))
        assert now is not None and now != at
        at = now


def test_exported_facts_of_another_shape_are_a_miss_whole(tmp_path: Path) -> None:
    """What comes from disk is checked column by column: a foreign, older (rows) or hostile
    export loads nothing, and never raises; facts the process knows stay."""
    path = tmp_path / "k.yaml"
    path.write_text("kind: Component\n")
    old = time.time() - 10
    os.utime(path, (old, old))
    facts = filefacts.FileFacts()
    at, _ = facts.get(str(path), "component")
    assert at is not None
    facts.put(str(path), "component", at, "1")
    good = facts.export(str(tmp_path))
    assert facts.at(str(path), "component", at) == "1"
    bad: list[object] = [
        None,
        [[str(path), "component", *at, "1"]],  # the rows of an older harness
        {**good, "values": [1]},
        {**good, "stamps": [*good["stamps"], 7]},
        {**good, "stamps": [True, *good["stamps"][1:]]},
        {**good, "paths": [b"x"]},
        {**good, "extra": []},
        {k: v for k, v in good.items() if k != "facts"},
    ]
    for hostile in bad:
        fresh = filefacts.FileFacts()
        fresh.load(hostile)
        assert fresh.get(str(path), "component")[1] is None, hostile
    kept = filefacts.FileFacts()
    kept.put(str(path), "component", at, "mine")
    kept.load(good)  # what the process already knows wins over what it reads
    assert kept.get(str(path), "component")[1] == "mine"
    assert kept.at(str(path), "component", (0, 0, 0, 0)) is None


def _tree(root: Path) -> None:
    (root / "a/b").mkdir(parents=True)
    (root / "a/f.yaml").write_text("x")
    (root / "a/b/g.yaml").write_text("y")
    (root / "z").mkdir()
    (root / "real").mkdir()
    (root / "real/r.yaml").write_text("r")
    (root / "link-dir").symlink_to(root / "real")
    (root / "link-file").symlink_to(root / "a/f.yaml")
    (root / "broken").symlink_to(root / "nowhere")


def _walked(facts: filefacts.FileFacts, top: Path, prune: str = "") -> list[object]:
    out: list[object] = []
    for dirpath, dirs, files in facts.walk(str(top)):
        dirs[:] = sorted(d for d in dirs if d != prune)
        out.append((dirpath, list(dirs), sorted(files)))
    return out


def test_a_held_walk_is_os_walk_and_follows_what_it_is_told(tmp_path: Path) -> None:
    """`FileFacts.walk` holding listings (harness watch) gives os.walk's answer, pruning
    included, and after `drop` of what changed (a file made in a new directory reported
    by the directory alone, a directory removed) the answer of a walk that holds nothing."""
    root = tmp_path / "t"
    root.mkdir()
    _tree(root)
    plain, held = filefacts.FileFacts(), filefacts.FileFacts()
    held.held = filefacts.Held(str(root))
    for prune in ("", "b"):
        assert _walked(held, root, prune) == _walked(plain, root, prune)
    (root / "a/new").mkdir()
    (root / "a/new/n.yaml").write_text("n")
    shutil.rmtree(root / "z")
    assert _walked(held, root) != _walked(plain, root)  # held: the old listings
    held.held.drop([str(root / "a/new"), str(root / "z")])
    assert _walked(held, root) == _walked(plain, root)
    # a directory renamed: both ends reported
    os.rename(root / "a", root / "c")
    held.held.drop([str(root / "a"), str(root / "c")])
    assert _walked(held, root) == _walked(plain, root)
    assert not held.is_file(str(root / "a/f.yaml")) and held.is_file(str(root / "c/f.yaml"))
    # many paths at once (a branch checked out) drop everything
    (root / "c/b/late.yaml").write_text("l")
    held.held.drop([str(root / f"other-{n}") for n in range(filefacts.DROP_ALL + 1)])
    assert _walked(held, root) == _walked(plain, root)


def test_held_stats_are_of_listed_files_only_and_drop_with_them(tmp_path: Path) -> None:
    """A file's stat is held once its directory was listed; a symlink's never is (its
    target may change with no event in the tree); `drop` forgets a file and `clear` all."""
    root = tmp_path / "t"
    root.mkdir()
    _tree(root)
    facts = filefacts.FileFacts()
    facts.held = filefacts.Held(str(root))
    target = root / "a/f.yaml"
    first = facts.stamp(str(target))
    assert first == filefacts.stamp(str(target))
    facts.listing(str(root))
    facts.listing(str(root / "a"))
    os.utime(target, ns=(1, 1))
    assert facts.stamp(str(target)) == first  # held: the watcher reported nothing
    assert facts.stamp(str(root / "link-file")) == filefacts.stamp(str(target))  # asked
    facts.held.drop([str(target)])
    assert facts.stamp(str(target)) == filefacts.stamp(str(target)) != first
    os.utime(target, ns=(2, 2))
    facts.held.clear()
    assert facts.stamp(str(target)) == filefacts.stamp(str(target))
    # outside the root nothing is held
    outside = tmp_path / "o.yaml"
    outside.write_text("o")
    facts.listing(str(tmp_path))
    os.utime(outside, ns=(3, 3))
    assert facts.stamp(str(outside)) == filefacts.stamp(str(outside))


def test_a_render_lists_each_directory_of_its_tree_once(tmp_path: Path) -> None:
    """Inside `listed_once(root)` a directory under root is listed on its first ask only
    (the render's stat of the tree and its ignore-file walks share the listings); one
    outside root (a Flux build's workspace, written as the render runs) is listed anew
    each time; the listings go with the last block open on the tree."""
    root = tmp_path / "t"
    root.mkdir()
    _tree(root)
    work = tmp_path / "ws"
    work.mkdir()
    facts = filefacts.FileFacts()
    plain = filefacts.FileFacts()

    def names(d: Path) -> list[str]:
        return sorted(n for n, *_ in facts.listing(str(d)) or ())

    with facts.listed_once(str(root)):
        first = names(root / "a")
        assert first == sorted(n for n, *_ in plain.listing(str(root / "a")) or ())
        (root / "a/late.yaml").write_text("l")
        (work / "kustomization.yaml").write_text("k")
        assert names(root / "a") == first  # listed once in this render
        assert names(work) == ["kustomization.yaml"]  # outside the tree: asked each time
        assert facts.listing(str(root / "missing")) is None
        (root / "missing").mkdir()
        assert facts.listing(str(root / "missing")) is None  # "could not list" is kept too
        with facts.listed_once(str(root)):  # a second render of the same tree meanwhile
            assert names(root / "a") == first
        assert names(root / "a") == first  # still open: the first block's
        assert names(root) == sorted(n for n, *_ in plain.listing(str(root)) or ())
    assert "late.yaml" in names(root / "a")  # the next render lists again
    assert facts.listing(str(root / "missing")) == ()
