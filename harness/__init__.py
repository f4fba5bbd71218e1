"""harness: render every kustomization and Flux Kustomization, compare with goldens or a git ref.

The version comes from the git tags (setuptools-scm writes `_version.py` when the
distribution, `flux-harness`, is built or installed); a tree that was never installed says
`0+unknown`.
"""

__version__: str
try:
    from harness._version import __version__ as __version__
except ImportError:  # a checkout on sys.path that was never built or installed
    __version__ = "0+unknown"
