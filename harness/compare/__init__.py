"""Two snapshots -> what changed: per-target differences, field changes, moves, whether a
failed target's inputs changed (`inputs.py`), which changed files no target reads
(`coverage.py`), the verdict and the one counting model.

Imports: core, cache, render, flux, pipeline.
"""
