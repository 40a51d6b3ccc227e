"""The fixture streams: each a raw transcript built with pv_bytes, named for
what it shows.  GOLDEN are decoded to golden text; CLEAN pass `verify`;
VIOLATIONS each break one rule, with the problem kinds they must give."""

from __future__ import annotations

from pv_bytes import (
    NEW_WRITER,
    SEG,
    W1,
    W2,
    append_block,
    append_block_end,
    append_setup,
    auth_token_check_failed,
    cmd,
    conditional_append,
    conditional_block_end,
    conditional_check_failed,
    data_appended,
    error_message,
    event,
    hello,
    i32,
    invalid_event_number,
    keep_alive,
    no_such_segment,
    operation_unsupported,
    padding,
    partial_event,
    read_segment,
    segment_already_exists,
    segment_is_sealed,
    segment_is_truncated,
    segment_read,
    setup_append,
    utf,
    wrong_host,
)

E1, E2, E3 = event(b"trade:AAPL:100"), event(b"trade:MSFT:250"), event(b'{"sym":"NVDA","qty":7}')
E4 = event(b"\x00\x01binary\xff")

# ------------------------------------------------------------ conversations

HELLOS = hello() + hello()
SETUP = setup_append(1, W1, SEG) + append_setup(1, SEG, W1, NEW_WRITER)

# The Java client, no batching: AppendBlock(16 + n), n bytes of events,
# AppendBlockEnd(sizeOfWholeEvents = n, no data).
JAVA_SIMPLE = (
    HELLOS
    + SETUP
    + append_block(W1, E1 + E2)
    + append_block_end(W1, len(E1 + E2), b"", 2, 2, 1)
    + data_appended(W1, 2, NEW_WRITER, 1, len(E1 + E2))
    + keep_alive()
    + keep_alive()
)

# The Java client's batching case: the block length is blockSize + 8 in
# advance (blockSize 70 here).  E1 and E2 fit; E3 does not: the block ends
# with a PartialEvent of E3's first CUT bytes (what was left of the block),
# the rest of E3 goes in the AppendBlockEnd.  Then a block that times out:
# E4 and a Padding filling the rest.
BLOCK = 70
CUT = BLOCK - len(E1 + E2)
JAVA_BATCHING = (
    HELLOS
    + SETUP
    + cmd(3, W1.bytes + E1 + E2 + partial_event(E3[:CUT]), length=16 + BLOCK + 8)
    + append_block_end(W1, len(E1 + E2), E3[CUT:], 3, 3, 1)
    + data_appended(W1, 3, NEW_WRITER, 1, len(E1 + E2 + E3))
    + cmd(3, W1.bytes + E4 + padding(BLOCK - len(E4)), length=16 + BLOCK + 8)
    + append_block_end(W1, len(E4), b"", 1, 4, 1)
    + data_appended(W1, 4, 3, 1, len(E1 + E2 + E3 + E4))
)

# The Rust client: no AppendBlock, every event inline in AppendBlockEnd.
RUST = (
    HELLOS
    + setup_append(7, W2, SEG, "token-abc")
    + append_setup(7, SEG, W2, 41)
    + append_block_end(W2, len(E1 + E2 + E3), E1 + E2 + E3, 3, 44, 7)
    + data_appended(W2, 44, 41, 7, 1024)
)

CONDITIONAL = (
    HELLOS
    + SETUP
    + conditional_append(W1, 1, 0, b"first", 2)
    + data_appended(W1, 1, NEW_WRITER, 2, 13)
    + conditional_append(W1, 2, 0, b"stale", 3)
    + conditional_check_failed(W1, 2, 3)
    + conditional_block_end(W1, 3, 13, event(b"third"), 4)
    + data_appended(W1, 3, 1, 4, 26)
)

