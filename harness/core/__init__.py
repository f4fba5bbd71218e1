"""What every stage shares: the plain data passed between stages (`model.py`), config
(`config.py`, `outside.py` for the `outside_git:` section), errors, YAML, documents and
redaction, safe process and thread primitives, safe file reads and the run's bounds
(`safefile.py`, `limits.py`), atomic writes and per-run memos (`memo.py`,
`parsed.py`).

Imports: nothing of harness (the bottom layer).
"""
