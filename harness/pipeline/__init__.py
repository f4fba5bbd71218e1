"""Where a side (a Snapshot) comes from: one render of a tree (`repo.py`: paths, then
Flux, then Helm; `shard.py` for `--shard K/N`), the committed goldens (`goldens.py`), a git
ref checked out (`gitref.py`, every git call) and remembered by its tree (`refsnap.py`);
the working tree's last render and what its builds read (`worktree.py`, the dependency
index).

Imports: core, cache, render, flux.
"""
