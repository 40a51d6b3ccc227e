"""Ripple's entry among the protocols: detection and the listing.

Decoding a Ripple stream takes the codec's own path (`codec/stream.py`
through `flow/demux.py`, with the fast lane); this entry lets the
protocol selection treat Ripple like the others.
"""

from __future__ import annotations

from ripple_cli.codec.envelope import DEFAULT_MAX_PAYLOAD, HEADER_SIZE, MAGIC, OVERHEAD
from ripple_cli.codec.framing import find_envelope
from ripple_cli.protocols.base import (
    Detection,
    DissectOptions,
    Dissector,
    EncodeError,
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


class RippleDissector(Dissector):
    name = "ripple"
    title = "Ripple worker envelopes (bin_prot payloads, CRC-32C)"
    ports = ()
    priority = 50  # a whole envelope with a valid CRC is as sure as detection gets

    def detect(self, head: bytes) -> Detection:
        # A capture may start mid-stream: any whole envelope with a valid
        # CRC in the first MiB decides it.
        if find_envelope(head, DEFAULT_MAX_PAYLOAD) is not None:
            return Detection.YES
        return Detection.NO if len(head) > max(DETECT_LIMIT, _wanted(head)) else Detection.MORE

    def stream(self, options: DissectOptions, from_client: bool | None) -> StreamDissector:
        raise NotImplementedError("Ripple streams are decoded by codec.stream.StreamDecoder")

    def encode(self, text: Sexp) -> bytes:
        # Ripple text needs the schema registry (Deltas): cli/commands/encode.py
        # encodes it with codec.text.envelope_of_sexp.
        raise EncodeError("Ripple messages are encoded through codec.text")
