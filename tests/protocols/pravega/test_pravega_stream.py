"""The stream decoder: framing, resynchronisation, holes, size bounds, the
joins of cut events, and the encoder's refusals."""

from __future__ import annotations

import pytest
from pv_bytes import (
    DISSECTOR,
    SEG,
    W1,
    W2,
    append_block,
    append_block_end,
    cmd,
    data_appended,
    decode,
    event,
    hello,
    keep_alive,
    lines,
    partial_event,
    segment_read,
    setup_append,
)

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import DissectOptions, EncodeError, ProtoMessage
from ripple_cli.protocols.pravega.stream import PravegaStream
from ripple_cli.sexp.parse import parse_one
from tests.protocols.dissector_kit import feed_all, messages, problems

KA = b"(pravega(KeepAlive()))"
HELLO = b"(pravega(Hello((high_version 17)(low_version 5))))"


def described(items: list[ProtoMessage | Problem]) -> list[str]:
    return [p.describe() if isinstance(p, Problem) else p.line.decode() for p in items]


def test_garbage_between_commands_is_skipped_to_the_next_header() -> None:
    # A code outside -127..127 cannot start a command; the scan looks for
    # 00 00 00 / FF FF FF prefixes and takes the first known code with a
    # sane length (the zero run inside the garbage is an Event code: no).
    data = hello() + b"\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00\x05xyz" + keep_alive()
    assert described(decode([data])) == [
        HELLO.decode(),
        "offset 16: not a command header (type 16909060, length 0); skipped 15 bytes to offset 31",
        KA.decode(),
    ]


def test_negative_length_is_a_bad_header() -> None:
    data = cmd(100, b"", length=-5) + keep_alive()
    assert described(decode([data])) == [
        "offset 0: not a command header (type 100, length -5); skipped 8 bytes to offset 8",
        KA.decode(),
    ]


def test_a_frame_over_16_mib_is_too_large_and_skipped_by_scanning() -> None:
    data = cmd(3, b"", length=0x00FFFFF8) + hello()
    items = decode([data])
    assert [(p.kind, p.offset, p.skipped) for p in problems(items)] == [("too_large", 0, 8)]
    assert (
        problems(items)[0].detail == "an AppendBlock header with length 16777208: above the 16777215-byte frame limit"
    )
    assert [m.type for m in messages(items)] == ["Hello"]


def test_the_largest_legal_frame_decodes() -> None:
    # 8 + 16777207 = 16777215 bytes: the limit itself.
    body = W1.bytes + event(b"z" * (0x00FFFFFF - 8 - 16 - 8))
    items = decode([cmd(3, body)])
    assert problems(items) == []
    assert messages(items)[0].size == 0x00FFFFFF
    assert messages(items)[0].fields["data"]["event_count"] == 1


def test_above_max_payload_the_body_is_passed_over_unbuffered() -> None:
    big = append_block(W1, event(b"e" * 100_000))
    data = hello() + big + keep_alive()
    s = PravegaStream(DissectOptions(max_payload=1000), None)
    out = []
    for at in range(0, len(data), 4096):
        out += s.feed(data[at : at + 4096])
        assert s.buffered <= 8 + 1000
    out += s.finish()
    assert described(out) == [
        HELLO.decode(),
        "offset 16: an AppendBlock of 100032 bytes, above --max-payload 1000: passed over; "
        "skipped 100032 bytes to offset 100048",
        KA.decode(),
    ]


def test_truncated_header_and_body() -> None:
    assert described(decode([keep_alive()[:5]])) == ["offset 0: the stream ends 5 bytes into a command header"]
    assert described(decode([hello() + hello()[:12]])) == [
        HELLO.decode(),
        "offset 16: the stream ends 12 bytes into a Hello of 16 bytes",
    ]


def run(pieces: list[bytes | int], max_payload: int = 16 << 20) -> list[str]:
    """Bytes and holes (an int: that many bytes lost) through one decoder."""
    return described(feed_all(PravegaStream(DissectOptions(max_payload=max_payload), None), pieces))


def test_a_hole_inside_a_command_loses_it_but_keeps_the_framing() -> None:
    # The header was read: its length says where the next command starts.
    block = append_block(W1, event(b"a" * 50))
    assert run([hello(), block[:30], 10, block[40:], keep_alive()]) == [
        HELLO.decode(),
        "offset 16: 10 bytes missing from the stream at offset 46: the AppendBlock of 82 bytes there is lost; "
        "skipped 82 bytes to offset 98",
        KA.decode(),
    ]


def test_a_hole_ending_with_the_command_keeps_the_framing() -> None:
    block = append_block(W1, event(b"a" * 50))
    assert run([hello(), block[:30], len(block) - 30, keep_alive()]) == [
        HELLO.decode(),
        "offset 16: 52 bytes missing from the stream at offset 46: the AppendBlock of 82 bytes there is lost; "
        "skipped 82 bytes to offset 98",
        KA.decode(),
    ]


