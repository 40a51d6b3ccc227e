"""One damaged record does not stop a capture: the readers resynchronize
at the next plausible pcap record or pcapng block, with one note naming the
offset and the bytes skipped; every intact record after it is read."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest

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
