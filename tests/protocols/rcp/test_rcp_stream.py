"""The decoder of one RCP direction: the JSONL switch per direction,
resynchronisation, holes, bounds, detection and the encoder's errors, with
exact items."""

from __future__ import annotations

import pytest
from rcpkit import DISSECTOR, decode, error, event, frame, j, ok, request

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import Detection, DissectOptions, EncodeError, ProtoMessage
from ripple_cli.protocols.rcp.stream import RcpStream
from ripple_cli.sexp.parse import parse_one
from tests.protocols.dissector_kit import bytewise, chunkings, kinds, messages

HELLO_JSONL = ok(
    "1", {"protocol_version": 1, "wire_mode": "jsonl", "server_name": "s", "server_version": "1", "features": []}
)
HELLO_BINARY = ok(
    "1", {"protocol_version": 1, "wire_mode": "binary_json", "server_name": "s", "server_version": "1", "features": []}
)
PONG = ok("2", {"pong": True})
PING = request("2", "PING")


def msg_kinds(items: list[ProtoMessage | Problem]) -> list[tuple[int, str, str | None]]:
    """(offset, type, kind) of each message."""
    return [(m.offset, m.type, m.fields["kind"]) for m in messages(items)]


def severities(items: list[ProtoMessage | Problem]) -> list[tuple[int, str, str]]:
    return [(i.offset, i.kind, str(i.severity)) for i in items if isinstance(i, Problem)]


# ---------------------------------------------------------------- the JSONL switch


def test_server_switches_after_a_hello_response_frame_that_negotiated_jsonl() -> None:
    hello = frame(HELLO_JSONL)
    data = hello + PONG + b"\n" + event("s1", "i", "a", "b", "go") + b"\n"
    items = decode(data, from_client=False)
    assert msg_kinds(items) == [
        (0, "Response", "response"),
        (len(hello), "JsonLine", "response"),
        (len(hello) + len(PONG) + 1, "JsonLine", "event"),
    ]
    assert kinds(items) == []
    assert messages(items)[1].line == (
        b'(rcp(JsonLine((json"{\\"type\\":\\"response\\",\\"id\\":\\"2\\",'
        b'\\"status\\":\\"ok\\",\\"result\\":{\\"pong\\":true}}"))))'
    )


def test_server_whose_hello_response_is_itself_a_line_as_the_real_server_writes_it() -> None:
    data = HELLO_JSONL + b"\n" + PONG + b"\n"
    items = decode(data, from_client=False)
    assert msg_kinds(items) == [(0, "JsonLine", "response"), (len(HELLO_JSONL) + 1, "JsonLine", "response")]
    assert kinds(items) == []


def test_lines_without_negotiation_are_reported_once_per_direction() -> None:
    data = PONG + b"\n" + PONG + b"\n"
    items = decode(data, from_client=False)
    assert len(messages(items)) == 2
    assert severities(items) == [(0, "unexpected_jsonl", "warning")]
    # From the client it is an error: the server reads only frames.
    items = decode(PING + b"\n" + frame(PING) + PING + b"\n", from_client=True)
    assert [m.type for m in messages(items)] == ["JsonLine", "Request", "JsonLine"]
    assert severities(items) == [(0, "unexpected_jsonl", "error")]
    # A raw stream has no direction: decided by content, nothing to report.
    assert kinds(decode(PONG + b"\n", from_client=None)) == []


def test_a_frame_after_the_switch_is_decoded_and_reported() -> None:
    data = HELLO_JSONL + b"\n" + frame(PONG)
    items = decode(data, from_client=False)
    assert msg_kinds(items) == [(0, "JsonLine", "response"), (len(HELLO_JSONL) + 1, "Response", "response")]
    assert severities(items) == [(len(HELLO_JSONL) + 1, "unexpected_frame", "warning")]


def test_binary_json_negotiated_keeps_frames_and_a_brace_still_starts_a_line() -> None:
    data = frame(HELLO_BINARY) + frame(PONG)
    assert kinds(decode(data, from_client=False)) == []
    # A client direction does not switch on a response (which the analyzer
    # reports as in the wrong direction): its frames stay frames.
    assert kinds(decode(frame(HELLO_JSONL) + frame(PONG), from_client=True)) == []


