"""Canonical s-expression lines (`sexp`) and the indented form (`hum`)."""

from __future__ import annotations

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import LaneKind
from ripple_cli.protocols.item import Decoded, Run
from ripple_cli.protocols.origin import Origin
from ripple_cli.render.base import View, problem_text
from ripple_cli.terminal.environment import Environment

_FLUSH_AT = 1 << 16


class SexpRenderer:
    """stdout carries exactly one message per line (or per `hum` block) and
    nothing else; problems go to stderr, in place."""

    def __init__(
        self, env: Environment, hum: bool = False, show_offsets: bool = False, show_connection: bool = False
    ) -> None:
        self.env = env
        self.hum = hum
        self.show_offsets = show_offsets
        self.show_connection = show_connection
        self._out: list[bytes] = []
        self._size = 0

    def message(self, origin: Origin, msg: Decoded) -> None:
        text = msg.hum if self.hum else msg.line
        if self.show_offsets or (self.show_connection and origin.stream is not None):
            # A trailing comment: the line still reads back with `ripple encode`.
            notes = []
            if self.show_connection and origin.stream is not None:
                notes.append(f"{origin.stream.label} {origin.community_id}".encode())
            if self.show_offsets:
                notes.append(b"offset %d size %d" % (msg.offset, msg.size))
            text += b" ; " + b" ".join(notes)
        self._out.append(text)
        self._out.append(b"\n")
        self._size += len(text)
        if self._size >= _FLUSH_AT:
            self._write()

    @property
    def lane(self) -> LaneKind | None:
        """Each message is its canonical line, with no notes after it: a
        fast lane's lines go out as they are."""
        plain = not self.hum and not self.show_offsets and not self.show_connection
        return LaneKind.SEXP if plain else None

    def run(self, origin: Origin, run: Run, limit: int | None = None) -> None:
        self.lines(run.text if limit is None else run.first_lines(limit))

    def lines(self, text: bytes) -> None:
        """Canonical lines already written (a fast lane's)."""
        if self._size + len(text) >= _FLUSH_AT:
            self._write()
            self.env.stdout.write(text)
        else:
            self._out.append(text)
            self._size += len(text)

    def problem(self, origin: Origin, problem: Problem) -> None:
        self._write()
        self.env.problem_line(problem_text(origin, problem))

    def _write(self) -> None:
        if self._out:
            self.env.stdout.write(b"".join(self._out))
            self._out.clear()
            self._size = 0

    def flush(self) -> None:
        self._write()
        self.env.stdout.flush()

    def close(self) -> None:
        self.flush()


def line_renderer(env: Environment, view: View) -> SexpRenderer:
    return SexpRenderer(env, hum=False, show_offsets=view.offsets, show_connection=view.connection)


def hum_renderer(env: Environment, view: View) -> SexpRenderer:
    return SexpRenderer(env, hum=True, show_offsets=view.offsets, show_connection=view.connection)
