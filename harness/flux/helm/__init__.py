"""HelmRelease expansion: every HelmRelease of a cluster's Flux output as a `helm` target.

Data flows one way, one concern per module: release.py (the HelmRelease spec, names as
helm-controller derives them) -> ../source/charts.py (which chart: a directory, an HTTP
repository, an OCI reference) -> ../source/fetch.py + chartcache.py (charts on disk,
`--offline`) -> values.py (values +
valuesFrom) -> engine.py (the in-process SDK or a `helm` binary; sdk.py is the only module
importing the optional wheel, native.py binds its library's render call) -> postrender.py
(Flux's post-renderers) -> targets.py (documents of a `helm` target), through cached.py (a
release's render in the render cache, keyed by everything it reads); stage.py is the
pipeline's entry point.
"""
