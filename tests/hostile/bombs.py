"""Hostile inputs built from the codec's own writers: small streams whose
naive decoding costs far more than their size (issue 15)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

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
    maxrss_kb: int  # -1: the child died before it could say (killed by a signal)
    cpu_s: float = -1.0  # the child's own user + system CPU time, at exit (-1: as above)


def run_limited(
    args: list[str],
    stdin: bytes = b"",
    pure: bool = False,
    limit: int = LIMIT_AS,
    env: dict[str, str] | None = None,
    module: str = "ripple_cli",
    cpu: int | None = None,
) -> Run:
    """`ripple ARGS` in a child process whose address space is capped, so
    a bomb ends in MemoryError instead of taking the machine; `env` adds
    to its environment (COLUMNS is not inherited: a pipe's table is whole).
    `module` runs another module as __main__ in its place (a driver that
    runs many invocations, tests/hostile/fuzz_driver.py); `cpu` caps its
    CPU time (RLIMIT_CPU, hard: SIGKILL), in seconds."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        if cpu is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))

    inherited = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    child = dict(inherited, PYTHONPATH=str(ROOT), NO_COLOR="1", **(env or {}))
    child["RIPPLE_PURE"] = "1" if pure else "0"
    with tempfile.TemporaryDirectory() as tmp:
        peak = Path(tmp) / "peak"
        p = subprocess.run(
            [sys.executable, "-c", _MEASURED, str(peak), module, *args],
            input=stdin,
            capture_output=True,
            env=child,
            preexec_fn=cap,
        )
        said = peak.read_text().split() if peak.exists() else []
        maxrss_kb, cpu_s = (int(said[0]), float(said[1])) if len(said) == 2 else (-1, -1.0)
    return Run(p.returncode, p.stdout, p.stderr.decode("utf-8", "replace"), maxrss_kb, cpu_s)


# `python -m MODULE ARGS` (MODULE: ripple_cli) that writes its own peak RSS
# (VmHWM, kB) and CPU time (s) to PEAK at exit.  Not the child's rusage
# from the parent: a process forked from a big parent (pytest, after the
# Spark tests) keeps the parent's peak in its ru_maxrss across exec; VmHWM
# starts anew with the exec'd program.  (Its CPU times start at zero.)
_MEASURED = """
import atexit, resource, runpy, sys

def _peak(path=sys.argv[1]):
    with open("/proc/self/status") as f:
        kb = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
    ru = resource.getrusage(resource.RUSAGE_SELF)
    with open(path, "w") as f:
        f.write(f"{kb} {ru.ru_utime + ru.ru_stime}")

atexit.register(_peak)
module = sys.argv[2]
sys.argv = ["ripple", *sys.argv[3:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


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
