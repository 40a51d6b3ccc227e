"""`-w FILE`: what was tapped, as pcapng.

Sniffing records the packets tcpdump captured, as they were; the proxy
records frames synthesized from its streams (synth.py).  Files rotate as
`--rotate` says; each one is a whole capture that reads on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from ripple_cli.capture.events import CaptureEvent
from ripple_cli.capture.pcapng_writer import LINKTYPE_ETHERNET, RotatingWriter, Rotation
from ripple_cli.errors import InputUnreadable
from ripple_cli.tap.synth import TcpSynthesizer


@dataclass(frozen=True, slots=True)
class Packet:
    """A captured frame, as tcpdump gave it."""

    time_ns: int
    linktype: int
    data: bytes


class Recorder:
    def __init__(self, path: str, rotation: Rotation, synthesize: bool, if_name: str | None = None) -> None:
        self.path = path
        self.rotation = rotation
        self.if_name = if_name
        self._synth = TcpSynthesizer() if synthesize else None
        self._writer: RotatingWriter | None = None
        if synthesize:
            self._writer = self._new_writer(LINKTYPE_ETHERNET)
            self._opened()
        else:
            # The link type comes with the first packet; fail now, not then,
            # if the file cannot be written.
            try:
                with open(path, "ab"):
                    pass
            except OSError as e:
                raise InputUnreadable(f"{path}: cannot write: {e.strerror or e}") from None

    def _new_writer(self, linktype: int) -> RotatingWriter:
        return RotatingWriter(self.path, linktype, self.rotation, if_name=self.if_name)

    def _opened(self) -> None:
        assert self._writer is not None
        try:
            self._writer.open_first()
        except OSError as e:
            raise InputUnreadable(f"{self.path}: cannot write: {e.strerror or e}") from None

    @property
    def files(self) -> list[str]:
        return list(self._writer.kept) if self._writer is not None else []

    def packet(self, p: Packet) -> None:
        if self._writer is None:
            self._writer = self._new_writer(p.linktype)
        self._writer.write(p.time_ns, p.data)

    def event(self, ev: CaptureEvent) -> None:
        assert self._synth is not None and self._writer is not None
        for t, frame in self._synth.frames(ev):
            self._writer.write(t, frame)

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        if self._writer is None:
            # Nothing was captured: still leave a valid (empty) capture.
            self._writer = self._new_writer(LINKTYPE_ETHERNET)
            self._writer.open_first()
        self._writer.close()
