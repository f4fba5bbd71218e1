"""Hazard analysis: what applying a render (or a change between two renders) does to a cluster.

One module per rule; `engine.py` runs them, applies the config's suppressions and sorts.

Imports: core, cache, render, flux, pipeline, compare.
"""
