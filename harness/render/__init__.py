"""Running kustomize: the repo's kustomization directories (`discover.py`), the one place
that starts kustomize (`kustomize.py`), what its errors mean (`errors.py`), every file a build
may read (`closure.py`) and the render seam every build passes (`seam.py`: confine, digest,
answer from the cache or render).

Imports: core, cache.
"""
