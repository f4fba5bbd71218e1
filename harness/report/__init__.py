"""Formatting only: stages never print, report modules never compute."""
