"""Ripple's text back to envelopes: the canonical lines of `decode`, with
the schemas of the Handshakes before (and --schemas) for the Deltas."""

from __future__ import annotations

from ripple_cli.codec.errors import EncodeError
from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.codec.schema import SexpShapeError
from ripple_cli.codec.text import EnvelopeSpec, envelope_of_sexp
from ripple_cli.protocols.base import DissectOptions, Dissector, Encoder
from ripple_cli.sexp.tree import Sexp


class RippleEncoder(Encoder):
    def __init__(self, dissector: Dissector, options: DissectOptions) -> None:
        super().__init__(dissector)
        # A Handshake's schemas serve the Deltas after it (envelope_of_sexp adds them).
        self.registry = options.registry if options.registry is not None else SchemaRegistry()
        self.renumber = options.renumber
        self.seq = 0

    def encode(self, text: Sexp) -> bytes:
        try:
            spec = envelope_of_sexp(text, self.registry)
        except SexpShapeError as e:
            raise EncodeError(str(e)) from None  # "path: what is wrong"
        if self.renumber:
            self.seq += 1
            spec = EnvelopeSpec(self.seq, spec.time_ns, spec.fingerprint, spec.flags, spec.body)
        return spec.to_bytes()