def test_jsonl_lines_in_one_byte_pieces() -> None:
    data = frame(HELLO_JSONL) + PONG + b"\n" + b"\n" + PONG + b"\r\n"
    whole = decode(data, from_client=False)
    assert decode(data, from_client=False, pieces=bytewise(data)) == whole
    # An empty line is a line that is not JSON; a CR stays in the line's text.
    assert [m.fields["payload_len"] for m in messages(whole)] == [len(HELLO_JSONL), len(PONG), 0, len(PONG) + 1]
    assert kinds(whole) == [(len(frame(HELLO_JSONL)) + len(PONG) + 1, "bad_json")]
    assert DISSECTOR.encode(parse_one(messages(whole)[3].line)) == PONG + b"\r\n"


# ---------------------------------------------------------------- resynchronisation


def test_garbage_is_skipped_to_the_next_frame_with_its_size() -> None:
    good = frame(PING)
    data = b"\x00\x01RCPX\x00\x02junk" + good
    items = decode(data, from_client=True)
    assert [(i.offset, i.kind, i.skipped) for i in items if isinstance(i, Problem)] == [(0, "bad_magic", 12)]
    assert msg_kinds(items) == [(12, "Request", "request")]


def test_resync_needs_a_frame_with_a_matching_crc() -> None:
    # At a boundary a CRC mismatch is decoded; while skipping garbage, it is not a start.
    bad = frame(request("3", "PING"), crc=1)
    good = frame(PING)
    assert kinds(decode(bad + good, from_client=True)) == [(0, "crc_mismatch")]
    items = decode(b"zz" + bad + good, from_client=True)
    assert [(i.offset, i.kind, i.skipped) for i in items if isinstance(i, Problem)] == [(0, "bad_magic", 2 + len(bad))]
    assert msg_kinds(items) == [(2 + len(bad), "Request", "request")]


def test_a_client_direction_does_not_resync_on_lines_a_server_direction_does() -> None:
    garbage = b'..."tail of a line"}\n'
    line = PONG + b"\n"
    client = decode(garbage + line + frame(PING), from_client=True)
    assert msg_kinds(client) == [(len(garbage) + len(line), "Request", "request")]
    assert [(i.offset, i.kind, i.skipped) for i in client if isinstance(i, Problem)] == [
        (0, "bad_magic", len(garbage) + len(line))
    ]
    server = decode(garbage + line + line, from_client=False)
    assert msg_kinds(server) == [
        (len(garbage), "JsonLine", "response"),
        (len(garbage) + len(line), "JsonLine", "response"),
    ]
    assert [(i.offset, i.kind, i.skipped) for i in server if isinstance(i, Problem)] == [
        (0, "bad_magic", len(garbage)),
        (len(garbage), "unexpected_jsonl", 0),
    ]


def test_a_hole_in_a_frame_resyncs_on_the_next_frame() -> None:
    a, b, c = frame(request("1", "PING")), frame(request("2", "INFO")), frame(request("3", "BYE"))
    s = RcpStream(DissectOptions(), True)
    items = s.feed(a + b[:10]) + s.gap(20) + s.feed(b[30:] + c) + s.finish()
    assert msg_kinds(items) == [(0, "Request", "request"), (len(a) + len(b), "Request", "request")]
    gaps = [i for i in items if isinstance(i, Problem)]
    assert [(p.offset, p.kind, p.skipped) for p in gaps] == [(len(a), "gap", len(b))]
    assert gaps[0].detail == f"20 bytes missing from the stream at offset {len(a) + 10}"


def test_a_hole_in_a_line_resyncs_on_the_next_line() -> None:
    line = PONG + b"\n"
    s = RcpStream(DissectOptions(), False)
    items = s.feed(HELLO_JSONL + b"\n" + line[:5]) + s.gap(7) + s.feed(line[12:] + line) + s.finish()
    start = len(HELLO_JSONL) + 1
    assert msg_kinds(items) == [(0, "JsonLine", "response"), (start + len(line), "JsonLine", "response")]
    assert [(i.offset, i.kind, i.skipped) for i in items if isinstance(i, Problem)] == [(start, "gap", len(line))]


def test_truncated_frame_and_line_at_the_end() -> None:
    items = decode(frame(PING)[:25], from_client=True)
    assert [(i.offset, i.kind, i.detail) for i in items if isinstance(i, Problem)] == [
        (0, "truncated", "stream ends inside a frame: it needs 57 bytes, 25 remain")
    ]
    items = decode(HELLO_JSONL + b"\n" + PONG[:9], from_client=False)
    assert [(i.offset, i.kind, i.skipped) for i in items if isinstance(i, Problem)] == [
        (len(HELLO_JSONL) + 1, "truncated", 9)
    ]
    assert kinds(decode(b"RC")) == [(0, "truncated")]


