"""A tiny line protocol for testing the dissector wiring on its own:
`HELLO <name>\\n` opens a direction, then `MSG <n> <text>\\n` lines, each n
one above the last (a rule the analyzer checks across the connection)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import (
    ConnectionAnalyzer,
    Detection,
    DissectOptions,
    Dissector,
    EncodeError,
    FilterField,
    ProtoMessage,
    StreamDissector,
)
from ripple_cli.sexp.tree import Sexp

NAME = "lines"


def _message(offset: int, line: bytes) -> ProtoMessage | Problem:
    words = line.rstrip(b"\n").split(b" ", 2)
    if words[0] == b"HELLO" and len(words) == 2:
        text: Sexp = [NAME.encode(), [b"Hello", [[b"name", words[1]]]]]
        return ProtoMessage(NAME, offset, len(line), "Hello", text, {"name": words[1].decode()}, words[1].decode())
    if words[0] == b"MSG" and len(words) == 3 and words[1].isdigit():
        n, body = int(words[1]), words[2]
        text = [NAME.encode(), [b"Msg", [[b"n", words[1]], [b"text", body]]]]
        return ProtoMessage(NAME, offset, len(line), "Msg", text, {"n": n, "text": body.decode()}, body.decode())
    return Problem(offset, "bad_line", f"not a line of this protocol: {line[:20]!r}")


class LinesStream(StreamDissector):
    def __init__(self) -> None:
        self.buf = b""
        self.offset = 0

    def feed(self, data: bytes) -> list[ProtoMessage | Problem]:
        self.buf += data
        out = []
        while (i := self.buf.find(b"\n")) >= 0:
            line, self.buf = self.buf[: i + 1], self.buf[i + 1 :]
            out.append(_message(self.offset, line))
            self.offset += len(line)
        return out

    def gap(self, size: int) -> list[ProtoMessage | Problem]:
        self.buf, self.offset = b"", self.offset + len(self.buf) + size
        return [Problem(self.offset - size, "gap", f"{size} bytes missing")]

    def finish(self) -> list[ProtoMessage | Problem]:
        if self.buf:
            return [Problem(self.offset, "truncated", f"{len(self.buf)} bytes of an unfinished line")]
        return []


class LinesAnalyzer(ConnectionAnalyzer):
    def __init__(self) -> None:
        self.last: dict[bool | None, int] = {}

    def observe(self, from_client: bool | None, msg: ProtoMessage) -> list[Problem]:
        if msg.type != "Msg":
            return []
        n, last = msg.fields["n"], self.last.get(from_client, 0)
        self.last[from_client] = n
        if n != last + 1:
            return [Problem(msg.offset, "n_order", f"n {n} after {last}")]
        return []

    def close(self) -> list[Problem]:
        out = [Problem(-1, "summary", f"{sum(self.last.values())} total")]
        if False in self.last:  # the server's side said something: a note on its stream
            out.append(Problem(-1, "server_last", f"server's last n {self.last[False]}", extra={"from_client": False}))
        return out

    def report(self) -> dict[str, object] | None:
        side = {True: "client", False: "server", None: "file"}
        return {"last": {side[k]: v for k, v in self.last.items()}, "sides": len(self.last)}


class LinesDissector(Dissector):
    name = NAME
    title = "test lines"
    ports = (7777,)
    problem_kinds: ClassVar[Mapping[str, str]] = {"bad_line": "", "n_order": "", "summary": ""}
    filter_fields: ClassVar[Mapping[str, FilterField]] = {
        "n": FilterField("num", "message number"),
        "text": FilterField("str", "text"),
    }
    type_styles: ClassVar[Mapping[str, str]] = {"Hello": "green", "Msg": "cyan"}

    def detect(self, head: bytes) -> Detection:
        if len(head) < 6:
            return Detection.MORE if b"HELLO ".startswith(head) else Detection.NO
        return Detection.YES if head.startswith(b"HELLO ") else Detection.NO

    def stream(self, options: DissectOptions, from_client: bool | None) -> StreamDissector:
        return LinesStream()

    def analyzer(self, options: DissectOptions) -> ConnectionAnalyzer | None:
        return LinesAnalyzer()

    def encode(self, text: Sexp) -> bytes:
        try:
            _head, (ctor, fields) = text  # type: ignore[misc]
            values = {k: v for k, v in fields}  # type: ignore[misc]
            if ctor == b"Hello":
                return b"HELLO " + values[b"name"] + b"\n"
            if ctor == b"Msg":
                return b"MSG " + values[b"n"] + b" " + values[b"text"] + b"\n"
        except (ValueError, TypeError, KeyError) as e:
            raise EncodeError(f"bad shape: {e}") from None
        raise EncodeError(f"unknown message {ctor!r}")
