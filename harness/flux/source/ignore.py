"""The files source-controller leaves out of a source artifact, so offline builds see the same.

Flux never builds the repo itself: it builds the artifact source-controller archived, and that
archive lacks every file its ignore rules exclude. Without the same rules, a `.sops.yaml` or a
`.github/workflows/ci.yaml` inside a Kustomization path without a kustomization file fails
harness's build while Flux never sees it.

Which patterns apply (fluxcd/pkg `sourceignore/sourceignore.go`, source-controller
`internal/controller/gitrepository_controller.go` and `storage.SourceIgnoreFilter`):

- GitRepository and OCIRepository: every `.sourceignore` file in the tree (the root's first,
  then subdirectories depth-first in name order, `.git` skipped; each file's patterns are
  relative to its own directory), then the lines of `spec.ignore` (relative to the root).
  The VCS patterns always come first; the other default exclusions (images, archives, CI
  configs, `**/.sops.yaml`, ...) apply only when those two give no pattern at all, so any
  `.sourceignore` line or `spec.ignore` line replaces them.
- Bucket: only the root `.sourceignore` and `spec.ignore`, no default exclusions.

Matching is go-git v5.16.4's gitignore matcher (frozen by Flux as fluxcd/pkg
`sourceignore/gitignore`), not git's. The differences a user can notice:

- the last matching pattern decides for every path on its own, and source-controller walks
  into excluded directories, so `!` can bring back a file inside an excluded directory
  (git cannot);
- each path component is matched with Go's `filepath.Match`: `[^a]` negates a class but
  `[!a]` is the class of `!` and `a`; a malformed pattern (`[a`, a trailing `\\`) matches
  nothing;
- `**` counts only as a whole component; `/**` alone matches nothing and `dir/**` also
  matches a file named `dir`; after `**/` the next component binds to its first occurrence.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.core import run, safefile
from harness.render.discover import KUSTOMIZATION_FILES

IGNORE_FILE = ".sourceignore"
DEFAULT_ORIGIN = "default exclusions"
# fluxcd/pkg sourceignore: ExcludeVCS, then ExcludeExt, ExcludeCI and ExcludeExtra.
VCS_PATTERNS = (".git/", ".gitignore", ".gitmodules", ".gitattributes")
DEFAULT_PATTERNS = (
    *("*.jpg", "*.jpeg", "*.gif", "*.png", "*.wmv", "*.flv", "*.tar.gz", "*.zip"),
    *(".github/", ".circleci/", ".travis.yml", ".gitlab-ci.yml", "appveyor.yml", ".drone.yml"),
    *("cloudbuild.yaml", "codeship-services.yml", "codeship-steps.yml"),
    *("**/.goreleaser.yml", "**/.sops.yaml", "**/.flux.yaml"),
)
# The one source kind that reads only the root `.sourceignore` and has no default exclusions.
BUCKET = "Bucket"
_STARSTAR = "**"


@dataclass(frozen=True)
class Pattern:
    """One ignore line, parsed as go-git's `ParsePattern` does.

    `domain` is the directory of the file it came from, as path components relative to the
    source root; the pattern only sees paths below it. `anchored` patterns (a `/` anywhere
    but at the end) match component by component from the domain down; the others match
    any single component of the path.
    """

    text: str
    origin: str
    domain: tuple[str, ...]
    parts: tuple[str, ...]
    negated: bool = False
    dir_only: bool = False
    anchored: bool = False

    def matches(self, path: Sequence[str], is_dir: bool) -> bool:
        """Whether the line applies to `path` (components relative to the source root)."""
        depth = len(self.domain)
        if len(path) <= depth or tuple(path[:depth]) != self.domain:
            return False
        rest = path[depth:]
        if self.anchored:
            return _anchored_match(self.parts, rest, is_dir, self.dir_only)
        return _name_match(self.parts[0], rest, is_dir, self.dir_only)


def parse_pattern(line: str, domain: Sequence[str] = (), origin: str = "") -> Pattern:
    """A line that is neither blank nor a comment; see `read_patterns`."""
    body = line
    negated = body.startswith("!")
    if negated:
        body = body[1:]
    if not body.endswith("\\ "):
        body = body.rstrip(" ")
    dir_only = body.endswith("/")
    if dir_only:
        body = body[:-1]
    return Pattern(
        text=line,
        origin=origin,
        domain=tuple(domain),
        parts=tuple(body.split("/")),
        negated=negated,
        dir_only=dir_only,
        anchored="/" in body,
    )


def read_patterns(text: str, domain: Sequence[str] = (), origin: str = "") -> tuple[Pattern, ...]:
    """The patterns of a `.sourceignore` file or `spec.ignore`, in order.

    Lines starting with `#` and blank lines are skipped; nothing else is special, so `\\#`
    and `\\!` reach the glob, where the backslash makes them literal.
    """
    out = []
    for raw in text.split("\n"):
        line = raw[:-1] if raw.endswith("\r") else raw
        if line.startswith("#") or not line.strip():
            continue
        out.append(parse_pattern(line, domain, origin))
    return tuple(out)


def _name_match(glob: str, path: Sequence[str], is_dir: bool, dir_only: bool) -> bool:
    """A pattern without `/`: the first component it matches decides."""
    last = len(path) - 1
    for i, name in enumerate(path):
        if fnmatch(glob, name):
            return not (dir_only and not is_dir and i == last)
    return False


def _anchored_match(
    parts: Sequence[str], path: Sequence[str], is_dir: bool, dir_only: bool
) -> bool:
    """go-git's `globMatch`: components in order; a matched prefix covers what is below it."""
    rest = list(path)
    matched = False
    traverse = False
    for i, part in enumerate(parts):
        if part == "":
            traverse = False
            continue
        if part == _STARSTAR:
            if i == len(parts) - 1:
                break
            traverse = True
            continue
        if _STARSTAR in part or not rest:
            return False
        if traverse:
            traverse = False
            while rest:
                name = rest.pop(0)
                if fnmatch(part, name):
                    matched = True
                    break
                if not rest:
                    matched = False
        else:
            if not fnmatch(part, rest[0]):
                return False
            matched = True
            rest.pop(0)
    if matched and dir_only and not is_dir and not rest:
        return False
    return matched


