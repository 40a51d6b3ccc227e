"""Sniff mode: tcpdump captures, ripple reads its pcap output through the
same capture reader and `Demux` as a file.

    tcpdump -i IFACE -U -w - --immediate-mode [FILTER]

tcpdump needs the right to capture (root, or CAP_NET_RAW); the error it
gives without it becomes one line and exit status 3.  If ripple cannot keep
up, tcpdump's pipe fills and the kernel drops packets; tcpdump counts them
and the summary says how many.
"""

from __future__ import annotations

import re
import shutil
import signal
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import BinaryIO, cast

from ripple_cli.capture.events import CaptureEvent, CaptureNote
from ripple_cli.capture.pcapfile import read_pcap
from ripple_cli.capture.reader import CaptureOptions, capture_events
from ripple_cli.errors import InputUnreadable, UsageProblem
from ripple_cli.sources.inputs import ChunkFile
from ripple_cli.tap.record import Packet

_START_WAIT = 15.0  # seconds for tcpdump to say it listens
_STOP_WAIT = 5.0
_SETTLE_QUIET = 0.25  # seconds without packets before tcpdump is stopped
_SETTLE_MAX = 2.0
_KERNEL_BUFFER_KIB = 65536  # tcpdump -B: room for bursts while ripple catches up
_PCAP_NS_HEADER = bytes.fromhex("4d3cb2a1")  # little-endian, nanosecond timestamps
_RECORD = struct.Struct("<IIII")
_LINKTYPE_ETHERNET = 1  # the header of a capture with no packet: any link type reads as empty
_DROPPED = re.compile(r"(\d+) packets? dropped by (kernel|interface)")


def bpf_expression(bpf: str | None, ports: frozenset[int]) -> str:
    """The filter tcpdump gets: the user's, narrowed to the `--port`s; plain
    `tcp` when neither is given (only TCP carries Ripple).  Parentheses only
    where two parts are joined: the banner shows this text."""
    parts = []
    if bpf:
        parts.append(bpf)
    if ports:
        parts.append(" or ".join(f"tcp port {p}" for p in sorted(ports)))
    if len(parts) == 2:
        return " and ".join(f"({p})" for p in parts)
    return parts[0] if parts else "tcp"


def _pcap_bytes(
    frames: Iterator[tuple[int, int, bytes] | CaptureNote],
    notes: list[CaptureNote],
    packet: Callable[[Packet], None] | None,
) -> Iterator[bytes]:
    """tcpdump's frames as a pcap again, for the capture reader; each frame
    is handed to `packet` (-w) on its way."""
    started = False
    for item in frames:
        if isinstance(item, CaptureNote):
            notes.append(item)
            continue
        time_ns, linktype, data = item
        if packet is not None:
            packet(Packet(time_ns, linktype, data))
        if not started:
            started = True
            yield _PCAP_NS_HEADER + struct.pack("<HHiIII", 2, 4, 0, 0, 262144, linktype)
        sec, ns = divmod(time_ns, 1_000_000_000)
        yield _RECORD.pack(sec, ns, len(data), len(data)) + data
    if not started:  # no packet before the end (a quiet interface, tcpdump killed): an empty capture, not "no magic"
        yield _PCAP_NS_HEADER + struct.pack("<HHiIII", 2, 4, 0, 0, 262144, _LINKTYPE_ETHERNET)


