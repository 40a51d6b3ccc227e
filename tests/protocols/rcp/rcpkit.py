"""Helpers for the rstmdb RCP tests: message builders, decoding one direction.
What every protocol's tests use is in tests/protocols/dissector_kit.py.

Frames are built here with struct and the crc32c package, not with the
code under test, so that a mistake in ripple's writer cannot hide one in
its reader."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from typing import Any

import crc32c

from ripple_cli.protocols.base import DissectOptions, Item
from ripple_cli.protocols.rcp import RcpDissector
from tests.conftest import GOLDEN as GOLDEN_ROOT
from tests.protocols.dissector_kit import feed_all

GOLDEN = GOLDEN_ROOT / "protocols" / "rcp"
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


def decode(
    data: bytes,
    from_client: bool | None = None,
    pieces: Iterable[bytes] | None = None,
    max_payload: int = 16 << 20,
) -> list[Item]:
    """Every item of one direction, fed in `pieces` (default: all at once)."""
    stream = DISSECTOR.stream(DissectOptions(max_payload=max_payload), from_client)
    return feed_all(stream, [data] if pieces is None else pieces)
