"""Two snapshots -> what changed: per-target differences, field changes, moves, the verdict and the
one counting model.
"""
