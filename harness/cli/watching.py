"""The resident loop behind `harness watch`: render once, then answer every save.

The base side (a git ref, or the goldens) is rendered once and held. The head is the
working tree: each save re-renders it through a render cache that lives as long as the
process, with a `Resident` seam (render/seam.py) that keeps each closure walk and blob id
and is told which files changed, and the dependency index (pipeline/worktree.py) in memory,
so only the targets whose input closure holds a changed file are built or looked up again;
everything else is answered from memory. The comparison,
hazards and verdict are those of `diff` (`diff.conclude`), so the answer is the one a fresh
`harness diff` would print, with the same exit semantics.

A save that creates, deletes or renames a file (or changes harness.yaml, an ignore file or
the goldens a `--goldens` base reads) may change which targets exist: such a change starts
from a fresh seam (the render cache still answers every unchanged build). Editors' swap and
backup files are ignored.

Files are watched with `watchfiles` (inotify, or the platform's native API) when it is
installed, else by polling the tree's stats every `POLL_SECONDS`. With file events, the
tree's directory listings and file stats are held between answers (core/filefacts.py
`Held`), each event dropping what it names; watchfiles drops an inotify overflow silently,
so an `Audit` compares the tree's own stats with its last look every `AUDIT_SECONDS` and
answers again for any change no event explained (polling holds nothing). An answer is
printed in the run that computed it (the report reads its memos), and the cache entries it
wrote are encoded and written after it is shown (cache/store.py `hold`), before the next
wait. watchfiles yields a batch once a `step` (20 ms) passes with no new event, so a save
is seen 20-40 ms after it lands; `debounce` only bounds a stream of events that never
pauses. An editor's save (a temp file renamed over the file, or a backup renamed away
first) usually lands within one step; a save split over two batches is answered twice, the
second time as the finished save. Ctrl-C ends the loop; nothing is left behind (the base
checkout is removed as soon as the base is rendered, each render's Flux workspace when that
render ends).
"""

from __future__ import annotations

import contextlib
import os
import queue
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.cache import store as cache_mod
from harness.cli.commands import diff as diff_cmd
from harness.cli.context import (
    Common,
    cache_settings,
    load_config,
    render_snapshot,
    renderer_for,
)
from harness.compare import inputs
from harness.compare.analyze import Origin, ignore_patterns
from harness.core import parallel
from harness.core.config import Config
from harness.core.errors import HarnessError
from harness.core.filefacts import FileFacts, Held
from harness.core.model import Snapshot
from harness.core.run import Run, current
from harness.flux.source.ignore import IGNORE_FILE
from harness.hazards import engine as hazard_engine
from harness.pipeline import gitref, worktree
from harness.render import discover
from harness.render.kustomize import Renderer
from harness.render.seam import Resident

POLL_SECONDS = 0.2
# editors' temporary files: their appearance says nothing about the repo
_EDITOR_SUFFIXES = (".swp", ".swx", ".swo", "~", ".tmp", ".bak", ".orig")
_CONFIG_NAMES = ("harness.yaml", "harness.yml", ".harness.yaml")


@dataclass(frozen=True)
class Answer:
    """One answer: the diff, how long it took, and whether any output changed."""

    run: diff_cmd.DiffRun
    seconds: float
    output_changed: bool
    rendered: str  # how many kustomize runs the answer took


