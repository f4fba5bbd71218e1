"""The golden store: one reviewable YAML file per target plus `index.json`, written atomically.

Protocol: target files are replaced one by one (temp file + rename), then `index.json`
(the commit point), then stale files are removed. Each index entry records the sha256 of
its file, so a set left half-written by a crash is reported as inconsistent by `check`,
never accepted as matching.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core import atomic, confine, documents, limits, safefile
from harness.core.errors import GoldensError
from harness.core.model import DocId, Document, RendererInfo, Snapshot, Target, TargetResult

SCHEMA = "harness.goldens/v1"
INDEX = "index.json"
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class GoldenEntry:
    name: str
    kind: str
    cluster: str | None
    file: str
    documents: int
    sha256: str
    docs: tuple[dict[str, str], ...]


@dataclass(frozen=True)
class GoldenSet:
    directory: Path
    renderer: RendererInfo | None
    entries: dict[str, GoldenEntry]


@dataclass(frozen=True)
class WriteReport:
    written: tuple[str, ...]
    unchanged: tuple[str, ...]
    deleted: tuple[str, ...]
    kept: tuple[str, ...]


def _segment(part: str) -> str:
    if part in ("", ".", ".."):
        return "%" + "".join(f"{ord(c):02X}" for c in part) if part else "_root"
    return _SAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), part)


def file_names(targets: Iterable[tuple[str, str]]) -> dict[str, str]:
    """(name, kind) -> relative file path; injective, and unique even on case-folding disks."""
    out: dict[str, str] = {}
    folded: dict[str, str] = {}
    for name, kind in sorted(targets):
        rel = "/".join([kind, *(_segment(p) for p in name.split("/"))]) + ".yaml"
        if rel.lower() in folded:
            digest = hashlib.sha256(name.encode()).hexdigest()[:8]
            rel = rel[: -len(".yaml")] + f"~{digest}.yaml"
        folded[rel.lower()] = name
        out[name] = rel
    return out


def doc_fields(doc: Document) -> dict[str, str]:
    return {
        "id": str(doc.id),
        "apiVersion": doc.api_version,
        "kind": doc.id.kind,
        "namespace": doc.id.namespace,
        "name": doc.id.name,
        "sha256": doc.sha256,
    }


def index_bytes(renderer: RendererInfo, entries: Mapping[str, GoldenEntry]) -> bytes:
    payload = {
        "schema": SCHEMA,
        "renderer": {"name": renderer.name, "version": renderer.version},
        "targets": {
            name: {
                "kind": e.kind,
                "cluster": e.cluster,
                "file": e.file,
                "documents": e.documents,
                "sha256": e.sha256,
                "docs": list(e.docs),
            }
            for name, e in sorted(entries.items())
        },
    }
    return (json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def golden_text(result: TargetResult) -> str:
    return result.text()


def write(
    directory: Path, snapshot: Snapshot, on_wait: Callable[[], None] | None = None
) -> WriteReport:
    """Write goldens for every rendered target; failed targets keep their previous golden.

    One writer at a time (`locked`): two updates of one tree run one after the other, the
    second reading the first one's index, never removing its temp files."""
    with locked(directory, on_wait):
        return _write(directory, snapshot)


def _write(directory: Path, snapshot: Snapshot) -> WriteReport:
    root = directory.resolve()
    previous = load(directory) if (directory / INDEX).exists() else None
    old = previous.entries if previous else {}
    names = file_names((r.name, r.target.kind) for r in snapshot.results.values())
    entries: dict[str, GoldenEntry] = {}
    written, unchanged, kept = [], [], []
    for name, result in sorted(snapshot.results.items()):
        if not result.ok:
            if name in old:
                entries[name] = old[name]
                kept.append(name)
            continue
        entry = GoldenEntry(
            name=name,
            kind=result.target.kind,
            cluster=result.target.cluster,
            file=names[name],
            documents=len(result.documents),
            sha256=result.sha256,
            docs=tuple(doc_fields(d) for d in result.documents),
        )
        entries[name] = entry
        path = directory / entry.file
        confine.inside(path.parent, root)  # a symlinked directory planted among the goldens
        text = golden_text(result).encode()
        if (
            old.get(name) == entry
            and path.is_file()
            and safefile.read_bytes(path, cap=_golden_cap()) == text
        ):
            unchanged.append(name)
            continue
        atomic.write(path, text, durable=True)
        written.append(name)
    atomic.write(directory / INDEX, index_bytes(snapshot.renderer, entries), durable=True)
    deleted = sorted(set(old) - set(entries))
    _remove_unreferenced(directory, {e.file for e in entries.values()})
    return WriteReport(tuple(written), tuple(unchanged), tuple(deleted), tuple(kept))


def _remove_unreferenced(directory: Path, keep: set[str]) -> None:
    """Delete golden files no index entry names (every target kind's directory, helm's
    too), and temp files a killed writer left; a live writer's temp file stays."""
    for sub in ("path", "flux", "helm"):
        root = directory / sub
        if not root.is_dir() or not root.resolve().is_relative_to(directory.resolve()):
            continue  # a symlink out of the goldens: nothing there is ours to delete
        for path in sorted(root.rglob("*"), reverse=True):
            rel = path.relative_to(directory).as_posix()
            if path.name.endswith(atomic.TMP_SUFFIX):
                if atomic.abandoned(path.name):
                    path.unlink(missing_ok=True)
            elif path.is_file() and rel not in keep:
                path.unlink(missing_ok=True)
            elif path.is_dir() and not any(path.iterdir()):
                with contextlib.suppress(OSError):  # a concurrent writer filled it again
                    path.rmdir()
        with contextlib.suppress(OSError):
            if not any(root.iterdir()):
                root.rmdir()