# ---------------------------------------------------------------- bounds


def test_an_oversize_frame_is_skipped_without_buffering_it() -> None:
    opts = DissectOptions(max_payload=100)
    big = frame(j({"type": "request", "id": "1", "op": "PING", "params": {"x": "y" * 500}}))
    s = RcpStream(opts, True)
    items: list[ProtoMessage | Problem] = []
    for k in range(0, len(big), 7):
        items += s.feed(big[k : k + 7])
        assert s.buffered <= 18 + 3
    items += s.feed(frame(PING)) + s.finish()
    assert [(i.offset, i.kind, i.skipped) for i in items if isinstance(i, Problem)] == [(0, "oversize", len(big))]
    assert msg_kinds(items) == [(len(big), "Request", "request")]


def test_an_oversize_line_is_skipped_to_the_next_line() -> None:
    opts = DissectOptions(max_payload=100)
    s = RcpStream(opts, False)
    long_line = j({"type": "response", "id": "9", "status": "ok", "result": {"x": "y" * 300}}) + b"\n"
    items: list[ProtoMessage | Problem] = []
    data = PONG + b"\n" + long_line + PONG + b"\n"
    for k in range(0, len(data), 5):
        items += s.feed(data[k : k + 5])
        assert s.buffered <= 101 + 5
    items += s.finish()
    assert [(i.offset, i.kind, i.skipped) for i in items if isinstance(i, Problem)] == [
        (0, "unexpected_jsonl", 0),
        (len(PONG) + 1, "oversize", len(long_line)),
    ]
    assert [m.offset for m in messages(items)] == [0, len(PONG) + 1 + len(long_line)]


def test_a_bad_version_and_reserved_flags_are_read_by_the_v1_layout() -> None:
    items = decode(frame(PING, version=7, flags=0x8001), from_client=True)
    assert [m.fields["version"] for m in messages(items)] == [7]
    assert severities(items) == [(0, "bad_version", "error"), (0, "reserved_flags", "error")]
    assert messages(items)[0].line.startswith(b"(rcp(Request((version 7)(flags(CRC_PRESENT 32768))")


# ---------------------------------------------------------------- payload checks


@pytest.mark.parametrize(
    ("payload", "kind", "detail"),
    [
        (b'{"a":NaN}', "bad_json", "payload is not JSON: NaN is not JSON"),
        (b'{"a":1e400}', "bad_json", "payload is not JSON: number 1e400 out of range"),
        (
            b'{"a":"\\ud800"}',
            "bad_json",
            "payload is not JSON to serde_json: a lone UTF-16 surrogate escape in a string",
        ),
        (
            b"[" * 129 + b"]" * 129,
            "bad_json",
            "payload is not JSON to serde_json: nested deeper than 128 levels (serde_json's limit)",
        ),
        (b"[" * 5000 + b"]" * 5000, "bad_json", "payload is not JSON: nested deeper than 128 levels"),
        (b'{"a":' + b"1" * 5000 + b"}", "bad_json", None),
        (
            b"\xef\xbb\xbf{}",
            "bad_json",
            "payload is not JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) at character 0",
        ),
        (b'{"a":"x\ty"}', "bad_json", "payload is not JSON: Invalid control character at character 7"),
        (
            b'{"type":"response","id":"1","status":"maybe"}',
            "bad_response",
            'response with status "maybe": neither ok nor error',
        ),
        (b'{"type":"response","id":"1","status":"error"}', "bad_response", "error response without an error object"),
        (
            b'{"type":"response","id":null,"status":"error","error":{"code":"BAD_REQUEST"}}',
            "bad_id",
            "response id is null, not a string",
        ),
        (
            b'{"type":"response","id":"1","status":"error","error":{"code":"OOPS"}}',
            "unknown_error_code",
            "unknown error code OOPS",
        ),
        (b'{"type":"event","subscription_id":"s"}', "bad_event", "event without instance_id"),
        (b'{"type":"request","op":"PING"}', "bad_id", "request without an id"),
        (b'{"type":"request","id":"1","op":7}', "bad_request", "request op is a number, not a string"),
    ],
)
def test_payload_problems(payload: bytes, kind: str, detail: str | None) -> None:
    items = decode(frame(payload))
    found = [i for i in items if isinstance(i, Problem)]
    assert [p.kind for p in found] == [kind]
    if detail is not None:
        assert found[0].detail == detail
    msg = messages(items)[0]
    assert DISSECTOR.encode(parse_one(msg.line)) == frame(payload)