# Reads: several events in one reply; a reply that ends inside an event,
# finished by the next read at the following offset; an event spread over
# three replies.
R1 = E1 + E2 + E3
BIG = event(b"x" * 40)
READS = (
    HELLOS
    + read_segment(SEG, 0, 1 << 20, "", 10)
    + segment_read(SEG, 0, R1, at_tail=False, rid=10)
    + read_segment(SEG, len(R1), 30, "", 11)
    + segment_read(SEG, len(R1), E4 + E1[:9], rid=11)
    + segment_read(SEG, len(R1 + E4) + 9, E1[9:] + BIG[:5], rid=11)
    + segment_read(SEG, len(R1 + E4 + E1) + 5, BIG[5:30], rid=11)
    + segment_read(SEG, len(R1 + E4 + E1) + 30, BIG[30:], at_tail=True, end=True, rid=11)
)

ERRORS = (
    wrong_host(3, SEG, "segmentstore-1:12345")
    + wrong_host(3, SEG, "segmentstore-1:12345", "java.lang.IllegalStateException\n\tat X")
    + no_such_segment(4, "gone/0")
    + no_such_segment(4, "gone/0", "")
    + no_such_segment(4, "gone/0", "trace", 128)
    + segment_is_sealed(5, SEG)
    + segment_is_sealed(5, SEG, "", 4096)
    + segment_already_exists(6, SEG)
    + segment_already_exists(6, SEG, "exists")
    + segment_is_truncated(7, SEG, 512)
    + segment_is_truncated(7, SEG, 512, "trace", 100)
    + operation_unsupported(8, "mergeSegments")
    + operation_unsupported(8, "mergeSegments", "not here")
    + invalid_event_number(W1, 9)
    + invalid_event_number(W1, 9, "bad", 17)
    + auth_token_check_failed(10)
    + auth_token_check_failed(10, "expired")
    + auth_token_check_failed(10, "expired", 1)
    + error_message(11, SEG, "illegal argument", 0)
)

# Optional trailing fields, each present or absent, and bytes after them.
OPTIONAL = (
    data_appended(W1, 5)
    + data_appended(W1, 5, 4)
    + data_appended(W1, 5, 4, 99)
    + data_appended(W1, 5, 4, 99, 2048)
    + cmd(7, W1.bytes + (5).to_bytes(8, "big") + b"\x01\x02\x03")  # 3 bytes: no previousEventNumber
    + cmd(7, W1.bytes + (5).to_bytes(8, "big") + bytes(8 * 3) + b"extra")
    + append_block_end(W1, 0, E1, 1, 9)
    + conditional_append(W1, 6, 100, b"no request id")
    + conditional_check_failed(W1, 6)
    + read_segment(SEG, 0, 8)
    + segment_read(SEG, 0, b"")
    + cmd(-127, i32(17) + i32(5) + b"?")
)

STRINGS = (
    setup_append(1, W1, "nul\x00inside")
    + setup_append(2, W1, "café €5")
    + setup_append(3, W1, "emoji \U0001f600 pair")
    + setup_append(4, W1, "lone \ud800 half")
    + setup_append(5, W1, "rust \U0001f600".encode())  # 4-byte UTF-8: Java's readUTF refuses it
    + setup_append(6, W1, b"raw\x00nul")  # Java reads it, but writes C0 80
    + setup_append(7, W1, b"over\xc1\x81long")
    + setup_append(8, W1, b"cut \xe2\x82")
)

# Every code of the table without a documented layout, an unknown code,
# and the commands that only belong inside data, seen on their own.
UNDOCUMENTED_CODES = (
    -3, -4, -5, -6, 11, 12, 20, 21, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42,
    58, 59, 68, 69, 70, 71, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 90, 91,
)  # fmt: skip
RAW = (
    b"".join(cmd(code, utf(SEG) + bytes((code & 0xFF,))) for code in UNDOCUMENTED_CODES)
    + cmd(6, b"six")
    + cmd(-100, b"")
    + padding(5)
    + cmd(-1, b"\x00\x07\x00")
    + partial_event(E1[:5])
    + event(b"on its own")
    + segment_read(SEG, 0, b"")[:-6]
    + b"\x02\x00"
    + i32(0)  # at_tail byte 2
    + cmd(1, b"\x00\x00\x00\x01short")  # a SetupAppend body that does not fit
    + cmd(10, utf(SEG) + bytes(10) + i32(-1))  # a negative data length
)

# Odd framing: garbage before the first header, a header no command has,
# then a command cut by the end of the stream.
DAMAGED = b"GARBAGE!" + hello() + b"\x7f\xff\xff\xff\x00\x00\x00\x00" + keep_alive() + hello()[:11]

