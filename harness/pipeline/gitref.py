"""Every git call harness makes: resolve a ref and check it out into a temporary directory.

How a ref is checked out: `git read-tree REF` into a *temporary index file*
(`GIT_INDEX_FILE`), then `git checkout-index --all --prefix=TMP/` from it, in a directory
made by `tempfile` outside the repository.

Why not `git worktree add --detach`: a worktree registers itself in `.git/worktrees/` (and
`git worktree list`) for as long as it exists; a `kill -9` or a crash mid-run leaves a stale
entry behind until someone prunes it. The temporary-index export writes nothing into the
repository at all - no worktree, ref, index, stash or lock of the user's - so there is
nothing to undo except deleting a temp directory, which even a second Ctrl-C cannot leave
in a state that matters to the repo.

Why not `git archive`: it applies `export-ignore` and `export-subst` attributes, so the
export can differ from the commit (files missing, `$Format$` expanded). `checkout-index`
writes exactly what a checkout of the commit writes (same eol and smudge filters).

The checkout is removed on success, on error, on Ctrl-C and on SIGTERM (turned into
KeyboardInterrupt while a checkout exists); cleanup runs with both signals blocked.
`checkout_ahead` runs git in a background thread (the caller renders the working tree
meanwhile) and can start the removal early in another; leaving its block waits for both,
then removes whatever is left, so the guarantee is the same.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from harness.core import parallel, process, scratch
from harness.core.errors import GitError

TEMP_PREFIX = "harness-ref-"
GIT_TIMEOUT = 300.0


@dataclass(frozen=True)
class Checkout:
    """A ref checked out in a temp dir: `repo` is the `--repo` subdirectory inside it."""

    ref: str
    sha: str
    root: Path
    repo: Path

    @property
    def label(self) -> str:
        return f"{self.ref} ({self.sha[:12]})"


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run one git command; its stdout, or GitError with git's own first error line."""
    full_env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", **(env or {})}
    try:
        proc = process.run(["git", *args], cwd=cwd, env=full_env, timeout=GIT_TIMEOUT)
    except FileNotFoundError:
        raise GitError("git not found on PATH (needed for --base/--head)") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]}: timed out after {GIT_TIMEOUT:g}s") from None
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        message = lines[0] if lines else f"exited with code {proc.returncode}"
        raise GitError(f"git {args[0]}: {message.removeprefix('fatal: ')}")
    return proc.stdout.decode("utf-8", "replace")


def toplevel(path: Path) -> Path:
    """The root of the work tree containing `path`."""
    try:
        out = git(path, "rev-parse", "--show-toplevel")
    except GitError:
        raise GitError(f"{path}: not inside a git work tree (needed for --base/--head)") from None
    return Path(out.strip()).resolve()


def resolve(root: Path, ref: str) -> str:
    """The commit sha `ref` names; GitError for anything that is not a commit."""
    if not ref or ref.startswith("-"):
        raise GitError(f"invalid ref {ref!r}")
    try:
        out = git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    except GitError:
        raise GitError(f"unknown revision {ref!r}: not a commit in {root}") from None
    return out.strip()


class Resolved(NamedTuple):
    """A work tree's root and the commits its refs named, asked of git once per run."""

    root: Path
    shas: Mapping[str, str]


def resolve_refs(repo: Path, refs: Iterable[str]) -> Resolved:
    """`toplevel` and `resolve` of each ref: a typo fails before anything renders, and the
    checkouts (`checkout_ahead(..., resolved=)`) need not ask git again."""
    root = toplevel(repo)
    return Resolved(root, {ref: resolve(root, ref) for ref in refs})


def head_sha(root: Path) -> str | None:
    """HEAD's sha, or None in a repository without commits."""
    try:
        return resolve(root, "HEAD")
    except GitError:
        return None


def subdirectory(root: Path, repo: Path) -> Path:
    """`repo` relative to the git root (`examples/homelab`), `.` for the root itself."""
    try:
        return repo.resolve().relative_to(root)
    except ValueError:
        raise GitError(f"{repo} is not inside the git work tree {root}") from None


def changed_files(root: Path, repo: Path, base_sha: str, head_sha: str | None) -> list[str]:
    """Files that differ between `base_sha` and `head_sha` (None: the working tree, untracked
    files included, ignored ones not), relative to `repo` and limited to it. Read-only:
    `git diff` on commits; the work tree by `worktree_changes`, `ls-files` for untracked
    files."""
    sub = subdirectory(root, repo).as_posix()
    scope = ["--", "." if sub == "." else sub]
    if head_sha is None:
        names = worktree_changes(root, base_sha, scope)
        untracked = git(root, "ls-files", "--others", "--exclude-standard", "-z", *scope)
        names += [n for n in untracked.split("\0") if n]
    else:
        args = ["diff", "--name-only", "--no-renames", "-z", base_sha, head_sha, *scope]
        names = [n for n in git(root, *args).split("\0") if n]
    prefix = "" if sub == "." else sub + "/"
    return sorted({n[len(prefix) :] for n in names if n.startswith(prefix)})


