"""The two glob dialects an ArtifactGenerator's copy operations are matched with.

source-watcher (`internal/builder/builder.go`) matches a copy's `from` with Go's `io/fs.Glob`
(`*`, `?` and `[...]` within one path segment; `**` is just `*`, so `dir/**` lists the
entries of `dir`, not its whole subtree), except for the Extract strategy, and its
`exclude` patterns with bmatcuk/doublestar (`**` spans directories, `{a,b}` alternatives).
Both are written here from their documented semantics, over a `Listing` (what a source
artifact holds), never over the raw repo: the artifact is what the controller sees.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable, Iterator

from harness.flux.source.ignore import fnmatch, valid_glob

# builder.go `containsGlobChars`: decides between a plain path and a glob
GLOB_CHARS = "*?[]"
# io/fs `hasMeta`
_FS_META = "*?[\\"


class PatternError(ValueError):
    """A malformed pattern (Go's ErrBadPattern)."""


# (relative path) -> "dir", "file" or None; and a directory's entry names, sorted
Kind = Callable[[str], str | None]
Entries = Callable[[str], list[str]]


def has_glob(pattern: str) -> bool:
    return any(c in pattern for c in GLOB_CHARS)


def fs_glob(pattern: str, kind: Kind, entries: Entries) -> list[str]:
    """Go's `fs.Glob` on the listing: matches in walk order; PatternError when malformed."""
    if not all(valid_glob(part) for part in pattern.split("/")):
        raise PatternError("syntax error in pattern")
    if not any(c in pattern for c in _FS_META):
        return [pattern] if kind(pattern) is not None else []
    head, tail = posixpath.split(pattern)
    head = _clean_glob_path(head, pattern)
    if not any(c in head for c in _FS_META):
        return _glob_in(head, tail, kind, entries)
    if head == pattern:
        raise PatternError("syntax error in pattern")
    out: list[str] = []
    for directory in fs_glob(head, kind, entries):
        out.extend(_glob_in(directory, tail, kind, entries))
    return out


def _clean_glob_path(head: str, pattern: str) -> str:
    """io/fs `cleanGlobPath`: the directory part of `path.Split`."""
    if head == "":
        return "."
    return head[:-1] if head.endswith("/") and head != "/" else head


def _glob_in(directory: str, name_glob: str, kind: Kind, entries: Entries) -> list[str]:
    if kind(directory) != "dir":
        return []
    return [
        name if directory == "." else f"{directory}/{name}"
        for name in entries(directory)
        if fnmatch(name_glob, name)
    ]


def walk(top: str, kind: Kind, entries: Entries) -> Iterator[str]:
    """Every path below `top` (not `top` itself), lexical, a directory before its content
    (Go's `fs.WalkDir` order)."""
    for name in entries(top):
        path = name if top == "." else f"{top}/{name}"
        yield path
        if kind(path) == "dir":
            yield from walk(path, kind, entries)


def doublestar_glob(pattern: str, kind: Kind, entries: Entries) -> list[str]:
    """doublestar's `Glob` for the Extract strategy: every path of the listing that matches."""
    regex = doublestar(pattern)
    return [path for path in walk(".", kind, entries) if regex.fullmatch(path)]


def doublestar_match(pattern: str, path: str) -> bool:
    """doublestar's `Match`; a malformed pattern matches nothing (callers validate first)."""
    try:
        return doublestar(pattern).fullmatch(path) is not None
    except PatternError:
        return False


# process-wide: a compiled regex, a pure function of the pattern (no repo or run in it)
@functools.cache
def doublestar(pattern: str) -> re.Pattern[str]:
    """The pattern as a regular expression; PatternError when doublestar would reject it.

    `**` is special only as a whole segment: `/**/` (or a leading `**/`) is zero or more
    directories, a trailing `/**` is the directory itself or anything below it; elsewhere
    it is a `*`. `*` and `?` never cross a `/`; classes take `!` or `^` to negate.
    """
    return re.compile(_translate(pattern, True), re.DOTALL)


def _translate(pattern: str, start_of_segment: bool) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    sos = start_of_segment
    while i < n:
        c = pattern[i]
        if c == "*":
            if i + 1 < n and pattern[i + 1] == "*" and sos:
                j = i + 2
                if j == n:
                    if out and out[-1] == "/":
                        out[-1] = "(?:/.*)?"  # `dir/**` matches `dir` too
                    else:
                        out.append(".*")
                    i = j
                    continue
                if pattern[j] == "/":
                    if j + 1 == n and out and out[-1] == "/":
                        out[-1] = "(?:/(?:[^/]*/)*)?"  # `dir/**/` matches `dir` only
                    else:
                        out.append("(?:[^/]*/)*")
                    i = j + 1
                    sos = True
                    continue
            while i < n and pattern[i] == "*":
                i += 1
            out.append("[^/]*")
            sos = False
            continue
        if c == "?":
            out.append("[^/]")
            sos = False
        elif c == "[":
            cls, i = _class(pattern, i + 1)
            out.append(cls)
            sos = False
            continue
        elif c == "{":
            end = _closing_brace(pattern, i + 1)
            alternatives = _split_alternatives(pattern[i + 1 : end])
            out.append("(?:" + "|".join(_translate(a, sos) for a in alternatives) + ")")
            i = end + 1
            sos = False
            continue
        elif c == "\\":
            i += 1
            if i >= n:
                raise PatternError("syntax error in pattern")
            out.append(re.escape(pattern[i]))
            sos = pattern[i] == "/"
        elif c == "/":
            out.append("/")
            sos = True
        else:
            out.append(re.escape(c))
            sos = False
        i += 1
    return "".join(out)


def _class(pattern: str, i: int) -> tuple[str, int]:
    """`[...]` from just after `[`: the regex class and the index after `]`."""
    n = len(pattern)
    if i >= n:
        raise PatternError("syntax error in pattern")
    negate = pattern[i] in "!^"
    if negate:
        i += 1
    if i >= n or pattern[i] == "]":
        raise PatternError("syntax error in pattern")
    items: list[str] = []
    while i < n and pattern[i] != "]":
        lo = pattern[i]
        if lo == "\\":
            i += 1
            if i >= n:
                raise PatternError("syntax error in pattern")
            lo = pattern[i]
        i += 1
        if i + 1 < n and pattern[i] == "-" and pattern[i + 1] != "]":
            i += 1
            hi = pattern[i]
            if hi == "\\":
                i += 1
                if i >= n:
                    raise PatternError("syntax error in pattern")
                hi = pattern[i]
            i += 1
            if lo <= hi:
                items.append(f"{re.escape(lo)}-{re.escape(hi)}")
            continue
        items.append(re.escape(lo))
    if i >= n:
        raise PatternError("syntax error in pattern")
    body = "".join(items)
    if not body:
        return ("(?s:.)" if negate else "(?!)"), i + 1
    return f"[{'^' if negate else ''}{body}]", i + 1


def _closing_brace(pattern: str, i: int) -> int:
    depth = 1
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise PatternError("syntax error in pattern")


def _split_alternatives(body: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
        i += 1
    parts.append(body[start:])
    return parts
