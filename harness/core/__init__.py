"""What every stage shares: the plain data passed between stages, config, errors, YAML,
documents, parallelism and atomic writes.
"""