_REGULAR = frozenset(["100644", "100755"])
_NO_BLOB = "0" * 40


def worktree_changes(root: Path, base_sha: str, scope: list[str]) -> list[str]:
    """Tracked files whose working copy differs from `base_sha`, as `git diff --name-only
    BASE` lists them, without writing the user's index: porcelain `git diff` refreshes the
    index's stat cache as it goes (git 2.39, even with GIT_OPTIONAL_LOCKS=0), so harness
    would rewrite `.git/index` on every run. Plumbing `diff-index` only reads it, and lists
    also the files whose stat alone moved (saved unchanged, touched, checked out again):
    those are hashed by `git hash-object` (git's own clean filters, no object written)
    and dropped when their content is the base's."""
    args = ["diff-index", "--raw", "--no-renames", "-z", base_sha, *scope]
    fields = git(root, *args).split("\0")
    changed: list[str] = []
    verify: dict[str, str] = {}  # path -> the base's blob id, for stat-only candidates
    for head, name in zip(fields[0:-1:2], fields[1::2], strict=False):
        parts = head.lstrip(":").split(" ")
        if len(parts) != 5:
            raise GitError(f"git diff-index: unexpected output {head[:80]!r}")
        old_mode, new_mode, old_sha, new_sha, status = parts
        same_kind = old_mode == new_mode and old_mode in _REGULAR
        if status == "M" and same_kind and new_sha == _NO_BLOB and old_sha != _NO_BLOB:
            verify[name] = old_sha
        else:
            changed.append(name)
    names = sorted(verify)
    for start in range(0, len(names), 500):  # argv stays short whatever the change
        chunk = names[start : start + 500]
        ids = git(root, "hash-object", "--", *chunk).split()
        if len(ids) != len(chunk):
            raise GitError("git hash-object: unexpected output")
        changed += [n for n, blob in zip(chunk, ids, strict=True) if blob != verify[n]]
    return changed


@contextlib.contextmanager
def checkout(repo: Path, ref: str) -> Iterator[Checkout]:
    """Check `ref` out into a temp dir outside the repo; always removed afterwards."""
    with checkout_ahead(repo, ref, background=False) as pending:
        yield pending().checkout


@dataclass(frozen=True)
class Exported:
    """A checkout and, when asked for, the blob ids of its files (`blob_index`)."""

    checkout: Checkout
    blobs: dict[str, str] | None = None


class Pending:
    """What `checkout_ahead` yields. Calling it waits for the export (re-raising git's
    error); `release()`, once the files are no longer read, starts removing them in the
    background while the caller goes on (leaving the block still waits for the removal)."""

    def __init__(self, wait: Callable[[], Exported], tmp: Path) -> None:
        self._wait = wait
        self._tmp = tmp
        self._remover: threading.Thread | None = None

    def __call__(self) -> Exported:
        return self._wait()

    def release(self) -> None:
        if self._remover is None:
            self._wait()  # git is done writing before anything is removed
            tmp = self._tmp
            self._remover = parallel.thread(
                lambda: shutil.rmtree(tmp, ignore_errors=True),
                name="harness-checkout-removal",
                daemon=True,
            )
            self._remover.start()

    def finish(self) -> None:
        if self._remover is not None:
            self._remover.join()


@contextlib.contextmanager
def checkout_ahead(
    repo: Path,
    ref: str,
    *,
    blobs: bool = False,
    background: bool = True,
    resolved: Resolved | None = None,
) -> Iterator[Pending]:
    """`checkout`, with git writing the files (and listing the blob ids, with `blobs`) in a
    background thread: the caller does other work meanwhile and calls what it gets when it
    needs the tree, which re-raises git's error there. The ref is resolved first, so a bad
    ref still fails before anything else runs. On leaving, git (and a removal `release`
    started) is waited for, then whatever is left of the temp dir is removed, as `checkout`
    does, also when the wait is interrupted. `resolved` (resolve_refs) spares asking again."""
    root = resolved.root if resolved is not None else toplevel(repo)
    sub = subdirectory(root, repo)
    sha = resolved.shas.get(ref) if resolved is not None else None
    if sha is None:
        sha = resolve(root, ref)
    with interrupt_on_sigterm():
        tmp = Path(tempfile.mkdtemp(prefix=scratch.prefix("ref"))).resolve()
        try:
            if tmp == root or root in tmp.parents:
                raise GitError(
                    f"temporary directory {tmp} is inside the repository; set TMPDIR elsewhere"
                )
            outcome: list[Exported | BaseException] = []

            def work() -> None:
                try:
                    done = _export(root, sub, ref, sha, tmp)
                    index = blob_index(root, done) if blobs else None
                    outcome.append(Exported(done, index))
                except BaseException as exc:  # handed to the caller by wait()
                    outcome.append(exc)

            thread = parallel.thread(work, name="harness-checkout", daemon=True)
            if background:
                thread.start()
            else:
                work()

            def wait() -> Exported:
                if background:
                    thread.join()
                found = outcome[0]
                if isinstance(found, BaseException):
                    raise found
                return found

            pending = Pending(wait, tmp)
            try:
                yield pending
            finally:
                if background:
                    thread.join()  # git is short; its files must exist before removal
                pending.finish()
        finally:
            remove_tree(tmp)


