"""The kinds of the tap's own notes, about its connections and helpers
rather than what they carry (ripple-tap(1) lists them; a test holds the
page to this table).  The capture's notes (evicted, reassembly_window...)
are `codec.problems.CAPTURE_KINDS`."""

from __future__ import annotations

TAP_KINDS = {
    "refused": "a connection beyond --max-connections, closed as soon as it was accepted (a warning)",
    "upstream_unreachable": "a connection whose upstream could not be reached, reset (a warning)",
    "fd_limit": "the limit on open files is short of --max-connections (at the start), or a connection reset "
    "for want of a descriptor to dial its upstream (a warning)",
    "relay_died": "the relay process ended unexpectedly (an error)",
    "tcpdump_failed": "tcpdump stopped with an error (an error)",
}
