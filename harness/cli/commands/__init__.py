"""One module per CLI verb; each exposes `run(...) -> int` (the exit code)."""
