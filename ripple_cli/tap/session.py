"""The tap's threads, and the queues between them.

    source ──► reader ──EventQueue──► decoder ──DropQueue──► printer ──► stdout
                  │                   (Demux)                (renderer or live view)
                  └──EventQueue/DropQueue──► recorder ──► -w FILE

No thread ever waits for a slower one downstream: each queue is bounded and
a full queue drops.  Stream bytes dropped before the decoder become a
`StreamGap` of their size (Demux resynchronizes after it); messages dropped
before the printer are counted ("not shown").  Forwarding itself is not
here at all: in proxy mode it runs in the relay process, which bounds and
drops its copies the same way (relay.py).

Ctrl-C stops the source (the relay closes its connections, tcpdump
flushes), then what was already received is decoded and shown; a second
Ctrl-C gives that up.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import Protocol, cast

from ripple_cli.analysis.report import Report, SourceReport
from ripple_cli.capture.events import CaptureEvent, StreamEnd, StreamGap, StreamId
from ripple_cli.codec.problems import Problem
from ripple_cli.errors import EXIT_INTERRUPTED, EXIT_TERMINATED
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.pipeline import BaseSink, Enough, deliver, steps
from ripple_cli.flow.select import MessageSelector
from ripple_cli.protocols.item import Decoded, Item, Run
from ripple_cli.protocols.origin import Origin
from ripple_cli.render.base import Renderer
from ripple_cli.tap.queues import DropQueue, End, EventQueue
from ripple_cli.tap.record import Packet, Recorder
from ripple_cli.tap.stats import TapStats
from ripple_cli.terminal.interrupts import take_interrupts

# The print queue holds at most `buffer` bytes of messages, and one message
# per this many bytes of `buffer` (at least MIN_PRINT_ITEMS): a queued message
# costs far more memory than its wire size when it is small.
BYTES_PER_PRINT_ITEM = 4096
MIN_PRINT_ITEMS = 10_000
NICE = 19  # default --nice: added to the niceness of the tap's own threads, which run when nothing else would
# Items the decoder and the printer take from their queues at once, one lock
# a batch.  Measured (44,000 round trips of a 93-byte Heartbeat through the
# proxy, -F sexp, four alternating runs): the tap's CPU 1.91 s, 1.75 s with it.
_BATCH = 256
_IDLE = 0.05  # seconds: how soon a lone message is flushed, and the live view's tick


class Source(Protocol):
    name: str  # Origin.source of what it yields
    synthesize: bool  # -w synthesizes frames from stream events (proxy), or gets packets (sniff)
    # The source keeps what the reader has not read yet, up to --buffer (the
    # relay), so the reader can yield the CPU like the rest of the tap; else
    # (tcpdump's small kernel buffer) it reads at normal priority.
    holds_backlog: bool

    def start(self) -> str: ...

    def events(self, packet: Callable[[Packet], None] | None = None) -> Iterator[CaptureEvent]: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...

    def end_notes(self) -> list[str]: ...


class Session:
    def __init__(
        self,
        source: Source,
        demux: Demux,
        select: MessageSelector,
        printer: Renderer,
        stats: TapStats,
        report: Report,
        *,
        count: int | None = None,
        buffer: int = 64 << 20,
        recorder: Recorder | None = None,
        print_items: int | None = None,
        nice: int = NICE,
    ) -> None:
        self.source = source
        self.demux = demux
        self.select = select
        self.printer = printer
        self.stats = stats
        self.report = report
        self.rep: SourceReport = report.source(source.name)
        self.count = count
        self.nice = nice
        self.recorder = recorder
        self.decode_q = EventQueue(buffer)
        if print_items is None:
            print_items = max(MIN_PRINT_ITEMS, buffer // BYTES_PER_PRINT_ITEM)
        self.print_q: DropQueue[tuple[Origin, Item]] = DropQueue(print_items, buffer)
        self._record_events: EventQueue | None = None
        self._record_packets: DropQueue[Packet] | None = None
        if recorder is not None:
            if source.synthesize:
                self._record_events = EventQueue(buffer)
            else:
                self._record_packets = DropQueue(1 << 20, buffer)
        self.interrupted = False
        self.terminated = False  # by SIGTERM: exit 143 rather than 130
        self.abandoned = False
        self.printer_closed = False
        self.record_error: str | None = None
        self._printed = threading.Event()  # the printer is done (drained, --count reached, or failed)
        self._recorded = threading.Event()
        self._error: BaseException | None = None
        self._broken_pipe = False
        self._lowered: list[int] = []  # the native ids of the threads _lower_priority lowered
        self._priority_lock = threading.Lock()

    # -- the main thread ------------------------------------------------------

    def run(self, on_start: Callable[[str], None] | None = None) -> int:
        """Starts the source, then runs until it ends, --count is reached or
        Ctrl-C; returns the exit code.  `on_start` gets the source's status
        line once everything runs (a Ctrl-C from then on is a clean stop)."""
        try:
            title = self.source.start()
        except BaseException:
            if self.recorder is not None:
                self.recorder.close()
            raise
        threads = [
            threading.Thread(
                target=self._guard(self._read, background=self.source.holds_backlog), name="tap-reader", daemon=True
            ),
            threading.Thread(target=self._guard(self._decode), name="tap-decoder", daemon=True),
            threading.Thread(target=self._guard(self._print, self._printed), name="tap-printer", daemon=True),
        ]
        if self.recorder is not None:
            threads.append(
                threading.Thread(target=self._guard(self._record, self._recorded), name="tap-recorder", daemon=True)
            )
        else:
            self._recorded.set()
        for t in threads:
            t.start()
        restore_sigterm = take_interrupts(self._terminate)
        try:
            try:
                if on_start is not None:
                    on_start(title)
                _wait(self._printed)
            except KeyboardInterrupt:
                self.stats.ended_by = "terminated" if self.terminated else "interrupted"
                with self._priority_lock:
                    self.interrupted = True
                    self.source.stop()
                    # Nothing is forwarded any more: what is left to show
                    # need not wait for a busy machine's idle time.
                    _restore_priority(self._lowered)
                try:
                    _wait(self._printed)
                except KeyboardInterrupt:
                    self._abandon()
        finally:
            # --count reached, or an error: stop the source; the recorder
            # keeps what was received.  A failure of the tap itself (a bug,
            # memory) must not cost the traffic: a relay is left to forward
            # the connections already open, unwatched.
            abandon = getattr(self.source, "abandon", None)
            if self._error is not None and abandon is not None:
                abandon()
            else:
                self.source.close()
            if not self.abandoned:
                try:
                    _wait(self._recorded)
                except KeyboardInterrupt:
                    self._abandon()
            restore_sigterm()
        if self._error is not None:
            raise self._error
        if self._broken_pipe:
            raise BrokenPipeError
        if self.terminated:
            return EXIT_TERMINATED
        return EXIT_INTERRUPTED if self.interrupted else self.report.exit_code

    def _terminate(self, _signum: int, _frame: object) -> None:
        """SIGTERM (kill, systemd, docker stop) stops the tap as Ctrl-C does:
        what was received is shown, then the summary; a second one gives up
        what is left, as a second Ctrl-C does."""
        self.terminated = True
        raise KeyboardInterrupt

    def _abandon(self) -> None:
        """A second Ctrl-C: what still waits for the printer will not be shown."""
        self.abandoned = True
        for _origin, item in self.print_q.take_all():
            if isinstance(item, Problem):
                self.stats.not_shown_problems += 1
            else:
                self.stats.not_shown_messages += item.messages if isinstance(item, Run) else 1

    def _guard(
        self, body: Callable[[], None], done: threading.Event | None = None, background: bool = True
    ) -> Callable[[], None]:
        def run() -> None:
            try:
                if background:
                    with self._priority_lock:  # a Ctrl-C before this: the thread stays as it is
                        if not self.interrupted:
                            # SCHED_IDLE only where every thread yields (see _lower_priority).
                            _lower_priority(self.nice, self.nice >= NICE and self.source.holds_backlog)
                            self._lowered.append(threading.get_native_id())
                body()
            except BrokenPipeError:
                self._broken_pipe = True
            except BaseException as e:  # a bug: the main thread re-raises it
                if self._error is None:
                    self._error = e
            finally:
                if done is not None:
                    done.set()
            if self._broken_pipe or self._error is not None:
                self._printed.set()  # wake the main thread

        return run

    # -- reader: source -> queues -----------------------------------------------

    def _read(self) -> None:
        record_events = self._record_events
        record_packets = self._record_packets
        on_packet: Callable[[Packet], None] | None = None
        if record_packets is not None:

            def on_packet(p: Packet) -> None:
                record_packets.put(p, len(p.data))

        try:
            for ev in self.source.events(on_packet):
                self.decode_q.put_event(ev)
                if record_events is not None:
                    record_events.put_event(ev)
        finally:
            # Read before the decoder ends, so that the summary has them.
            self.stats.notes.extend(self.source.end_notes())
            self.decode_q.close()
            if record_events is not None:
                record_events.close()
            if record_packets is not None:
                record_packets.close()

    # -- decoder: events -> Demux -> print queue ----------------------------------

    def _decode(self) -> None:
        demux = self.demux
        try:
            for _ in steps(self._decoder_events(), demux, _ToPrinter(self)):
                pass
            for stream in demux.undecoded:  # decided at the end, for want of any recognised bytes
                self.stats.undecoded(stream.connection)
        finally:
            self.print_q.close()

    def _decoder_events(self) -> Iterator[CaptureEvent]:
        """The decode queue's events, until the reader's end; after each has
        been decoded, what it decided about its stream."""
        demux, q = self.demux, self.decode_q
        follow = demux.options.progress  # the live view's counters: read after each event
        while True:
            batch = q.get_many(_BATCH)
            if batch is None:
                continue
            for ev in batch:
                if isinstance(ev, End):
                    return
                self.stats.event(ev)
                yield ev
                stream = ev.stream
                if (
                    follow
                    and stream is not None
                    and (st := demux.streams.get(stream)) is not None
                    and st.progress is not None
                ):
                    self.stats.progress(stream, st.progress, ev.time_ns)
                if stream is not None and stream in demux.undecoded:
                    self.stats.undecoded(stream.connection)
                if isinstance(ev, StreamEnd) and stream is not None:
                    self._forget(stream)

    def _forget(self, stream: StreamId) -> None:
        """Both directions ended: their decoders go (a tap may see millions of connections)."""
        other = StreamId(stream.connection, stream.client, stream.server, not stream.from_client)
        st = self.demux.streams.get(other)
        if st is None or st.ended is not None:
            self.demux.forget(stream.connection)
        self.demux.undecoded.pop(stream, None)

    # -- printer: print queue -> renderer ------------------------------------------

    def _print(self) -> None:
        printer, q = self.printer, self.print_q
        shown = _Shown(printer, self.count)
        if self.count == 0:
            printer.close()
            self.printer_closed = True
            return
        while True:
            batch = q.get_many(_BATCH, _IDLE)
            if batch is None:
                printer.flush()  # idle: a pipe shows what came, the live view ticks
                continue
            end = isinstance(batch[-1], End)
            try:
                deliver(cast("list[tuple[Origin, Item]]", batch[:-1] if end else batch), shown)
            except Enough:
                self.stats.ended_by = "count reached"
                break
            if end:
                break
            if not len(q):
                printer.flush()
        printer.close()
        self.printer_closed = True

    # -- recorder: queue -> pcapng --------------------------------------------------

    def _record(self) -> None:
        recorder = self.recorder
        assert recorder is not None
        q: EventQueue | DropQueue[Packet] | None = (
            self._record_events if self._record_events is not None else self._record_packets
        )
        assert q is not None
        failed = False
        while True:
            item = q.get(0.5)
            if isinstance(item, End):
                break
            if failed:
                continue  # drain: the reader must never wait
            try:
                if item is None:
                    recorder.flush()
                elif isinstance(item, Packet):
                    recorder.packet(item)
                else:
                    if isinstance(item, StreamGap):
                        self.stats.not_recorded += item.size
                    recorder.event(item)
            except OSError as e:
                failed = True
                self.record_error = f"{recorder.path}: write failed: {e.strerror or e}; recording stopped"
        if self._record_packets is not None:
            self.stats.not_recorded += self._record_packets.refused_bytes
        if not failed:
            try:
                recorder.close()
            except OSError as e:
                self.record_error = f"{recorder.path}: write failed: {e.strerror or e}"


class _ToPrinter(BaseSink):
    """The decoder thread's sink: counts each item (stats, report), and
    queues what is shown for the printer thread."""

    def __init__(self, session: Session) -> None:
        self.s = session
        # The printer writes a fast lane's runs only when it takes them and
        # every message is shown (the Demux was made with a lane then).
        self.takes_runs = True

    def run(self, origin: Origin, run: Run) -> None:
        s = self.s
        s.stats.run(origin, run)
        s.report.run(s.rep, run)
        if not s.select.everything:
            return  # a selecting lane's run: messages none of which is shown
        if not s._printed.is_set() and not s.print_q.put((origin, run), run.size):
            s.stats.not_shown_messages += run.messages

    def problem(self, origin: Origin, problem: Problem) -> None:
        s = self.s
        s.stats.output(origin, problem)
        s.report.problem(s.rep, problem)
        if not s._printed.is_set() and not s.print_q.put((origin, problem)):
            s.stats.not_shown_problems += 1

    def message(self, origin: Origin, msg: Decoded) -> None:
        s = self.s
        s.stats.output(origin, msg)
        s.report.message(s.rep, msg)
        # --count reached: nothing more is shown, nor counted as not shown.
        if not s._printed.is_set() and s.select(origin, msg) and not s.print_q.put((origin, msg), msg.size):
            s.stats.not_shown_messages += 1


class _Shown:
    """The printer thread's sink: the renderer, up to --count."""

    takes_runs = True

    def __init__(self, printer: Renderer, count: int | None) -> None:
        self.printer = printer
        self.count = count
        self.shown = 0

    def message(self, origin: Origin, msg: Decoded) -> None:
        self.printer.message(origin, msg)
        self.shown += 1
        if self.count is not None and self.shown >= self.count:
            raise Enough

    def run(self, origin: Origin, run: Run) -> None:
        if self.count is not None and self.shown + run.lines >= self.count:
            self.printer.run(origin, run, self.count - self.shown)
            raise Enough
        self.printer.run(origin, run)
        self.shown += run.lines

    def problem(self, origin: Origin, problem: Problem) -> None:
        self.printer.problem(origin, problem)

    def flush(self) -> None:
        self.printer.flush()