def test_a_hole_at_a_boundary_resynchronises() -> None:
    assert run([hello(), 16, keep_alive()]) == [
        HELLO.decode(),
        "offset 16: 16 bytes missing from the stream at offset 16; skipped 16 bytes to offset 32",
        KA.decode(),
    ]


def test_a_hole_past_the_end_of_a_command_resynchronises() -> None:
    block = append_block(W1, event(b"a" * 50))
    assert run([hello(), block[:30], 60, b"\x00tail of something", keep_alive()]) == [
        HELLO.decode(),
        "offset 16: 60 bytes missing from the stream at offset 46; skipped 108 bytes to offset 124",
        KA.decode(),
    ]


def test_a_hole_while_passing_over_a_large_body() -> None:
    big = append_block(W1, event(b"e" * 5000))
    assert run([big[:100], 1000, big[1100:], keep_alive()], max_payload=1000) == [
        "offset 0: an AppendBlock of 5032 bytes, above --max-payload 1000: passed over; "
        "skipped 5032 bytes to offset 5032",
        "offset 100: 1000 bytes missing from the stream at offset 100, inside the body being passed over",
        KA.decode(),
    ]


def test_a_hole_forgets_the_partial_event() -> None:
    e3 = event(b"the cut event")
    block = append_block(W1, event(b"one") + partial_event(e3[:10]))
    end = append_block_end(W1, 11, e3[10:], 2, 2, 1)
    joined = run([block, end])
    assert "completes_partial_event" in joined[-1]
    after_hole = run([block, 0, end])
    assert "completes_partial_event" not in after_hole[-1]
    assert after_hole[-1].endswith(
        '(data((Fragment"e cut event")))(num_events 2)(last_event_number 2)(request_id 1))))'
    )


def test_a_partial_event_holding_whole_events_and_a_part() -> None:
    # A writeEvents batch is one append: its cut can fall after whole
    # events of it, so the PartialEvent holds two whole events and the
    # start of a third.
    batch = event(b"b1") + event(b"b2") + event(b"b3-longer")
    block = append_block(W1, event(b"a") + partial_event(batch[:30]))
    end = append_block_end(W1, 9, batch[30:], 4, 4, 1)
    out = lines(block + end)
    assert (
        out[1]
        == (
            f"(pravega(AppendBlockEnd((writer_id {W1})(size_of_whole_events 9)(data((Continuation -longer)))"
            "(num_events 4)(last_event_number 4)(request_id 1)"
            "(completes_partial_event((Event b1)(Event b2)(Event b3-longer))))))"
        ).encode()
    )


def test_a_partial_event_then_more_whole_events_in_the_block_end() -> None:
    e = event(b"cut-in-two")
    block = append_block(W1, partial_event(e[:3]))
    end = append_block_end(W1, 0, e[3:] + event(b"next"), 2, 2, 1)
    assert b'(data((Continuation"\\000\\000\\000\\000\\ncut-in-two")(Event next)))' in lines(block + end)[1]
    assert b"(completes_partial_event((Event cut-in-two)))" in lines(block + end)[1]


def test_no_join_across_writers_or_other_commands() -> None:
    e = event(b"cut")
    block = append_block(W1, partial_event(e[:4]))
    other_writer = lines(block + append_block_end(W2, 0, e[4:], 1, 1, 1))[1]
    assert b"completes_partial_event" not in other_writer and b"Fragment" in other_writer
    interrupted = lines(block + keep_alive() + append_block_end(W1, 0, e[4:], 1, 1, 1))[2]
    assert b"completes_partial_event" not in interrupted
    # A reply between them (a raw transcript of both sides) does not break the join.
    with_reply = lines(block + data_appended(W1, 0) + append_block_end(W1, 0, e[4:], 1, 1, 1))[2]
    assert b"(completes_partial_event((Event cut)))" in with_reply


def test_a_read_at_another_offset_is_not_joined() -> None:
    e = event(b"0123456789")
    first = segment_read(SEG, 0, e[:12])
    assert b"completes_event" in lines(first + segment_read(SEG, 12, e[12:]))[1]
    elsewhere = lines(first + segment_read(SEG, 500, e[12:]))[1]
    assert b"completes_event" not in elsewhere and b"(Fragment" in elsewhere
    other_segment = lines(first + segment_read("other", 12, e[12:]))[1]
    assert b"completes_event" not in other_segment


def test_held_bytes_are_bounded() -> None:
    # Cut reads of many segments: only the most recent are remembered.
    s = PravegaStream(DissectOptions(max_payload=1 << 20), None)
    for k in range(200):
        s.feed(segment_read(f"s{k}", 0, event(b"q" * 100)[:50]))
    assert len(s._reads) == 64
    assert s.held == 64 * 50


