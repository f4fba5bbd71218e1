"""One module per hazard rule; engine.py holds the registry that runs them."""
