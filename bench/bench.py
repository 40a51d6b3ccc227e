#!/usr/bin/env python3
"""ripple against the OCaml workers' own code, side by side in one run.

Builds the OCaml tools (tests/interop/ocaml: the same generator the interop
tests use), generates a stream of N messages (default 1,000,000, schemas with
nested records, lists, enums and options), then times each workload for
ripple and for its anchor on the same file, and prints one table.

    make bench                      # or: python bench/bench.py --count 200000

Workloads:
  verify       `ripple verify FILE`   vs  OCaml ripple_walk (every envelope, CRC by table)
  decode sexp  `ripple decode --format sexp FILE > out`  vs  OCaml ripple_read -o out
               (typed bin_prot decode + sexplib one-line printing); outputs compared byte for byte
Reference rows (no goal): a plain Python loop (struct + crc32c), and crc32c
over the whole file as one buffer (the hardware limit for the CRC).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OCAML_SRC = ROOT / "tests" / "interop" / "ocaml"
WORK = ROOT / ".bench"


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


def timed(cmd: list[str], stdout_path: Path | None = None, repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL  # noqa: SIM115
        t0 = time.perf_counter()
        subprocess.run(cmd, check=False, stdout=out)
        best = min(best, time.perf_counter() - t0)
        if stdout_path:
            out.close()  # type: ignore[union-attr]
    return best


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=1_000_000, help="messages in the generated stream")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=1, help="runs per workload; the best is kept")
    args = ap.parse_args()

    WORK.mkdir(exist_ok=True)
    tools = build_ocaml()
    stream = generate(tools, args.count, args.seed)
    size = stream.stat().st_size
    n = args.count
    ripple = [sys.executable, "-m", "ripple_cli"]
    print(f"stream: {stream.name}: {n:,} messages, {size / 1e6:.1f} MB; machine: {machine()}", flush=True)

    rows = []
    t_r = timed([*ripple, "verify", str(stream)], repeat=args.repeat)
    t_o = timed([str(tools / "ripple_walk"), str(stream)], repeat=args.repeat)
    rows.append(("verify (msgs/s)", n / t_r, n / t_o, 1.0))

    out_r, out_o = WORK / "decode.ripple.sexp", WORK / "decode.ocaml.sexp"
    t_r = timed([*ripple, "decode", "--format", "sexp", str(stream)], stdout_path=out_r, repeat=args.repeat)
    t_o = timed([str(tools / "ripple_read"), "-o", str(out_o), str(stream)], repeat=args.repeat)
    same = out_r.read_bytes() == out_o.read_bytes()
    rows.append(("decode --format sexp (msgs/s)", n / t_r, n / t_o, 0.5))

    count, t_py = python_loop(stream)
    t_crc = crc_whole(stream)

    print()
    print(f"{'workload':32} {'ripple':>14} {'anchor (OCaml)':>16} {'ratio':>7} {'goal':>6}  met")
    for name, ours, anchor, goal in rows:
        ratio = ours / anchor
        print(f"{name:32} {ours:14,.0f} {anchor:16,.0f} {ratio:6.2f}x {goal:5.1f}x  {'yes' if ratio >= goal else 'no'}")
    print()
    print("reference figures (same file):")
    print(f"  plain Python loop, struct + crc32c: {count / t_py:12,.0f} msgs/s")
    print(f"  crc32c over the whole file:         {size / t_crc / 1e9:12.1f} GB/s")
    print(f"  decode output identical to OCaml's sexplib text: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
