#!/usr/bin/env python3
"""ripple against the OCaml workers' own code, side by side in one run.

Builds the OCaml tools (tests/interop/ocaml: the same generator the interop
tests use), generates a stream of N messages (default 1,000,000, schemas with
nested records, lists, enums and options), then times each workload for
ripple and for its anchor on the same file, and prints one table.

    make bench                      # or: python bench/bench.py --count 200000
    python bench/bench.py --with-pure   # also the pure-Python path (RIPPLE_PURE=1): before/after

Workloads:
  verify       `ripple verify FILE`   vs  OCaml ripple_walk (every envelope, CRC by table)
  decode sexp  `ripple decode --format sexp FILE > out`  vs  OCaml ripple_read -o out
               (typed bin_prot decode + sexplib one-line printing); outputs compared byte for byte
  verify 4 KiB `ripple verify` on a stream of 4 KiB Deltas (full-depth book/v4 snapshots, about
               a thousand values each, written by ripple's own encoder), in GB/s, vs ripple_walk
  peak RSS     of the verify and decode runs above (getrusage of each child): memory stays flat,
               the same on a stream a tenth the size
Times are wall times of whole runs (interpreter start-up included).  Reference
rows (no goal): a plain Python loop (struct + crc32c), crc32c over the whole
file as one buffer (the hardware limit for the CRC), ripple's start-up.
"""

from __future__ import annotations

import argparse
import filecmp
import hashlib
import os
import platform
import random
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OCAML_SRC = ROOT / "tests" / "interop" / "ocaml"
WORK = ROOT / ".bench"
MB = 1 << 20


def sh(cmd: list[str], **kw) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return subprocess.run(cmd, check=True, **kw)


def build_ocaml() -> Path:
    digest = hashlib.sha256()
    for f in sorted(OCAML_SRC.iterdir()):
        if f.is_file():
            digest.update(f.name.encode() + f.read_bytes())
    out = WORK / f"ocaml-{digest.hexdigest()[:12]}"
    if not (out / "ripple_walk").exists():
        sh([str(OCAML_SRC / "build.sh"), str(out)], stdout=subprocess.DEVNULL)
    return out


def generate(tools: Path, count: int, seed: int) -> Path:
    path = WORK / f"bench-{count}-{seed}.ripple"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        sh([str(tools / "ripple_gen"), "-profile", "bench", "-seed", str(seed), "-count", str(count), "-bin", str(tmp)])
        tmp.rename(path)
    return path


def generate_4k(count: int, seed: int) -> Path:
    """Deltas of about 4 KiB: book/v4 (examples/schemas) snapshots of 330
    levels, Set and Patch, after a Handshake declaring the schema; every
    rule kept (seq, sequence_no), so that verify finds nothing to report.
    Written by a child process (see `measure`: this one stays small)."""
    path = WORK / f"bench-4k-{count}-{seed}.ripple"
    if not path.exists():
        sh([sys.executable, __file__, "--write-4k", str(path), "--count-4k", str(count), "--seed", str(seed)], cwd=ROOT)
    return path


def write_4k(path: Path, count: int, seed: int) -> None:
    sys.path.insert(0, str(ROOT))
    from ripple_cli.codec import binprot as bp
    from ripple_cli.codec.delta import CompiledSchema, Patch, SetRow
    from ripple_cli.codec.envelope import build_envelope
    from ripple_cli.codec.messages import DELTA, FIXED_FINGERPRINTS, HANDSHAKE, Handshake, write_payload
    from ripple_cli.sources.schema_files import load_schema_file

    rnd = random.Random(seed)
    schema = load_schema_file(str(ROOT / "examples" / "schemas" / "book_v4.sexp"))
    book = CompiledSchema(schema)
    t0 = 1718900000000000000
    deltas = []
    for v in range(16):
        mid = rnd.uniform(50, 500)
        levels = [
            {
                "px": round(mid + rnd.uniform(-5, 5), 2),
                "size": rnd.randrange(100, 10000, 100),
                "orders": rnd.randrange(60),
            }
            for _ in range(330)
        ]
        if v % 2:
            deltas.append(book.write_delta(Patch(((2, levels),))))
            continue
        row = {
            "bid": ({"px": round(mid - 0.01, 2), "size": 1800},),
            "ask": ({"px": round(mid + 0.01, 2), "size": 900},),
            "levels": levels,
            "status": "Open",
            "stats": {"high": mid + 3, "low": mid - 3, "last": {"px": round(mid, 2), "at_ns": t0}, "vwap": (mid,)},
            "crossed": False,
        }
        deltas.append(book.write_delta(SetRow(row)))
    symbols = [b"AAPL", b"MSFT", b"V", b"XOM", b"KO", b"BRK.B", b"AMZN", b"GOOGL"]
    keys = [book.write_key({"symbol": s, "venue": "XNYS"}) for s in symbols]
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        hs = Handshake(b"md-worker-07", ((b"book", schema),), 1)
        f.write(build_envelope(HANDSHAKE, 1, t0, FIXED_FINGERPRINTS[HANDSHAKE], write_payload(hs)))
        for i in range(count):
            payload = bytearray()
            bp.write_string(payload, b"book")
            bp.write_string(payload, keys[i % len(keys)])
            bp.write_string(payload, deltas[i % len(deltas)])
            bp.write_int(payload, i + 1)
            payload.append(1)
            bp.write_int64(payload, t0 + i * 1000)
            f.write(build_envelope(DELTA, i + 2, t0 + i * 1000, b"book/v4", bytes(payload)))
    tmp.rename(path)