def _lower_priority(nice: int, idle: bool) -> None:
    """Decoding, printing and recording yield the CPU to forwarding and to
    the traffic's own endpoints: on a busy machine the tap falls behind and
    drops copies (counted), the traffic does not slow down.  On Linux a
    thread has its own nice value.  Measured on 2 cores (bench.py --only
    tap, C relay): the proxy moved 0.8-0.95x socat's MB/s with these threads
    at nice 10 and the reader at 0, 1.1-1.3x with all of them at nice 19.

    `idle` (a proxy at --nice 19: no thread of the tap runs at normal
    priority, none waits for the GIL on a starved one): SCHED_IDLE as well.
    A nice-19 thread that is running keeps its core for the rest of its
    slice under Linux 6.6's EEVDF when a forwarder wakes; a SCHED_IDLE one
    gives it up at once.  Measured on 2 cores, Linux 6.18 (bench.py --only
    tap): the added p99 round trip through the proxy fell from 331 to 133
    us, the MB/s the same."""
    if nice > 0:
        with contextlib.suppress(OSError, AttributeError):
            os.nice(nice)
    if idle:
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # this thread's


def _restore_priority(threads: list[int]) -> None:
    """The lowered threads back to the calling thread's class and nice.
    Why: a SCHED_IDLE thread gets about a thousandth of a core beside busy
    ones, and a Ctrl-C on a machine loaded by other work waited minutes for
    what was left to show.  Linux lets a thread leave SCHED_IDLE, or take
    back its nice, only with CAP_SYS_NICE or room under RLIMIT_NICE: without
    them the threads stay as they are (a second Ctrl-C gives up the rest)."""
    nice = os.getpriority(os.PRIO_PROCESS, 0)  # the calling thread's, on Linux
    for tid in threads:
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, tid, nice)


def _wait(event: threading.Event) -> None:
    # A short timeout keeps the main thread where Ctrl-C can reach it.
    while not event.wait(0.1):
        pass
