"""Issue 15, "What to build", first bullet: a fuzz target per decoder (ripple,
lumberjack, rcp, pravega, reactive-streams) and per input format (raw
stream, pcap, pcapng, sexp text for `ripple encode`, schema files, `-Y`
expressions), each the real CLI in a child process under limits, in both
lanes (the C extensions, and RIPPLE_PURE=1).

Each target mutates real valid inputs the repository already has (the
examples, tests/golden, the streams tests/hostile/bombs.py builds) into a
few hundred inputs: bytes flipped, set or inserted, the input cut or
beheaded, ranges deleted or duplicated (up to hundreds of times), length
fields set huge, bin_prot and LEB128 lengths and JSON made huge or deep;
and, knowing each format's framing, whole frames (packet records, pcapng
blocks, lines, filter tokens) dropped, repeated, swapped, or mutated
inside and then RESEALED (length and CRC made right again, a compressed
frame recompressed) so that the mutation reaches the payload decoders
instead of stopping at the CRC.  Each input is given to one `ripple`
command chosen with it (decode in every output form, verify, schema
show/extract/check, encode, -Y, with options that bound it), from a file or from
standard input; standard input comes as a live pipe gives it, in pieces
of random sizes, so that chunking is fuzzed too.

One child per target and lane runs all of its target's inputs, one CLI
invocation after another through the CLI's own entry point
(tests/hostile/fuzz_driver.py): one process start per target and lane
instead of one per input.  The child runs under `bombs.run_limited`: an
address space of 1 GiB (a bomb ends in MemoryError, which is exit 70:
caught), and RLIMIT_CPU re-armed before each input (SECONDS_PER_INPUT of
CPU, then SIGXCPU: a time bomb is reported with the input that set it
off).  Each input must end with an exit status its command documents
(ripple(1): 0 or 1; 2 for a -Y that does not compile; 3 for a schema file
that is not one; never 70), with stderr free of tracebacks, every line of
it one diagnostic `ripple: SOURCE: ...` naming its input (an error naming
where: offset, frame, record, line, column...); and the child's peak RSS
must stay under 512 MB.

The inputs are drawn from `random.Random` with a fixed seed, not from
hypothesis: a target's inputs must all exist before its one child starts
(hypothesis draws one example at a time, and an example per process
would cost the process starts this avoids), and a fixed seed gives the
same inputs on every run and machine, which is what CI needs.  To look
further, outside CI: RIPPLE_FUZZ_SEED=N picks other inputs,
RIPPLE_FUZZ_SCALE=K makes K times as many.  A failure names each failing
input by its target, index, seed input and mutations, and the inputs
stay in pytest's tmp_path.  atheris (coverage-guided, in-process,
unbounded) does not fit a bounded, reproducible CI run and is not used.

Last, a worst case built to be quadratic for RCP (headers claiming large
payloads under wrong CRCs: frames inside a frame, resync, detection),
where tests/hostile/test_linear.py covers Ripple's framing, the capture
reassembly and the detectors' re-reading but no sibling's framing: 4x the
input must cost less than 10x the CPU time (quadratic is 16x), as the
child measures its own CPU time per input, so that a busy machine does
not decide.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ripple_cli.codec.crc import crc32c
from ripple_cli.protocols import registry
from ripple_cli.protocols.base import DissectOptions
from tests.conftest import EXAMPLES, GOLDEN
from tests.hostile.bombs import Run, many_schemas, nested_list_bomb, run_limited

SEED = int(os.environ.get("RIPPLE_FUZZ_SEED", "15"))
SCALE = float(os.environ.get("RIPPLE_FUZZ_SCALE", "1"))
SECONDS_PER_INPUT = 10  # CPU time one input may take (the slowest at the default seed: 1.6 s, 30,000 messages)
MAX_RSS_KB = 512 * 1024
MAX_INPUT = 128 << 10  # no mutated input grows beyond this (much)
LANES = pytest.mark.parametrize("pure", [False, True], ids=["fast", "pure"])
TUNNELS = Path(__file__).resolve().parents[1] / "capture" / "data" / "tunnels"


def count(n: int) -> int:
    return max(1, round(n * SCALE))


# ---------------------------------------------------------------- mutations

GENERIC_HUGE = [
    b"\xff\xff\xff\xff",
    b"\x7f\xff\xff\xff",
    b"\x80\x00\x00\x00",
    b"\x00\x00\x00\x00",
    b"\x01\x00\x00\x01",
    b"\xff\xff\xff\xff\xff\xff\xff\xff",
]
BINPROT_HUGE = [  # bin_prot nat0/int codes claiming huge lengths and values
    b"\xfc" + struct.pack("<q", 1 << 62),
    b"\xfc\xff\xff\xff\xff\xff\xff\xff\x7f",
    b"\xfd\xff\xff\xff\x7f",
    b"\xfd\x00\x00\x00\x01",
    b"\xfe\xff\xff",
    b"\xff",
]
LEB128_HUGE = [  # unsigned LEB128: u64 max, Long.MAX_VALUE, over-long, unterminated
    b"\xff" * 9 + b"\x01",
    b"\xff" * 8 + b"\x7f",
    b"\x80" * 11 + b"\x01",
    b"\xff" * 12,
    b"\xff\xff\xff\x0f",
]
JSON_HUGE = [  # JSON that is deep, long or numerically extreme
    b"[" * 3000,
    b'{"a":' * 1500,
    b"1" * 5000,
    b"1e999999",
    b"-0.0e-99999",
    b'"\\ud800"',
    b'"\\u0000\xff\xfe"',
    b'{"a":1,"a":2}',
    b"NaN",
]
MUTF8_HUGE = [b"\xc0\x80", b"\xed\xa0\x80", b"\xff\xff", b"\x7f\xff"]


@dataclass
class Codec:
    """What the mutations know of a protocol's framing."""

    name: str
    huge: list[bytes]
    # A frame's bytes made consistent again after its inside changed
    # (length and CRC; fix_length=False: the CRC only); identity if None.
    reseal: Callable[[bytes, bool], bytes] | None = None
    body_start: int = 0  # bytes at a frame's start that an inside mutation leaves alone
    # (offset, size, byte order) of a frame's length fields
    lengths: Callable[[bytes], list[tuple[int, int, str]]] = lambda f: []
    # A compressed frame's inside, and the frame made from a new inside
    inside: Callable[[bytes], bytes | None] = lambda f: None
    outside: Callable[[bytes, bytes], bytes] = lambda f, inner: f


