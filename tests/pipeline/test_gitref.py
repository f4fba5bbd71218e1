"""gitref: a ref checked out into a temp dir, the user's repository never touched, cleanup on
success, error, SIGINT and SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.core.errors import GitError
from harness.pipeline import gitref
from tests.conftest import configmap, kustomization
from tests.gitkit import commit_all, init, make_busy, state


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repo whose harness root is a subdirectory, like examples/homelab."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr("tempfile.tempdir", None)
    root = init(tmp_path / "git")
    app = root / "examples" / "app"
    app.mkdir(parents=True)
    (app / "kustomization.yaml").write_text(kustomization("cm.yaml"))
    (app / "cm.yaml").write_text(configmap("a", v="1"))
    (root / "README.md").write_text("readme\n")
    commit_all(root, "one")
    (app / "cm.yaml").write_text(configmap("a", v="2"))
    commit_all(root, "two")
    return root


def leftovers(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "tmp").iterdir())


def test_checkout_maps_the_subdirectory_and_shows_the_commit_not_the_work_tree(
    repo: Path, tmp_path: Path
) -> None:
    app = repo / "examples" / "app"
    make_busy(
        repo,
        staged="examples/app/cm.yaml",
        stashed="README.md",
        unstaged="examples/app/kustomization.yaml",
    )
    before = state(repo)
    with gitref.checkout(app, "HEAD~1") as co:
        assert co.repo == co.root / "examples" / "app"
        assert "v: '1'" in (co.repo / "cm.yaml").read_text()
        assert "# unstaged" not in (co.repo / "kustomization.yaml").read_text()
        assert not (co.root / "untracked.txt").exists()
        assert (co.root / "README.md").read_text() == "readme\n"
        assert repo not in co.root.parents
        assert co.label.startswith("HEAD~1 (") and len(co.sha) == 40
        assert state(repo) == before  # nothing registered while it exists either
    assert state(repo) == before
    assert leftovers(tmp_path) == []


def test_cleanup_on_error_inside_the_block(repo: Path, tmp_path: Path) -> None:
    before = state(repo)
    with pytest.raises(RuntimeError), gitref.checkout(repo, "HEAD"):
        raise RuntimeError("boom")
    with pytest.raises(KeyboardInterrupt), gitref.checkout(repo, "HEAD"):
        raise KeyboardInterrupt
    assert leftovers(tmp_path) == []
    assert state(repo) == before


def test_bad_refs_and_places(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(GitError, match="unknown revision 'nope'"):
        gitref.resolve(repo, "nope")
    with pytest.raises(GitError, match="invalid ref"):
        gitref.resolve(repo, "--all")
    (repo / "later").mkdir()
    (repo / "later" / "kustomization.yaml").write_text("resources: []\n")
    with (
        pytest.raises(GitError, match="later does not exist at HEAD"),
        gitref.checkout(repo / "later", "HEAD"),
    ):
        pass
    assert leftovers(tmp_path) == []
    outside = tmp_path / "not-git"
    outside.mkdir()
    with pytest.raises(GitError, match="not inside a git work tree"):
        gitref.toplevel(outside)


def test_tree_sha_of_a_commit_is_resolved_as_a_commit(repo: Path) -> None:
    tree = subprocess.run(
        ["git", "rev-parse", "HEAD^{tree}"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    with pytest.raises(GitError):
        gitref.resolve(repo, tree)


SCRIPT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from harness.pipeline import gitref
    with gitref.checkout(Path(sys.argv[1]), "HEAD") as co:
        print(co.root, flush=True)
        time.sleep(600)  # until the signal
    """
)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_while_checked_out_removes_the_checkout(
    repo: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    before = state(repo)
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(repo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    checkout = Path(proc.stdout.readline().strip())
    assert checkout.is_dir()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=300)  # a hang guard
    assert proc.returncode != 0
    expected = "KeyboardInterrupt" if sig == signal.SIGINT else "process.Terminated"
    assert expected in err
    assert not checkout.exists()
    assert leftovers(tmp_path) == []
    assert state(repo) == before


def test_remove_tree_handles_read_only_directories_and_missing_paths(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    (victim / "a" / "b").mkdir(parents=True)
    (victim / "a" / "b" / "f").write_text("x")
    os.chmod(victim / "a" / "b", 0o500)
    gitref.remove_tree(victim)
    assert not victim.exists()
    gitref.remove_tree(victim)  # already gone: fine


def test_blob_index_gives_the_checkout_files_their_git_ids(repo: Path) -> None:
    from harness.render.closure import git_blob_id

    os.symlink("cm.yaml", repo / "examples" / "app" / "link.yaml")
    commit_all(repo, "a symlink")
    with gitref.checkout(repo / "examples" / "app", "HEAD") as co:
        index = gitref.blob_index(repo, co)
        files = [co.repo / "cm.yaml", co.repo / "kustomization.yaml", co.root / "README.md"]
        assert {str(f): git_blob_id(f.read_bytes()) for f in files} == index
    # what homelab repos commit: normalization to LF, linguist hints; the checkout is the tree
    (repo / ".gitattributes").write_text(
        "# normalize\n* text=auto eol=lf\n*.yaml linguist-detectable linguist-language=YAML\n"
        "*.png binary\n*.sops.yaml diff=sopsdiffer -merge\n"
    )
    commit_all(repo, "attributes")
    with gitref.checkout(repo / "examples" / "app", "HEAD") as co:
        index = gitref.blob_index(repo, co)
        assert index[str(co.repo / "cm.yaml")] == git_blob_id((co.repo / "cm.yaml").read_bytes())
    for risky in ("*.yaml text eol=crlf\n", "*.enc filter=crypt\n", "*.c ident\n"):
        (repo / "examples" / ".gitattributes").write_text(risky)
        commit_all(repo, f"attributes: {risky}")
        with gitref.checkout(repo / "examples" / "app", "HEAD") as co:
            assert gitref.blob_index(repo, co) == {}, risky  # the checkout may differ
    (repo / "examples" / ".gitattributes").unlink()
    commit_all(repo, "no more risky attributes")
    gitref.git(repo, "config", "core.autocrlf", "true")
    with gitref.checkout(repo / "examples" / "app", "HEAD") as co:
        assert gitref.blob_index(repo, co) == {}


def test_checkout_ahead_exports_in_the_background_and_cleans_up(repo: Path, tmp_path: Path) -> None:
    """The export runs while the caller works; the checkout equals `checkout`'s, with the
    blob ids when asked; the temp dir goes on success, on the caller's error and on git's."""
    app = repo / "examples" / "app"
    before = state(repo)
    with gitref.checkout_ahead(app, "HEAD~1", blobs=True) as wait:
        exported = wait()
        assert wait() is exported  # waiting twice gives the same export
        co = exported.checkout
        assert "v: '1'" in (co.repo / "cm.yaml").read_text()
        assert exported.blobs == gitref.blob_index(repo, co)
    with gitref.checkout_ahead(app, "HEAD") as wait:
        tree = wait().checkout.root
        assert wait().blobs is None
        wait.release()  # removal starts while the caller goes on; leaving waits for it
        wait.release()
    assert not tree.exists()
    with pytest.raises(KeyboardInterrupt), gitref.checkout_ahead(app, "HEAD") as wait:
        wait.release()
        raise KeyboardInterrupt
    with pytest.raises(RuntimeError), gitref.checkout_ahead(app, "HEAD"):
        raise RuntimeError("the caller fails before it waits")
    (repo / "later").mkdir()
    (repo / "later" / "kustomization.yaml").write_text("resources: []\n")
    with (
        gitref.checkout_ahead(repo / "later", "HEAD") as wait,
        pytest.raises(GitError, match="later does not exist at HEAD"),
    ):
        wait()  # git's error comes here, not when the export started
    with pytest.raises(GitError, match="unknown revision"), gitref.checkout_ahead(app, "nope"):
        pass  # a bad ref fails before the caller's work
    assert leftovers(tmp_path) == []
    (repo / "later" / "kustomization.yaml").unlink()
    (repo / "later").rmdir()
    assert state(repo) == before


def test_changed_files_of_the_work_tree_match_git_diff_and_leave_the_index_alone(
    repo: Path,
) -> None:
    """Before: porcelain `git diff` rewrote .git/index (its stat cache) on every run, so a
    recorded diff's git files changed under it and the user's index was written."""
    app = repo / "examples" / "app"
    (app / "extra.yaml").write_text(configmap("x", v="1"))
    (app / "gone.yaml").write_text(configmap("g", v="1"))
    commit_all(repo, "three")
    base = gitref.resolve(repo, "HEAD~1")  # "two": extra.yaml and gone.yaml are new since
    (app / "cm.yaml").write_text(configmap("a", v="3"))  # modified
    os.utime(app / "kustomization.yaml", (1, 1))  # its stat moved, not its content
    (app / "extra.yaml").write_text((app / "extra.yaml").read_text())  # rewritten, same
    (app / "gone.yaml").unlink()
    (app / "new.yaml").write_text(configmap("n", v="1"))  # untracked
    (repo / "README.md").write_text("outside the repo's subdirectory\n")
    index = repo / ".git" / "index"
    before = (index.read_bytes(), index.stat().st_mtime_ns)
    found = gitref.changed_files(repo, repo / "examples", base, None)
    # extra.yaml is new since `two` whatever its stat; gone.yaml too (in neither side now)
    assert found == ["app/cm.yaml", "app/extra.yaml", "app/new.yaml"]
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before
    found = gitref.changed_files(repo, repo / "examples", gitref.resolve(repo, "HEAD"), None)
    assert found == ["app/cm.yaml", "app/gone.yaml", "app/new.yaml"]
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before
    porcelain = subprocess.run(
        ["git", "diff", "--name-only", "HEAD", "--", "examples"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert porcelain == ["examples/app/cm.yaml", "examples/app/gone.yaml"]
    assert index.stat().st_mtime_ns != before[1]  # what harness no longer does
