"""A decoded Ripple envelope: the message contract (protocols/item.py) for
Ripple, its text, JSON and cells made by the codec from frame and body."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ripple_cli.codec.envelope import Frame
from ripple_cli.codec.jsonview import envelope_to_json
from ripple_cli.codec.messages import TYPE_NAMES, Body, DeltaMsg, DeltaView
from ripple_cli.codec.schema import text
from ripple_cli.codec.summary import key_text, output_text, summary
from ripple_cli.codec.text import envelope_to_line, envelope_to_sexp
from ripple_cli.protocols.item import Cells
from ripple_cli.sexp.write import to_string_hum

# The table's type colours (Dissector.type_styles) and its short names.
TYPE_STYLES = {
    "Delta": "cyan",
    "Handshake": "bold green",
    "Heartbeat": "dim",
    "Schema_negotiation": "green",
    "Checkpoint_request": "magenta",
    "Checkpoint_ack": "magenta",
}
SHORT_TYPES = {"Checkpoint_request": "Ckpt_request", "Checkpoint_ack": "Ckpt_ack", "Schema_negotiation": "Negotiation"}


@dataclass(frozen=True, slots=True)
class Message:
    frame: Frame
    body: Body

    protocol = "ripple"

    @property
    def offset(self) -> int:
        return self.frame.offset

    @property
    def size(self) -> int:
        return self.frame.size

    @property
    def type(self) -> str:
        """The type's name, as the text form and `--type` spell it."""
        return TYPE_NAMES.get(self.frame.tag, f"Unknown({self.frame.tag})")

    @property
    def line(self) -> bytes:
        return envelope_to_line(self.frame, self.body)

    @property
    def hum(self) -> bytes:
        return to_string_hum(envelope_to_sexp(self.frame, self.body, lazy=True))

    def to_json(self, context: Mapping[str, Any]) -> dict[str, Any]:
        return envelope_to_json(self.frame, self.body, dict(context))

    def cells(self) -> Cells:
        f, body = self.frame, self.body
        name = self.type
        return Cells(
            summary(body),
            SHORT_TYPES.get(name, name),
            f.seq,
            f.time_ns,
            text(f.fingerprint),
            output_text(body),
            key_text(body),
        )

    @property
    def output(self) -> str | None:
        body = self.body
        return text(body.source_output) if isinstance(body, (DeltaView, DeltaMsg)) else None

    @property
    def key(self) -> str | None:
        body = self.body
        return key_text(body) if isinstance(body, (DeltaView, DeltaMsg)) else None
