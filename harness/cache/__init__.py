"""Remembering work: the render cache store and its file format, the render seam (closure and input
digests), whole-run replay, per-run memos.
"""
