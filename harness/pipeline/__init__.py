"""Where a side (a Snapshot) comes from: one render of a tree (`repo.py`: paths, then
Flux, then Helm; `shard.py` for `--shard K/N`), the committed goldens (`goldens.py`), a git
ref checked out (`gitref.py`, every git call) and remembered by its tree (`refsnap.py`).

Imports: core, cache, render, flux.
"""