def _ripple_reseal(f: bytes, fix_length: bool) -> bytes:
    if len(f) < 63 or f[:4] != b"RIPP":
        return f
    body = bytearray(f[:-4])
    if fix_length:
        struct.pack_into("<i", body, 55, len(body) - 59)
    return bytes(body) + struct.pack("<I", crc32c(bytes(body)))


def _rcp_reseal(f: bytes, fix_length: bool) -> bytes:
    if len(f) < 18 or f[:4] != b"RCPX":
        return f
    out = bytearray(f)
    (flags, hl) = struct.unpack_from(">HH", f, 6)
    if 18 + hl > len(f):
        return f
    payload = f[18 + hl :]
    if fix_length:
        struct.pack_into(">I", out, 10, len(payload))
    struct.pack_into(">I", out, 14, crc32c(payload) if flags & 1 else 0)
    return bytes(out)


def _pravega_reseal(f: bytes, fix_length: bool) -> bytes:
    if len(f) < 8 or not fix_length:
        return f
    return f[:4] + struct.pack(">i", len(f) - 8) + f[8:]


def _lj_reseal(f: bytes, fix_length: bool) -> bytes:
    if not fix_length or len(f) < 6:
        return f
    if f[1:2] == b"C":
        return f[:2] + struct.pack(">I", len(f) - 6) + f[6:]
    if f[1:2] == b"J" and len(f) >= 10:
        return f[:6] + struct.pack(">I", len(f) - 10) + f[10:]
    return f


def _lj_lengths(f: bytes) -> list[tuple[int, int, str]]:
    kind = f[1:2]
    if kind in (b"C", b"W", b"A"):
        return [(2, 4, ">")]
    if kind in (b"J", b"D"):
        return [(6, 4, ">")]
    return []


def _lj_inside(f: bytes) -> bytes | None:
    if f[1:2] != b"C":
        return None
    try:
        return zlib.decompress(f[6:])
    except zlib.error:
        return None


CODECS = {
    "ripple": Codec(
        "ripple",
        GENERIC_HUGE + BINPROT_HUGE,
        _ripple_reseal,
        body_start=4,  # the header's fields after the magic too: the CRC is made right again
        lengths=lambda f: [(55, 4, "<")] if f[:4] == b"RIPP" else [],
    ),
    "rcp": Codec(
        "rcp",
        GENERIC_HUGE + JSON_HUGE,
        _rcp_reseal,
        body_start=4,
        lengths=lambda f: [(8, 2, ">"), (10, 4, ">")] if f[:4] == b"RCPX" else [],
    ),
    "pravega": Codec(
        "pravega", GENERIC_HUGE + MUTF8_HUGE + [struct.pack(">q", 1 << 62)], _pravega_reseal, 0, lambda f: [(4, 4, ">")]
    ),
    "lumberjack": Codec(
        "lumberjack",
        GENERIC_HUGE + JSON_HUGE,
        _lj_reseal,
        0,
        _lj_lengths,
        _lj_inside,
        lambda f, inner: f[:2] + struct.pack(">I", len(z := zlib.compress(inner))) + z,
    ),
    "reactive-streams": Codec("reactive-streams", GENERIC_HUGE + LEB128_HUGE),
}