@dataclass
class Measured:
    seconds: float  # best wall time
    rss_mb: float  # largest peak RSS


def measure(
    cmd: list[str], stdout_path: Path | None = None, repeat: int = 1, env: dict[str, str] | None = None
) -> Measured:
    """Wall time and peak RSS of a child (os.wait4 gives its own rusage).

    Linux carries the peak RSS of the forking process over into the child's
    (the high-water mark of the forked address space survives exec), so this
    process must stay small: outputs are compared in chunks, and the
    reference rows that read a whole file run after every measurement."""
    best, rss = float("inf"), 0.0
    for _ in range(repeat):
        out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL  # noqa: SIM115
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _pid, _status, usage = os.wait4(proc.pid, 0)
        best = min(best, time.perf_counter() - t0)
        rss = max(rss, usage.ru_maxrss / 1024)  # KiB on Linux
        proc.returncode = 0
        if stdout_path:
            out.close()  # type: ignore[union-attr]
    return Measured(best, rss)


def python_loop(path: Path) -> tuple[int, float]:
    """The hand-written script users would otherwise write: struct + crc32c."""
    from crc32c import crc32c

    t0 = time.perf_counter()
    data = path.read_bytes()
    pos, n, bad = 0, 0, 0
    unpack = struct.Struct("<i").unpack_from
    crc_at = struct.Struct("<I").unpack_from
    while pos + 63 <= len(data):
        length = unpack(data, pos + 55)[0]
        end = pos + 59 + length
        if crc32c(data[pos:end]) != crc_at(data, end)[0]:
            bad += 1
        n += 1
        pos = end + 4
    return n, time.perf_counter() - t0


def crc_whole(path: Path) -> float:
    from crc32c import crc32c

    data = path.read_bytes()
    t0 = time.perf_counter()
    crc32c(data)
    return time.perf_counter() - t0


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def fast_lane() -> str:
    probe = "from ripple_cli.codec.fast import speedups as s; m = s(); print(m.CRC32C_IMPL if m else '')"
    impl = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    return f"C fast lane (CRC-32C: {impl})" if impl else "pure Python (extension not built, or RIPPLE_PURE set)"


