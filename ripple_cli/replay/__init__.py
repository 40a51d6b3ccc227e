"""`ripple replay`: send a recorded stream to a live peer, paced.

The source is read whole first (`source.py`), so decoding never delays the
schedule; each recorded connection direction is then replayed on a
connection of its own (`session.py`): the recorded Handshake, the peer's
Schema_negotiation, then every other envelope at its target time
(`schedule.py`), optionally renumbered (`renumber.py`).  `stats.py` holds
what is reported at the end.
"""