def _export(root: Path, sub: Path, ref: str, sha: str, tmp: Path) -> Checkout:
    """The temporary-index export (module docstring) of `sha` into `tmp/tree`."""
    tree = tmp / "tree"
    env = {"GIT_INDEX_FILE": str(tmp / "index")}
    git(root, "read-tree", "--end-of-options", sha, env=env)
    git(
        root,
        "checkout-index",
        "--all",
        "--force",
        "--ignore-skip-worktree-bits",
        f"--prefix={tree}{os.sep}",
        env=env,
    )
    tree.mkdir(exist_ok=True)
    target = tree / sub
    if not target.is_dir():
        raise GitError(f"{sub.as_posix()} does not exist at {ref} ({sha[:12]})")
    return Checkout(ref=ref, sha=sha, root=tree, repo=target)


def remove_tree(path: Path) -> None:
    """Delete a temp checkout with SIGINT/SIGTERM held back, so a second Ctrl-C cannot
    interrupt the cleanup; a signal that arrives meanwhile is delivered afterwards."""
    blocked = _block_signals()
    try:
        shutil.rmtree(path, onerror=_make_writable_and_retry)
    except FileNotFoundError:
        pass
    finally:
        if blocked is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _make_writable_and_retry(func: object, path: str, _exc: object) -> None:
    with contextlib.suppress(OSError):
        os.chmod(os.path.dirname(path), 0o700)
        os.chmod(path, 0o700)
    with contextlib.suppress(FileNotFoundError):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)


def _block_signals() -> set[int | signal.Signals] | None:
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


Terminated = process.Terminated
interrupt_on_sigterm = process.sigterm_as_interrupt


def blob_index(git_root: Path, checkout: Checkout) -> dict[str, str]:
    """Blob ids of the regular files of a checkout (absolute path -> id), from `git ls-tree`.

    Lets the render cache digest a ref's files without reading them. Empty (so files are
    read) when a checkout may differ from the blobs (`checkout_is_tree`).
    """
    out = git(git_root, "ls-tree", "-r", "-z", "--full-tree", "--end-of-options", checkout.sha)
    if not checkout_is_tree(git_root, out):
        return {}
    index: dict[str, str] = {}
    for record in out.split("\0"):
        meta, sep, rel = record.partition("\t")
        if not sep:
            continue
        mode, _kind, oid = meta.split(" ", 2)
        if mode in ("100644", "100755"):
            index[str(checkout.root / rel)] = oid
    return index


# .gitattributes entries that never make a checked-out file differ from its blob on a
# checkout that writes LF: text normalization happens on commit, not checkout; diff, merge,
# export and linguist attributes do not touch the work tree
_SAFE_ATTRIBUTES = ("text", "-text", "!text", "binary", "eol=lf", "diff", "-diff", "merge")
_SAFE_PREFIXES = (
    "text=auto",
    "diff=",
    "merge=",
    "-merge",
    "linguist-",
    "-linguist-",
    "!linguist-",
    "export-ignore",
    "export-subst",
    "whitespace",
    "-whitespace",
    "delta",
    "-delta",
    "encoding=",
)


def checkout_is_tree(git_root: Path, ls_tree: str) -> bool:
    """Whether a checkout of the tree `ls_tree` lists (`git ls-tree -r -z --full-tree`) writes
    every file byte for byte as its blob. Not when `core.autocrlf`, `core.eol=crlf` or a
    global attributes file is set, or a `.gitattributes` of the tree sets anything beyond
    text normalization to LF, diff/merge drivers, export and linguist hints (a `filter`,
    `eol=crlf`, `ident`, `working-tree-encoding`, ... would change what is checked out)."""
    try:
        config = git(git_root, "config", "--get-regexp", r"^core\.(autocrlf|eol|attributesfile)$")
    except GitError:  # exit 1: none of them is set
        config = ""
    for line in config.splitlines():
        key, _, value = line.partition(" ")
        value = value.strip().lower()
        if key == "core.attributesfile" or value in ("true", "input", "crlf"):
            return False
    for record in ls_tree.split("\0"):
        meta, sep, rel = record.partition("\t")
        if sep and (rel == ".gitattributes" or rel.endswith("/.gitattributes")):
            oid = meta.split(" ", 2)[2]
            if not _safe_attributes(git(git_root, "cat-file", "blob", oid)):
                return False
    return True


def _safe_attributes(text: str) -> bool:
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        for attr in fields[1:]:
            if attr not in _SAFE_ATTRIBUTES and not attr.startswith(_SAFE_PREFIXES):
                return False
    return True
