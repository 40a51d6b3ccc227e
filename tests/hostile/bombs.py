"""Hostile inputs built from the codec's own writers: small streams whose
naive decoding costs far more than their size (issue 15)."""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ripple_cli.codec import binprot as bp
from ripple_cli.codec.envelope import build_envelope
from ripple_cli.codec.messages import DELTA, HANDSHAKE, Handshake, write_payload
from ripple_cli.codec.schema import INT, Field, FieldType, ListOf, RecordOf, Schema

ROOT = Path(__file__).resolve().parents[2]
HANDSHAKE_FP = b"ripple.handshake/v1"
EMPTY = RecordOf(())  # a record of no fields: zero bytes on the wire
LIMIT_AS = 1 << 30  # the address space a hostile run gets


def handshake(schemas: list[Schema], seq: int = 1) -> bytes:
    body = Handshake(b"w", tuple((s.name, s) for s in schemas), 1)
    return build_envelope(HANDSHAKE, seq, 0, HANDSHAKE_FP, write_payload(body))


def delta(schema: Schema, key: bytes, delta_bytes: bytes, seq: int, sequence_no: int = 1) -> bytes:
    out = bytearray()
    bp.write_string(out, schema.name)
    bp.write_string(out, key)
    bp.write_string(out, delta_bytes)
    bp.write_int(out, sequence_no)
    out.append(0)
    return build_envelope(DELTA, seq, 0, schema.fingerprint, bytes(out))


def list_bomb_schema(field: FieldType) -> Schema:
    return Schema(b"bomb", 1, INT, (Field(b"x", field),))


def nested_list_bomb(size: int) -> bytes:
    """A stream of about `size` bytes whose one Delta's row is a list of
    lists of empty records: each inner list's count claims as many empty
    elements as bytes remain, so a naive reader builds size**2/6 of them."""
    schema = list_bomb_schema(ListOf(ListOf(EMPTY)))
    counts: list[bytes] = []
    after = 0  # bytes after the count being written: what it may claim
    while after < size:
        c = bytearray()
        bp.write_nat0(c, after)
        counts.append(bytes(c))
        after += len(c)
    row = bytearray([0])  # Set
    bp.write_nat0(row, len(counts))
    row += b"".join(reversed(counts))
    return handshake([schema]) + delta(schema, b"\x00", bytes(row), 2)


@dataclass
class Run:
    code: int
    stdout: bytes
    stderr: str
    maxrss_kb: int


def run_limited(
    args: list[str], stdin: bytes = b"", pure: bool = False, limit: int = LIMIT_AS, env: dict[str, str] | None = None
) -> Run:
    """`ripple ARGS` in a child process whose address space is capped, so
    a bomb ends in MemoryError instead of taking the machine; `env` adds
    to its environment (COLUMNS is not inherited: a pipe's table is whole)."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    inherited = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    child = dict(inherited, PYTHONPATH=str(ROOT), NO_COLOR="1", **(env or {}))
    child["RIPPLE_PURE"] = "1" if pure else "0"
    p = subprocess.Popen(
        [sys.executable, "-m", "ripple_cli", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child,
        preexec_fn=cap,
    )
    out: dict[str, bytes] = {}

    def drain(name: str, f: IO[bytes]) -> None:
        out[name] = f.read()

    readers = [threading.Thread(target=drain, args=(n, f)) for n, f in (("out", p.stdout), ("err", p.stderr))]
    for t in readers:
        t.start()
    assert p.stdin is not None
    with contextlib.suppress(BrokenPipeError):  # a child that stops reading early
        p.stdin.write(stdin)
        p.stdin.close()
    for t in readers:
        t.join()
    # This child's own peak, from wait4: RUSAGE_CHILDREN is the largest of
    # every child the test process ever waited for (a JVM, tcpdump...).
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return Run(p.returncode, out["out"], out["err"].decode("utf-8", "replace"), usage.ru_maxrss)


def many_schemas(count: int) -> bytes:
    """One Handshake declaring `count` distinct schemas, then a Delta of the last."""
    schemas = [Schema(b"s%d" % i, 1, INT, (Field(b"x", INT), Field(b"y", ListOf(INT)))) for i in range(count)]
    return handshake(schemas) + delta(schemas[-1], b"\x01", b"\x00\x05\x01\x07", 2)


def claiming_headers(size: int, claim: int = 1 << 20) -> bytes:
    """About `size` bytes of envelope headers each claiming a `claim`-byte
    payload, none with a valid CRC, then one intact Heartbeat: resync must
    try every header, and each candidate's CRC covers what it claims."""
    from ripple_cli.codec.envelope import HEADER, MAGIC, VERSION
    from ripple_cli.codec.messages import FIXED_FINGERPRINTS, HEARTBEAT, Heartbeat

    head = HEADER.pack(MAGIC, VERSION, HEARTBEAT, 0, 1, 0, b"\0" * 32, claim)
    body = b"\x00" + head * (size // len(head))  # a bad first byte: damage from the start
    beat = build_envelope(HEARTBEAT, 2, 0, FIXED_FINGERPRINTS[HEARTBEAT], write_payload(Heartbeat(b"w", 1, 0.5)))
    return body + bytes(claim) + beat
