"""Formatting only: stages never print, report modules never compute.

Imports: core, cache, render, flux, pipeline, compare, hazards, graph.
"""
