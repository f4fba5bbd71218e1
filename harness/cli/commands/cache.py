"""`harness cache info|clear|prune`: look at and trim the render cache store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from harness.cache import store as cache_mod
from harness.cli import errors, shared
from harness.cli.context import EXIT_ERROR, EXIT_OK
from harness.report.visible import visible

SCHEMA = "harness.cache-info/v1"
MIB = 1024 * 1024

app = typer.Typer(
    name="cache",
    cls=shared.Group,
    help="Inspect and trim the render cache (see docs/cache.md).",
    no_args_is_help=True,
    add_completion=False,
)
CacheDirOnlyOpt = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        file_okay=False,
        metavar="DIR",
        help="Cache directory (default as for check).",
    ),
]


@app.command("info", cls=shared.Command)
def cache_info(
    cache_dir: CacheDirOnlyOpt = None, output: shared.OutputOpt = shared.Output.text
) -> None:
    """Where the cache is, how many entries, how big, and its size cap."""
    errors.run(lambda: info(cache_dir, output.value))


@app.command("clear", cls=shared.Command)
def cache_clear(cache_dir: CacheDirOnlyOpt = None) -> None:
    """Delete every cache entry."""
    errors.run(lambda: clear(cache_dir))


@app.command("prune", cls=shared.Command)
def cache_prune(
    cache_dir: CacheDirOnlyOpt = None,
    max_size: Annotated[
        float | None,
        typer.Option(
            "--max-size",
            min=0,
            metavar="MIB",
            help="Keep at most this many MiB, least recently used go first "
            "(default: $HARNESS_CACHE_MAX_MB, else 1024).",
        ),
    ] = None,
) -> None:
    """Delete least recently used entries until the cache fits its size cap."""
    errors.run(lambda: prune(cache_dir, max_size))


def _store(directory: Path | None) -> cache_mod.Store:
    return cache_mod.Store(directory or cache_mod.default_dir())


def _size(n: int) -> str:
    return f"{n / MIB:.1f} MiB" if n >= MIB // 10 else f"{n / 1024:.1f} KiB"


def info(directory: Path | None, output: str = "text") -> int:
    found = _store(directory).info()
    if output == "json":
        doc = {
            "schema": SCHEMA,
            "directory": str(found.directory),
            "entries": found.entries,
            "bytes": found.bytes,
            "max_bytes": found.max_bytes,
            "oldest": found.oldest,
            "newest": found.newest,
        }
        typer.echo(json.dumps(doc, indent=2))
        return EXIT_OK
    typer.echo(f"cache: {found.directory}")
    typer.echo(f"entries: {found.entries}")
    typer.echo(f"size: {_size(found.bytes)} of {_size(found.max_bytes)} cap")
    return EXIT_OK


def clear(directory: Path | None) -> int:
    store = _store(directory)
    done = store.clear()
    typer.echo(f"removed {done.removed} entries ({_size(done.freed)}) from {store.directory}")
    return _refused(done)


def _refused(done: cache_mod.Pruned) -> int:
    """A cache the OS would not let us empty (read-only) is an error, not a success."""
    if not done.failed:
        return EXIT_OK
    typer.echo(
        f"error: could not remove {done.failed} entries: {visible(done.error or '')}", err=True
    )
    return EXIT_ERROR


def prune(directory: Path | None, max_mib: float | None) -> int:
    store = _store(directory)
    cap = None if max_mib is None else int(max_mib * MIB)
    done = store.prune(cap)
    typer.echo(
        f"removed {done.removed} entries ({_size(done.freed)}); "
        f"{done.remaining} left ({_size(done.remaining_bytes)}) in {store.directory}"
    )
    return _refused(done)
