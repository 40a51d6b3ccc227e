"""Where bytes come from and go: files and stdin as chunks or capture events
(inputs.py), schema files, atomic output files.

A source yields bytes or capture events; it knows nothing of the protocol.
"""