def fnmatch(glob: str, name: str) -> bool:
    """Go's `filepath.Match` for one path component; a malformed glob matches nothing."""
    compiled = _compile(glob)
    return compiled is not None and compiled.fullmatch(name) is not None


def valid_glob(glob: str) -> bool:
    """Whether Go's `filepath.Match` accepts `glob` (one component) without ErrBadPattern."""
    return _compile(glob) is not None


# process-wide: a compiled regex, a pure function of the glob (no repo or run in it)
@functools.cache
def _compile(glob: str) -> re.Pattern[str] | None:
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            while i < n and glob[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "\\":
            i += 1
            if i >= n:
                return None
            out.append(re.escape(glob[i]))
        elif c == "[":
            cls, i = _char_class(glob, i + 1)
            if cls is None:
                return None
            out.append(cls)
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def _char_class(glob: str, i: int) -> tuple[str | None, int]:
    """`[...]` from just after the `[`: Go's ranges, `^` negates, `\\` escapes."""
    negated = i < len(glob) and glob[i] == "^"
    if negated:
        i += 1
    ranges: list[tuple[str, str]] = []
    count = 0
    while True:
        if i < len(glob) and glob[i] == "]" and count:
            i += 1
            break
        lo, i = _class_char(glob, i)
        if lo is None:
            return None, i
        hi = lo
        if glob[i] == "-":
            end, i = _class_char(glob, i + 1)
            if end is None:
                return None, i
            hi = end
        count += 1
        if lo <= hi:
            ranges.append((lo, hi))
    body = "".join(f"{re.escape(lo)}-{re.escape(hi)}" for lo, hi in ranges)
    if not body:
        return ("[^/]" if negated else "(?!)"), i
    return f"[{'^' if negated else ''}{body}]", i


def _class_char(glob: str, i: int) -> tuple[str | None, int]:
    """Go's `getEsc`: one (possibly escaped) character that must not end the glob."""
    if i >= len(glob) or glob[i] in "-]":
        return None, i
    if glob[i] == "\\":
        i += 1
        if i >= len(glob):
            return None, i
    char, i = glob[i], i + 1
    return (char if i < len(glob) else None), i


_DECIDED_LIMIT = 1 << 16


@dataclass(frozen=True)
class Rules:
    """The ignore patterns of one source, lowest priority first, rooted at `root`."""

    root: Path
    patterns: tuple[Pattern, ...] = ()
    # decisions already taken: a pure function of the path's parts and kind. A cold render
    # asks the same directories' kustomization files of the rules three times per Flux
    # build (the probe's plan, the build's plan, the artifact check), each a fnmatch walk
    _decided: dict[tuple[tuple[str, ...], bool], Pattern | None] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

    @property
    def reincludes(self) -> bool:
        """Whether a `!` line may bring back something inside an excluded directory."""
        return any(p.negated for p in self.patterns)

    def decide(self, parts: Sequence[str], is_dir: bool) -> Pattern | None:
        """The last pattern that matches, excluding or (`negated`) including the path."""
        key = (tuple(parts), is_dir)
        decided = self._decided
        if key in decided:
            return decided[key]
        found = None
        for pattern in reversed(self.patterns):
            if pattern.matches(parts, is_dir):
                found = pattern
                break
        if len(decided) >= _DECIDED_LIMIT:
            decided.clear()
        decided[key] = found
        return found

    def exclusion(self, path: Path, is_dir: bool | None = None) -> Pattern | None:
        """The pattern that keeps `path` out of the artifact; None when it is in it.

        Paths outside the root are never excluded (they are not part of this source).
        """
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            return None
        if not rel.parts:
            return None
        decided = self.decide(rel.parts, path.is_dir() if is_dir is None else is_dir)
        return decided if decided is not None and not decided.negated else None

    def kustomization_file(self, directory: Path) -> Path | None:
        """The kustomization file the artifact holds in `directory` (an excluded one is gone)."""
        for name in KUSTOMIZATION_FILES:
            candidate = directory / name
            if candidate.is_file() and self.exclusion(candidate, False) is None:
                return candidate
        return None


def ignore_files(root: Path, recursive: bool = True) -> tuple[Path, ...]:
    """`.sourceignore` files in fluxcd/pkg `LoadIgnorePatterns` order.

    The directory's own file first, then each subdirectory in name order, depth first;
    symlinked directories and `.git` are not entered. Listed through the run's file facts
    (a resident watcher holds the listings between saves: core/filefacts.py `Held`).
    """
    found: list[Path] = []
    facts = run.files()

    def visit(directory: str) -> None:
        candidate = os.path.join(directory, IGNORE_FILE)
        entries = facts.listing(directory) if recursive else None
        if entries is None:  # not listed (or not asked to): the file asked for itself
            if facts.is_file(candidate):
                found.append(Path(candidate))
            return
        if any(name == IGNORE_FILE and is_file for name, _st, _d, is_file in entries):
            found.append(Path(candidate))
        subdirs = sorted(
            name
            for name, st, _is_dir, _is_file in entries
            if name != ".git" and st is not None and stat.S_ISDIR(st.st_mode)
        )
        for name in subdirs:
            visit(os.path.join(directory, name))

    visit(str(root))
    return tuple(found)


def file_patterns(root: Path, files: Iterable[Path]) -> tuple[Pattern, ...]:
    """Patterns of `.sourceignore` files; each one's domain is its directory under `root`."""
    out: list[Pattern] = []
    for path in files:
        try:
            text = safefile.read_bytes(path).decode("utf-8", "surrogateescape")
        except OSError:
            continue
        domain = path.parent.relative_to(root).parts
        out.extend(read_patterns(text, domain, str(path)))
    return tuple(out)


def source_rules(
    root: Path,
    kind: str,
    files: Sequence[Pattern],
    spec_ignore: str | None = None,
    spec_origin: str = "spec.ignore",
) -> Rules:
    """The rules source-controller applies to a source of `kind` rooted at `root`.

    `files` are the `.sourceignore` patterns (all of the tree, or the root's only for a
    Bucket); `spec_ignore` is the source's `spec.ignore` text when set.
    """
    given = (*files, *read_patterns(spec_ignore or "", (), spec_origin))
    if kind == BUCKET:
        return Rules(root, given)
    vcs = read_patterns("\n".join(VCS_PATTERNS), (), DEFAULT_ORIGIN)
    defaults = () if given else read_patterns("\n".join(DEFAULT_PATTERNS), (), DEFAULT_ORIGIN)
    return Rules(root, (*vcs, *defaults, *given))


class SourceIgnores:
    """Rules per source for one run: each root's `.sourceignore` files are read once.

    Per run rather than global, as files may change between runs (a git ref checkout).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._files: dict[tuple[Path, bool], tuple[Pattern, ...]] = {}
        self._rules: dict[tuple[Path, str, str | None, str], Rules] = {}

    def rules(
        self,
        root: Path,
        kind: str,
        spec_ignore: str | None = None,
        spec_origin: str = "spec.ignore",
    ) -> Rules:
        key = (root, kind, spec_ignore, spec_origin)
        with self._lock:
            found = self._rules.get(key)
            if found is None:
                recursive = kind != BUCKET
                files = self._files.get((root, recursive))
                if files is None:
                    files = file_patterns(root, ignore_files(root, recursive))
                    self._files[(root, recursive)] = files
                found = source_rules(root, kind, files, spec_ignore, spec_origin)
                self._rules[key] = found
            return found
