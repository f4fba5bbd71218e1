"""Whole-run replay: a `check`, `lint` or `diff` whose inputs are all unchanged prints its
recorded answer.

Why: on a warm render cache a no-change `check` of a big repo still pays ~1.3 s for imports,
discovery, hundreds of cache lookups and hazard graphs, although its answer is a function of
files that can be stat-ed in milliseconds. Like git's index (and the run caches of build
tools), a run is recorded with the stat signature of everything it could read; a later,
identical invocation whose signatures all still match writes the recorded output back byte
for byte and exits with the recorded code, before any heavy import.

What a run could read, and so what must match:
- the invocation: verb and arguments, working directory, environment, which streams are
  terminals and their size, the Python interpreter;
- every file, directory and symlink under the run's roots (the repo, plus a config file,
  goldens or source checkouts outside it), `.git` directories excepted (their names are
  signed: a repository appearing is a change); the cache directory excepted;
- harness's own code, the installed packages (site-packages directories) and the renderer
  binary;
- a diff's git refs and git's own files (`note_git`): what each ref and HEAD name, as one
  `git rev-parse` answers (`git_query`), and the stat lines (content hashes too when racily
  clean) of what git reads besides its objects and refs (`git_files`: the index, config,
  excludes and attributes files). All else
  a diff reads through git (trees, blob ids, an exported commit, `git diff` of the working
  tree) is a function of those commits, immutable objects, the working tree and those
  files. A replay runs that one `rev-parse` again, bounded (`run_git`: its own process
  group, killed after GIT_TIMEOUT or past GIT_CAP bytes), after every stat matched, and
  answers only when git prints the same bytes; a moved branch, a new commit on the base or
  HEAD, a staged file or a config edit is a miss. A repo holding another repository (a
  submodule) is never recorded; objects replaced by `git replace` after a record are not
  seen.
A file modified too recently to trust its mtime (git's "racily clean" case) also has its
content hash recorded and checked. A file rewritten with its size, mtime, ctime and inode all
kept cannot be seen, as with git and make.

Coverage is checked, not trusted: while a run records, a PEP 578 audit hook sees every file
and directory the process opens or lists, every program it starts and every network call. A
record is kept only when each path read lies under a fingerprinted root (or is harness's
code, the interpreter's, the cache's own content-addressed entries, a device or a temp dir
the run made) and none inside a `.git`, each program is a renderer whose binary is
fingerprinted (`note_tool`) or the git whose answers are recorded (`note_git`), and nothing
touched the network; so an input a module starts reading without a fingerprint
makes runs unrecordable, never a stale replay. What the hook cannot see (Go code in the Helm
SDK fetching a chart) declares itself with `taint`. The command line is read with the
verbs' real option definitions, which the caller hands over (`harness.cli.flags.REPLAYED`,
checked against the click parameters typer builds by a test; the cache layer imports no CLI).

A run is recorded when it exits 0, 1 or 2 and read no remote input (a remote kustomize
resource, a chart from a Helm repository) and met no transient failure (a renderer that timed
out, was killed by a signal or could not start); the inputs must not change while it reads
them. An error such as a missing file or an unmapped source is a function of the inputs like
any other answer, so it is replayed too.
`--no-cache`, `--html FILE`, `-o junit` (its XML holds the run's duration),
`$GITHUB_STEP_SUMMARY` or `HARNESS_NO_REPLAY=1` turn it off; `HARNESS_REPLAY_LOG=FILE`
appends one line per decision. Records are ordinary entries of the render cache
(fileformat.py): checksummed, atomic, counted, pruned and cleared with it.

Standard library only, light modules only: this module runs before harness.cli is imported
(a replayed diff's git runs through `os.posix_spawn`, not `subprocess`).
"""

from __future__ import annotations

import io
import os
import stat
import sys
import time

from harness import __version__
from harness.cache import fileformat
from harness.cache.fileformat import sha256

# Imports are the bulk of a replay's own time: typing, contextlib, base64 and hashlib are
# avoided here, json is imported only when a record is read or written (~2.5 ms), sha256 is
# the interpreter's own.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from contextlib import ExitStack
    from types import TracebackType
    from typing import Any, BinaryIO, TextIO

    from harness.core.config import Config