def test_the_deep_nesting_walk_is_exact_at_the_limit() -> None:
    assert kinds(decode(frame(b"[" * 128 + b"]" * 128))) == [(0, "unknown_message")]
    assert (
        kinds(decode(frame(b'{"type":"request","id":"1","op":"PING","params":' + b"[" * 127 + b"]" * 127 + b"}"))) == []
    )


# ---------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("head", "answer"),
    [
        (b"", Detection.MORE),
        (b"RCP", Detection.MORE),
        (b"RCPX\x00", Detection.MORE),
        (b"RCPX\x00\x01", Detection.YES),
        (b"RCPX\x00\x02" + b"x" * 100, Detection.MORE),
        (b'{"type":"resp', Detection.MORE),
        (b'{"type":"response","id":"1","status":"ok"', Detection.MORE),
        (b'{"type":"response","id":"1","status":"ok"}\n', Detection.YES),
        # Not a start: the bytes may still hold a whole frame or line further on
        # (a capture entered part-way), up to 1 MiB.
        (b'{"type":"event","subscription_id":"s"}\n', Detection.MORE),
        (b'{"type":"response","id":"1","status":"ok"', Detection.MORE),
        (b'{"type":"request","id":"1","op":"PING"}\n', Detection.MORE),  # clients write frames only
        (b"RIPP" + b"\x00" * (1 << 20), Detection.NO),
        (b"GET / HTTP/1.1\r\n" + b"x" * 2000, Detection.MORE),
    ],
)
def test_detect(head: bytes, answer: Detection) -> None:
    assert DISSECTOR.detect(head) is answer


def test_detect_a_direction_entered_part_way() -> None:
    tail = b"...payload of a frame before the capture began"
    assert DISSECTOR.detect(tail + frame(PING)) is Detection.YES
    assert DISSECTOR.detect(tail + frame(PING, crc=5)) is Detection.MORE
    assert DISSECTOR.detect(b'"}}\n' + PONG + b"\n") is Detection.YES
    assert DISSECTOR.detect(tail + frame(b"[1]")) is Detection.MORE


# ---------------------------------------------------------------- encode


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"(ripple(Request()))", "an rcp message is (rcp(Constructor(fields...)))"),
        (
            b"(rcp(Ping((payload x))))",
            "unknown rcp constructor 'Ping' (known: Request, Response, Event, Frame, JsonLine)",
        ),
        (
            b'(rcp(Request((payload"{\\"type\\":\\"response\\"}"))))',
            "Request given, but this payload makes the frame a Response",
        ),
        (b"(rcp(Request((version 1))))", "Request needs (payload TEXT)"),
        (
            b"(rcp(Frame((payload x)(size 3))))",
            "Frame: unknown field 'size' (fields: version, flags, crc, extension, payload)",
        ),
        (b"(rcp(Frame((payload x)(payload y))))", "Frame: field 'payload' given twice"),
        (b"(rcp(Frame((version 70000)(payload x))))", "version 70000 does not fit in 16 bits"),
        (
            b"(rcp(Frame((flags(CRC STREAM))(payload x))))",
            "unknown flag 'CRC' (known: CRC_PRESENT, COMPRESSED, STREAM, END_STREAM, or an integer for reserved bits)",
        ),
        (b"(rcp(Frame((crc abc)(payload x))))", "crc 'abc' is not an integer"),
        (b"(rcp(Frame((payload(x)))))", "payload must be an atom, not a list"),
        (b'(rcp(JsonLine((json"{}\\n{}"))))', "JsonLine: the json text holds a newline, which would end the line"),
    ],
)
def test_encode_errors(text: bytes, message: str) -> None:
    with pytest.raises(EncodeError) as e:
        DISSECTOR.encode(parse_one(text))
    assert str(e.value) == message


