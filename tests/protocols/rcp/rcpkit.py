"""Helpers for the rstmdb RCP tests: fixtures, decoding in chunks, items as JSON.

Frames are built here with struct and the crc32c package, not with the
code under test, so that a mistake in ripple's writer cannot hide one in
its reader."""

from __future__ import annotations

import json
import random
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import crc32c

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import DissectOptions, Item, ProtoMessage
from ripple_cli.protocols.rcp import RcpDissector

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden" / "protocols" / "rcp"
DISSECTOR = RcpDissector()


def frame(payload: bytes, flags: int = 1, version: int = 1, crc: int | None = None, ext: bytes = b"") -> bytes:
    """A frame's bytes, every field as given (the CRC computed unless given)."""
    if crc is None:
        crc = crc32c.crc32c(payload) if flags & 1 else 0
    return struct.pack(">4sHHHII", b"RCPX", version, flags, len(ext), len(payload), crc) + ext + payload


def j(obj: Any) -> bytes:
    """Compact JSON, as serde_json and pydantic write it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def request(rid: str, op: str, params: dict[str, Any] | None = None) -> bytes:
    body: dict[str, Any] = {"type": "request", "id": rid, "op": op}
    if params is not None:
        body["params"] = params
    return j(body)


def ok(rid: str, result: dict[str, Any]) -> bytes:
    return j({"type": "response", "id": rid, "status": "ok", "result": result})


def error(rid: str, code: str, message: str, retryable: bool = False) -> bytes:
    return j(
        {
            "type": "response",
            "id": rid,
            "status": "error",
            "error": {"code": code, "message": message, "retryable": retryable},
        }
    )


def event(sub: str, instance: str, frm: str, to: str, ev: str, wal: int = 1) -> bytes:
    return j(
        {
            "type": "event",
            "subscription_id": sub,
            "instance_id": instance,
            "machine": "order",
            "version": 1,
            "wal_offset": wal,
            "from_state": frm,
            "to_state": to,
            "event": ev,
        }
    )


def read_hex(path: Path) -> bytes:
    """A .hex fixture: hex digits, spaces and newlines ignored, `#` comments."""
    digits = "".join(line.split("#", 1)[0] for line in path.read_text().splitlines())
    return bytes.fromhex("".join(digits.split()))


def decode(
    data: bytes,
    from_client: bool | None = None,
    pieces: Iterable[bytes] | None = None,
    max_payload: int = 16 << 20,
) -> list[Item]:
    """Every item of one direction, fed in `pieces` (default: all at once)."""
    s = DISSECTOR.stream(DissectOptions(max_payload=max_payload), from_client)
    out: list[Item] = []
    for piece in pieces if pieces is not None else [data]:
        out += s.feed(piece)
    out += s.finish()
    return out


def split(data: bytes, rng: random.Random, max_piece: int = 64) -> list[bytes]:
    out = []
    at = 0
    while at < len(data):
        n = rng.randint(1, max_piece)
        out.append(data[at : at + n])
        at += n
    return out


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def item_json(item: Item) -> dict[str, Any]:
    if isinstance(item, ProtoMessage):
        return item.to_json({})
    return {
        "problem": item.kind,
        "offset": item.offset,
        "severity": str(item.severity),
        "detail": item.detail,
        "skipped": item.skipped,
    }


def jsonl(items: Sequence[Item]) -> bytes:
    return b"".join(json.dumps(item_json(i), ensure_ascii=False).encode() + b"\n" for i in items)


def messages(items: Sequence[Item]) -> list[ProtoMessage]:
    return [i for i in items if isinstance(i, ProtoMessage)]


def problems(items: Sequence[Item]) -> list[tuple[int, str]]:
    """(offset, kind) of each problem, in order."""
    return [(i.offset, i.kind) for i in items if isinstance(i, Problem)]


def texts(items: Sequence[Item]) -> list[bytes]:
    return [m.line for m in messages(items)]
