"""Protocol dissectors: Ripple and its sibling protocols, each behind one
contract (base.py), their messages behind one more (item.py)."""
