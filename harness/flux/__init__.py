"""Flux's own build steps on top of kustomize, one subpackage per controller: source/
(source-controller), kustomize/ (kustomize-controller), helm/ (helm-controller); at the top,
clusters, the fixed point that renders every cluster's Kustomizations and the Kustomization
graph.

Imports: core, cache, render.
"""
