"""`ripple tap`: watch Ripple traffic live, as a transparent TCP proxy or by
sniffing an interface, without ever slowing or altering it.

    relay.py    the forwarding process (proxy mode): its listening sockets, and
                its event loop in asyncio (RIPPLE_PURE=1, or no C extension)
    _relayloop.c  the same event loop in C, used when built
    records.py  what the relay tells the tap: connections, copies, gaps, ends
    proxy.py    the relay as a source of capture events
    sniff.py    tcpdump as a source of capture events and packets
    queues.py   bounded queues that drop (and count) instead of blocking
    stats.py    per-stream counters for the live view and the summary
    synth.py    Ethernet/IP/TCP framing of proxied bytes, for -w
    record.py   -w: packets or synthesized frames to rotating pcapng
    session.py  the threads and queues between a source and the screen
"""