def test_encode_fills_in_what_a_writer_computes() -> None:
    # Without (crc), the CRC is computed: an edited payload gets a right one.
    text = (
        b"(rcp(Request((version 1)(flags(CRC_PRESENT))"
        b'(payload"{\\"type\\":\\"request\\",\\"id\\":\\"1\\",\\"op\\":\\"PING\\"}"))))'
    )
    assert DISSECTOR.encode(parse_one(text)) == frame(request("1", "PING"))
    # version 1 and CRC_PRESENT are the defaults; flags may be a number; crc may be hex.
    assert DISSECTOR.encode(parse_one(b"(rcp(Frame((payload [1]))))")) == frame(b"[1]")
    assert DISSECTOR.encode(parse_one(b"(rcp(Frame((flags 4)(crc 0x10)(payload [1]))))")) == frame(
        b"[1]", flags=4, crc=16
    )
    assert DISSECTOR.encode(parse_one(b'(rcp(JsonLine((json"{}"))))')) == b"{}\n"


def test_error_response_text() -> None:
    items = decode(frame(error("4", "NOT_FOUND", "nope")))
    assert messages(items)[0].summary == "id=4 error NOT_FOUND: nope"
    assert messages(items)[0].fields["error_code"] == "NOT_FOUND"
    assert kinds(items) == []  # error responses are the analyzer's business


def test_a_larger_max_payload_decodes_above_rcps_limit_and_says_so() -> None:
    big = frame(j({"type": "request", "id": "1", "op": "PING", "params": {"x": "y" * (17 << 20)}}))
    items = decode(big, from_client=True, max_payload=32 << 20)
    assert [(m.type, m.size) for m in messages(items)] == [("Request", len(big))]
    assert [(i.offset, i.kind, i.detail) for i in items if isinstance(i, Problem)] == [
        (0, "oversize", f"payload length {len(big) - 18} above RCP's limit of 16777216")
    ]
    assert DISSECTOR.encode(messages(items)[0].text) == big
    line = j({"type": "response", "id": "1", "status": "ok", "result": {"x": "y" * (17 << 20)}})
    items = decode(line + b"\n", from_client=None, max_payload=32 << 20)
    assert [(i.offset, i.kind) for i in items if isinstance(i, Problem)] == [(0, "oversize")]
    assert DISSECTOR.encode(messages(items)[0].text) == line + b"\n"


def test_a_line_after_an_oversize_line_is_found_in_the_same_chunk() -> None:
    # Found by hypothesis: the oversize line's search stops at the limit, so
    # the newline of the line after it (in the same chunk) must still be seen.
    long_line = b'{"type":"response","id":"1","status":"ok","result":"' + b"x" * 400 + b'"}\n'
    short = b'{"type":"request","id":"2","op":"BYE"}\n'
    for chunks in ([long_line + short], bytewise(long_line + short)):
        s = RcpStream(DissectOptions(max_payload=300), True)
        items = [i for c in chunks for i in s.feed(c)] + s.finish()
        assert [(i.offset, i.kind if isinstance(i, Problem) else i.type) for i in items] == [
            (0, "oversize"),
            (len(long_line), "JsonLine"),
        ]


def test_an_oversize_lines_skip_ends_at_its_newline_even_when_a_magic_follows_it() -> None:
    # Found by hypothesis (6.170, test_rcp_fuzz.py): a frame with reserved
    # flags (no sure start) right after the over-long line's newline.  Fed
    # whole, the resync saw the magic at the same offset as the line start
    # and skipped on to the next valid frame; cut just after the newline, it
    # stopped at the line start and read that frame.  The skip must end at
    # the newline whatever the chunking.
    first = PING + b"\n"  # this direction now carries lines
    long_line = b'{"type":"request","id":"1","op":"PUT_MACHINE","params":"' + b"x" * 400 + b'"}\n'
    odd = frame(request("2", "PING"), flags=0x1819)
    good = frame(request("3", "PING"), flags=0)
    data = first + long_line + odd + good
    at_odd = len(first) + len(long_line)
    expect = [
        (0, "JsonLine"),
        (0, "unexpected_jsonl"),
        (len(first), "oversize", len(long_line)),
        (at_odd, "Request"),
        (at_odd, "reserved_flags"),
        (at_odd + len(odd), "Request"),
    ]
    after_newline = [data[:at_odd], data[at_odd:]]
    for chunks in [[data], after_newline, *chunkings(data, "oversize-then-magic")]:
        items = decode(b"", from_client=True, pieces=chunks, max_payload=300)
        got = [
            (i.offset, i.kind, i.skipped)
            if isinstance(i, Problem) and i.kind == "oversize"
            else (i.offset, i.kind if isinstance(i, Problem) else i.type)
            for i in items
        ]
        assert got == expect
