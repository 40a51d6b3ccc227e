"""Protocol dissectors: Ripple and its sibling protocols (see base.py)."""
