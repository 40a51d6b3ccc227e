"""One damaged record does not stop a capture: the readers resynchronize
at the next plausible pcap record or pcapng block, with one note naming the
offset and the bytes skipped; every intact record after it is read."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest
from mutate import pcap_bytes

from ripple_cli.capture.events import CaptureNote
from ripple_cli.capture.pcapfile import read_pcap, read_pcapng
from tests.capture.capkit import Capture
from tests.capture.test_pcapfile import _block, _epb, _idb, _records, _shb
from tests.conftest import EXAMPLES, run_cli


def _frames_and_notes(items: list[object]) -> tuple[list[tuple[int, bytes]], list[CaptureNote]]:
    frames = [(r[0], r[2]) for r in items if isinstance(r, tuple)]
    return frames, [r for r in items if isinstance(r, CaptureNote)]


def _pcap(records: list[tuple[int, bytes]]) -> tuple[bytearray, list[int]]:
    """A microsecond pcap of the records, and each record's offset."""
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
    offsets = []
    for t, frame in records:
        offsets.append(len(out))
        sec, ns = divmod(t, 1_000_000_000)
        out += struct.pack("<IIII", sec, ns // 1000, len(frame), len(frame)) + frame
    return out, offsets


def _read(data: bytes) -> tuple[list[tuple[int, bytes]], list[CaptureNote]]:
    return _frames_and_notes(list(read_pcap(io.BytesIO(bytes(data[4:])), bytes(data[:4]))))


@pytest.mark.parametrize("which", [1, 7, -2])
def test_pcap_record_with_a_huge_length_is_skipped(lo_capture: Capture, which: int) -> None:
    records = _records(lo_capture)
    data, offsets = _pcap(records)
    k = which % len(records)
    struct.pack_into("<I", data, offsets[k] + 8, 10**7)
    frames, notes = _read(data)
    assert frames == records[:k] + records[k + 1 :]
    skipped = 16 + len(records[k][1])
    assert [(n.kind, n.error, n.detail) for n in notes] == [
        (
            "bad_capture",
            True,
            f"bad pcap record at offset {offsets[k]}: length 10000000 is more than 262144; "
            f"skipped {skipped} bytes to the next plausible record at offset {offsets[k] + skipped}",
        )
    ]


def test_pcap_record_with_a_short_length_loses_only_itself(lo_capture: Capture) -> None:
    """A caplen a little short: that frame comes out cut, the next header
    read in the wrong place is implausible, and reading resumes at the real
    next record."""
    records = _records(lo_capture)
    data, offsets = _pcap(records)
    k = next(i for i, (_t, f) in enumerate(records) if len(f) > 200)
    struct.pack_into("<I", data, offsets[k] + 8, len(records[k][1]) - 100)
    frames, notes = _read(data)
    assert frames[:k] == records[:k] and frames[k + 1 :] == records[k + 1 :]
    assert len(notes) == 1 and notes[0].error
    assert f"to the next plausible record at offset {offsets[k + 1]}" in notes[0].detail


def test_pcap_garbage_to_the_end_is_one_note(lo_capture: Capture) -> None:
    records = _records(lo_capture)[:5]
    data, _offsets = _pcap(records)
    data += b"\xff" * 5000
    frames, notes = _read(data)
    assert frames == records
    assert [n.detail for n in notes] == [
        f"bad pcap record at offset {len(data) - 5000}: length 4294967295 is more than 262144; "
        "no plausible record after it: the rest of the file is skipped"
    ]


def test_pcap_garbage_longer_than_the_scan_window_is_crossed(lo_capture: Capture) -> None:
    """1.5 MB of garbage between two records, past the two windows the scan
    keeps in memory at a time (this once looped for ever)."""
    records = _records(lo_capture)[:8]
    data, offsets = _pcap(records)
    data = data[: offsets[4]] + b"\xff" * 1_500_000 + data[offsets[4] :]
    frames, notes = _read(data)
    assert frames == records
    assert [n.detail for n in notes] == [
        f"bad pcap record at offset {offsets[4]}: length 4294967295 is more than 262144; "
        f"skipped 1500000 bytes to the next plausible record at offset {offsets[4] + 1_500_000}"
    ]


def _pcapng(records: list[tuple[int, bytes]], comment: bytes = b"lo") -> tuple[bytearray, list[int]]:
    out = bytearray(_shb("<") + _idb("<", 1, [(1, comment), (9, b"\x09")]))
    offsets = []
    for t, frame in records:
        offsets.append(len(out))
        out += _epb("<", 0, t, frame)
    return out, offsets


def _read_ng(data: bytes) -> tuple[list[tuple[int, bytes]], list[CaptureNote]]:
    return _frames_and_notes(list(read_pcapng(io.BytesIO(bytes(data)))))


@pytest.mark.parametrize(
    ("field", "value", "cause"),
    [
        (4, 0, "length 0"),
        (4, 70, "length 70"),
        (-4, 12345, "differ"),
    ],
)
def test_pcapng_damaged_block_is_skipped(lo_capture: Capture, field: int, value: int, cause: str) -> None:
    records = _records(lo_capture)[:30]
    data, offsets = _pcapng(records)
    k = 11
    at = offsets[k] + field if field >= 0 else offsets[k + 1] + field
    struct.pack_into("<I", data, at, value)
    frames, notes = _read_ng(data)
    assert frames == records[:k] + records[k + 1 :]
    assert len(notes) == 1 and notes[0].error
    assert notes[0].detail.startswith(f"bad pcapng block at offset {offsets[k]}: ") and cause in notes[0].detail
    assert notes[0].detail.endswith(
        f"skipped {offsets[k + 1] - offsets[k]} bytes to the next plausible record at offset {offsets[k + 1]}"
    )


def test_pcapng_interface_comment_not_utf8_is_read(lo_capture: Capture) -> None:
    records = _records(lo_capture)[:30]
    data, _offsets = _pcapng(records, comment=b"\xff\xfe caf\xe9")
    frames, notes = _read_ng(data)
    assert frames == records and notes == []


def test_pcapng_custom_blocks_are_not_damage(lo_capture: Capture) -> None:
    records = _records(lo_capture)[:4]
    data, _offsets = _pcapng(records)
    data += _block("<", 0xBAD, b"\x00\x00\x00\x01 vendor data")
    frames, notes = _read_ng(data)
    assert frames == records and notes == []


def test_decode_of_a_damaged_capture_keeps_every_message(tmp_path: Path, lo_capture: Capture) -> None:
    """A record without payload (an ACK) damaged: every message of the
    demo stream still decodes; one problem line names the file and offset."""
    records = _records(lo_capture)
    data, offsets = _pcap(records)
    k = next(i for i, (_t, f) in enumerate(records) if len(f) == 66 and i > 10)  # an ACK on lo: 14+20+32 bytes
    struct.pack_into("<I", data, offsets[k] + 8, 10**7)
    path = tmp_path / "damaged.pcap"
    path.write_bytes(data)
    port = str(lo_capture.server_port)
    whole = run_cli(["decode", "--schemas", str(EXAMPLES / "schemas"), "--port", port, str(lo_capture.path)])
    res = run_cli(["decode", "--schemas", str(EXAMPLES / "schemas"), "--port", port, str(path)])
    assert res.code == 1
    assert res.stdout == whole.stdout and res.stdout.count(b"\n") >= 300
    bad = [line for line in res.stderr.splitlines() if "bad pcap record" in line]
    assert bad == [
        f"ripple: {path}: error: bad pcap record at offset {offsets[k]}: length 10000000 is more than 262144; "
        f"skipped 82 bytes to the next plausible record at offset {offsets[k] + 82}"
    ]


@pytest.mark.parametrize("dropped", [1, 2, 3, 4, 5, 7, 1448])
def test_pcapng_bytes_dropped_resume_off_the_four_byte_grid(lo_capture: Capture, dropped: int) -> None:
    """Bytes lost from the middle of a block shift every block after it off
    its 4-byte grid: reading resumes at the next block wherever it lies."""
    records = _records(lo_capture)[:30]
    data, offsets = _pcapng(records)
    k = next(i for i, (_t, f) in enumerate(records) if len(f) > dropped + 40 and i > 5)
    cut = offsets[k] + 30
    data = data[:cut] + data[cut + dropped :]
    frames, notes = _read_ng(data)
    assert frames == records[:k] + records[k + 1 :]
    resumed = offsets[k + 1] - dropped
    assert [n.detail.split("; ")[1] for n in notes] == [
        f"skipped {resumed - offsets[k]} bytes to the next plausible record at offset {resumed}"
    ]


def test_pcapng_long_garbage_is_crossed(lo_capture: Capture) -> None:
    """Megabytes of garbage between two blocks: one note, every block after
    it read (the candidates are found by a pattern, not one call a byte)."""
    records = _records(lo_capture)[:30]
    data, offsets = _pcapng(records)
    junk = bytes(range(7, 250)) * 20_000  # 4.9 MB; no known block type in either byte order
    data = data[: offsets[10]] + junk + data[offsets[10] :]
    frames, notes = _read_ng(data)
    assert frames == records
    assert [n.detail for n in notes] == [
        f"bad pcapng block at offset {offsets[10]}: length {int.from_bytes(junk[4:8], 'little')}; "
        f"skipped {len(junk)} bytes to the next plausible record at offset {offsets[10] + len(junk)}"
    ]


@pytest.mark.parametrize(("order", "nano"), [("<", False), (">", True)])
def test_pcaps_joined_by_cat_are_read_on(lo_capture: Capture, order: str, nano: bool) -> None:
    """`cat a.pcap b.pcap`: the second file's header is a warning, and its
    records are read by it (its byte order, resolution and link type)."""
    records = _records(lo_capture)
    first, _offsets = _pcap(records[:20])
    second = pcap_bytes(records[20:], 1, order, nano)
    frames, notes = _read(first + second)
    assert frames == records
    assert [(n.kind, n.error, n.detail) for n in notes] == [
        ("pcap_header", False, f"another pcap file header at offset {len(first)} (files joined?): read on with it")
    ]


def test_verify_of_pcaps_joined_by_cat_counts_both(tmp_path: Path, lo_capture: Capture) -> None:
    """Two different captures joined: every message of both is checked."""
    first, second = lo_capture.path.read_bytes(), (EXAMPLES / "workers.pcap").read_bytes()
    joined = tmp_path / "joined.pcap"
    joined.write_bytes(first + second)

    def messages(path: Path) -> int:
        res = run_cli(["verify", "--schemas", str(EXAMPLES / "schemas"), str(path)])
        return int(res.stdout.decode().split("\nverify: ")[1].split(", ")[1].split()[0])

    each = messages(lo_capture.path), messages(EXAMPLES / "workers.pcap")
    assert min(each) > 100 and messages(joined) == sum(each)
    res = run_cli(["verify", "--schemas", str(EXAMPLES / "schemas"), str(joined)])
    note = f"  warning: pcap_header: another pcap file header at offset {len(first)} (files joined?): read on with it"
    assert note in res.stdout.decode().splitlines(), res.stdout
