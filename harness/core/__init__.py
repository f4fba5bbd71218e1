"""What every stage shares: the plain data passed between stages (`model.py`), config
(`config.py`, `outside.py` for the `outside_git:` section), errors, YAML, documents and
redaction, safe process and thread primitives, safe file reads and the run's bounds
(`safefile.py`, `limits.py`), atomic writes and where they may go (`confine.py`), one
run's state (`run.py`) and the memos whose data it holds (`memo.py`, `parsed.py`;
`filefacts.py`, kept across runs).

Imports: nothing of harness (the bottom layer).
"""
