"""--renumber: fresh sequence numbers, so that a consumer that discards
duplicates accepts every pass of a looped replay."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from ripple_cli.codec.binprot import INT_MAX
from ripple_cli.codec.envelope import HEADER, HEADER_SIZE, build_envelope
from ripple_cli.codec.messages import DELTA, read_delta_msg, write_payload
from ripple_cli.errors import UsageProblem
from ripple_cli.replay.source import Recording


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
                raise _overflow(self.start, n - self.start)
            self.sequence_nos[msg.source_output] = n
            payload = write_payload(replace(msg, sequence_no=n))
        self.seq += 1
        return build_envelope(tag, self.seq, time_ns, fingerprint.rstrip(b"\0"), payload, flags, version)


def _overflow(start: int, deltas: int) -> UsageProblem:
    return UsageProblem(
        f"--renumber-from {start}: a Delta sequence_no would pass {INT_MAX}, "
        f"the largest it holds, after {deltas} Deltas of one output"
    )


def _output(envelope: bytes) -> bytes | None:
    """A Delta's source output, None for any other message."""
    _magic, _version, tag, _flags, _seq, _time, _fp, length = HEADER.unpack_from(envelope)
    return read_delta_msg(envelope[HEADER_SIZE : HEADER_SIZE + length]).source_output if tag == DELTA else None


def check_room(start: int, recordings: Sequence[Recording], loops: int, limit: int | None) -> None:
    """Refuses, before anything is sent, a replay whose renumbered Deltas
    would pass INT_MAX (the check in `Renumberer` would stop it part-way,
    the consumer holding a Handshake and some of the stream).  Exact: each
    connection numbers from `start`, sends its body `loops` times, and
    `limit` counts every message written, Handshakes included."""
    room = INT_MAX - start + 1  # Deltas of one output numbered start..INT_MAX
    if max((len(rec.body) for rec in recordings), default=0) * loops <= room:
        return  # room whatever the messages are (the usual case): no Delta read
    left = limit
    for rec in recordings:
        if left is not None and left <= 0:
            return
        outputs = [_output(m.data) for m in rec.body]
        sent = len(outputs) * loops
        if left is not None:
            sent = min(sent, left - 1)
            left -= 1 + sent
        if not outputs:
            continue
        passes, part = divmod(sent, len(outputs))
        whole = Counter(o for o in outputs if o is not None)
        tail = Counter(o for o in outputs[:part] if o is not None)
        most = max((whole[o] * passes + tail[o] for o in whole), default=0)
        if most > room:
            raise _overflow(start, room)
