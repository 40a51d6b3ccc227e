"""Ripple: the workers' envelopes (magic, seq, event time, schema
fingerprint, length, CRC-32C) around bin_prot payloads.

The dissector of the protocol ripple is named for.  Its parts:

- stream.py: one direction, wrapping the decoder (decoder.py) and owning
  the fast lane (lane.py, over the codec's C module);
- rules.py: the stream rules `verify` checks (seq order, Delta
  sequence_no per worker and output, schemas before Deltas), per direction;
- message.py: a decoded envelope as the message contract;
- fields.py: what `-Y` reads; encoder.py: text back to envelopes.

The bytes themselves (envelope, bin_prot, schemas, values, canonical text)
are the codec's (ripple_cli/codec/).
"""

from __future__ import annotations

from types import ModuleType

from ripple_cli.codec.envelope import DEFAULT_MAX_PAYLOAD, HEADER, HEADER_SIZE, MAGIC, OVERHEAD, VERSION
from ripple_cli.codec.fast import speedups
from ripple_cli.codec.framing import find_envelope
from ripple_cli.codec.messages import FIXED_FINGERPRINTS
from ripple_cli.protocols.base import (
    Detection,
    DissectOptions,
    Dissector,
    Encoder,
    Getter,
    StreamDissector,
)
from ripple_cli.sexp.tree import Sexp

DETECT_LIMIT = 1 << 20  # bytes a direction may show before it is judged not Ripple


def _wanted(head: bytes) -> int:
    """How many bytes the last plausible envelope header in `head` needs, so
    that a large first envelope is waited for rather than missed."""
    p = head.rfind(MAGIC)
    if p < 0 or len(head) - p < HEADER_SIZE:
        return 0
    length = int.from_bytes(head[p + HEADER_SIZE - 4 : p + HEADER_SIZE], "little", signed=True)
    return p + OVERHEAD + length if 0 <= length <= DEFAULT_MAX_PAYLOAD else 0


def _opens_long_envelope(head: bytes) -> bool:
    """`head` starts with the header of an envelope longer than itself, of a
    type with a fixed fingerprint (a Handshake, most often: a connection's
    first message, and longer than its first packet from about 100 schemas
    on).  Magic, version, type, flags, that fingerprint and a length within
    bounds: some 50 bytes that no other protocol starts with, as sure as a
    CRC at the start of a connection.  Waiting for the CRC instead had every
    detector ask again each time the held head grew by an eighth, and
    imported them all."""
    if len(head) < HEADER_SIZE or not head.startswith(MAGIC):
        return False
    _magic, version, tag, flags, _seq, _time, fingerprint, length = HEADER.unpack_from(head)
    return bool(
        version == VERSION
        and flags == 0
        and fingerprint.rstrip(b"\0") == FIXED_FINGERPRINTS.get(tag)
        and len(head) < OVERHEAD + length <= OVERHEAD + DEFAULT_MAX_PAYLOAD
    )


class RippleDissector(Dissector):
    name = "ripple"
    title = "Ripple worker envelopes (bin_prot payloads, CRC-32C)"
    ports = ()

    def __init__(self) -> None:
        from ripple_cli.protocols.ripple import fields, message

        self.filter_fields = fields.FILTER_FIELDS
        self.type_styles = message.TYPE_STYLES
        self._getter = fields.getter
        self._accel: tuple[DissectOptions, ModuleType | None] | None = None

    def detect(self, head: bytes) -> Detection:
        # A capture may start mid-stream: any whole envelope with a valid
        # CRC in the first MiB decides it.
        if find_envelope(head, DEFAULT_MAX_PAYLOAD) is not None or _opens_long_envelope(head):
            return Detection.YES
        return Detection.NO if len(head) > max(DETECT_LIMIT, _wanted(head)) else Detection.MORE

    def stream(self, options: DissectOptions, from_client: bool | None) -> StreamDissector:
        from ripple_cli.protocols.ripple.stream import RippleStream

        if options.lane is None:
            return RippleStream(options)
        # The C extension, looked up once per options (reading the
        # environment for RIPPLE_PURE was a tenth of a short connection's
        # cost in a capture of 20,000 of them).
        memo = self._accel
        if memo is None or memo[0] is not options:
            memo = self._accel = (options, speedups())
        return RippleStream(options, memo[1])

    def getter(self, name: str) -> Getter:
        return self._getter(name)

    def encoder(self, options: DissectOptions) -> Encoder:
        from ripple_cli.protocols.ripple.encoder import RippleEncoder

        return RippleEncoder(self, options)

    def encode(self, text: Sexp) -> bytes:
        """One message with no schema but its own: a Delta needs the
        registry an `encoder` keeps."""
        data = self.encoder(DissectOptions()).encode(text)
        assert data is not None
        return data
