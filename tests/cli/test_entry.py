"""entry: the console script's process settings."""

from __future__ import annotations

import gc
import subprocess
import sys

from harness.cli import entry


def test_the_cli_collects_garbage_less_often_than_the_default() -> None:
    """A render keeps millions of new containers and makes few cycles: the young generation
    holds GC_THRESHOLD[0] of them before a pass (the default is 700)."""
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: sys.stderr.write(f'THRESHOLD {gc.get_threshold()}\\n'))\n"
        "sys.argv = ['harness', '--help']\n"
        "from harness.cli.entry import main\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert f"THRESHOLD {entry.GC_THRESHOLD}" in proc.stderr
    assert entry.GC_THRESHOLD[0] >= 10 * 700 and gc.get_threshold()[0] < entry.GC_THRESHOLD[0]
