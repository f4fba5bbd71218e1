"""HelmRelease expansion: every HelmRelease of a cluster's Flux output as a `helm` target.

Data flows one way, one concern per module: release.py (the HelmRelease spec, names as
helm-controller derives them) -> sources.py (which chart: a directory, an HTTP repository,
an OCI reference) -> cache.py (charts on disk, `--offline`) -> values.py (values +
valuesFrom) -> engine.py (the in-process SDK or a `helm` binary) -> postrender.py (Flux's
post-renderers) -> targets.py (documents of a `helm` target).
"""