# `output` values a replay must not answer: JUnit XML holds the run's duration
OFF_OUTPUTS = frozenset({"junit"})
KIND = "harness-run-v2"  # v2: JSON records (v1 was marshal)
ENV_OFF = "HARNESS_NO_REPLAY"
ENV_LOG = "HARNESS_REPLAY_LOG"
# a file whose mtime is within this of the recording may change again inside one mtime tick
RACY_NS = 2_000_000_000
# variables a shell changes between two runs of the same command; HARNESS_REPLAY_* only steer
# this module
VOLATILE_ENV = frozenset({"_", "OLDPWD", "PWD", "SHLVL", ENV_LOG})
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # harness/
# a replayed diff's one git call: seconds before its group is killed, bytes it may print
GIT_TIMEOUT = 10.0
GIT_CAP = 1 << 16
# git's own files a diff's git calls read, by `git rev-parse --git-path` (the index: which
# files are tracked; config and info/: filters, eol, excludes; shallow and grafts: history)
GIT_PATHS = (
    "index",
    "config",
    "config.worktree",
    "info/exclude",
    "info/attributes",
    "shallow",
    "info/grafts",
)


class Plan:
    """An invocation that may be replayed: its argv, its cache directory and its key."""

    __slots__ = ("argv", "digest", "directory", "walked")

    def __init__(self, argv: list[str], directory: str, digest: str) -> None:
        self.argv = argv
        self.directory = directory
        self.digest = digest
        # the roots a missed replay walked, which the recording of this same run starts
        # from instead of walking them again a few milliseconds later (its after-run walk
        # is always its own: a file saved in between differs there, and nothing is kept)
        self.walked: dict[tuple[str, str], Listing] = {}

    @property
    def path(self) -> str:
        return fileformat.entry_path(self.directory, self.digest)


def plan(argv: list[str], verbs: Mapping[str, Mapping[str, tuple[bool, str]]]) -> Plan | None:
    """The replay plan for this command line, or None when it must run for real. `verbs`:
    each replayable verb's options (see read_argv)."""
    if os.environ.get(ENV_OFF, "") not in ("", "0"):
        return None
    if not argv or argv[0] not in verbs:
        return None
    if not all(hasattr(stream, "buffer") for stream in (sys.stdout, sys.stderr)):
        return None  # no byte streams to capture (closed, or replaced by an embedding host)
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        return None  # check appends to it: a side effect a replay would skip
    options = read_argv(argv, verbs[argv[0]])
    if options is None:
        return None
    directory = options.get("--cache-dir") or fileformat.default_dir()
    return Plan(list(argv), os.path.realpath(directory), invocation_key(argv))


def read_argv(argv: list[str], table: Mapping[str, tuple[bool, str]]) -> dict[str, str] | None:
    """The options of a replayable command line by their policy, or None when any option is
    not in `table` (the verb's real options: each option string -> whether it takes a value,
    its policy; harness/cli/flags.py says what the policies mean), is `off`, asks for an
    output that must not replay, or a positional argument appears (neither check nor lint
    takes one: the CLI will say so)."""
    found: dict[str, str] = {}
    words = argv[1:]
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--" or not word.startswith("-") or word == "-":
            return None
        pairs: list[tuple[str, str | None]] = []
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            spec = table.get(name)
            if spec is None or (eq and not spec[0]):
                return None
            if spec[0] and not eq:
                if i >= len(words):
                    return None
                value, i = words[i], i + 1
            pairs.append((name, value if spec[0] else None))
        else:  # a cluster of short options: `-qo junit`, `-j2`
            k = 1
            while k < len(word):
                name = "-" + word[k]
                spec = table.get(name)
                if spec is None:
                    return None
                k += 1
                if spec[0]:
                    value = word[k:]
                    if not value:
                        if i >= len(words):
                            return None
                        value, i = words[i], i + 1
                    pairs.append((name, value))
                    break
                pairs.append((name, None))
        for name, given in pairs:
            policy = table[name][1]
            if policy == "off":
                return None
            if policy == "output" and given in OFF_OUTPUTS:
                return None
            if policy == "cache-dir" and given is not None:
                found["--cache-dir"] = given
    return found


def invocation_key(argv: list[str]) -> str:
    """sha256 of everything about the invocation itself that can change a run's output."""
    ttys = [_isatty(fd) for fd in (0, 1, 2)]
    size: tuple[int, int] | None = None
    if ttys[1] or ttys[2]:
        try:
            columns, lines = os.get_terminal_size(1 if ttys[1] else 2)
            size = (columns, lines)
        except OSError:
            size = None
    env = sorted((k, v) for k, v in os.environ.items() if k not in VOLATILE_ENV)
    parts: list[Any] = [
        KIND,
        __version__,
        sys.executable,
        sys.version,
        os.getcwd(),
        argv,
        env,
        ttys,
        size,
        sys.stdout.encoding,
        sys.stderr.encoding,
    ]
    h = sha256()
    for part in parts:
        data = repr(part).encode("utf-8", "surrogateescape")
        h.update(b"%d:" % len(data))
        h.update(data)
    return h.hexdigest()


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


# -- fingerprints ----------------------------------------------------------------------------


