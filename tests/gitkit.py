"""Real git repositories in tmp dirs, and a fingerprint of everything `diff` must not touch."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(root: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV, "GIT_OPTIONAL_LOCKS": "0"}
    proc = subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True, timeout=300
    )
    return proc.stdout


def init(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    return root


def commit_all(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def state(root: Path) -> dict[str, str]:
    """Working tree, index, stash, HEAD, branches and worktrees, as git reports them."""
    index = root / ".git" / "index"
    return {
        "status": git(root, "status", "--porcelain", "--untracked-files=all"),
        "stash": git(root, "stash", "list"),
        "worktrees": git(root, "worktree", "list", "--porcelain"),
        "head": git(root, "rev-parse", "HEAD"),
        "symbolic": git(root, "symbolic-ref", "-q", "HEAD"),
        "branches": git(root, "for-each-ref", "--format=%(refname) %(objectname)"),
        "index": hashlib.sha256(index.read_bytes()).hexdigest() if index.exists() else "",
        "worktrees_dir": str(sorted(p.name for p in (root / ".git" / "worktrees").glob("*"))),
    }


def make_busy(root: Path, staged: str, stashed: str, unstaged: str) -> None:
    """A user mid-work: one stash entry, one staged edit, one unstaged edit, one untracked file."""
    (root / stashed).write_text("stashed edit\n")
    git(root, "stash", "push", "-q", "-m", "wip", "--", stashed)
    (root / staged).write_text((root / staged).read_text() + "# staged\n")
    git(root, "add", staged)
    (root / unstaged).write_text((root / unstaged).read_text() + "# unstaged\n")
    (root / "untracked.txt").write_text("untracked\n")
