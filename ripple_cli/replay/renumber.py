"""--renumber: fresh sequence numbers, so that a consumer that discards
duplicates accepts every pass of a looped replay."""

from __future__ import annotations

from dataclasses import replace

from ripple_cli.codec.binprot import INT_MAX
from ripple_cli.codec.envelope import HEADER, HEADER_SIZE, build_envelope
from ripple_cli.codec.messages import DELTA, read_delta_msg, write_payload
from ripple_cli.errors import UsageProblem


class Renumberer:
    """Rewrites, per connection: the envelope seq from `start`, and each
    Delta's `sequence_no` per source output from `start`, both continuing
    across loops.
    Everything else (timestamp, fingerprint, flags, the Delta's key and
    delta bytes, its watermark) is kept; the CRC is recomputed."""

    def __init__(self, start: int = 1) -> None:
        self.start = start
        self.seq = start - 1
        self.sequence_nos: dict[bytes, int] = {}

    def __call__(self, envelope: bytes) -> bytes:
        _magic, version, tag, flags, _seq, time_ns, fingerprint, length = HEADER.unpack_from(envelope)
        payload = envelope[HEADER_SIZE : HEADER_SIZE + length]
        if tag == DELTA:
            # The source was checked when it was read: this payload decodes.
            msg = read_delta_msg(payload)
            n = self.sequence_nos.get(msg.source_output, self.start - 1) + 1
            if n > INT_MAX:
                raise UsageProblem(
                    f"--renumber-from {self.start}: a Delta sequence_no would pass {INT_MAX}, "
                    f"the largest it holds, after {n - self.start} Deltas of one output"
                )
            self.sequence_nos[msg.source_output] = n
            payload = write_payload(replace(msg, sequence_no=n))
        self.seq += 1
        return build_envelope(tag, self.seq, time_ns, fingerprint.rstrip(b"\0"), payload, flags, version)
