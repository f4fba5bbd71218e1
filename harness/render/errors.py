"""kustomize's failure as one line a person can act on: where, the cause, a hint.

kustomize buries its cause: it prints deprecation warnings first (`# Warning: 'commonLabels'
is deprecated`), wraps the cause in one layer per resource it was accumulating
(`accumulating resources: accumulation err='accumulating resources from 'x': ...': must
build at directory: ...`, the same cause twice), and reports a YAML error over two lines
without naming the file (`yaml: unmarshal errors:` / `line 7: mapping key "x" already
defined at line 6`). The first line of stderr is therefore often a warning or a wrapper. The
summary keeps the chain of resources that led to the failure, the innermost cause, the file
where kustomize names none (found among the files the build reads), and a hint for causes
with a known remedy. Paths stay as kustomize printed them; the caller makes them relative.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from harness.core import safefile
from harness.render.closure import EscapeError, Walker

MAX_CHARS = 600
_FROM = re.compile(r"accumulating resources from '([^']*)'")
_MISSING = re.compile(r"lstat ([^:']+): no such file or directory")
_DUPLICATE = re.compile(r'line (\d+): mapping key "([^"]+)" already defined at line (\d+)')
_RECURSED = re.compile(r"': recursed accumulation of path '[^']*': ")
_WARNING = re.compile(r"^(# )?warning:", re.IGNORECASE)
_PREFIX = re.compile(r"^(error|Error): ")
# Where kustomize quotes a value into its message, and what stands in for it: the value may
# be a Secret's (a replacement's source), and an error line reaches every output and log.
# The file, the field and the cause are what a reader acts on; the value never is.
_QUOTED_VALUES = (
    (re.compile(r"(is out of bounds for value ).*?(?=['\"]|$)"), r"\1***"),
    (re.compile(r"(cannot unmarshal !!\w+ )`[^`]*`"), r"\1***"),
)
_NODE_CONTENTS = ": node contents:"

# (substring of the cause, hint): causes whose remedy is not in kustomize's words
HINTS: tuple[tuple[str, str], ...] = (
    (
        "must specify --enable-helm",
        "the directory inflates a chart with `helmCharts:`, which needs kustomize's "
        "--enable-helm and a helm binary, and which Flux's kustomize-controller never does: "
        "deploy the chart with a HelmRelease, or leave the directory out (harness.yaml "
        "`exclude:`)",
    ),
    (
        "already defined at line",
        "a key appears twice in one YAML mapping; keep one",
    ),
    (
        "cycle detected",
        "two kustomizations include each other through `resources:`; break the loop",
    ),
)


def summarize(stderr: str, code: int, directory: Path | None = None) -> str:
    """One line for a failed build of `directory`; `code` is kustomize's exit status."""
    message = _message(stderr)
    if not message:
        if code < 0:
            return f"killed by signal {-code}"
        return f"exited with code {code} and no message"
    chain = _chain(message)
    cause = _cause(message, directory)
    line = f"{' -> '.join(chain)}: {cause}" if chain and cause != message else cause
    hint = next((h for needle, h in HINTS if needle in message), None)
    if hint is not None:
        line = f"{line} (hint: {hint})"
    return line if len(line) <= MAX_CHARS else line[: MAX_CHARS - 3] + "..."


def _message(stderr: str) -> str:
    """The first line that is not a warning; when it ends with `:` (a list follows, as in
    `yaml: unmarshal errors:`), its indented lines joined with `; `; when it opens a quoted
    block (a generator's config), the line closing it, which holds the cause. A Go panic's
    stack trace, which also follows its first line, is left out; so are the values kustomize
    quotes (a node's contents, a replacement's source value), which may be a Secret's."""
    lines = [raw.rstrip() for raw in stderr.splitlines()]
    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line or _WARNING.match(line):
            continue
        if _NODE_CONTENTS in line:  # the YAML of the node follows: not shown
            return _scrub(_PREFIX.sub("", line.split(_NODE_CONTENTS)[0]))
        parts = [_scrub(_PREFIX.sub("", line))]
        if line.endswith("`"):  # a quoted config block follows, then "`: <cause>"
            parts += [more.strip() for more in lines[i + 1 :] if more.startswith("`")][:1]
        elif line.endswith(":"):
            for more in lines[i + 1 : i + 6]:
                if not more[:1].isspace():
                    break
                parts.append(_scrub(more.strip()))
        return " ".join([parts[0], "; ".join(parts[1:])]) if len(parts) > 1 else parts[0]
    return ""