class SniffSource:
    synthesize = False  # -w records the packets themselves
    holds_backlog = False  # tcpdump's kernel buffer is small: its pipe is read at once

    def __init__(
        self, interface: str, bpf: str | None, ports: frozenset[int], max_flows: int, window: int = 8 << 20
    ) -> None:
        self.interface = interface
        self.name = interface
        self.expression = bpf_expression(bpf, ports)
        self.options = CaptureOptions(ports=ports, max_flows=max_flows, window=window)
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: list[str] = []
        self._listening = threading.Event()
        self._stderr_done = threading.Event()
        self._stopped = False
        self._last_read = time.monotonic()  # when tcpdump last gave a packet

    def start(self) -> str:
        exe = shutil.which("tcpdump")
        if exe is None:
            raise InputUnreadable(
                "tap: tcpdump is not installed; -i runs it (Debian: apt-get install tcpdump, or scripts/system-deps.sh)"
            )
        argv = [exe, "-i", self.interface, "-U", "-w", "-", "--immediate-mode", "-B", str(_KERNEL_BUFFER_KIB)]
        self._proc = subprocess.Popen(
            [*argv, self.expression],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            process_group=0,  # the tap stops it, after its own Ctrl-C
        )
        threading.Thread(target=self._read_stderr, name="tcpdump-stderr", daemon=True).start()
        deadline = time.monotonic() + _START_WAIT
        while not self._listening.wait(0.05):
            if self._stderr_done.is_set() or self._proc.poll() is not None:
                self._stderr_done.wait(_STOP_WAIT)
                self.close()
                raise self._start_error()
            if time.monotonic() > deadline:
                self.close()
                raise InputUnreadable(f"tap: tcpdump did not start capturing on {self.interface} in {_START_WAIT:g} s")
        return f"capturing on {self.interface} ({self.expression})"

    def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        for raw in self._proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            self._stderr.append(line)
            if "listening on" in line:
                self._listening.set()
        self._stderr_done.set()

    def _start_error(self) -> Exception:
        lines = [ln.removeprefix("tcpdump: ") for ln in self._stderr if ln.strip()]
        text = " ".join(lines) or f"tcpdump exited with status {self._proc.returncode if self._proc else '?'}"
        low = text.lower()
        if "permission" in low or "not permitted" in low:
            return InputUnreadable(
                f"tap: cannot capture on {self.interface}: permission denied (sniffing needs root or CAP_NET_RAW)"
            )
        if "filter" in low or "syntax error" in low or self._filter_at_fault():
            return UsageProblem(f"tap: -f: tcpdump cannot use the filter {self.expression!r}: {text}")
        return InputUnreadable(f"tap: cannot capture on {self.interface}: {text}")

    def _filter_at_fault(self) -> bool:
        """tcpdump failed before it listened: the interface, or the filter?
        Its words for a filter are many (`illegal port number`, `unknown
        host`, `bogus ethernet address`); the interface compiling an empty
        filter (-d: compile, print, exit) says which, for any of them."""
        exe = shutil.which("tcpdump")
        if exe is None or not self.expression.strip():
            return False
        try:
            probe = subprocess.run(
                [exe, "-i", self.interface, "-d"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=_START_WAIT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        return probe.returncode == 0

    def events(self, packet: Callable[[Packet], None] | None = None) -> Iterator[CaptureEvent]:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        notes: list[CaptureNote] = []
        pcap = ChunkFile(b"", _pcap_bytes(self._frames(cast(BinaryIO, proc.stdout)), notes, packet))
        try:
            for ev in capture_events(pcap, self.name, self.options):  # type: ignore[arg-type]
                yield ev
                if notes:
                    yield from notes
                    notes.clear()
            yield from notes
        finally:
            proc.stdout.close()
        try:
            code = proc.wait(_STOP_WAIT)
        except subprocess.TimeoutExpired:
            return
        self._stderr_done.wait(_STOP_WAIT)
        if code != 0 and not self._stopped:
            yield CaptureNote(None, time.time_ns(), "tcpdump_failed", f"tcpdump stopped: {self._why(code)}", True)

    def _why(self, code: int) -> str:
        """Why tcpdump ended: the signal that killed it, or its last error
        line (not its banner, `listening on ...`), or its exit status."""
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        said = (ln.removeprefix("tcpdump: ") for ln in reversed(self._stderr) if ln.startswith("tcpdump:"))
        return next((ln for ln in said if not ln.startswith("listening on")), f"exit status {code}")

    def _frames(self, f: BinaryIO) -> Iterator[tuple[int, int, bytes] | CaptureNote]:
        for item in read_pcap(f):
            self._last_read = time.monotonic()
            yield item

    def stop(self) -> None:
        """tcpdump flushes, prints its counts and exits; `events` ends after.

        tcpdump drops what the kernel still holds for it when it stops: first
        let it deliver that, until its output has been quiet for a moment."""
        deadline = time.monotonic() + _SETTLE_MAX
        while time.monotonic() < deadline and time.monotonic() - self._last_read < _SETTLE_QUIET:
            time.sleep(0.02)
        self._interrupt()

    def _interrupt(self) -> None:
        self._stopped = True
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)

    def close(self) -> None:
        proc = self._proc
        if proc is None:
            return
        self._interrupt()
        try:
            proc.wait(_STOP_WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def end_notes(self) -> list[str]:
        """What tcpdump said about packets it could not capture."""
        out = []
        for line in self._stderr:
            m = _DROPPED.search(line)
            if m and int(m.group(1)):
                out.append(f"tcpdump: {line.strip()}")
        return out