def test_direction_of_commands_both_sides_send() -> None:
    for from_client, expected in ((True, "request"), (False, "reply"), (None, None)):
        ms = messages(decode([hello() + keep_alive()], from_client=from_client))
        assert [m.direction for m in ms] == [expected, expected]
    assert messages(decode([setup_append(1, W1, SEG)], from_client=False))[0].direction == "request"


# ------------------------------------------------------------ encode


def encode(text: str) -> bytes:
    return DISSECTOR.encode(parse_one(text.encode()))


def test_encode_writes_the_header_from_the_body() -> None:
    assert encode("(pravega(Hello((high_version 17)(low_version 5))))").hex() == "ffffff81000000080000001100000005"
    assert encode("(pravega(KeepAlive()))").hex() == "0000006400000000"
    assert encode("(pravega(Padding((length 3))))").hex() == "ffffffff00000003000000"
    assert encode("(pravega(Unknown((type 6)(body AB))))").hex() == "00000006000000024142"
    # Fields may come in any order; the derived fields are not written.
    assert encode(
        f"(pravega(AppendBlockEnd((size_of_whole_events 0)(writer_id {W1})(data((Continuation x)))"
        "(completes_partial_event((Event x)))(num_events 1)(last_event_number 2))))"
    ) == append_block_end(W1, 0, b"x", 1, 2)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("(ripple(Hello()))", "expected (pravega(Name(fields...)))"),
        ("(pravega(Nope()))", "unknown command name Nope"),
        ("(pravega(Hello((high_version 17))))", "Hello: missing field low_version"),
        ("(pravega(Hello((high_version 1)(high_version 2)(low_version 0))))", "Hello: field high_version given twice"),
        ("(pravega(Hello((high_version 1)(low_version 0)(colour red))))", "Hello: unknown field(s) colour"),
        ("(pravega(Hello((high_version 2147483648)(low_version 0))))", "Hello.high_version: 2147483648 does not fit"),
        ("(pravega(Hello((high_version x)(low_version 0))))", "Hello.high_version: not an integer"),
        ('(pravega(Unknown((type 100)(body""))))', "type 100 is KeepAlive, not Unknown"),
        ("(pravega(Unknown((type 6))))", "Unknown needs a (body ...) field"),
        ("(pravega(CreateSegment()))", "CreateSegment has no documented layout: give its bytes as (body ...)"),
        ("(pravega(Padding((length -1))))", "Padding length is negative"),
        ("(pravega(DataAppended((writer_id 1)(event_number 1))))", "DataAppended.writer_id: not a UUID"),
        (
            f"(pravega(DataAppended((writer_id {W1})(event_number 1)(request_id 4))))",
            "DataAppended: these fields would not read back as given; the bytes read as "
            f"(pravega(DataAppended((writer_id {W1})(event_number 1)(previous_event_number 4))))",
        ),
        (
            f"(pravega(DataAppended((writer_id {W1})(event_number 1)(trailing 12345678))))",
            "DataAppended: these fields would not read back as given",
        ),
        (
            f'(pravega(SetupAppend((request_id 1)(writer_id {W1})(segment {"s" * 65536})(delegation_token""))))',
            "SetupAppend.segment: 65536 bytes, more than writeUTF's 65535",
        ),
        (
            f'(pravega(SetupAppend((request_id 1)(writer_id {W1})(segment"\\255")(delegation_token""))))',
            "SetupAppend.segment: not UTF-8 text; give the exact bytes as (raw ...)",
        ),
        (f"(pravega(AppendBlock((writer_id {W1})(data((Blob x))))))", "AppendBlock.data: unknown record kind Blob"),
        (  # found by fuzzing: a ValueError (exit 70) before
            f"(pravega(ConditionalAppend((writer_id {W1})(event_number 1)(expected_offset 0)"
            + '(event(Continuation"'
            + "\\000" * 16
            + '"))(request_id 2))))',
            "ConditionalAppend.event: its bytes read as 2 records, not the one record an event is",
        ),
        (  # 2 GiB of zeros built in memory before (4.2 GB), then exit 70 inside a block
            "(pravega(Padding((length 2147483647))))",
            "Padding length 2147483647 is above a command's largest body, 16777207 bytes",
        ),
    ],
)
def test_encode_refuses(text: str, message: str) -> None:
    with pytest.raises(EncodeError) as e:
        encode(text)
    assert str(e.value).startswith(message)


def test_a_raw_string_and_a_command_record_encode_as_given() -> None:
    text = f'(pravega(SetupAppend((request_id 1)(writer_id {W1})(segment(raw"\\255"))(delegation_token""))))'
    assert encode(text) == setup_append(1, W1, b"\xff")
    block = f"(pravega(AppendBlock((writer_id {W1})(data((Command((type 7)(body hi))))))))"
    assert encode(block) == append_block(W1, cmd(7, b"hi"))
