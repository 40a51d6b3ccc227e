"""rstmdb RCP (the rstmdb Command Protocol): binary frames with JSON
payloads, and the JSON lines a server writes after negotiating `jsonl`.

The layout is in wire.py, the JSON in payload.py, the decoder of one
direction in stream.py, the text form in text.py, the connection rules in
analysis.py; man/ripple-rcp.7 documents what ripple shows.
"""

from __future__ import annotations

from types import MappingProxyType

from ripple_cli.codec.crc import crc32c
from ripple_cli.codec.crcrange import STEP, prefixes
from ripple_cli.protocols.base import (
    ConnectionAnalyzer,
    Detection,
    DissectOptions,
    Dissector,
    FilterField,
    StreamDissector,
)
from ripple_cli.protocols.rcp.analysis import PROBLEM_KINDS as ANALYSIS_KINDS
from ripple_cli.protocols.rcp.analysis import RcpAnalyzer
from ripple_cli.protocols.rcp.payload import parse
from ripple_cli.protocols.rcp.stream import RcpStream
from ripple_cli.protocols.rcp.text import encode
from ripple_cli.protocols.rcp.wire import DEFAULT_PORT, MAGIC, MAX_PAYLOAD, VERSION, RcpFrame, valid_frame_at
from ripple_cli.sexp.tree import Sexp

DETECT_LIMIT = 1 << 20  # bytes a direction may show before it is judged not RCP
_VERSION_BYTES = VERSION.to_bytes(2, "big")
# How a server's JSON line starts: serde writes the fields in struct order, "type" first.
_LINE_STARTS = (b'{"type":"response",', b'{"type":"event",')

STREAM_KINDS = {
    "bad_magic": "bytes where a frame should start that are not RCPX (nor a JSON line): skipped to the next frame",
    "bad_version": "a frame of a version other than 1 (read by the version 1 layout)",
    "reserved_flags": "flag bits outside 0x000F (the real decoder rejects the frame)",
    "compressed": "the COMPRESSED flag: reserved, no codec defined, payload not read (a warning)",
    "header_extension": "a non-empty header extension, unused in version 1 and skipped (a warning)",
    "oversize": "a payload length or JSON line above the limit (16 MiB, --max-payload): skipped",
    "bad_length": "a frame length that runs past the end of the stream, or fails its CRC, over whole frames: "
    "an inflated length, skipped to the first of them",
    "crc_mismatch": "CRC_PRESENT set and the CRC32C of the payload differs from the field",
    "crc_without_flag": "a non-zero CRC field without CRC_PRESENT, so not checked (a warning)",
    "bad_utf8": "a payload that is not UTF-8",
    "bad_json": "a payload that is not JSON as serde_json reads it (strict; at most 128 levels deep)",
    "unknown_message": "JSON that is not an object of type request, response or event",
    "bad_id": "a request or response whose id is missing or not a string (the server drops the connection)",
    "bad_request": "a request without an op, or with an op that is not a string",
    "unknown_op": "a request op rstmdb does not define (the server drops the connection)",
    "bad_response": "a response whose status is neither ok nor error, or an error without an error code",
    "unknown_error_code": "an error code rstmdb does not define (a warning)",
    "bad_event": "an event without one of its fields, or a field of the wrong JSON type",
    "unexpected_jsonl": "a JSON line from the client (an error) or from a server that negotiated none (a warning)",
    "unexpected_frame": "a binary frame from the server after it switched to JSON lines (a warning)",
    "truncated": "the stream ends inside a frame or a line",
    "gap": "bytes missing from the stream (a capture hole): decoding resumes at the next sure start",
}


def _line_detect(head: bytes, at: int) -> Detection:
    """A server JSON line starting at `at`: YES when it is a whole response
    or event as rstmdb writes them."""
    start = head[at : at + len(_LINE_STARTS[0])]
    if not any(s.startswith(start) or start.startswith(s) for s in _LINE_STARTS):
        return Detection.NO
    if not any(head.startswith(s, at) for s in _LINE_STARTS):
        return Detection.MORE
    nl = head.find(b"\n", at)
    if nl < 0:
        # A line this long that starts so: a big response, say.
        return Detection.YES if len(head) - at > DETECT_LIMIT else Detection.MORE
    parsed = parse(head[at:nl])
    good = parsed.kind in ("response", "event") and not parsed.notes
    return Detection.YES if good else Detection.NO


