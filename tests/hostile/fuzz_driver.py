"""The child side of tests/hostile/test_fuzz_targets.py: many `ripple`
invocations in ONE process, each with its own CPU-time limit.

Run by `bombs.run_limited(..., module="tests.hostile.fuzz_driver")`, so
under its address-space limit and with its peak RSS measured:

    fuzz_driver CASES RESULTS SECONDS

CASES is a JSON list of {"args": [...], "stdin": path or null, "trickle":
seed or null}; each is `ripple ARGS` through the CLI's own entry point
(`ripple_cli.cli.main.main`, the guard that maps exceptions to exit codes
included), stdout discarded (only its size kept), stderr captured.  With
"trickle", standard input comes as a pipe gives it to a live reader: in
pieces of random sizes (1 byte to 128 KiB, drawn from the seed).  Before each case RLIMIT_CPU's soft
limit is moved to SECONDS past the CPU time used so far: a case that runs
longer gets SIGXCPU, and this process records it and exits; one stuck in C
code past the hard limit that run_limited set is killed (SIGKILL), and the
case last started is the one.  RESULTS gets a line per case as it starts
and as it ends (JSON), so the parent knows which case it was either way.

An exit status 70 is run once more with RIPPLE_DEBUG=1 so that the
report carries the traceback (for the person reading the failure; the
check itself is on the first run, as a user would see it).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import random
import resource
import signal
import sys
import traceback
from typing import Any, BinaryIO, cast

from ripple_cli.cli.main import main as ripple_main
from ripple_cli.terminal.environment import Environment

TIMED_OUT = 124  # this process's exit status when a case ran out of CPU time


class _Sink(io.BufferedIOBase):
    """A pipe that reads nothing back: counts the bytes written."""

    def __init__(self) -> None:
        super().__init__()
        self.size = 0

    def write(self, data: Any) -> int:
        n = memoryview(data).nbytes
        self.size += n
        return n

    def writable(self) -> bool:
        return True

    def close(self) -> None:
        pass


class _Trickle(io.BufferedIOBase):
    """A pipe's read end whose writer writes in pieces of random sizes."""

    def __init__(self, data: bytes, seed: int) -> None:
        super().__init__()
        self._data = memoryview(data)
        self._pos = 0
        self._rng = random.Random(seed)

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        piece = 1 << self._rng.randrange(17)
        piece = self._rng.randrange(piece, 2 * piece)
        if size is not None and size >= 0:
            piece = min(piece, size)
        out = bytes(self._data[self._pos : self._pos + piece])
        self._pos += len(out)
        return out

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            out = bytes(self._data[self._pos :])
            self._pos = len(self._data)
            return out
        return self.read1(size)


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _hwm_kb() -> int:
    with open("/proc/self/status") as f:
        return int(next(line.split()[1] for line in f if line.startswith("VmHWM:")))


def _invoke(args: list[str], stdin: bytes, trickle: int | None = None) -> tuple[int, str, int]:
    """(exit status, stderr, stdout bytes) of `ripple ARGS`."""
    out, err = _Sink(), io.StringIO()
    env = Environment(
        stdin=cast(BinaryIO, io.BytesIO(stdin) if trickle is None else _Trickle(stdin, trickle)),
        stdout=cast(BinaryIO, out),
        stderr=err,
        stdout_isatty=False,
        stderr_isatty=False,
        environ={"NO_COLOR": "1"},
        width=120,
    )
    # Whatever bypasses the Environment (a warning, an unraisable
    # exception's report) lands in the same stderr.
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            ripple_main(args, env=env)
            code = 0  # pragma: no cover - main always exits
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return code, err.getvalue(), out.size


def _debug_traceback(args: list[str], stdin: bytes, trickle: int | None) -> str:
    os.environ["RIPPLE_DEBUG"] = "1"
    try:
        _invoke(args, stdin, trickle)
    except BaseException:  # whatever it was, for the report
        return traceback.format_exc()
    finally:
        del os.environ["RIPPLE_DEBUG"]
    return ""


def main(argv: list[str]) -> None:
    cases_path, results_path, seconds = argv[0], argv[1], int(argv[2])
    with open(cases_path) as listing:
        cases = json.load(listing)
    results = open(results_path, "w")  # noqa: SIM115 - written up to os._exit
    current = [-1]

    def out_of_time(signum: int, frame: object) -> None:
        results.write(json.dumps({"timeout": current[0], "cpu": _cpu()}) + "\n")
        results.flush()
        os._exit(TIMED_OUT)

    signal.signal(signal.SIGXCPU, out_of_time)
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    for i, case in enumerate(cases):
        stdin = b""
        if case.get("stdin"):
            with open(case["stdin"], "rb") as f:
                stdin = f.read()
        current[0] = i
        results.write(json.dumps({"start": i}) + "\n")
        results.flush()
        before = _cpu()
        soft = math.ceil(before) + seconds
        resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
        code, err, out_size = _invoke(case["args"], stdin, case.get("trickle"))
        record: dict[str, Any] = {
            "i": i,
            "code": code,
            "stderr": err,
            "out": out_size,
            "cpu": _cpu() - before,
            "hwm_kb": _hwm_kb(),
        }
        if code == 70:
            record["debug"] = _debug_traceback(case["args"], stdin, case.get("trickle"))
        results.write(json.dumps(record) + "\n")
        results.flush()
    results.close()


if __name__ == "__main__":
    main(sys.argv[1:])