@contextlib.contextmanager
def locked(directory: Path, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the goldens directory for one writer at a time (an flock on the directory
    itself: no lock file lands among the goldens). `on_wait` runs once if another run
    holds it, before waiting."""
    not_a_file(directory)
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _golden_cap() -> int:
    """A golden file holds one render: capped as renderer output is, not as a repo file."""
    return limits.current().output_bytes


def not_a_file(directory: Path) -> None:
    """A goldens path that exists as something else than a directory is a GoldensError
    (exit 2, one line): not "no goldens", and not a crash when `update` makes it."""
    try:
        mode = os.stat(directory).st_mode
    except OSError:
        return  # absent (made by update) or unreachable: said where it is used
    if not stat.S_ISDIR(mode):
        raise GoldensError(f"goldens {directory}: not a directory (goldens: in harness.yaml)")


def load(directory: Path) -> GoldenSet:
    """Read the index; a missing one is an empty set, an unreadable one a GoldensError."""
    not_a_file(directory)
    index = directory / INDEX
    if not index.exists():
        return GoldenSet(directory, None, {})
    try:
        raw = json.loads(safefile.read_text(index))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise GoldensError(f"{index}: unreadable golden index: {exc}") from None
    try:
        if raw.get("schema") != SCHEMA:
            raise GoldensError(f"{index}: unknown schema {raw.get('schema')!r}, want {SCHEMA}")
        renderer = RendererInfo(raw["renderer"]["name"], raw["renderer"]["version"])
        entries = {
            name: GoldenEntry(
                name=name,
                kind=str(e["kind"]),
                cluster=e.get("cluster"),
                file=str(e["file"]),
                documents=int(e["documents"]),
                sha256=str(e["sha256"]),
                docs=tuple(dict(d) for d in e["docs"]),
            )
            for name, e in raw["targets"].items()
        }
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise GoldensError(f"{index}: malformed golden index ({exc!r})") from None
    for entry in entries.values():
        if ".." in Path(entry.file).parts or Path(entry.file).is_absolute():
            raise GoldensError(f"{index}: target {entry.name}: unsafe file {entry.file!r}")
    return GoldenSet(directory, renderer, entries)


class GoldenMismatch(Exception):
    """A golden file that is missing or does not hash to what index.json says."""


def read_verified(golden: GoldenSet, entry: GoldenEntry) -> str:
    """The entry's file, only if it holds exactly what the index says."""
    path = golden.directory / entry.file
    try:
        data = safefile.read_bytes(path, cap=_golden_cap())
    except OSError:
        raise GoldenMismatch(
            f"golden file {entry.file} is missing (interrupted update? run harness update)"
        ) from None
    if hashlib.sha256(data).hexdigest() != entry.sha256:
        raise GoldenMismatch(
            f"golden file {entry.file} does not match index.json "
            "(edited by hand or interrupted update? run harness update)"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise GoldenMismatch(f"golden file {entry.file} is not UTF-8") from None


def _indexed_documents(entry: GoldenEntry, text: str) -> list[Document] | None:
    """Documents from the index's ids and the file's chunks, skipping a YAML parse.

    None when the chunks do not line up with the index (then the file is parsed instead).
    """
    chunks = documents.split_stream(text)
    if len(chunks) != len(entry.docs):
        return None
    out = []
    for chunk, meta in zip(chunks, entry.docs, strict=True):
        sha = documents.sha256_text(chunk)
        try:
            if sha != meta["sha256"]:
                return None
            api_version = meta["apiVersion"]
            doc_id = DocId(
                api_version.rpartition("/")[0], meta["kind"], meta["namespace"], meta["name"]
            )
        except (KeyError, AttributeError):
            return None
        out.append(Document(doc_id, api_version, chunk, sha))
    return out


def to_snapshot(golden: GoldenSet, repo: Path) -> Snapshot:
    """Goldens as a snapshot, for `check` and `diff --goldens`; a bad file fails its target."""
    results: dict[str, TargetResult] = {}
    for name, entry in golden.entries.items():
        target = Target(name=name, kind=_kind(entry.kind), path=repo / name, cluster=entry.cluster)
        try:
            text = read_verified(golden, entry)
        except GoldenMismatch as exc:
            results[name] = TargetResult(target, error=str(exc))
            continue
        docs = _indexed_documents(entry, text)
        if docs is None:
            try:
                docs = documents.parse_stream(text)
            except documents.DocumentError as exc:
                results[name] = TargetResult(target, error=f"golden file {entry.file}: {exc}")
                continue
        results[name] = TargetResult(
            target, tuple(docs), entry.sha256, duplicates=documents.duplicates(docs)
        )
    renderer = golden.renderer or RendererInfo("goldens", "unknown")
    return Snapshot(renderer=renderer, results=results, label="goldens")


def _kind(kind: str) -> Any:
    return kind if kind in ("path", "flux", "helm") else "path"
