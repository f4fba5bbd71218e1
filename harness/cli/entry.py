"""The `harness` console script: replay an unchanged run, else import and run the CLI.

Kept apart from app.py so that a replayed `check`, `lint` or `diff` imports no more than
replay.py needs, and flags.py: the options of the verbs it replays, as plain data (no typer).
A closed stdout ends any verb here quietly with exit 141 (cli/pipe.py).
"""

from __future__ import annotations

import gc
import sys

from harness.cli import pipe

# The collector's young generation holds 10k new containers, not 700, before a pass. A
# render parses and keeps millions of dicts and lists and makes almost no cycles: at the
# default a cold render of a 250-Kustomization repo ran ~500 passes (4 over the whole
# heap) for ~700 objects found, a tenth of harness's own CPU; now ~20.
GC_THRESHOLD = (10_000, 20, 20)


def main() -> None:
    try:
        _main()
    except BrokenPipeError:
        if not pipe.stdout_closed():
            raise
        raise SystemExit(pipe.closed_stdout()) from None


def _main() -> None:
    from harness.cache import replay
    from harness.cli import flags

    run = replay.plan(sys.argv[1:], flags.REPLAYED)
    if run is not None:
        code = replay.replay(run)
        if code is not None:
            raise SystemExit(code)
    gc.set_threshold(*GC_THRESHOLD)  # not for a replayed run: it allocates little
    from harness.cli.app import main as cli_main

    if run is None:
        cli_main()
        return
    with replay.recording(run):
        cli_main()
