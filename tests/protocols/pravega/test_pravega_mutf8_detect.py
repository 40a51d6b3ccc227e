"""Modified UTF-8 (exact bytes both ways) and detection (strict: Pravega's
own openings say yes, other protocols' bytes say no)."""

from __future__ import annotations

import pytest
from pv_bytes import (
    SEG,
    W1,
    append_block,
    append_block_end,
    cmd,
    data_appended,
    event,
    hello,
    java_utf,
    keep_alive,
    segment_read,
    setup_append,
)
from pv_fixtures import GOLDEN

from ripple_cli.protocols.base import Detection
from ripple_cli.protocols.pravega import PravegaDissector, mutf8
from tests.conftest import EXAMPLES

YES, NO, MORE = Detection.YES, Detection.NO, Detection.MORE
detect = PravegaDissector().detect


@pytest.mark.parametrize(
    ("text", "hex_bytes"),
    [
        ("abc", "616263"),
        ("\x00", "c080"),  # NUL is two bytes, never a zero byte
        ("é", "c3a9"),
        ("\u07ff", "dfbf"),
        ("€", "e282ac"),
        ("\uffff", "efbfbf"),
        ("\U0001f600", "eda0bdedb880"),  # a surrogate pair, each half 3 bytes
        ("\ud800", "eda080"),  # a lone surrogate, as Java writes one
    ],
)
def test_modified_utf8_both_ways(text: str, hex_bytes: str) -> None:
    assert mutf8.encode(text).hex() == hex_bytes
    assert java_utf(text).hex() == hex_bytes  # the tests' own writer agrees
    d = mutf8.decode(bytes.fromhex(hex_bytes))
    assert (d.text, d.canonical, d.valid) == (text, True, True)


@pytest.mark.parametrize(
    ("hex_bytes", "text", "valid", "error"),
    [
        ("00", "\x00", True, "not the form Java writes (a raw 00 byte or an over-long sequence)"),
        ("c181", "A", True, "not the form Java writes (a raw 00 byte or an over-long sequence)"),
        ("e08081", "\x01", True, "not the form Java writes (a raw 00 byte or an over-long sequence)"),
        ("61f09f9880", "a", False, "a 4-byte UTF-8 sequence (Java never writes one) at byte 1"),
        ("6180", "a", False, "a continuation byte at byte 1"),
        ("61c3", "a", False, "bad 2-byte sequence at byte 1"),
        ("e282", "", False, "bad 3-byte sequence at byte 0"),
    ],
)
def test_modified_utf8_odd_bytes(hex_bytes: str, text: str, valid: bool, error: str) -> None:
    d = mutf8.decode(bytes.fromhex(hex_bytes))
    assert (d.text, d.canonical, d.valid, d.error) == (text, False, valid, error)


def test_atoms_of_lone_surrogates_read_back() -> None:
    assert mutf8.to_atom("x\ud800") == b"x\xed\xa0\x80"
    assert mutf8.from_atom(b"x\xed\xa0\x80") == "x\ud800"
    # A pair written as two 3-byte halves in the atom means the character.
    assert mutf8.encode(mutf8.from_atom(b"\xed\xa0\xbd\xed\xb8\x80")) == mutf8.encode("\U0001f600")


# ------------------------------------------------------------ detection


def test_hello_opens_both_directions() -> None:
    h = hello()
    assert [detect(h[:n]) for n in (0, 1, 3, 4, 7, 8, 15, 16)] == [MORE, MORE, MORE, MORE, MORE, MORE, MORE, YES]
    assert detect(hello(17, 5) + setup_append(1, W1, SEG)) is YES
    assert detect(hello(100000, 5)) is NO  # versions are small numbers
    assert detect(cmd(-127, b"\x00" * 9)) is NO  # a Hello is 8 bytes


def test_mid_stream_needs_a_clean_command_and_a_sane_next_header() -> None:
    first = setup_append(1, W1, SEG)
    assert detect(first) is MORE  # the next header decides
    assert detect(first + keep_alive()[:7]) is MORE
    assert detect(first + keep_alive()) is YES
    assert detect(first + b"GET / HTTP/1.1\r\n") is NO
    assert detect(data_appended(W1, 3, 2, 1, 9) + data_appended(W1, 4, 3, 1, 10)) is YES
    # A command without a documented layout, or an Event, cannot open a guess.
    assert detect(cmd(20, b"\x00\x01x") + keep_alive()) is NO
    assert detect(event(b"payload") + keep_alive()) is NO
    # A documented command whose body does not read, or has bytes left over.
    assert detect(cmd(7, b"\x00" * 10) + keep_alive()) is NO
    assert detect(cmd(100, b"x") + keep_alive()) is NO


def test_a_long_first_command_is_judged_on_its_leading_fields() -> None:
    big = append_block(W1, event(b"p" * 100_000))
    assert detect(big[:1000]) is MORE
    assert detect(big[: 64 << 10]) is YES
    assert detect(append_block(W1, b"\x01" * 100_000)[: 64 << 10]) is NO  # data not an Event record
    rust = append_block_end(W1, 100_008, event(b"p" * 100_000), 1, 1, 1)
    assert detect(rust[: 64 << 10]) is YES
    assert detect(rust[:28] + b"\x00\x00\x00\x00" + rust[32 : 64 << 10]) is NO  # data length disagrees
    read = segment_read(SEG, 0, event(b"p" * 100_000), rid=1)
    assert detect(read[: 64 << 10]) is YES
    assert detect(cmd(28, bytes(100_000))[: 64 << 10]) is NO


@pytest.mark.parametrize(
    "head",
    [
        b"RIPP\x01\x00\x00\x00",  # a Ripple envelope
        b"2W\x00\x00\x00\x10",  # a Lumberjack v2 window
        b"1W\x00\x00\x00\x10",
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        b'{"op":"hello"}\n',
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a TLS ClientHello
        b"\x01\x00\x01\x01",  # a 1-byte type code protocol
    ],
)
def test_other_protocols_are_not_pravega(head: str) -> None:
    assert detect(bytes(head)) is NO


def test_the_demo_stream_is_not_pravega() -> None:
    demo = (EXAMPLES / "demo.ripple").read_bytes()
    assert detect(demo[:4096]) is NO


@pytest.mark.parametrize("name", sorted(set(GOLDEN) - {"damaged", "errors", "optional", "strings", "raw"}))
def test_every_conversation_fixture_is_detected(name: str) -> None:
    assert detect(GOLDEN[name]) is YES
