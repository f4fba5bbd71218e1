"""Remembering work across runs: the render cache store and its on-disk file format, and the
whole-run replay of an unchanged `check`/`lint` (with the verbs' options as data).

Imports: core.
"""