class Watcher:
    """The base held, the head answered again for each batch of changed files."""

    def __init__(self, common: Common, options: diff_cmd.DiffOptions) -> None:
        self.common = common
        self.options = options
        self.cfg = load_config(common)
        ignore_patterns(self.cfg)  # a bad pattern fails before anything renders
        self.cache = cache_mod.open_cache(cache_settings(common))
        self.renderer = renderer_for(common, self.cfg)
        self.base, self.base_origin, self.base_digests = self._base()
        self.resident = Resident()
        self.index = worktree.Keeper()  # the tree's dependency index, kept in memory
        # the tree's listings and stats between answers, told what changed (`answer`), in
        # file facts of the watcher's own: no other run of the process sees what it holds
        self.held: Held | None = Held(str(self.cfg.repo))
        self.facts = FileFacts()
        self.facts.held = self.held
        # its memos, kept between answers of one tree; new on a fresh start (the command's
        # run keeps the Secret values every answer's scrub needs)
        self.run = Run(files=self.facts, parent=current())
        self.files = _tree_files(self.cfg)
        self.previous: dict[str, tuple[str, str | None]] | None = None
        self.base_memo: hazard_engine.BaseMemo = {}  # the base's lint findings, kept

    def _base(self) -> tuple[Snapshot, Origin, dict[str, str]]:
        """The base side, rendered once (from a remembered render when there is one)."""
        if self.options.goldens:
            from harness.pipeline import goldens

            cfg = self.cfg
            snapshot = goldens.to_snapshot(goldens.load(cfg.goldens), cfg.repo)
            return (
                snapshot,
                Origin("goldens", f"goldens ({cfg.goldens})", path=str(cfg.goldens)),
                {},
            )
        ref = self.options.base or diff_cmd.DEFAULT_BASE
        resolved = gitref.resolve_refs(self.cfg.repo, [ref])
        return diff_cmd.ref_side(self.common, self.cfg, self.renderer, ref, self.cache, resolved)

    def classify(self, changed: Iterable[str]) -> tuple[list[str], bool]:
        """(files modified in place, whether the set of files or the settings changed)."""
        modified: list[str] = []
        structural = False
        for path in changed:
            if _ignored(path, self.cfg):
                continue
            name = os.path.basename(path)
            exists, known = os.path.isfile(path), path in self.files
            if exists:
                self.files.add(path)
            else:
                self.files.discard(path)
            if name in _CONFIG_NAMES or name == IGNORE_FILE:
                structural = True
            elif exists and known:
                modified.append(path)
            elif exists or known or os.path.isdir(path):
                structural = True  # a file came or went, or a directory did
            else:
                inside = path.rstrip("/") + "/"
                gone = [f for f in self.files if f.startswith(inside)]
                structural = structural or bool(gone)
                self.files.difference_update(gone)
        return modified, structural

    def answer(self, changed: Iterable[str] | None = None) -> Answer:
        """The diff now; `changed` are the absolute paths that changed since the last answer
        (None: anything may have changed)."""
        started = time.monotonic()
        if self.cache is not None and self.cache.store is not None:
            self.cache.store.hold()  # written by `settle`, after the answer is shown
        if changed is not None:
            changed = list(changed)
        if self.held is not None:
            if changed is None:
                self.held.clear()
            else:
                self.held.drop(changed)
        fresh = changed is None
        if changed is not None:
            modified, fresh = self.classify(changed)
            with self.run.entered():  # the base is read again in the run so far
                if fresh:
                    self._restart_if_config_changed(changed)
                else:
                    self.resident.forget(modified)
                if self.options.goldens and any(
                    Path(p).is_relative_to(self.cfg.goldens) for p in changed
                ):
                    self.base, self.base_origin, self.base_digests = self._base()
        if fresh:
            # Every memo is keyed by content (a document's text, a shared object), so
            # answers of one tree keep their run; a fresh start is a new run, as a command is.
            self.run = Run(files=self.facts, parent=self.run)
            self.resident = Resident()
        with self.run.entered():
            return self._head(started)

    def unheld(self) -> None:
        """Hold nothing between answers (polling: it sees files, not directories)."""
        self.held = self.facts.held = None

    def forget(self, paths: Iterable[str]) -> None:
        """Paths a file event named, answered or not: the held listings and stats drop
        them (a swap file is in its directory's listing too)."""
        if self.held is not None:
            self.held.drop(paths)

    def missed(self) -> None:
        """A change came without an event (`Audit`): nothing held is trusted."""
        if self.held is not None:
            self.held.clear()

    def show(self, answer: Answer, show: Callable[[Answer], None]) -> None:
        """Print `answer` in the run that answered it (the report reads the memos the
        comparison filled: the Flux graphs, the documents' parses), then `settle`."""
        try:
            with self.run.entered():
                show(answer)
        finally:
            self.settle()

    def settle(self) -> None:
        """After an answer is shown, before the next wait: write the cache entries it held
        back (the dependency index, the file facts, the findings: cache/store.py `hold`)."""
        if self.cache is not None and self.cache.store is not None:
            with self.run.entered():
                self.cache.store.flush()

    def _head(self, started: float) -> Answer:
        """The head rendered and compared with the base, in the watcher's run."""
        renderer = self._renderer()
        cfg = self.cfg
        origin = Origin("worktree", "working tree", path=str(cfg.repo))
        head = render_snapshot(
            self.common,
            cfg,
            renderer,
            label=origin.label,
            cache=self.cache,
            resident=self.resident,
            run=self.run,
            index=self.index,
        )
        digests = inputs.side_digests(cfg.repo, head)
        same = inputs.same_inputs(self.base_digests, digests)
        run = diff_cmd.conclude(
            cfg,
            self.options,
            self.base,
            head,
            self.base_origin,
            origin,
            started,
            same,
            base_memo=self.base_memo,
            memo=hazard_engine.FindingsMemo(self.cache) if self.cache is not None else None,
        )
        now = {n: (r.sha256, r.error) for n, r in head.results.items()}
        changed_output = self.previous is None or now != self.previous
        self.previous = now
        rendered = f"{renderer.runs} kustomize run(s)"
        return Answer(run, time.monotonic() - started, changed_output, rendered)

    def _renderer(self) -> Renderer:
        """A fresh renderer per answer (its build memo is per render); the version asked
        once."""
        renderer = renderer_for(self.common, self.cfg)
        with contextlib.suppress(HarnessError):
            renderer.assume_version(self.renderer.info().version)
        return renderer

    def _restart_if_config_changed(self, changed: Iterable[str]) -> None:
        names = {os.path.basename(p) for p in changed}
        if names & set(_CONFIG_NAMES):
            self.cfg = load_config(self.common)
            self.base, self.base_origin, self.base_digests = self._base()