# One connection, request by request (what the client sends, then what the
# server answers): the batching appends and a read.
PRAVEGA_STEPS = [
    (hello(), hello()),
    (setup_append(1, W1, SEG), append_setup(1, SEG, W1, NEW_WRITER)),
    (
        cmd(3, W1.bytes + E1 + E2 + partial_event(E3[:CUT]), length=16 + BLOCK + 8)
        + append_block_end(W1, len(E1 + E2), E3[CUT:], 3, 3, 1),
        data_appended(W1, 3, NEW_WRITER, 1, len(E1 + E2 + E3)),
    ),
    (
        cmd(3, W1.bytes + E4 + padding(BLOCK - len(E4)), length=16 + BLOCK + 8)
        + append_block_end(W1, len(E4), b"", 1, 4, 1),
        data_appended(W1, 4, 3, 1, len(E1 + E2 + E3 + E4)),
    ),
    (read_segment(SEG, 0, 1 << 20, "", 2), segment_read(SEG, 0, E1 + E2 + E3 + E4, at_tail=True, rid=2)),
    (keep_alive(), keep_alive()),
]
PRAVEGA_CLIENT = b"".join(c for c, _s in PRAVEGA_STEPS)
PRAVEGA_SERVER = b"".join(s for _c, s in PRAVEGA_STEPS)

GOLDEN = {
    "java-simple": JAVA_SIMPLE,
    "java-batching": JAVA_BATCHING,
    "rust": RUST,
    "conditional": CONDITIONAL,
    "reads": READS,
    "errors": ERRORS,
    "optional": OPTIONAL,
    "strings": STRINGS,
    "raw": RAW,
    "damaged": DAMAGED,
}

CLEAN = {
    "java-simple": JAVA_SIMPLE,
    "java-batching": JAVA_BATCHING,
    "rust": RUST,
    "conditional": CONDITIONAL,
    "reads": READS,
}

# ------------------------------------------------------------ rule breakers

S12 = len(E1 + E2)
ACKED_2 = data_appended(W1, 2, NEW_WRITER, 1, S12)
SIMPLE_BLOCK = append_block(W1, E1 + E2) + append_block_end(W1, S12, b"", 2, 2, 1)
NOT_AN_EVENT = cmd(7, b"not an event")