def _scrub(text: str) -> str:
    for pattern, replacement in _QUOTED_VALUES:
        text = pattern.sub(replacement, text)
    return text


def _chain(message: str) -> list[str]:
    """The resources kustomize was accumulating, outermost first, each once."""
    chain: list[str] = []
    for ref in _FROM.findall(message):
        if not chain or chain[-1] != ref:
            chain.append(ref)
    return chain


def _cause(message: str, directory: Path | None) -> str:
    cycle = message.find("cycle detected:")
    if cycle >= 0:
        return message[cycle:]
    missing = _MISSING.search(message)
    if missing:  # the chain already names the reference; without one, the path does
        return "no such file or directory" if _FROM.search(message) else missing.group(0)[6:]
    duplicate = _DUPLICATE.search(message)
    if duplicate:
        line, key, first = duplicate.groups()
        found = _yaml_file_with(directory, int(line), key, int(first))
        if found is not None:  # the file's own line numbers
            where, at, before = found
            return f'{where}:{at}: mapping key "{key}" already defined at line {before}'
        return f'line {line}: mapping key "{key}" already defined at line {first}'
    helm = message.rfind("`: ")  # `...config: `<yaml>`: cause` (HelmChartInflationGenerator)
    if "HelmChartInflationGenerator" in message and helm >= 0:
        return "helmCharts: " + message[helm + 3 :]
    layers = list(_FROM.finditer(message))
    if layers:
        tail = message[layers[-1].end() :].removeprefix(": ")
        recursed = _RECURSED.search(tail)
        if recursed:  # a directory: the file attempt's error is noise, the build's is the cause
            return tail[recursed.end() :]
        return tail.split("': ")[0].strip("' ") or message  # up to the wrapper's closing quote
    return message


def _yaml_file_with(
    directory: Path | None, line: int, key: str, first: int
) -> tuple[str, int, int] | None:
    """The file the build of `directory` reads that defines `key` twice in one mapping
    (kustomize names no file for a duplicate key), relative to `directory`, with the two
    lines in that file. kustomize's line numbers count in the object as it re-serialised
    it, which match the file only while no transformer changed the object (a `namespace:`
    adds a line): a file whose lines `line` and `first` both define `key` wins, else the
    first file holding `key` twice in one mapping."""
    if directory is None or not directory.is_dir():
        return None
    pattern = re.compile(rf"^(\s*)(- )?['\"]?{re.escape(key)}['\"]?\s*:")
    fallback: tuple[str, int, int] | None = None
    for path in _read_files(directory):
        try:
            lines = safefile.read_text(path, errors="replace").splitlines()
        except OSError:
            continue
        if max(line, first) <= len(lines) and all(
            pattern.match(lines[n - 1]) for n in (line, first)
        ):
            return os.path.relpath(path, directory), line, first
        if fallback is None:
            twice = _twice(lines, pattern)
            if twice is not None:
                fallback = (os.path.relpath(path, directory), *twice)
    return fallback


def _twice(lines: list[str], pattern: re.Pattern[str]) -> tuple[int, int] | None:
    """(second, first) 1-based lines defining the key twice at one indent of one mapping:
    no line between them is indented less or starts a new document."""
    open_at: dict[int, int] = {}  # indent -> line of the key's last definition there
    for number, text in enumerate(lines, start=1):
        if text.startswith(("---", "...")):
            open_at.clear()
            continue
        stripped = text.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(text) - len(stripped)
        open_at = {i: n for i, n in open_at.items() if i <= indent}  # left those mappings
        match = pattern.match(text)
        if match is None:
            continue
        at = indent + (2 if match.group(2) else 0)  # `- key:` opens a mapping at its key
        if match.group(2):
            open_at.pop(at, None)  # a new list item: a new mapping
        elif at in open_at:
            return number, open_at[at]
        open_at[at] = number
    return None


def _read_files(directory: Path) -> list[Path]:
    """The files a build of `directory` reads (its closure, unconfined: only to search)."""
    try:
        closure = Walker().closure(directory, Path(directory.anchor))
    except (EscapeError, OSError, ValueError):
        return []
    return [closure.root / rel for rel in closure.files()]