class Mutator:
    """Random mutations of one protocol's inputs, as (bytes, what was done)."""

    BYTE_OPS = ("flip", "set", "truncate", "behead", "insert", "huge", "delete", "duplicate", "splice")
    FRAME_OPS = ("drop", "repeat", "swap", "inside", "length", "compressed")

    def __init__(self, rng: random.Random, codec: Codec, seeds: Sequence[bytes]) -> None:
        self.rng = rng
        self.codec = codec
        self.seeds = seeds
        self.bomb = False  # this input holds a compressed bomb: copying ranges of it would multiply it

    # -- bytes

    def bytes_op(self, data: bytes, op: str | None = None) -> tuple[bytes, str]:
        r = self.rng
        op = op or r.choice(self.BYTE_OPS)
        n = len(data)
        at = r.randrange(n + 1)
        if op == "flip" and n:
            out = bytearray(data)
            where = [r.randrange(n) for _ in range(r.choice([1, 1, 2, 4, 16]))]
            for i in where:
                out[i] ^= r.randrange(1, 256)
            return bytes(out), f"flip@{','.join(map(str, where))}"
        if op == "set" and n:
            i = r.randrange(n)
            v = r.choice([0x00, 0xFF, 0x7F, 0x80, 0x01, 0x0A, 0x28, 0x29, 0x22, 0x5C])
            return data[:i] + bytes([v]) + data[i + 1 :], f"set@{i}={v:#04x}"
        if op == "truncate":
            return data[:at], f"truncate@{at}"
        if op == "behead":
            return data[at:], f"behead@{at}"
        if op == "insert":
            junk = r.randbytes(r.choice([1, 2, 3, 8, 33]))
            return data[:at] + junk + data[at:], f"insert@{at}+{len(junk)}"
        if op == "huge":
            pattern = r.choice(self.codec.huge)
            if r.random() < 0.5:
                return data[:at] + pattern + data[at + len(pattern) :], f"huge-over@{at}"
            return data[:at] + pattern + data[at:], f"huge-insert@{at}"
        if op == "delete":
            k = r.choice([1, 2, 7, 64, 1000])
            return data[:at] + data[at + k :], f"delete@{at}+{k}"
        if op == "duplicate" and n:
            a = r.randrange(n)
            b = min(n, a + r.choice([1, 4, 16, 256, n]))
            times = r.choice([1, 2, 3, 16, 500])
            times = max(1, min(times, 2 if self.bomb else (MAX_INPUT - n) // max(1, b - a)))
            to = r.randrange(n + 1)
            return data[:to] + data[a:b] * times + data[to:], f"duplicate[{a}:{b}]x{times}@{to}"
        if op == "splice" and self.seeds:
            other = r.choice(self.seeds)
            j = r.randrange(len(other) + 1)
            return data[:at] + other[j:], f"splice@{at}+other[{j}:]"
        return data, "none"

    # -- frames: the seed as pieces that join to it (each message's bytes,
    # and any damage between them as its own piece)

    def frame_op(self, frames: list[bytes]) -> tuple[list[bytes], str]:
        r = self.rng
        c = self.codec
        if not frames:
            return frames, "none"
        op = r.choice(self.FRAME_OPS)
        i = r.randrange(len(frames))
        f = frames[i]
        if op == "drop":
            return frames[:i] + frames[i + 1 :], f"drop#{i}"
        if op == "repeat":
            times = r.choice([2, 3, 50, 1000])
            # A compressed frame costs what it inflates to: a few MB in all
            # (more is --max-inflate's business, tests/hostile/test_lumberjack_bombs.py).
            cost = max(len(f), len(c.inside(f) or b"") // 16)
            times = max(1, min(times, MAX_INPUT // max(1, cost)))
            return [*frames[:i], *[f] * times, *frames[i + 1 :]], f"repeat#{i}x{times}"
        if op == "swap":
            j = r.randrange(len(frames))
            out = list(frames)
            out[i], out[j] = out[j], out[i]
            return out, f"swap#{i},{j}"
        if op == "inside" and len(f) > c.body_start:
            head, body = f[: c.body_start], f[c.body_start :]
            body, what = self.bytes_op(body, r.choice(["flip", "set", "insert", "huge", "delete", "duplicate"]))
            g = head + body
            if c.reseal is not None:
                g = c.reseal(g, True)
            return [*frames[:i], g, *frames[i + 1 :]], f"inside#{i}:{what}+reseal"
        if op == "length":
            fields = c.lengths(f)
            if fields:
                at, size, order = r.choice(fields)
                limit = (1 << (8 * size)) - 1
                value = r.choice([limit, limit >> 1, (limit >> 1) + 1, 0, len(f) + 1, len(f) * 1000, 1 << 24])
                g = f[:at] + (value & limit).to_bytes(size, "big" if order == ">" else "little") + f[at + size :]
                if c.reseal is not None and r.random() < 0.5:
                    g = c.reseal(g, False)  # the CRC right for the wrong length
                return [*frames[:i], g, *frames[i + 1 :]], f"length#{i}@{at}={value}"
        if op == "compressed":
            inner = c.inside(f)
            if inner is not None:
                if r.random() < 0.5:  # a bomb: the inside many times over (1 MiB: decoding costs ~1 s)
                    times = r.choice([10, 1000, 20000])
                    times = max(1, min(times, (1 << 20) // max(1, len(inner))))
                    new, what = inner * times, f"x{times}"
                    self.bomb = True
                else:
                    new, what = self.bytes_op(inner)
                return [*frames[:i], c.outside(f, new), *frames[i + 1 :]], f"compressed#{i}:{what}"
        return frames, "none"

    def mutate(self, frames: list[bytes]) -> tuple[bytes, str]:
        r = self.rng
        self.bomb = False
        done: list[str] = []
        for _ in range(r.choice([0, 1, 1, 2])):
            frames, what = self.frame_op(frames)
            done.append(what)
        data = b"".join(frames)
        # After frame mutations, often none on the bytes: the CRCs stay right.
        for _ in range(r.choice([0, 0, 0, 1, 2, 3]) if done else r.choice([1, 1, 2, 3])):
            data, what = self.bytes_op(data)
            done.append(what)
        return data[: MAX_INPUT * 2], " ".join(d for d in done if d != "none") or "as is"


def pieces(protocol: str, data: bytes) -> list[bytes]:
    """`data` cut at its messages' boundaries, as the protocol's own decoder
    finds them (the bytes between messages, damage, are pieces too)."""
    stream = registry.get(protocol).stream(DissectOptions(), None)
    items = stream.feed(data) + stream.finish()
    cuts = {0, len(data)}
    end = 0
    for item in items:
        offset, size = getattr(item, "offset", None), getattr(item, "size", None)
        if isinstance(offset, int) and isinstance(size, int) and size > 0 and offset >= end:
            cuts |= {offset, offset + size}
            end = offset + size
    bounds = sorted(c for c in cuts if 0 <= c <= len(data))
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


# ---------------------------------------------------------------- seeds


def _hex(path: Path) -> bytes:
    text = "".join(line.split("#")[0] for line in path.read_text().splitlines())
    return bytes.fromhex("".join(text.split()))


def protocol_seeds(protocol: str) -> list[tuple[str, bytes]]:
    """Valid (and some deliberately damaged) inputs the repository has."""
    proto_dir = GOLDEN / "protocols" / protocol.replace("-", "_")
    if protocol == "ripple":
        demo = (EXAMPLES / "demo.ripple").read_bytes()
        parts = pieces("ripple", demo)
        return [
            ("session.ripple", (EXAMPLES / "session.ripple").read_bytes()),
            ("demo.ripple[:40]", b"".join(parts[:40])),
            ("demo.ripple[:4]+[150:170]", b"".join(parts[:4] + parts[150:170])),
            ("damaged.ripple[:3000]", (EXAMPLES / "damaged.ripple").read_bytes()[:3000]),
            ("nested_list_bomb", nested_list_bomb(1500)),
            ("many_schemas", many_schemas(30)),
        ]
    if protocol == "lumberjack":
        return [("v1.lj", (EXAMPLES / "v1.lj").read_bytes())] + [
            (p.name, _hex(p)) for p in sorted(proto_dir.glob("*.hex"))
        ]
    if protocol == "rcp":
        return [(p.name, _hex(p)) for p in sorted(proto_dir.glob("*.hex"))]
    return [(p.name, p.read_bytes()) for p in sorted(proto_dir.glob("*.bin"))]


# ---------------------------------------------------------------- running


@dataclass
class Case:
    args: list[str]
    what: str  # the input and its mutations, for the report
    codes: frozenset[int]  # the exit statuses its command documents for it
    sources: list[str]  # what its diagnostics may name first
    stdin: Path | None = None
    files: list[Path] = field(default_factory=list)
    trickle: int | None = None  # stdin as a live pipe gives it, in pieces drawn from this seed


LINE = re.compile(r"ripple: (?P<rest>.*)")
# A problem in the data names where it is: its offset (or the frame, record,
# block, line or column), or a capture's file header (its version, its link
# type: the whole file).
WHERE = re.compile(r"\b(offsets?|frames?|record|block|line|column|byte) \d+|\bfile header\b|\blink type \d+")


def diagnostics_problem(case: Case, stderr: str) -> str | None:
    """Why this stderr is not what ripple(1) promises, or None."""
    if "Traceback" in stderr:
        return "a traceback"
    for line in stderr.splitlines():
        m = LINE.fullmatch(line)
        if m is None:
            return f"not a diagnostic line: {line!r}"
        rest = m["rest"]
        if not any(rest.startswith((s + ":", s + "/")) for s in case.sources):
            return f"names none of {case.sources}: {line!r}"
        if " error: " in rest and not WHERE.search(rest):
            return f"an error that says not where: {line!r}"
    return None


def run_target(tmp: Path, name: str, cases: list[Case], pure: bool) -> tuple[list[str], Run, list[dict[str, Any]]]:
    """All `cases` in one limited child; the failures, as lines for the report."""
    listing = tmp / f"{name}.cases.json"
    listing.write_text(
        json.dumps([{"args": c.args, "stdin": str(c.stdin) if c.stdin else None, "trickle": c.trickle} for c in cases]),
        "utf-8",
    )
    results_path = tmp / f"{name}.results.jsonl"
    hard = SECONDS_PER_INPUT * len(cases) + 60
    run = run_limited(
        [str(listing), str(results_path), str(SECONDS_PER_INPUT)],
        pure=pure,
        module="tests.hostile.fuzz_driver",
        cpu=hard,
    )
    records = (
        [json.loads(line) for line in results_path.read_text("utf-8").splitlines()] if results_path.exists() else []
    )
    done = {r["i"]: r for r in records if "i" in r}
    failures: list[str] = []

    def about(i: int) -> str:
        c = cases[i]
        chunked = f" (in pieces, seed {c.trickle})" if c.trickle is not None else ""
        stdin = f" < {c.stdin}{chunked}" if c.stdin else ""
        return f"{name}[{i}] {c.what}: ripple {' '.join(c.args)[:300]}{stdin}"

    for r in records:
        if "timeout" in r:
            failures.append(f"{about(r['timeout'])}: over {SECONDS_PER_INPUT} s of CPU")
    started = [r["start"] for r in records if "start" in r]
    if run.code not in (0, 124) and started and started[-1] not in done:
        failures.append(f"{about(started[-1])}: the process ended with {run.code}")
    elif run.code not in (0, 124):
        failures.append(f"{name}: the driver ended with {run.code}: {run.stderr[-2000:]}")
    for i, r in sorted(done.items()):
        c = cases[i]
        if r["code"] not in c.codes:
            extra = f"\n{r.get('debug', '')}" if r["code"] == 70 else ""
            failures.append(f"{about(i)}: exit {r['code']}: {str(r['stderr'])[:600]!r}{extra}")
            continue
        why = diagnostics_problem(c, str(r["stderr"]))
        if why:
            failures.append(f"{about(i)}: {why}")
    if run.maxrss_kb >= MAX_RSS_KB:
        grew = next((i for i, r in sorted(done.items()) if int(r["hwm_kb"]) >= MAX_RSS_KB), None)
        who = about(grew) if grew is not None else name
        failures.append(f"{who}: peak RSS {run.maxrss_kb} kB, over {MAX_RSS_KB} kB")
    if not failures and len(done) != len(cases):
        failures.append(f"{name}: {len(done)} of {len(cases)} inputs ran (driver: {run.stderr[-2000:]})")
    if "Traceback" in run.stderr:
        failures.append(f"{name}: a traceback on the process's own stderr: {run.stderr[-2000:]}")
    return failures, run, records


def assert_target(tmp: Path, name: str, cases: list[Case], pure: bool) -> None:
    failures, _run, _records = run_target(tmp, name, cases, pure)
    assert not failures, (
        f"{len(failures)} of {len(cases)} inputs failed (RIPPLE_FUZZ_SEED={SEED}, RIPPLE_FUZZ_SCALE={SCALE:g}; "
        f"the inputs are in {tmp}):\n" + "\n".join(failures[:20])
    )


# ---------------------------------------------------------------- commands


def _pick(rng: random.Random, weighted: Sequence[tuple[int, list[str]]]) -> list[str]:
    total = sum(w for w, _ in weighted)
    x = rng.randrange(total)
    for w, args in weighted:
        if x < w:
            return list(args)
        x -= w
    raise AssertionError  # pragma: no cover


DATA_CODES = frozenset({0, 1})
SCHEMA_CODES = frozenset({0, 1, 3})


def decoder_case(
    rng: random.Random, path: Path, protocol: str | None, extra: list[Path], what: str, capture: bool = False
) -> Case:
    """One command over a stream or capture at `path` (`protocol`: -P, half the time)."""
    p = str(path)
    proto = ["-P", protocol] if protocol and rng.random() < 0.5 else []
    weighted: list[tuple[int, list[str]]] = [
        (30, ["decode", *proto, p]),
        (8, ["decode", *proto, "-F", "json", p]),
        (8, ["decode", *proto, "-F", "jsonl", p]),
        (6, ["decode", *proto, "-F", "hum", "--show-offsets", p]),
        (1, ["decode", *proto, "-F", "table", p]),
        (15, ["verify", "--allow-empty", *proto, p]),
        (4, ["verify", "-F", "json", *proto, p]),
        (3, ["verify", "--strict", *proto, p]),
        (5, ["decode", *proto, "--max-payload", "1K", "--max-inflate", "4K", p]),
        (3, ["decode", "--list-streams", *proto, p]),
        (3, ["decode", "-Y", "type != Heartbeat", *proto, p]),
        (2, ["verify", *proto, p, *map(str, extra)]),
    ]
    if protocol == "ripple" or (protocol is None and not capture):
        weighted += [
            (5, ["decode", "--raw", p]),
            (4, ["decode", "--schemas", str(EXAMPLES / "schemas"), p]),
            (3, ["schema", "show", "-F", rng.choice(["json", "sexp", "hum"]), p]),
            (2, ["schema", "extract", "-o", str(path.with_suffix(".schemas")), p]),
        ]
    if capture:
        weighted += [
            (6, ["decode", "-F", "hum", "--show-connection", p]),
            (2, ["decode", "--list-streams", "-F", "json", p]),
            (4, ["decode", "--reassembly-window", "1K", p]),
            (3, ["verify", "--max-flows", "2", p]),
            (2, ["decode", "--stream", "1", p]),
            (2, ["decode", "--port", rng.choice(["5044", "7401", "9000", "12345"]), p]),
            (2, ["decode", "--decode-as", f"{rng.choice(['5044', '9000', '7401'])}={rng.choice(registry.names())}", p]),
            (2, ["decode", "-P", rng.choice(registry.names()), p]),
        ]
    args = _pick(rng, weighted)
    if "table" in args and path.stat().st_size > 32 << 10:
        args[args.index("table")] = "hum"  # a table of thousands of rows costs seconds, and shows nothing new
    codes = DATA_CODES
    files = [path, *extra] if args[-1] != p else [path]
    sources = [str(f) for f in files]
    if "extract" in args:
        sources.append(str(path.with_suffix(".schemas")))  # the schema files it writes
    stdin, trickle = None, None
    if args[0] in ("decode", "verify") and args[-1] == p and rng.random() < 0.15:
        # The same from standard input, as a live pipe gives it: in pieces
        # (decoders must give the same whatever the chunking).
        args[-1] = "-"
        stdin, sources, trickle = path, ["<stdin>"], rng.randrange(1 << 30)
    if args[0] == "schema":
        codes = SCHEMA_CODES
    return Case(args, what, codes, sources, stdin, files, trickle)


def raw_cases(tmp: Path, protocol: str, n: int) -> list[Case]:
    rng = random.Random(f"{SEED}:{protocol}")
    seeds = protocol_seeds(protocol)
    mut = Mutator(rng, CODECS[protocol], [s for _, s in seeds])
    split = {name: pieces(protocol, data) for name, data in seeds}
    cases: list[Case] = []
    for i in range(n):
        name, _data = rng.choice(seeds)
        data, what = mut.mutate(list(split[name]))
        path = tmp / f"{protocol}-{i}.bin"
        path.write_bytes(data)
        extra = [tmp / f"{protocol}-{j}.bin" for j in range(max(0, i - 2), i)]
        cases.append(decoder_case(rng, path, protocol, extra, f"{name}: {what}"))
    return cases


# ---------------------------------------------------------------- targets: decoders (raw streams)


@LANES
@pytest.mark.parametrize(
    ("protocol", "n"),
    [("ripple", 300), ("lumberjack", 250), ("rcp", 250), ("pravega", 250), ("reactive-streams", 250)],
)
def test_decoder_target(tmp_path: Path, protocol: str, n: int, pure: bool) -> None:
    assert_target(tmp_path, protocol, raw_cases(tmp_path, protocol, count(n)), pure)


# ---------------------------------------------------------------- captures: pcap and pcapng

PCAP_MAGICS = {b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d"}


def pcap_pieces(data: bytes) -> tuple[str, list[bytes]]:
    """A pcap's byte order, and its file header then its records (each
    with its 16-byte header) as pieces."""
    order = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    out, pos = [data[:24]], 24
    while pos + 16 <= len(data):
        (caplen,) = struct.unpack_from(order + "I", data, pos + 8)
        out.append(data[pos : pos + 16 + caplen])
        pos += 16 + caplen
    if pos < len(data):
        out.append(data[pos:])
    return order, out


def _order_of_record(f: bytes) -> str:
    little, big = struct.unpack_from("<I", f, 8)[0], struct.unpack_from(">I", f, 8)[0]
    return "<" if little <= big else ">"


def _pcap_reseal(f: bytes, fix_length: bool) -> bytes:
    if len(f) < 16 or not fix_length or (len(f) == 24 and f[:4] in PCAP_MAGICS):
        return f
    order = _order_of_record(f)
    (orig,) = struct.unpack_from(order + "I", f, 12)
    return f[:8] + struct.pack(order + "II", len(f) - 16, max(orig, len(f) - 16)) + f[16:]


def _pcap_lengths(f: bytes) -> list[tuple[int, int, str]]:
    if len(f) == 24 and f[:4] in PCAP_MAGICS:
        order = "<" if f[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        return [(4, 2, order), (16, 4, order), (20, 4, order)]  # version, snaplen, link type
    if len(f) < 16:
        return []
    order = _order_of_record(f)
    return [(0, 4, order), (4, 4, order), (8, 4, order), (12, 4, order)]  # time, fraction, lengths


def ng_block(order: str, btype: int, body: bytes) -> bytes:
    body += bytes(-len(body) % 4)
    return struct.pack(order + "II", btype, 12 + len(body)) + body + struct.pack(order + "I", 12 + len(body))


def ng_option(order: str, code: int, value: bytes) -> bytes:
    return struct.pack(order + "HH", code, len(value)) + value + bytes(-len(value) % 4)


def pcapng_blocks(pcap: bytes, order: str, variant: int) -> list[bytes]:
    """The pcap's packets as pcapng blocks, in byte order `order`; `variant`
    adds what real writers do: interface options (a comment that is not
    UTF-8, nanosecond timestamps), a second section, Simple Packet Blocks,
    blocks of unknown and custom types, a second interface."""
    pcap_order, recs = pcap_pieces(pcap)
    (linktype,) = struct.unpack_from(pcap_order + "I", recs[0], 20)
    shb = ng_block(order, 0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))
    options = b""
    nano = variant == 1
    if variant == 1:
        options = (
            ng_option(order, 2, b"eth0")
            + ng_option(order, 1, b"\xff\xfe not UTF-8 \x1b[2J")
            + ng_option(order, 9, b"\x09")
            + ng_option(order, 0, b"")
        )
    idb = ng_block(order, 1, struct.pack(order + "HHI", linktype & 0xFFFF, 0, 262144) + options)
    blocks = [shb, idb]
    if variant == 4:  # a second interface, of another link type
        blocks.append(ng_block(order, 1, struct.pack(order + "HHI", 101, 0, 65535)))
    for k, rec in enumerate(recs[1:]):
        if len(rec) < 16:
            continue
        sec, frac, caplen, orig = struct.unpack_from(pcap_order + "IIII", rec)
        data = rec[16 : 16 + caplen]
        t = sec * (10**9 if nano else 10**6) + frac * (1000 if nano else 1)
        if variant == 2 and k % 3 == 1:
            blocks.append(ng_block(order, 3, struct.pack(order + "I", orig) + data))
            continue
        if variant == 3 and k % 2:
            blocks.append(ng_block(order, 0xBAD, b"\x00\x00\x7f\x00custom"))
            blocks.append(ng_block(order, 0x7777, b"unknown block"))
        if variant == 2 and k == len(recs) // 2:  # a second section, big-endian
            order = ">"
            blocks.append(ng_block(order, 0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1)))
            blocks.append(ng_block(order, 1, struct.pack(order + "HHI", linktype & 0xFFFF, 0, 262144)))
        iface = 1 if variant == 4 and k % 4 == 3 else 0
        head = struct.pack(order + "IIIII", iface, t >> 32, t & 0xFFFFFFFF, len(data), orig)
        blocks.append(ng_block(order, 6, head + data))
    return blocks


def _ng_order(f: bytes) -> str:
    if len(f) >= 8 and struct.unpack_from(">I", f, 4)[0] == len(f):
        return ">"
    return "<"


def _pcapng_reseal(f: bytes, fix_length: bool) -> bytes:
    if len(f) < 12 or not fix_length:
        return f
    order = _ng_order(f)
    (btype,) = struct.unpack_from(order + "I", f)
    body = bytearray(f[8:-4] + bytes(-(len(f) - 12) % 4))
    if btype == 6 and len(body) >= 20:
        struct.pack_into(order + "I", body, 12, len(body) - 20)
    return ng_block(order, btype, bytes(body))


def _pcapng_lengths(f: bytes) -> list[tuple[int, int, str]]:
    if len(f) < 12:
        return []
    order = _ng_order(f)
    (btype,) = struct.unpack_from(order + "I", f)
    out = [(4, 4, order), (len(f) - 4, 4, order)]
    if btype == 6 and len(f) >= 32:
        out += [(8, 4, order), (20, 4, order), (24, 4, order)]  # interface, lengths
    if btype == 1 and len(f) >= 20:
        out += [(8, 2, order), (12, 4, order)]  # link type, snap length
    if btype == 0x0A0D0D0A and len(f) >= 24:
        out += [(8, 4, order), (16, 8, order)]  # byte-order magic, section length
    return out


CODECS["pcap"] = Codec("pcap", GENERIC_HUGE, _pcap_reseal, 16, _pcap_lengths)
CODECS["pcapng"] = Codec("pcapng", GENERIC_HUGE, _pcapng_reseal, 8, _pcapng_lengths)


def pcap_seeds() -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in [*sorted(EXAMPLES.glob("*.pcap")), *sorted(TUNNELS.glob("*.pcap"))]]


def capture_cases(tmp: Path, kind: str, n: int) -> list[Case]:
    rng = random.Random(f"{SEED}:{kind}")
    seeds: list[tuple[str, list[bytes]]] = []
    for name, data in pcap_seeds():
        if kind == "pcap":
            seeds.append((name, pcap_pieces(data)[1]))
        else:
            variant = len(seeds) % 5
            order = "<>"[len(seeds) % 2]
            seeds.append((f"{name} as pcapng ({order}, variant {variant})", pcapng_blocks(data, order, variant)))
    mut = Mutator(rng, CODECS[kind], [b"".join(s) for _, s in seeds])
    cases: list[Case] = []
    for i in range(n):
        name, split = rng.choice(seeds)
        data, what = mut.mutate(list(split))
        path = tmp / f"{kind}-{i}.{kind}"
        path.write_bytes(data)
        extra = [tmp / f"{kind}-{j}.{kind}" for j in range(max(0, i - 2), i)]
        cases.append(decoder_case(rng, path, None, extra, f"{name}: {what}", capture=True))
    return cases


@LANES
@pytest.mark.parametrize(("kind", "n"), [("pcap", 200), ("pcapng", 200)])
def test_capture_target(tmp_path: Path, kind: str, n: int, pure: bool) -> None:
    assert_target(tmp_path, kind, capture_cases(tmp_path, kind, count(n)), pure)


# ---------------------------------------------------------------- text: sexp for encode, schema files, -Y

SEXP_HUGE = [
    b"(" * 300,
    b")" * 40,
    b"(" * 255 + b")" * 255,
    b'"\\',
    b'"\\xff\\000\\255"',
    b'"\\u{110000}"',
    b"99999999999999999999999999999",
    b"-9223372036854775809",
    b"1e99999",
    b"nan",
    b"-0x8000000000000000",
    b"\xff\xfe\x00",
    b"\r",
    b"#|",
    b"; ",
    b'""',
    b"()",
    b"(msg(Heartbeat))",
]
SCHEMA_HUGE = [
    b"(List " * 300 + b"Int" + b")" * 300,
    b"(Option " * 60 + b"String" + b")" * 60,
    b"(Record(" + b"((name a)(typ Int)(default()))" * 300 + b"))",
    b"(version 99999999999999999999)",
    b'(name "")',
    b"(typ Nosuchtype)",
    b'(default ("((("))',
]
FILTER_HUGE = [
    b"(" * 70,
    b")" * 3,
    b"not " * 300,
    b"!" * 100,
    b"9" * 400,
    b'"\\x',
    b'r"',
    b' ~ "(a+)+$"',
    b' matches "[a-"',
    b" in {",
    b"}",
    b",",
    b" && ",
    b" || ",
    b" == ",
    b" contains ",
    b"1e999",
    b"-inf",
    b"0x",
    b"_",
    b"field.",
    b"field.a.b.c.d",
    b"\xff",
    b"\xe2\x82\xac",
    b"\t\n",
    b'"' + b"x" * 5000 + b'"',
]
FILTERS = [
    'type == Delta and output == vwap and key == "AAPL" and sequence_no > 100',
    "type == Heartbeat or seq > 3",
    "field.stats.high > 1 and not field.price",
    "not field.x",
    "seq == 73 and not load < 0.5",
    "!seq==73",
    "(((seq == 1)))",
    "seq in {1, 0x4, 9}",
    "seq not in {1, 2}",
    'output ~ "(?i)^VWAP$"',
    "output matches wa",
    'output == r"^\\d+$"',
    "field.price in {1, 355.62}",
    "field.price == nan",
    "key contains x",
    "delta != set",
    "ok != true",
    "errors contains x",
    "connection == 1",
    "direction == c2s",
    "src == 10.0.0.1:50412 and src == 10.0.0.1",
    "tcp.len > 0",
    "protocol == lumberjack",
    "data.event_count >= 2",
    "demand >= 9223372036854775807",
    'publisher contains "trades"',
    "subscriber == 2 and type == OnNext",
    "previous_event_number > 0",
    "type == Hello",
    "lines and n == 1",
    'load > 0.5 && worker != "\\x00\\xff" || seq < -1_000',
    "seq >= 1.5e3 || seq <= .5 || seq == -0x10",
]
# Inputs this target found, as they were found: exit 70 (`re` raised
# RecursionError and OverflowError, not re.error; int() refused a number of
# 19,000 digits), and a message quoting a newline over two lines.
FILTER_REGRESSIONS = [
    'output ~ "' + "(" * 1000 + '(?i)^VWAP$"',
    'key ~ "a{99999999999999999999}"',
    "demand >= " + "9223372036854775807" * 1000,
    'output matches wa"' + "x" * 300 + '\n"',
]
TOKENS = re.compile(rb"\s+|[()!{},]|[^\s()!{},]+")


def text_pieces(data: bytes, unit: str) -> list[bytes]:
    """Lines (sexp, schema files) or tokens (-Y) as the pieces mutations move."""
    if unit == "tokens":
        return TOKENS.findall(data) or [data]
    return data.splitlines(keepends=True) or [data]


CODECS["sexp"] = Codec("sexp", SEXP_HUGE)
CODECS["schema"] = Codec("schema", SEXP_HUGE + SCHEMA_HUGE)
CODECS["filter"] = Codec("filter", FILTER_HUGE)


def _text_inputs(kind: str, seeds: list[tuple[str, bytes]], unit: str, n: int) -> list[tuple[str, bytes]]:
    rng = random.Random(f"{SEED}:{kind}")
    mut = Mutator(rng, CODECS[kind], [s for _, s in seeds])
    out = []
    for _ in range(n):
        name, data = rng.choice(seeds)
        mutated, what = mut.mutate(text_pieces(data, unit))
        out.append((f"{name}: {what}", mutated))
    return out


def encode_cases(tmp: Path, n: int) -> list[Case]:
    demo = (EXAMPLES / "demo.sexp").read_bytes().splitlines(keepends=True)
    hum = (GOLDEN / "demo.hum").read_bytes().splitlines(keepends=True)
    seeds = [("demo.sexp[:12]", b"".join(demo[:12])), ("demo.sexp[:2]+[200:230]", b"".join(demo[:2] + demo[200:230]))]
    seeds += [("demo.hum[:80]", b"".join(hum[:80]))]
    seeds += [(p.name, p.read_bytes()) for p in sorted((GOLDEN / "protocols").glob("*/*.sexp"))]
    rng = random.Random(f"{SEED}:encode-commands")
    cases = []
    for i, (what, text) in enumerate(_text_inputs("sexp", seeds, "lines", n)):
        path = tmp / f"text-{i}.sexp"
        path.write_bytes(text)
        args = _pick(
            rng,
            [
                (40, ["encode"]),
                (25, ["encode", str(path)]),
                (10, ["encode", "--renumber", str(path)]),
                (10, ["encode", "--schemas", str(EXAMPLES / "schemas"), str(path)]),
                (15, ["encode", "-o", str(tmp / f"text-{i}.ripple"), str(path)]),
            ],
        )
        stdin, sources = (path, ["<stdin>"]) if args == ["encode"] else (None, [str(path)])
        trickle = rng.randrange(1 << 30) if stdin else None  # the text as a pipe gives it, in pieces
        cases.append(Case(args, what, DATA_CODES, sources, stdin, [path], trickle))
    return cases


def schema_cases(tmp: Path, n: int) -> list[Case]:
    files = [*sorted((EXAMPLES / "schemas").glob("*.sexp")), *sorted((EXAMPLES / "more-schemas").glob("*.sexp"))]
    seeds = [(p.name, p.read_bytes()) for p in files]
    demo, session = str(EXAMPLES / "demo.ripple"), str(EXAMPLES / "session.ripple")
    deltas = tmp / "deltas.sexp"  # Deltas with no Handshake: their schemas must come from --schemas
    deltas.write_bytes(b"".join((EXAMPLES / "demo.sexp").read_bytes().splitlines(keepends=True)[2:40]))
    rng = random.Random(f"{SEED}:schema-commands")
    cases = []
    for i, (what, text) in enumerate(_text_inputs("schema", seeds, "lines", n)):
        path = tmp / f"schema-{i}.sexp"
        path.write_bytes(text)
        p = str(path)
        other = str(rng.choice(files)) if rng.random() < 0.7 else str(tmp / f"schema-{max(0, i - 1)}.sexp")
        folder = tmp / f"schemas-{i}"
        args = _pick(
            rng,
            [
                (25, ["schema", "show", "-F", rng.choice(["json", "sexp", "hum", "table"]), p]),
                (15, ["schema", "check", "--reader", p, "--writer", other]),
                (10, ["schema", "check", "--reader", other, "--writer", p]),
                (20, ["decode", "--schemas", p, demo]),
                (10, ["verify", "--schemas", p, session]),
                (10, ["encode", "--schemas", p, str(deltas)]),
                (10, ["decode", "-F", "json", "--schemas", str(folder), demo]),
            ],
        )
        if str(folder) in args:
            folder.mkdir()
            (folder / "a.sexp").write_bytes(text)
            (folder / "b.sexp").write_bytes(Path(other).read_bytes())
        sources = [p, other, demo, session, str(deltas), str(folder / "a.sexp"), str(folder / "b.sexp")]
        cases.append(Case(args, what, SCHEMA_CODES, sources, None, [path]))
    return cases


def filter_cases(tmp: Path, n: int) -> list[Case]:
    inputs = [EXAMPLES / f for f in ("session.ripple", "demo.ripple", "beats.pcap", "rstmdb.pcap", "streams.pcap")]
    inputs += [EXAMPLES / "pravega.pcap"]
    rng = random.Random(f"{SEED}:filter-commands")
    cases = []
    for i, (what, text) in enumerate(_text_inputs("filter", [(f, f.encode()) for f in FILTERS], "tokens", n)):
        # An argument as the system gives it: no NUL; bytes that are not
        # UTF-8 as Python decodes them (surrogate escapes).
        expr = os.fsdecode(text.replace(b"\0", b""))
        target = str(rng.choice(inputs))
        args = _pick(
            rng,
            [
                (60, ["decode", "-Y", expr, target]),
                (25, ["verify", "-Y", expr, target]),
                (15, ["decode", "-F", "json", "-Y", expr, target]),
            ],
        )
        path = tmp / f"filter-{i}.txt"
        path.write_bytes(text)
        cases.append(Case(args, what, frozenset({0, 1, 2}), ["-Y", target], None, [path]))
    session = str(EXAMPLES / "session.ripple")
    for expr in FILTER_REGRESSIONS:
        cases.append(Case(["decode", "-Y", expr, session], "regression", frozenset({2}), ["-Y"]))
    return cases


@LANES
@pytest.mark.parametrize(
    ("kind", "make", "n"), [("encode", encode_cases, 250), ("schema", schema_cases, 250), ("filter", filter_cases, 300)]
)
def test_text_target(tmp_path: Path, kind: str, make: Callable[[Path, int], list[Case]], n: int, pure: bool) -> None:
    assert_target(tmp_path, kind, make(tmp_path, count(n)), pure)


# ---------------------------------------------------------------- linear time: RCP's worst case


def rcp_claims(size: int, first: bytes = b"") -> bytes:
    """About `size` bytes of RCP frame headers (version 1, CRC_PRESENT), each
    claiming a payload of half the input under a CRC that does not match.
    Each header is a candidate frame: inside the frame before it (whose CRC
    fails: is its length inflated?), after damage (`first`, a byte that is
    no frame: resync), and to detection; each candidate's CRC covers half
    the input, so hashing each afresh costs the input's size squared."""
    head = struct.pack(">4sHHHII", b"RCPX", 1, 1, 0, size // 2, 0xDEADBEEF)
    return first + head * (size // len(head))


RCP_WORST: dict[str, Callable[[str, str], list[str]]] = {
    "frames inside a frame whose CRC fails": lambda at, after: ["verify", "-P", "rcp", at],
    "resync after damage": lambda at, after: ["verify", "-P", "rcp", after],
    "resync past claims above --max-payload": lambda at, after: ["verify", "-P", "rcp", "--max-payload", "16K", at],
    "detection": lambda at, after: ["verify", after],
}


@LANES
def test_rcp_worst_case_costs_linear_cpu_time(tmp_path: Path, pure: bool) -> None:
    """4x the input must cost less than 10x the CPU time (quadratic: 16x):
    each size's best of three, as CPU time of the child process measured by
    itself (getrusage), not wall time."""
    n = 96 << 10
    paths: dict[int, tuple[str, str]] = {}
    for size in (n, 4 * n):
        at, after = tmp_path / f"rcp-{size}.bin", tmp_path / f"rcp-{size}-damaged.bin"
        at.write_bytes(rcp_claims(size))
        after.write_bytes(rcp_claims(size, b"\x00"))
        paths[size] = (str(at), str(after))
    cases = [Case(RCP_WORST["detection"](*paths[n]), "warm-up", DATA_CODES, list(paths[n]))]
    index: list[tuple[str, int]] = [("", 0)]
    for name, args in RCP_WORST.items():
        for _ in range(3):
            for size in (n, 4 * n):
                cases.append(Case(args(*paths[size]), f"{name}, {size} bytes", DATA_CODES, list(paths[size])))
                index.append((name, size))
    failures, _run, records = run_target(tmp_path, "rcp-linear", cases, pure)
    assert not failures, "\n".join(failures)
    best: dict[tuple[str, int], float] = {}
    for r in records:
        if r.get("i"):
            key = index[int(r["i"])]
            best[key] = min(best.get(key, float("inf")), float(r["cpu"]))
    ratios = {name: best[name, 4 * n] / max(best[name, n], 0.01) for name in RCP_WORST}
    assert all(r < 10 for r in ratios.values()), f"4x the input took this many times the CPU time: {ratios}"