@dataclass
class Row:
    name: str
    ours: float
    anchor: float
    goal: str
    met: bool
    pure: float | None = None
    fmt: str = ",.0f"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=1_000_000, help="messages in the generated stream")
    ap.add_argument("--count-4k", type=int, default=65_536, help="messages in the 4 KiB-message stream (256 MiB)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=1, help="runs per workload; the best is kept")
    ap.add_argument("--with-pure", action="store_true", help="also time ripple with RIPPLE_PURE=1 (slow)")
    ap.add_argument("--write-4k", type=Path, help=argparse.SUPPRESS)  # generate_4k's child
    args = ap.parse_args()
    if args.write_4k:
        write_4k(args.write_4k, args.count_4k, args.seed)
        return 0

    WORK.mkdir(exist_ok=True)
    tools = build_ocaml()
    stream = generate(tools, args.count, args.seed)
    small = generate(tools, max(args.count // 10, 1), args.seed)
    big = generate_4k(args.count_4k, args.seed)
    size, big_size = stream.stat().st_size, big.stat().st_size
    n = args.count
    ripple = [sys.executable, "-m", "ripple_cli"]
    pure_env = {**os.environ, "RIPPLE_PURE": "1"}
    print(f"stream: {stream.name}: {n:,} messages, {size / 1e6:.1f} MB; machine: {machine()}", flush=True)
    print(f"4 KiB stream: {big.name}: {args.count_4k + 1:,} messages, {big_size / 1e6:.1f} MB", flush=True)
    print(f"ripple runs: {fast_lane()}", flush=True)

    def pure(cmd: list[str], out: Path | None = None) -> Measured | None:
        return measure(cmd, out, args.repeat, pure_env) if args.with_pure else None

    rows: list[Row] = []
    v_r = measure([*ripple, "verify", str(stream)], repeat=args.repeat)
    v_p = pure([*ripple, "verify", str(stream)])
    v_o = measure([str(tools / "ripple_walk"), str(stream)], repeat=args.repeat)
    ratio = v_o.seconds / v_r.seconds
    rows.append(Row("verify (msgs/s)", n / v_r.seconds, n / v_o.seconds, "1.0x", ratio >= 1.0, v_p and n / v_p.seconds))

    out_r, out_o = WORK / "decode.ripple.sexp", WORK / "decode.ocaml.sexp"
    d_r = measure([*ripple, "decode", "--format", "sexp", str(stream)], out_r, args.repeat)
    d_o = measure([str(tools / "ripple_read"), "-o", str(out_o), str(stream)], repeat=args.repeat)
    same = filecmp.cmp(out_r, out_o, shallow=False)
    d_p = pure([*ripple, "decode", "--format", "sexp", str(stream)], WORK / "decode.pure.sexp")
    same_pure = d_p is None or filecmp.cmp(WORK / "decode.pure.sexp", out_o, shallow=False)
    ratio = d_o.seconds / d_r.seconds
    d_pure = d_p and n / d_p.seconds
    rows.append(Row("decode --format sexp (msgs/s)", n / d_r.seconds, n / d_o.seconds, "0.5x", ratio >= 0.5, d_pure))

    b_r = measure([*ripple, "verify", str(big)], repeat=args.repeat)
    b_o = measure([str(tools / "ripple_walk"), str(big)], repeat=args.repeat)
    b_p = pure([*ripple, "verify", str(big)])
    gbs = big_size / b_r.seconds / 1e9
    rows.append(
        Row(
            "verify, 4 KiB messages (GB/s)",
            gbs,
            big_size / b_o.seconds / 1e9,
            "1.0 GB/s",
            gbs >= 1.0,
            b_p and big_size / b_p.seconds / 1e9,
            ".2f",
        )
    )

    # Flat memory: the same peak on a stream a tenth the size.
    v_s = measure([*ripple, "verify", str(small)])
    d_s = measure([*ripple, "decode", "--format", "sexp", str(small)], WORK / "decode.small.sexp")
    flat = 16.0  # MB of slack
    rows.append(
        Row("peak RSS verify (MB)", v_r.rss_mb, v_o.rss_mb, "flat", v_r.rss_mb <= v_s.rss_mb + flat, v_p and v_p.rss_mb)
    )
    rows.append(
        Row("peak RSS decode (MB)", d_r.rss_mb, d_o.rss_mb, "flat", d_r.rss_mb <= d_s.rss_mb + flat, d_p and d_p.rss_mb)
    )
    rows.append(Row("peak RSS verify 4 KiB (MB)", b_r.rss_mb, b_o.rss_mb, "flat", b_r.rss_mb <= v_s.rss_mb + flat))

    startup = measure([*ripple, "verify", str(ROOT / "examples" / "demo.ripple")], repeat=3)
    count, t_py = python_loop(stream)  # these two read the whole file: after every measurement
    t_crc = crc_whole(stream)

    print()
    pure_col = f" {'pure Python':>13}" if args.with_pure else ""
    print(f"{'workload':32} {'ripple':>14} {'anchor (OCaml)':>16} {'ratio':>7} {'goal':>9}  met{pure_col}")
    for r in rows:
        ratio_txt = f"{r.ours / r.anchor:6.2f}x"
        extra = f" {format(r.pure, r.fmt):>13}" if r.pure is not None else (f" {'':>13}" if args.with_pure else "")
        ours, anchor = format(r.ours, r.fmt), format(r.anchor, r.fmt)
        line = f"{r.name:32} {ours:>14} {anchor:>16} {ratio_txt} {r.goal:>9}  {'yes' if r.met else 'no ':3}{extra}"
        print(line.rstrip())
    print()
    print("reference figures (same file):")
    print(f"  plain Python loop, struct + crc32c: {count / t_py:12,.0f} msgs/s")
    print(f"  crc32c over the whole file:         {size / t_crc / 1e9:12.1f} GB/s")
    print(f"  ripple start-up (verify of the 300-message demo): {startup.seconds * 1000:.0f} ms")
    steady = big_size / max(b_r.seconds - startup.seconds, 1e-9) / 1e9
    print(f"  verify, 4 KiB messages, start-up excluded: {steady:.2f} GB/s")
    tenth = f"{max(n // 10, 1):,}-message stream"
    print(f"  peak RSS on the {tenth}: verify {v_s.rss_mb:.0f} MB, decode {d_s.rss_mb:.0f} MB")
    print(f"  decode output identical to OCaml's sexplib text: {'yes' if same else 'NO'}", end="")
    print(f" (pure Python path: {'yes' if same_pure else 'NO'})" if args.with_pure else "")
    return 0 if same and same_pure else 1


if __name__ == "__main__":
    sys.exit(main())
