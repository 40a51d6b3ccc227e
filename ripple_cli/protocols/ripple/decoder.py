"""Ripple's streaming decoder: bytes in any chunking -> messages and problems.

`StreamDecoder` = the codec's `FrameDecoder` (envelopes, CRCs,
resynchronization) + `MessageDecoder` (payloads, schemas from Handshakes).
Both are pure: the caller feeds bytes and gets values back.  The stream
dissector (stream.py) drives it, with the fast lane when there is one.
"""

from __future__ import annotations

from collections.abc import Iterator

from ripple_cli.codec.crc import Buffer
from ripple_cli.codec.envelope import DEFAULT_MAX_PAYLOAD, Frame
from ripple_cli.codec.errors import DecodeError
from ripple_cli.codec.framing import FrameDecoder
from ripple_cli.codec.messages import (
    DELTA,
    HANDSHAKE,
    Body,
    DeltaMode,
    DeltaView,
    Handshake,
    UnknownPayload,
    read_delta_msg,
    read_payload,
)
from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.protocols.ripple.message import Message

__all__ = ["DeltaMode", "Event", "Message", "MessageDecoder", "StreamDecoder"]

Event = Message | Problem


class MessageDecoder:
    """Decodes framed envelopes.  Stateful: a Handshake's schemas serve the
    Deltas after it."""

    def __init__(self, registry: SchemaRegistry | None = None, delta_mode: DeltaMode = DeltaMode.DECODE) -> None:
        self.registry = (registry or SchemaRegistry()).child()
        self.delta_mode = delta_mode

    def decode(self, frame: Frame, out: list[Event]) -> None:
        if frame.flags:
            out.append(
                Problem(
                    frame.offset,
                    "flags",
                    f"non-zero reserved flags 0x{frame.flags:02x}",
                    severity=Severity.WARNING,
                    seq=frame.seq,
                )
            )
        try:
            if frame.tag == DELTA:
                body: Body = self._delta(frame, out)
            else:
                body = read_payload(frame.tag, frame.payload)
        except DecodeError as e:
            out.append(Problem(frame.offset, "bad_payload", f"payload does not decode: {e}", seq=frame.seq))
            return
        if isinstance(body, UnknownPayload):
            out.append(
                Problem(
                    frame.offset,
                    "unknown_type",
                    f"unknown message type {frame.tag}, shown raw",
                    severity=Severity.WARNING,
                    seq=frame.seq,
                )
            )
        elif frame.tag == HANDSHAKE and self.delta_mode is not DeltaMode.RAW:
            assert isinstance(body, Handshake)
            self.registry.declare(body.output_schemas)
        out.append(Message(frame, body))

    def _delta(self, frame: Frame, out: list[Event]) -> Body:
        msg = read_delta_msg(frame.payload)
        if self.delta_mode is DeltaMode.RAW:
            return msg
        schema = self.registry.get(frame.fingerprint)
        if schema is None:
            return msg
        if schema.flaw is not None:
            fp = frame.fingerprint.decode("utf-8", "replace")
            detail = f"Delta not decoded: schema {fp} {schema.flaw}, which no OCaml record can"
            out.append(Problem(frame.offset, "bad_delta", detail, seq=frame.seq))
            return msg
        try:
            if self.delta_mode is DeltaMode.VALIDATE:
                schema.validate(msg.key, msg.delta_bytes)
                return msg
            key = schema.read_key(msg.key)
            delta = schema.read_delta(msg.delta_bytes)
        except DecodeError as e:
            fp = frame.fingerprint.decode("utf-8", "replace")
            detail = f"Delta does not decode with schema {fp}: {e}"
            out.append(Problem(frame.offset, "bad_delta", detail, seq=frame.seq))
            return msg
        return DeltaView(msg.source_output, key, delta, msg.sequence_no, msg.watermark_ns, schema)


class StreamDecoder:
    """Feed bytes, get `Message`s and `Problem`s in stream order."""

    def __init__(
        self,
        registry: SchemaRegistry | None = None,
        delta_mode: DeltaMode = DeltaMode.DECODE,
        max_payload: int = DEFAULT_MAX_PAYLOAD,
        start_offset: int = 0,
    ) -> None:
        self.frames = FrameDecoder(max_payload, start_offset)
        self.messages = MessageDecoder(registry, delta_mode)

    def feed(self, data: Buffer) -> list[Event]:
        return self._decode(self.frames.feed(data))

    def finish(self) -> list[Event]:
        return self._decode(self.frames.finish())

    def gap(self, size: int) -> list[Event]:
        """`size` bytes were lost here; see `FrameDecoder.gap`."""
        return self._decode(self.frames.gap(size))

    # The same, step by step: event lists of one item each (an envelope or
    # a damaged region), in stream order.  The caller handles each step
    # before asking for the next: what it does with an event may change
    # what the next one means (the stream rules look the Delta's schema up
    # in the registry a later Handshake fills).  The stream dissector
    # (stream.py) puts its fast lane's runs between the steps.

    def feed_steps(self, data: Buffer) -> Iterator[list[Event]]:
        self.frames.append(data)
        yield from self._steps(final=False)
        self.frames.compact()

    def finish_steps(self) -> Iterator[list[Event]]:
        yield from self._steps(final=True)
        self.frames.drop_all()

    def _steps(self, final: bool) -> Iterator[list[Event]]:
        while (events := self.step(final)) is not None:
            yield events

    def step(self, final: bool) -> list[Event] | None:
        """The events of the next envelope or damaged region in the buffer;
        None when it holds no whole one (`final`: the stream is over)."""
        items = self.frames.step(final)
        return self._decode(items) if items else None

    def _decode(self, items: list[Frame | Problem]) -> list[Event]:
        out: list[Event] = []
        for item in items:
            if isinstance(item, Frame):
                self.messages.decode(item, out)
            else:
                out.append(item)
        return out
