"""The command line: the typer app, the console entry, the shared command context, one module per
verb in commands/.

Imports: every other package (the top layer).
"""
