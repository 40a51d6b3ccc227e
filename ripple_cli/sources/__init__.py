"""Where bytes come from: files and stdin (and, later, captures and sockets).

A source yields byte chunks; it knows nothing of the protocol.
"""