class Fingerprint:
    """The stat signature of a run's inputs, and content hashes of the racily clean files."""

    __slots__ = ("digests", "gits", "signature")

    def __init__(self, signature: str, digests: dict[str, str], gits: tuple[str, ...] = ()) -> None:
        self.signature = signature
        self.digests = digests
        self.gits = gits  # the `.git` entries met (not walked; their names are signed)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Fingerprint)
            and self.signature == other.signature
            and self.digests == other.digests
        )

    def __hash__(self) -> int:
        return hash(self.signature)


# One walk of a root: each entry's signed line, and for a regular file its path and its
# newest of mtime and ctime (whether it is racy is decided per fingerprint); the `.git`
# entries met.
Listing = tuple[list[tuple[str, str | None, int]], list[str]]


def fingerprint(
    roots: list[str],
    files: list[str],
    skip: str,
    racy_after: int,
    walked: dict[tuple[str, str], Listing] | None = None,
) -> Fingerprint:
    """Walk `roots` and stat `files`; files modified after `racy_after` get content hashes.
    `walked`: listings of roots already walked (taken, each used once) and where the
    listings this walk makes are left."""
    h = sha256()
    digests: dict[str, str] = {}
    gits: list[str] = []
    for path in files:
        h.update(f"F\0{path}\0{_stat_line(path)}\n".encode("utf-8", "surrogateescape"))
    for root in roots:
        h.update(f"R\0{root}\n".encode("utf-8", "surrogateescape"))
        listing = walked.pop((root, skip), None) if walked is not None else None
        if listing is None:
            listing = _walk(root, skip)
            if walked is not None:
                walked[(root, skip)] = listing
        lines, met = listing
        for line, regular, newest in lines:
            h.update(line.encode("utf-8", "surrogateescape"))
            if regular is not None and newest >= racy_after:
                digests[regular] = _content(regular)
        gits += met
    return Fingerprint(h.hexdigest(), digests, tuple(gits))


def _stat_line(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    return f"{st.st_mode} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns} {st.st_ino}"


def _walk(root: str, skip: str) -> Listing:
    lines: list[tuple[str, str | None, int]] = []
    gits: list[str] = []
    try:
        st = os.stat(root)
    except OSError:
        return [("missing\n", None, 0)], gits
    if not os.path.isdir(root):
        line = f"{st.st_mode} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns} {st.st_ino}"
        regular = st.st_mode & 0o170000 == 0o100000
        newest = max(st.st_mtime_ns, st.st_ctime_ns)
        return [(f"f\0\0{line}\n", root if regular else None, newest)], gits
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            lines.append((f"E\0{directory}\0{exc.errno}\n", None, 0))
            continue
        subdirs: list[str] = []
        for entry in entries:
            if entry.name == ".git":  # its name only: a repository appearing is a change
                lines.append((f"g\0{entry.path[len(root) :]}\n", None, 0))
                gits.append(entry.path)
                continue
            if entry.path == skip:
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # vanished between listing and stat: the after-run walk will differ
            rel = entry.path[len(root) :]
            path: str | None = None
            if entry.is_symlink():
                try:
                    target = os.readlink(entry.path)
                except OSError:
                    target = ""
                line = f"l\0{rel}\0{target}\0{st.st_mtime_ns} {st.st_ino}\n"
            elif entry.is_dir(follow_symlinks=False):
                line = f"d\0{rel}\0{st.st_mode}\n"
                subdirs.append(entry.path)
            else:
                line = (
                    f"f\0{rel}\0{st.st_mode} {st.st_size} {st.st_mtime_ns} "
                    f"{st.st_ctime_ns} {st.st_ino}\n"
                )
                if st.st_mode & 0o170000 == 0o100000:  # a FIFO's open would block
                    path = entry.path
            lines.append((line, path, max(st.st_mtime_ns, st.st_ctime_ns)))
        stack.extend(reversed(subdirs))
    return lines, gits


# The most of one racy file a fingerprint hashes; a larger one digests as OVER_CAP, which
# no record holds (`_refusal`): a run that saw one is never recorded, so never replayed.
CONTENT_CAP = 64 * 1024 * 1024
OVER_CAP = "over-cap"


def _content(path: str) -> str:
    """sha256 of a regular file's bytes, at most CONTENT_CAP of them, opened without
    blocking: a FIFO or device swapped in after the walk's stat is refused by `fstat`,
    never read (its open does not wait)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return "unreadable"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "unreadable"
        h = sha256()
        left = CONTENT_CAP + 1  # one byte past the cap tells a file that grew over it
        while left > 0 and (chunk := os.read(fd, min(1 << 20, left))):
            h.update(chunk)
            left -= len(chunk)
        return OVER_CAP if left <= 0 else str(h.hexdigest())
    except OSError:
        return "unreadable"
    finally:
        os.close(fd)


def code_files() -> list[str]:
    """What the run's code is: harness's own modules and the package directories in use."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(PACKAGE_DIR):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        found.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".py"))
    # an install, upgrade or removal renames dist-info directories there
    found.extend(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    return found


# -- git: what a diff's refs name -------------------------------------------------------------


def git_query(refs: list[str]) -> list[str]:
    """The arguments of the one git call a replayed diff makes: the work tree's top, its git
    directory, where git's own files are (GIT_PATHS) and the commit HEAD and each ref name now
    (as `gitref.resolve` asks, in one call)."""
    args = ["rev-parse", "--show-toplevel", "--absolute-git-dir"]
    for name in GIT_PATHS:
        args += ["--git-path", name]
    # no `--end-of-options`: git 2.39 prints it back outside `--verify`; a ref never starts
    # with `-` here (gitref.resolve refuses one) and note_git checks the answer line by line
    return [*args, *(f"{ref}^{{commit}}" for ref in ("HEAD", *refs))]


def run_git(git: str, cwd: str, args: list[str], timeout: float = GIT_TIMEOUT) -> bytes | None:
    """git's stdout, or None when it fails, times out or prints past GIT_CAP.

    Bounded as core/process.py bounds a tool, without `subprocess` (whose imports would be
    most of a replay's own time): its own session, so a timeout or an interrupt kills its
    whole process group; stdin and stderr /dev/null; the environment of gitref.git (no
    optional locks, the C locale)."""
    import select  # a builtin module: no import cost to speak of

    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    read_fd, write_fd = os.pipe()
    try:
        null = os.open(os.devnull, os.O_RDWR)
        try:
            actions = [
                (os.POSIX_SPAWN_DUP2, null, 0),
                (os.POSIX_SPAWN_DUP2, write_fd, 1),
                (os.POSIX_SPAWN_DUP2, null, 2),
            ]
            pid = os.posix_spawn(
                git, [git, "-C", cwd, *args], env, file_actions=actions, setsid=True
            )
        finally:
            os.close(null)
    except OSError:
        os.close(read_fd)
        return None
    finally:
        os.close(write_fd)
    out = bytearray()
    reaped = False
    try:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_fd], [], [], left)[0]:
                return None  # timed out: the group is killed below
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            out += chunk
            if len(out) > GIT_CAP:
                return None
        status = os.waitpid(pid, 0)[1]
        reaped = True
        return bytes(out) if os.waitstatus_to_exitcode(status) == 0 else None
    finally:
        os.close(read_fd)
        if not reaped:  # a timeout, the cap or an interrupt: never leave git running
            try:  # noqa: SIM105 - contextlib is one of the imports avoided here
                os.killpg(pid, 9)  # SIGKILL (`signal` imports enum)
            except OSError:
                pass
            os.waitpid(pid, 0)