def _ignored(path: str, cfg: Config) -> bool:
    """Editor files, anything under a dot directory (`.git`), and the goldens (unless the
    base is the goldens: the caller reloads them)."""
    name = os.path.basename(path)
    if name.endswith(_EDITOR_SUFFIXES) or name.startswith(".#") or name == "4913":
        return True
    try:
        rel = Path(path).relative_to(cfg.repo)
    except ValueError:
        return False
    if any(part.startswith(".") for part in rel.parts[:-1]):
        return True
    return Path(path).is_relative_to(cfg.goldens)


def _tree_files(cfg: Config) -> set[str]:
    """Every file of the tree the renders may read (dot directories and goldens left out)."""
    out: set[str] = set()
    for dirpath, _dirs, files in discover.walk(cfg.repo, [cfg.goldens]):
        out.update(os.path.join(dirpath, f) for f in files)
    return out


# -- waiting for changes ------------------------------------------------------------------------


Batch = tuple[set[str], set[str]]  # (every changed path, those a save is answered for)


def changes(
    repo: Path, stop: threading.Event, ready: threading.Event, poll: bool = False
) -> Iterator[Batch]:
    """Batches of changed absolute paths under `repo`, until `stop` is set; `ready` is set
    once changes are being seen. Each batch has every path the watcher reported (what the
    held listings and stats forget) and those watchfiles' default filter keeps (what is
    answered: not editor swap files, `.git`, `__pycache__` and the like)."""
    if not poll:
        try:
            import watchfiles
        except ImportError:
            poll = True
        else:
            keep = watchfiles.DefaultFilter()
            batches = watchfiles.watch(
                repo,
                watch_filter=None,  # every event: a held listing holds swap files too
                stop_event=stop,
                debounce=50,
                step=20,
                rust_timeout=200,
                yield_on_timeout=True,  # the first (empty) batch says the watch is set up
            )
            for batch in batches:
                ready.set()
                if batch:
                    every = {path for _change, path in batch}
                    yield every, {path for change, path in batch if keep(change, path)}
            return
    for polled in _polled(repo, stop, ready):
        yield polled, polled


def _polled(repo: Path, stop: threading.Event, ready: threading.Event) -> Iterator[set[str]]:
    """Changes found by comparing the tree's stats every POLL_SECONDS."""
    before = _stats(repo)
    ready.set()
    while not stop.wait(POLL_SECONDS):
        now = _stats(repo)
        if now != before:
            changed = {p for p in before.keys() | now.keys() if before.get(p) != now.get(p)}
            before = now
            yield changed


