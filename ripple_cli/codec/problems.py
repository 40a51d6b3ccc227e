"""Problems found in a stream, as values.

Decoders never raise on bad input: they return a `Problem` in the place of
what they could not read, and go on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from ripple_cli.sexp.atoms import escape_text
from ripple_cli.terminal.words import plural


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"  # a problem only under --strict


@dataclass(frozen=True, slots=True)
class Problem:
    offset: int  # stream offset where the problem starts; -1 when it concerns no offset
    kind: str  # a stable identifier, e.g. "crc_mismatch" (see KINDS)
    detail: str  # one human sentence, no trailing period
    skipped: int = 0  # bytes passed over to find the next whole envelope
    severity: Severity = Severity.ERROR
    seq: int | None = None  # envelope seq of the message concerned, when there is one
    extra: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The detail quotes names from the wire (a worker id, a schema): a
        # byte that is not UTF-8 or a control byte in one is escaped here,
        # once, for every form that shows it (a terminal, JSON, XML).
        if not self.detail.isprintable():
            object.__setattr__(self, "detail", escape_text(self.detail))

    def describe(self) -> str:
        if self.offset < 0:
            return self.detail
        text = f"offset {self.offset}: {self.detail}"
        if self.skipped:
            text += f"; skipped {plural(self.skipped, 'byte')} to offset {self.offset + self.skipped}"
        return text


KINDS = {
    "bad_magic": "the bytes where an envelope should start are not RIPP",
    "bad_version": "an envelope of a protocol version other than 1",
    "bad_length": "a payload length below 0 or above the maximum",
    "crc_mismatch": "the CRC-32C does not match the header and payload",
    "truncated": "the stream ends inside an envelope",
    "bad_payload": "a payload that does not decode exactly as its type",
    "bad_delta": "a Delta whose key or delta does not decode with its schema",
    "gap": "bytes missing from the stream (a capture hole, input a tap could not keep up with)",
    "midstream": "a stream entered part-way: bytes before the first envelope boundary (a warning)",
    "unknown_type": "a message type tag this protocol version does not define",
    "flags": "non-zero reserved flags",
    "seq_order": "an envelope sequence number not above the previous one",
    "delta_gap": "Delta sequence_no jumped: messages lost",
    "delta_duplicate": "Delta sequence_no at or below the last applied",
    "delta_before_schema": "a Delta before any Handshake declared its output",
    "negotiation_failed": "a Schema_negotiation with ok false",
    "duplicate_schema": "a Handshake declaring one schema fingerprint twice, differently (a warning): the last is used",
}

# Notes about a capture itself rather than a stream's content (CaptureNote).
CAPTURE_KINDS = {
    "bad_capture": (
        "a capture file damaged here, or cut inside its file header: "
        "reading resumes at the next plausible record, if any"
    ),
    "capture_truncated": "a capture file cut short inside a record",
    "pcap_header": "another pcap file header inside a pcap file (files joined): the records after it are read by it",
    "unsupported_linktype": "packets of a link type ripple does not decode",
    "ip_fragment": "an IP datagram whose fragments did not all arrive: its TCP bytes are missing",
    "fragment_overlap": "IP fragments that overlap with different bytes: the datagram is dropped",
    "bad_fragment": "an IP fragment past the end of its datagram: the datagram is dropped",
    "conflicting_overlap": "a retransmitted TCP segment whose bytes differ from the first copy",
    "reassembly_window": "more than --reassembly-window bytes held after a hole: the hole is declared missing",
    "evicted": "an idle connection dropped to stay within --max-flows",
    "port_reused": "a new connection on the same addresses and ports",
}


# "; then N more holes (M bytes)" at the end of a damaged region's detail.
_MORE_HOLES = re.compile(r"; then (\d+) more holes? \((\d+) bytes?\)$")


def then_hole(detail: str, hole: str, size: int) -> str:
    """The detail of a damaged region that one more hole (`hole`, of `size`
    bytes) falls into: the first two holes are told, the later ones
    counted, so that the line stays short and each hole costs the same
    (a capture of 100,000 holes made a line of 5 MB, in quadratic time)."""
    m = _MORE_HOLES.search(detail)
    if m is not None:
        n, total = int(m[1]) + 1, int(m[2]) + size
        return f"{detail[: m.start()]}; then {n} more holes ({plural(total, 'byte')})"
    if detail.count("; then ") < 1:
        return f"{detail}; then {hole}"
    return f"{detail}; then 1 more hole ({plural(size, 'byte')})"