VIOLATIONS: dict[str, tuple[bytes, list[str]]] = {
    "no_hello": (SETUP + SIMPLE_BLOCK + ACKED_2, ["no_hello", "no_hello"]),
    "bad_version_range": (hello(6, 10) + hello(), ["bad_version_range"]),
    "version_mismatch": (hello(4, 2) + hello(), ["version_mismatch"]),
    "not_closed": (hello(4, 2) + hello() + append_setup(1, SEG, W1), ["version_mismatch", "not_closed"]),
    "setup_missing": (HELLOS + SIMPLE_BLOCK + ACKED_2, ["setup_missing"]),
    "block_interrupted": (
        HELLOS + SETUP + append_block(W1, E1 + E2) + keep_alive() + append_block_end(W1, S12, b"", 2, 2, 1) + ACKED_2,
        ["block_interrupted"],
    ),
    "block_writer_mismatch": (
        HELLOS
        + SETUP
        + setup_append(2, W2, SEG)
        + append_setup(2, SEG, W2)
        + append_block(W1, E1 + E2)
        + append_block_end(W2, S12, b"", 2, 2, 2)
        + data_appended(W2, 2, NEW_WRITER, 2, S12),
        ["block_writer_mismatch"],
    ),
    "block_unfinished": (HELLOS + SETUP + append_block(W1, E1 + E2), ["block_unfinished"]),
    "bad_num_events": (
        HELLOS + SETUP + append_block(W1, E1) + append_block_end(W1, len(E1), b"", 0, 2, 1) + ACKED_2,
        ["bad_num_events"],
    ),
    "bad_block_size": (
        HELLOS + SETUP + append_block(W1, E1 + E2) + append_block_end(W1, S12 + 1, b"", 2, 2, 1) + ACKED_2,
        ["bad_block_size"],
    ),
    "bad_block_tail": (
        HELLOS
        + SETUP
        + append_block(W1, E1 + E2 + partial_event(E3[:4]))
        + append_block_end(W1, len(E1), E3[4:], 3, 3, 1)
        + data_appended(W1, 3, NEW_WRITER, 1, S12 + len(E3)),
        ["bad_block_tail"],
    ),
    "padding_with_data": (
        HELLOS + SETUP + append_block(W1, E1 + padding(20)) + append_block_end(W1, len(E1), E2, 2, 2, 1) + ACKED_2,
        ["padding_with_data"],
    ),
    "event_count_mismatch": (
        HELLOS + SETUP + append_block(W1, E1 + E2) + append_block_end(W1, S12, b"", 5, 2, 1) + ACKED_2,
        ["event_count_mismatch"],
    ),
    "event_number_backwards": (
        HELLOS + SETUP + SIMPLE_BLOCK + append_block_end(W1, 0, E3, 1, 1, 1) + ACKED_2,
        ["event_number_backwards"],
    ),
    "event_number_repeated": (
        HELLOS + SETUP + conditional_append(W1, 2, 0, b"a", 1) + conditional_append(W1, 2, 9, b"b", 1) + ACKED_2,
        ["event_number_repeated"],
    ),
    "bad_event_type": (
        HELLOS
        + SETUP
        + append_block(W1, E1 + NOT_AN_EVENT)
        + append_block_end(W1, len(E1 + NOT_AN_EVENT), b"", 1, 2, 1)
        + ACKED_2,
        ["bad_event_type"],
    ),
    "bad_event_data": (
        HELLOS + SETUP + append_block_end(W1, 30, E1 + E2[:10], 2, 2, 1) + ACKED_2,
        ["bad_event_data", "event_count_mismatch"],
    ),
    "misplaced_command": (HELLOS + SETUP + event(b"alone"), ["misplaced_command"]),
    "ack_unknown_event": (
        HELLOS + SETUP + SIMPLE_BLOCK + ACKED_2 + data_appended(W1, 9, 2, 1, 99),
        ["ack_unknown_event"],
    ),
    "ack_backwards": (
        HELLOS + SETUP + SIMPLE_BLOCK + ACKED_2 + data_appended(W1, 1, 2, 1, len(E1)),
        ["ack_backwards"],
    ),
    "ack_previous_mismatch": (
        HELLOS + SETUP + SIMPLE_BLOCK + data_appended(W1, 2, 0, 1, 56),
        ["ack_previous_mismatch"],
    ),
    "unacked_events": (
        HELLOS + SETUP + SIMPLE_BLOCK + conditional_append(W1, 3, 56, b"late", 1) + ACKED_2,
        ["unacked_events"],
    ),
}

# The decoder's own problems, which verify counts too.
STREAM_VIOLATIONS: dict[str, tuple[bytes, list[str]]] = {
    "bad_header": (HELLOS + b"\x12\x34\x56\x78junk" + keep_alive(), ["bad_header"]),
    "too_large": (HELLOS + cmd(3, b"", length=0x00FFFFF8) + keep_alive(), ["too_large"]),
    "truncated": (HELLOS + keep_alive()[:5], ["truncated"]),
    "unknown_type": (HELLOS + cmd(99, b"?"), ["unknown_type"]),
    "bad_body": (HELLOS + cmd(2, b"\x00" * 9), ["bad_body"]),
    "bad_string": (HELLOS + setup_append(1, W1, b"\xff") + append_setup(1, "x", W1), ["bad_string"]),
    "bad_bool": (HELLOS + segment_read(SEG, 0, b"")[:-6] + b"\x05\x00" + i32(0), ["bad_bool"]),
    "trailing_bytes": (HELLOS + keep_alive()[:7] + b"\x01!", ["trailing_bytes"]),
    "nonzero_padding": (HELLOS + cmd(-1, b"\x01"), ["nonzero_padding"]),
}

WARNINGS = frozenset(
    (
        "no_hello",
        "bad_version_range",
        "event_count_mismatch",
        "ack_previous_mismatch",
        "bad_bool",
        "trailing_bytes",
        "nonzero_padding",
    )
)