def git_files(repo: str, root: str, answer: list[str], config: bytes | None) -> list[str]:
    """What git reads besides the objects and refs (GIT_PATHS, as `answer` - git_query's output
    lines - says where they are), the config files it read (`config`: the output of
    `git config --list --show-origin -z`), where the global and system ones would be (a file
    appearing is a change), the excludes and attributes files they name, and the
    `.gitignore` and `.gitattributes` of the directories between the work tree's top and the
    repo (the repo's own are in its fingerprint)."""
    found = [os.path.join(repo, p) for p in answer[2 : 2 + len(GIT_PATHS)]]
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    found += [os.path.join(xdg, "git", name) for name in ("config", "ignore", "attributes")]
    found += [os.path.join(home, ".gitconfig"), "/etc/gitconfig", "/etc/gitattributes"]
    found += [os.environ[k] for k in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM") if k in os.environ]
    fields = (config or b"").decode("utf-8", "surrogateescape").split("\0")
    for origin, entry in zip(fields[::2], fields[1::2], strict=False):
        if origin.startswith("file:"):
            found.append(os.path.join(repo, origin[len("file:") :]))
        key, _, value = entry.partition("\n")
        if key.lower() in ("core.excludesfile", "core.attributesfile") and value:
            found.append(os.path.join(repo, os.path.expanduser(value)))
    rel = os.path.relpath(repo, root)
    directory = root
    for part in [] if rel == os.curdir else rel.split(os.sep):
        found += [os.path.join(directory, ".gitignore"), os.path.join(directory, ".gitattributes")]
        directory = os.path.join(directory, part)
    # a device (GIT_CONFIG_GLOBAL=/dev/null) is no file to stat: writes touch its times
    return sorted({os.path.normpath(p) for p in found if not p.startswith("/dev/")})


def _git_stat(path: str, racy_after: int) -> str:
    """A git file's stat line, and its content hash when it is racily clean (an index or
    config rewritten in place within one mtime tick of the record)."""
    line = _stat_line(path)
    try:
        st = os.stat(path)
    except OSError:
        return line
    if st.st_mode & 0o170000 == 0o100000 and max(st.st_mtime_ns, st.st_ctime_ns) >= racy_after:
        return f"{line} {_content(path)}"
    return line


def _git_unchanged(git: Mapping[str, Any], racy_after: int) -> bool:
    """git's files keep their stat lines and git names the same commits as when recorded."""
    if not all(_git_stat(path, racy_after) == line for path, line in git["files"].items()):
        return False
    return bool(run_git(git["git"], git["cwd"], list(git["args"])) == git["out"])


# -- replay ----------------------------------------------------------------------------------


def replay(run: Plan) -> int | None:
    """Write the recorded output and return the exit code; None (and nothing written) on a miss."""
    try:
        raw = fileformat.read_entry(run.path)
    except fileformat.NotAnEntry:  # a poisoned cache: never read to the end, never trusted
        _log(run, "miss: unreadable record")
        fileformat.quietly(os.unlink, run.path)
        return None
    except OSError:
        _log(run, "miss: no record")
        return None
    payload = _load(raw, run.digest)
    if payload is None or payload.get("kind") != KIND or payload.get("argv") != run.argv:
        _log(run, "miss: unreadable record")
        fileformat.quietly(os.unlink, run.path)
        return None
    try:
        roots = list(payload["roots"])
        skip = str(payload["skip"])
        recorded = Fingerprint(str(payload["signature"]), dict(payload["digests"]))
        chunks = [(int(fd), _bytes(data)) for fd, data in payload["output"]]
        code = int(payload["exit"])
        racy_after = int(payload["racy_after"])
        tools = {str(k): str(v) for k, v in dict(payload["tools"]).items()}
        git = payload.get("git")
        if git is not None:  # a diff: git's files and what its refs name (note_git)
            git = {
                "git": str(git["git"]),
                "cwd": str(git["cwd"]),
                "args": [str(a) for a in git["args"]],
                "out": _bytes(git["out"]),
                "files": {str(k): str(v) for k, v in dict(git["files"]).items()},
            }
    except (KeyError, TypeError, ValueError):
        _log(run, "miss: unreadable record")
        return None
    # today's code files, not the recorded list: a module added since is a change too
    now = fingerprint(roots, code_files(), skip, racy_after, run.walked)
    if now != recorded or not _tools_unchanged(tools):
        _log(run, "miss: inputs changed")
        return None
    if git is not None and not _git_unchanged(git, racy_after):  # the one subprocess, last
        _log(run, "miss: git state changed")
        return None
    streams = {1: sys.stdout, 2: sys.stderr}
    for fd, data in chunks:
        stream = streams[fd]
        stream.flush()
        stream.buffer.write(data)
        stream.buffer.flush()
    fileformat.quietly(os.utime, run.path)  # least recently used goes first when pruned
    _log(run, f"hit: exit {code}")
    return code


def _load(raw: bytes, digest: str) -> dict[str, Any] | None:
    """A record's payload: a checksummed cache entry whose body is JSON (bytes as latin-1
    strings). Not marshal: a cache directory is writable by whoever fills it (a CI cache a
    pull request's run saved), the checksum proves nothing against that writer, and
    marshal allocates whatever length a few bytes declare (a 5-byte body took 15 s); a JSON
    parse is bounded by the entry's own (capped) size."""
    import json

    body = fileformat.decode_raw(raw, digest)
    if body is None:
        return None
    try:
        payload = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    return payload if isinstance(payload, dict) else None


def _dump(payload: dict[str, Any]) -> bytes:
    import json

    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _text(data: bytes) -> str:
    """Bytes as JSON can hold them, one character per byte (`_bytes` reverses it)."""
    return data.decode("latin-1")


def _bytes(value: object) -> bytes:
    if not isinstance(value, str):
        raise TypeError("not a byte string")
    return value.encode("latin-1")


def _tools_unchanged(tools: dict[str, str]) -> bool:
    return all(_stat_line(path) == line for path, line in tools.items())


def _log(run: Plan, message: str) -> None:
    target = os.environ.get(ENV_LOG)
    if not target:
        return
    try:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(f"{' '.join(run.argv[:1])} {run.digest[:12]} {message}\n")
    except OSError:
        return


# -- recording -------------------------------------------------------------------------------


class _Tee(io.BufferedIOBase):
    """A stream's bytes go to the real stream and, unless paused, into the record."""

    def __init__(self, target: BinaryIO, fd: int, recorder: Recorder) -> None:
        super().__init__()
        self._target = target
        self._fd = fd
        self._recorder = recorder

    @property
    def name(self) -> Any:
        return getattr(self._target, "name", "")

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self._target.write(chunk)
        self._recorder.capture(self._fd, chunk)
        return len(chunk)

    def flush(self) -> None:
        self._target.flush()

    def isatty(self) -> bool:
        return self._target.isatty()

    def fileno(self) -> int:
        return self._target.fileno()


class Recorder:
    """One recording run: its captured output, its inputs' fingerprint and its taints."""

    def __init__(self, run: Plan) -> None:
        self.run = run
        self.chunks: list[list[Any]] = []
        self.paused = 0
        self.tainted: str | None = None
        self.roots: list[str] | None = None
        self.tools: dict[str, str] = {}  # binary -> its stat line when the run resolved it
        self.programs: dict[str, str] = {}  # what the run started: path -> name it was given
        self.git: dict[str, Any] | None = None  # a diff's refs and git's files (note_git)
        self.before: Fingerprint | None = None
        self.racy_after = 0
        self.allowed = _allowed(run.directory)
        # the import system lists every sys.path entry (the working directory among them);
        # the temp roots are listed for a dead run's leftovers (core/scratch.py)
        import tempfile

        listed = [*sys.path, tempfile.gettempdir(), "/dev/shm"]
        self.listable = frozenset(os.path.abspath(p or os.curdir) for p in listed)
        self.unseen: set[str] = set()  # paths read that no fingerprint may cover

    def read(self, path: str) -> None:
        """The run read `path` (the audit hook): fine when a fingerprint covers it."""
        if path.startswith(self.allowed) or (path + os.sep).startswith(self.allowed):
            return
        if not os.path.lexists(path):
            return  # nothing there to read (or a name relative to another dir's fd: rmtree)
        if len(self.unseen) < 64:
            self.unseen.add(path)

    def ran(self, executable: str) -> None:
        """The run started `executable`, found on PATH as the OS finds it: fine when it is a
        noted tool by the end (a diff runs git before `note_git` can note it)."""
        found = executable
        if os.sep not in executable:
            import shutil  # only when recording; replay's fast path never gets here

            found = shutil.which(executable) or executable
        if len(self.programs) < 64:
            self.programs.setdefault(os.path.abspath(found), executable)

    def note_git(self, repo: str, root: str, shas: dict[str, str]) -> None:
        """See the module's `note_git`: git's answer to the replay's query is kept, checked
        against what the run resolved, with the stat lines of git's files."""
        import shutil  # only when recording

        found = shutil.which("git")
        if found is None:
            self.tainted = "git is not on PATH"
            return
        git = os.path.abspath(found)
        self.tools[git] = _stat_line(git)
        refs = list(shas)
        args = git_query(refs)
        out = run_git(git, repo, args)
        answer = out.decode("utf-8", "surrogateescape").split("\n") if out is not None else []
        wanted = 2 + len(GIT_PATHS) + 1 + len(refs) + 1  # and the last line's newline
        if (
            len(answer) != wanted
            or answer[-1] != ""
            or os.path.realpath(answer[0]) != os.path.realpath(root)
            or answer[-1 - len(refs) : -1] != [shas[ref] for ref in refs]
        ):
            self.tainted = "git does not answer the replay's query as the run's refs resolved"
            return
        config = run_git(git, repo, ["config", "--list", "--show-origin", "-z"])
        files = git_files(repo, root, answer, config)
        stats = {path: _git_stat(path, self.racy_after) for path in files}
        record = {"git": git, "cwd": repo, "args": args, "out": out, "root": root, "files": stats}
        if self.git is not None and self.git != record:
            self.tainted = "the run resolved its refs twice, differently"
        self.git = record

    def uncovered(self) -> list[str]:
        """What the run read outside its roots and the code, once the roots are known, and
        inside a `.git` (never walked: git's answers are what note_git records)."""
        roots = tuple(r.rstrip(os.sep) + os.sep for r in self.roots or ())
        git = f"{os.sep}.git{os.sep}"
        noted = self.git["files"] if self.git is not None else {}  # hashed when racy
        return sorted(
            p
            for p in self.unseen
            if p not in noted
            and (
                git in p + os.sep
                or not (p.startswith(roots) or p + os.sep in roots or p in self.tools)
            )
        )

    def capture(self, fd: int, chunk: bytes) -> None:
        if self.paused or not chunk:
            return
        if self.chunks and self.chunks[-1][0] == fd:
            self.chunks[-1][1] += chunk
        else:
            self.chunks.append([fd, bytearray(chunk)])

    def start(self, roots: list[str]) -> None:
        """Fingerprint the inputs before the run reads them (after config load)."""
        self.roots = roots
        self.racy_after = time.time_ns() - RACY_NS
        walked = self.run.walked
        self.before = fingerprint(roots, code_files(), self.run.directory, self.racy_after, walked)
        walked.clear()

    def finish(self, code: int) -> None:
        """Store the record when the run is replayable and nothing changed under it."""
        reason = self._refusal(code)
        if reason is None and self.roots is not None and self.before is not None:
            after = fingerprint(self.roots, code_files(), self.run.directory, self.racy_after)
            if after != self.before or not _tools_unchanged(self.tools):
                reason = "inputs changed during the run"
            elif self.git is not None and not _git_unchanged(self.git, self.racy_after):
                reason = "inputs changed during the run (git)"
        if reason is not None:
            _log(self.run, f"not recorded: {reason}")
            return
        assert self.before is not None and self.roots is not None
        payload = {
            "kind": KIND,
            "argv": self.run.argv,
            "roots": self.roots,
            "tools": self.tools,
            "skip": self.run.directory,
            "signature": self.before.signature,
            "digests": self.before.digests,
            "racy_after": self.racy_after,
            "exit": code,
            "output": [[fd, _text(bytes(data))] for fd, data in self.chunks],
        }
        if self.git is not None:
            payload["git"] = {**self.git, "out": _text(self.git["out"])}
        data = fileformat.encode_raw(_dump(payload), self.run.digest)
        if fileformat.write_atomic(self.run.path, data):
            _log(self.run, f"recorded: exit {code}")

    def _refusal(self, code: int) -> str | None:
        if code not in (0, 1, 2):
            return f"exit {code}"
        if self.tainted is not None:
            return self.tainted
        if self.roots is None:
            return "no repo was read"
        git_files = self.git["files"].values() if self.git is not None else ()
        hashed = [*(self.before.digests.values() if self.before is not None else ()), *git_files]
        if any(h.endswith(OVER_CAP) for h in hashed):
            return f"a file modified just before the run is over {CONTENT_CAP >> 20} MiB"
        for path, name in sorted(self.programs.items()):
            if path not in self.tools:
                return f"ran {name}, which no fingerprint covers"
        if self.git is not None and self.before is not None:
            own = os.path.join(self.git["root"], ".git")
            nested = [g for g in self.before.gits if g != own]
            if nested:  # a submodule's HEAD and index would be read unrecorded
                return f"{nested[0]} is a git repository inside the repo"
        unseen = self.uncovered()
        if unseen:
            more = f" (and {len(unseen) - 1} more)" if len(unseen) > 1 else ""
            return f"read {unseen[0]}{more}, which no fingerprint covers"
        return None


# Process state, not a run's: a recording records this process's standard streams and
# every file any of its threads opens, so the recorder is one slot (read by the audit hook,
# which runs in every thread, with or without a run's context) that only `recording` sets
# and clears; and an audit hook, once added, stays for the process's life.
_active: Recorder | None = None  # the recording under way, if any
_hooked = False  # `_audit` is installed (at most once per process)


def _allowed(cache_dir: str) -> tuple[str, ...]:
    """Paths a run may read without a fingerprint: they are fingerprinted another way
    (harness's code, the interpreter and its packages: code_files, sys.executable in the
    invocation key; the cache directory, whose entries are content-addressed) or are not
    inputs (devices, this process's own /proc, the temp dirs the run itself makes)."""
    import tempfile  # only when recording; replay's fast path never gets here

    prefixes = {PACKAGE_DIR, cache_dir, sys.prefix, sys.base_prefix, sys.exec_prefix}
    prefixes.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    own = [os.path.join(d, "harness-") for d in (tempfile.gettempdir(), "/dev/shm")]
    devices = ["/dev/null", "/dev/urandom", "/dev/random", "/dev/tty", "/proc/self/"]
    devices.append(f"/proc/{os.getpid()}/")
    found = [p.rstrip(os.sep) + os.sep for p in prefixes if p]
    return tuple(found + own + devices)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """What the run reads, starts and connects to (PEP 578 audit events): a record is kept
    only when every input read is covered by a fingerprint, so an input a module adds
    without one makes the run unrecordable, never a stale replay.

    `sys.addaudithook` cannot be undone, so this hook is installed at most once per process
    (`_install_hook`, by the first recording) and is inert outside a recording: with no
    recorder under way it returns at its first test."""
    recorder = _active
    if recorder is None or recorder.tainted is not None:
        return
    if event == "open":
        path, mode, flags = args
        if isinstance(path, int) or path is None:
            return
        writing = (mode is not None and "r" not in mode and "+" not in mode) or (
            mode is None and flags & (os.O_WRONLY | os.O_RDWR) and flags & os.O_CREAT
        )
        if not writing:
            recorder.read(os.path.abspath(os.fsdecode(path)))
    elif event in ("os.listdir", "os.scandir"):
        path = args[0]
        if not isinstance(path, int):
            found = os.path.abspath(os.fsdecode(path if path is not None else os.curdir))
            if found not in recorder.listable:
                recorder.read(found)
    elif event in ("socket.connect", "socket.getaddrinfo"):
        recorder.tainted = "the run used the network"
    elif event == "subprocess.Popen":
        executable, argv = args[0], args[1]
        program = executable if executable is not None else (argv[0] if argv else "")
        recorder.ran(os.fsdecode(program))
    elif event in ("os.posix_spawn", "os.exec", "os.spawn"):
        recorder.ran(os.fsdecode(args[1] if event == "os.spawn" else args[0]))
    elif event == "os.system":
        recorder.tainted = "the run started a shell"


def _install_hook() -> None:
    """Add `_audit` the first time a recording starts, never again (it cannot be removed)."""
    global _hooked
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True


class recording:  # lower case: used as `with replay.recording(run):`, like a function
    """Run the CLI inside this: its output is captured and, if replayable, recorded.

    The standard streams are swapped for tees for the block only (`contextlib`'s
    `redirect_stdout`/`redirect_stderr`, undone on leaving, on error too): typer, click
    and rich look `sys.stdout` up each time they write, so no stream object handed down
    could catch all they print. One recording at a time: the recorder is process state.
    """

    def __init__(self, run: Plan) -> None:
        self.recorder = Recorder(run)
        self._streams: ExitStack | None = None  # the redirections, while the block runs

    def __enter__(self) -> Recorder:
        global _active
        import contextlib  # only when recording; replay's fast path never gets here

        if _active is not None:
            raise RuntimeError("a recording is already under way in this process")
        _install_hook()
        with contextlib.ExitStack() as stack:  # a failed wrap undoes the other redirection
            stack.enter_context(contextlib.redirect_stdout(_wrap(sys.stdout, 1, self.recorder)))
            stack.enter_context(contextlib.redirect_stderr(_wrap(sys.stderr, 2, self.recorder)))
            self._streams = stack.pop_all()
        _active = self.recorder
        return self.recorder

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        global _active
        if kind is None:
            code = 0
        elif isinstance(exc, SystemExit):
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        else:
            code = -1  # an exception: never recorded
        _active = None
        try:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:  # a closed pipe must not hide the run's own outcome
                    continue
        finally:
            if self._streams is not None:  # the streams as they were, whatever happened
                self._streams.close()
                self._streams = None
        self.recorder.finish(code)


def _wrap(stream: TextIO, fd: int, recorder: Recorder) -> TextIO:
    return io.TextIOWrapper(
        _Tee(stream.buffer, fd, recorder),
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=bool(stream.line_buffering),
        write_through=True,
    )


# -- hooks the run calls; no-ops outside a recording -------------------------------------------


def note_config(cfg: Config) -> None:
    """The config is loaded: its repo and whatever it points to outside it are the roots."""
    if _active is None or _active.roots is not None:
        return
    repo = str(cfg.repo.resolve())
    roots = [repo]
    candidates = [cfg.goldens, cfg.source_file]
    candidates += [cfg.repo / s for s in cfg.sources.values()]
    for decl in cfg.outside_git.values():
        candidates += [cfg.repo / s for s in decl.sources.values() if s is not None]
    for candidate in candidates:
        if candidate is None:
            continue
        path = str(candidate.resolve())
        if path != repo and not path.startswith(repo + os.sep) and path not in roots:
            roots.append(path)
    _active.start(roots)


def note_tool(path: os.PathLike[str] | str) -> None:
    """A binary the run executes (kubectl, kustomize, helm): replaced => run again."""
    if _active is not None:
        found = os.path.abspath(path)
        _active.tools[found] = _stat_line(found)


def note_git(
    repo: os.PathLike[str] | str, root: os.PathLike[str] | str, shas: Mapping[str, str]
) -> None:
    """A diff resolved its refs (`shas`: ref -> commit) in the work tree whose top is `root`.

    What it reads through git is a function of those commits (immutable objects: trees, blob
    ids, file contents), of the working tree (fingerprinted) and of git's own files (the
    index, config, excludes and attributes: `git_files`, by stat line); `.git` itself is never
    walked. So the record keeps git's answer to `git_query` (HEAD included: a commit moves
    it) and those stat lines, and a replay asks git that one question again. The git binary
    becomes a noted tool; git run without this note makes the run unrecordable."""
    if _active is not None and _active.tainted is None:
        _active.note_git(os.fspath(repo), os.fspath(root), dict(shas))


def taint(reason: str) -> None:
    """This run read something no fingerprint covers (a remote chart or resource)."""
    if _active is not None and _active.tainted is None:
        _active.tainted = reason


class paused:  # lower case: used as `with replay.paused():`, like a function
    """Output written inside (a live progress bar on a terminal) is not part of the record."""

    def __init__(self) -> None:
        self.recorder = _active

    def __enter__(self) -> None:
        if self.recorder is not None:
            self.recorder.paused += 1

    def __exit__(self, *exc: object) -> None:
        if self.recorder is not None:
            self.recorder.paused -= 1
