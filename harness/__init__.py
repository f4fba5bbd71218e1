"""harness: render every kustomization and Flux Kustomization, compare with goldens or a git ref."""

__version__ = "0.1.0"
