"""Pictures of each cluster's Flux Kustomization graph: the view (nodes, edges, marks) and its
Mermaid, DOT, SVG and JSON forms.

Imports: core, cache, render, flux, pipeline, compare, hazards.
"""
