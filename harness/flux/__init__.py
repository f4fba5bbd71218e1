"""Flux's own build steps on top of kustomize: clusters, Kustomizations, substitution."""