def _stats(repo: Path) -> dict[str, tuple[int, int, int]]:
    out: dict[str, tuple[int, int, int]] = {}
    for dirpath, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            path = os.path.join(dirpath, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            out[path] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return out


AUDIT_SECONDS = 2.0
AUDIT_GRACE_NS = 1_000_000_000


class Audit:
    """The tree's own stats every `AUDIT_SECONDS`, against the last look: a change no file
    event reported (an inotify queue overflow, which watchfiles drops silently; a network
    filesystem; a hard link edited under its other name) is answered within seconds, and
    the held listings and stats are dropped whole (core/filefacts.py `Held`).

    A change is explained by an event received after the last look saw the path, for the
    path, a directory above it (a directory renamed) or below it (a directory's own stat
    moves when an entry is added). A change younger than `AUDIT_GRACE_NS` is judged at the
    next look (its event may be on its way)."""

    def __init__(self, repo: Path, grace_ns: int = AUDIT_GRACE_NS) -> None:
        self.root = str(repo)
        self.grace_ns = grace_ns
        self.base: dict[str, tuple[_Lstat, float]] = {}
        self.taken = 0.0
        self.events: dict[str, float] = {}
        self.lock = threading.Lock()

    def reported(self, paths: Iterable[str]) -> None:
        """Paths a file event named (called from the thread that receives them)."""
        now = time.monotonic()
        with self.lock:
            for path in paths:
                self.events[path.rstrip("/")] = now

    def start(self) -> None:
        self.taken = time.monotonic()
        self.base = {p: (s, self.taken) for p, s in _lstats(self.root).items()}

    def due(self) -> bool:
        return time.monotonic() - self.taken >= AUDIT_SECONDS

    def check(self) -> set[str]:
        """The paths changed since the last look that no event explains."""
        taken = time.monotonic()
        now = _lstats(self.root)
        young = time.time_ns() - self.grace_ns
        with self.lock:
            self.events = {p: t for p, t in self.events.items() if taken - t < 600}
            events = dict(self.events)
        missed: set[str] = set()
        base: dict[str, tuple[_Lstat, float]] = {}
        for path in self.base.keys() | now.keys():
            before, st = self.base.get(path), now.get(path)
            if before is not None and before[0] == st:
                base[path] = before
                continue
            parent = now.get(os.path.dirname(path))
            moved = st if st is not None else parent
            if moved is not None and max(moved[2], moved[3]) >= young:
                if before is not None:
                    base[path] = before  # judged at the next look
                continue
            since = before[1] if before is not None else self.taken
            if not _explained(path, events, since, self.root):
                missed.add(path)
            if st is not None:
                base[path] = (st, taken)
        self.base, self.taken = base, taken
        return missed


_Lstat = tuple[int, int, int, int, int]  # mode, size, mtime_ns, ctime_ns, inode


def _explained(path: str, events: dict[str, float], since: float, root: str) -> bool:
    probe = path
    while True:
        if events.get(probe, -1.0) >= since:
            return True
        if probe == root or len(probe) <= len(root):
            break
        probe = os.path.dirname(probe)
    inside = path + "/"
    return any(t >= since and p.startswith(inside) for p, t in events.items())


def _lstats(root: str) -> dict[str, _Lstat]:
    """Every entry under `root` but `.git`, by its own stat (a symlink not followed), as
    the disk has it now: listed by file facts that hold nothing."""
    disk = FileFacts()
    out: dict[str, _Lstat] = {}
    stack = [root]
    while stack:
        directory = stack.pop()
        for name, st, _is_dir, _is_file in disk.listing(directory) or ():
            if name == ".git" or st is None:
                continue
            path = os.path.join(directory, name)
            out[path] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            if stat.S_ISDIR(st.st_mode):
                stack.append(path)
    return out


def loop(
    watcher: Watcher,
    show: Callable[[Answer], None],
    *,
    poll: bool = False,
    stop: threading.Event | None = None,
) -> int:
    """Answer once, then after every batch of changes until Ctrl-C (or `stop`); the last
    answer's exit code. Changes are collected in a thread from before the first answer on,
    so a save made while an answer renders is answered next, never lost. With file events
    the tree's listings and stats are held between answers, and `Audit` looks for changes
    no event reported; polling holds nothing (it sees files only, not directories)."""
    stop = stop or threading.Event()
    ready = threading.Event()
    pending: queue.Queue[Batch] = queue.Queue()
    if poll:
        watcher.unheld()
    audit = Audit(watcher.cfg.repo) if watcher.held is not None else None

    def collect() -> None:
        for batch in changes(watcher.cfg.repo, stop, ready, poll):
            if audit is not None:
                audit.reported(batch[0])
            pending.put(batch)

    thread = parallel.thread(collect, name="harness-watch", daemon=True)
    thread.start()
    answer: Answer | None = None
    try:
        while not ready.wait(0.1):
            if not thread.is_alive():
                raise HarnessError("watch: cannot watch the tree for changes")
        if audit is not None:
            audit.start()  # the first look, before the first answer lists anything
        answer = watcher.answer()
        watcher.show(answer, show)
        while not stop.is_set():
            try:
                every, shown = pending.get(timeout=0.2)
            except queue.Empty:
                missed = audit.check() if audit is not None and audit.due() else set()
                if not missed:
                    continue
                from harness.report.console import stderr

                stderr().print(
                    f"watch: {len(missed)} change(s) came without a file event; answering again"
                )
                watcher.missed()
                every, shown = missed, set(missed)
            while not pending.empty():  # everything saved meanwhile, in one answer
                more = pending.get_nowait()
                every |= more[0]
                shown |= more[1]
            watcher.forget(every)
            if not shown:
                continue  # only files no save is answered for (swap files, .git)
            try:
                answer = watcher.answer(shown)
            except HarnessError as exc:  # a broken config mid-edit: say so, keep watching
                from harness.report.console import escape, stderr

                watcher.settle()
                stderr().print(f"error: {escape(str(exc))}")
                continue
            watcher.show(answer, show)
    except KeyboardInterrupt:
        if answer is None:
            raise
    finally:
        stop.set()
        watcher.settle()  # an answer interrupted (Ctrl-C) keeps what it already wrote
        thread.join(timeout=5)
    return answer.run.code if answer is not None else 2
