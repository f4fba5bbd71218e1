"""Where harness may write: inside the checkout, or where the user said on the command line.

A pull request's tree is untrusted, and so is what it holds: `harness.yaml` may name
`goldens: ../../../home/you`, and a committed symlink (`report.html -> ~/.bashrc`,
`goldens/path -> /`) makes a path that reads as inside the repo land outside it. So every
writer (goldens, `--out`, `--html`, `--output-dir`) asks here first, before anything is
written:

- a path from `harness.yaml` must resolve (symlinks followed) inside the checkout;
- a path from the command line may be anywhere when the user typed it absolute (their own
  word), unless it names a place in the checkout that a symlink carries out of it; a
  relative one must resolve inside the checkout (relative to the current directory, where
  a CI step's working directory may not be the repo): else pass an absolute path;
- `inside(path, root)` checks a file about to be written under a directory already
  confined (a golden under the goldens, a comment part under `--output-dir`): a symlinked
  subdirectory planted in the tree cannot carry it out.

Standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.core.errors import HarnessError


class OutsideError(HarnessError):
    """A write would land outside the checkout; the message says which path, and why."""


def checkout(repo: Path) -> Path:
    """The checkout `repo` lies in: the nearest directory (itself or above) holding `.git`,
    else `repo` itself."""
    for candidate in (repo, *repo.parents):
        if (candidate / ".git").exists():
            return candidate
    return repo


def _within(path: Path, top: Path) -> bool:
    return path == top or path.is_relative_to(top)


def from_config(raw: str | Path, repo: Path, what: str, where: str) -> Path:
    """`what` (a key of `where`, harness.yaml) resolved against `repo`; it must stay in the
    checkout whatever it says, absolute or not: the config comes with the tree."""
    raw_path = Path(raw)
    path = (raw_path if raw_path.is_absolute() else repo / raw_path).resolve()
    top = checkout(repo).resolve()
    if not _within(path, top):
        raise OutsideError(
            f"{where}: {what} {str(raw)!r} resolves to {path}, outside the checkout ({top}); "
            f"{what} must be inside it"
        )
    return path


def from_cli(path: Path, flag: str, repo: Path) -> Path:
    """The destination of `flag PATH`, resolved; OutsideError when a relative path resolves
    outside the checkout, or an absolute one in the checkout leaves it through a symlink."""
    top = checkout(repo.resolve())
    absolute = path if path.is_absolute() else Path.cwd() / path
    real = absolute.resolve()
    if _within(real, top):
        return real
    if not path.is_absolute():
        raise OutsideError(
            f"{flag} {path}: resolves to {real}, outside the repository ({top}); "
            "pass an absolute path to write there"
        )
    lexical = Path(os.path.normpath(absolute))
    if _within(lexical, top):  # typed as a place in the checkout, carried out by a link
        raise OutsideError(
            f"{flag} {path}: a symlink in the repository carries it to {real}, "
            f"outside the repository ({top})"
        )
    return real


def inside(path: Path, root: Path) -> Path:
    """`path` (to be written) resolved; OutsideError unless it stays under `root` (already
    resolved): a symlinked directory or file in the tree cannot carry a write out."""
    real = path.resolve()
    if not _within(real, root):
        raise OutsideError(
            f"{path}: resolves through a symlink to {real}, outside {root}; not written"
        )
    return real
