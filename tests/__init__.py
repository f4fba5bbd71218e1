"""The test suite (a package, so test modules import each other's helpers as `tests.x`).

Imported before any test module or conftest: pytest rewrites every test module's asserts on
import, and caches the result as bytecode. Where PYTHONDONTWRITEBYTECODE (or -B) forbids
bytecode, as some sandboxes set, that cache is never written and every collection rewrites
all 140 modules again: more than half its time. The run then keeps its bytecode under
.pytest_cache/pycache instead (git ignores it), so the tree itself still gets none.
"""

import sys
from pathlib import Path

if sys.dont_write_bytecode and sys.pycache_prefix is None:
    sys.pycache_prefix = str(Path(__file__).resolve().parent.parent / ".pytest_cache" / "pycache")
    sys.dont_write_bytecode = False