class RcpDissector(Dissector):
    name = "rcp"
    title = "rstmdb RCP (binary frames with JSON, and JSON lines)"
    ports = (DEFAULT_PORT,)
    problem_kinds = MappingProxyType({**STREAM_KINDS, **ANALYSIS_KINDS})
    filter_fields = MappingProxyType(
        {
            "wire": FilterField("str", '"frame" or "jsonl"'),
            "kind": FilterField("str", '"request", "response", "event", or absent for other payloads'),
            "id": FilterField("any", "the message's id (a string when well formed)"),
            "op": FilterField("str", "a request's op, e.g. APPLY_EVENT"),
            "status": FilterField("str", 'a response\'s status, "ok" or "error"'),
            "error_code": FilterField("str", "an error response's code, e.g. INSTANCE_NOT_FOUND"),
            "msg": FilterField("any", "the parsed JSON payload; dotted names go into it (msg.params.machine)"),
            "payload": FilterField("str", "the payload's text, present only when it is not JSON"),
            "version": FilterField("num", "a frame's version field"),
            "flags": FilterField("num", "a frame's flags field"),
            "flag_names": FilterField("list", "names of the flags set: CRC_PRESENT, COMPRESSED, STREAM, END_STREAM"),
            "header_len": FilterField("num", "length of a frame's header extension"),
            "extension": FilterField("bytes", "a frame's header extension, when not empty"),
            "payload_len": FilterField("num", "bytes of the payload (of a line: without its newline)"),
            "crc": FilterField("num", "a frame's CRC field as written"),
            "crc_ok": FilterField("bool", "whether the CRC matches (null without CRC_PRESENT)"),
        }
    )
    type_styles = MappingProxyType(
        {
            "Request": "cyan",
            "Response": "green",
            "Event": "magenta",
            "Frame": "yellow",
            "JsonLine": "blue",
        }
    )

    def detect(self, head: bytes) -> Detection:
        # The start of a direction: a frame header of version 1, or a
        # server's JSON line.
        if (
            len(head) < 6
            and MAGIC.startswith(head[:4])
            and (len(head) <= 4 or head[4:] == _VERSION_BYTES[: len(head) - 4])
        ):
            return Detection.MORE
        if head[:4] == MAGIC and head[4:6] == _VERSION_BYTES:
            return Detection.YES
        line = _line_detect(head, 0)
        if line is not Detection.NO:
            return line
        # A capture that began part-way: a whole frame with a matching CRC
        # and a message in it, or a whole server line after a newline.
        at = head.find(MAGIC)
        ranges = prefixes(0)  # candidates claiming long payloads: see crcrange.py

        def crc(start: int, stop: int) -> int:
            return ranges.crc(head, 0, start, stop) if stop - start >= STEP else crc32c(memoryview(head)[start:stop])

        while at >= 0:
            found = valid_frame_at(head, at, len(head), MAX_PAYLOAD, crc)
            if isinstance(found, RcpFrame) and found.crc_ok and parse(found.payload).kind is not None:
                return Detection.YES
            at = head.find(MAGIC, at + 1)
        at = head.find(b"\n{")
        while at >= 0:
            if _line_detect(head, at + 1) is Detection.YES:
                return Detection.YES
            at = head.find(b"\n{", at + 1)
        return Detection.NO if len(head) > DETECT_LIMIT else Detection.MORE

    def stream(self, options: DissectOptions, from_client: bool | None) -> StreamDissector:
        return RcpStream(options, from_client)

    def analyzer(self, options: DissectOptions) -> ConnectionAnalyzer | None:
        return RcpAnalyzer()

    def encode(self, text: Sexp) -> bytes:
        return encode(text)
