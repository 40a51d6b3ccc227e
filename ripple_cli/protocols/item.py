"""What every dissector hands on, and every renderer, filter and analysis
reads: the one message contract.

A decoded item is one of three things:

- a `Decoded` message of any protocol (Ripple's `Message`, a sibling's
  `ProtoMessage`): it offers its canonical line, its hum form, its typed
  JSON object, its table cells, and the names `--type/--output/--key` test;
  the `-Y` filter reads its fields through its dissector (`Dissector.getter`);
- a `Problem` (codec/problems.py): something that did not decode, in place;
- a `Run`: consecutive messages a fast lane decoded at once, standing for
  them in counts and, when the lane wrote them, in canonical lines.

Consumers switch on these three kinds only (in flow/pipeline.py), never on
a protocol's own types.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from ripple_cli.codec.problems import Problem


@dataclass(frozen=True, slots=True)
class Cells:
    """A message's cells in the table and the tap's live view.  Fields a
    protocol does not have stay empty; `seq` marks the envelope layout.
    The type's colour is its dissector's (`Dissector.type_styles`)."""

    summary: str
    short_type: str = ""  # the type's name where the column is narrow ("" = the type)
    seq: int | None = None  # the envelope's sequence number (Ripple)
    time_ns: int | None = None  # a time the message carries (Ripple's envelope time)
    schema: str = ""
    output: str = ""
    key: str = ""


@dataclass(slots=True)
class Progress:
    """How far one stream direction has come by its own numbering, for the
    tap's live view: kept by the stream's dissector when asked
    (`DissectOptions.progress`, `StreamDissector.progress`), over every
    message, a fast lane's runs included.  Cumulative: the reader compares
    the counters with those it last read."""

    seq: int | None = None  # the last message's place in the stream's own numbering
    position: tuple[str, int] | None = None  # (output, its sequence number) of the last message that advanced one
    watermark_ns: int | None = None  # the last event-time watermark carried
    load: float | None = None  # the last heartbeat's load
    heartbeats: int = 0  # heartbeats seen: a new one arrived when this grows
    watermarks: int = 0  # watermarks seen: a new one arrived when this grows
    missing: int = 0  # sequence numbers skipped
    duplicates: int = 0  # messages whose sequence number was already seen
    out_of_order: int = 0  # messages whose `seq` is not above the previous one


class Decoded(Protocol):
    """One decoded message, whatever its protocol."""

    @property
    def protocol(self) -> str: ...  # the registry name, e.g. "ripple"

    @property
    def offset(self) -> int: ...  # stream offset of its first byte

    @property
    def size(self) -> int: ...  # bytes on the wire

    @property
    def type(self) -> str: ...  # the type's name, as the text form and --type spell it

    @property
    def line(self) -> bytes:
        """The canonical s-expression, one line, no newline (`encode` reads it back)."""
        ...

    @property
    def hum(self) -> bytes:
        """The same, indented as sexplib's to_string_hum."""
        ...

    def to_json(self, context: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON object of `decode -F json`: {"v": 1, **context, ...},
        as codec/jsonview.py's `dumps` writes it: JSON values, where an
        array may be a `JsonArray`, made as it is written (a Handshake's
        schemas: there may be 650,000)."""
        ...

    def cells(self) -> Cells: ...

    @property
    def output(self) -> str | None:
        """The stream output it belongs to (`--output`), if the protocol has one."""
        ...

    @property
    def key(self) -> str | None:
        """Its key as text (`--key`), if the protocol has one."""
        ...


class TableRow(NamedTuple):
    """A message's table cells as a fast lane wrote them (LaneKind.TABLE):
    `Cells` as text, each cell escaped as the table shows it
    (render/columns.py's `escaped`)."""

    protocol: str
    offset: str
    seq: str
    time: str  # the message's own time, as a time of day
    type: str
    short_type: str
    style: str  # the type's colour (Dissector.type_styles)
    schema: str
    output: str
    key: str
    summary: str


class Run:
    """Consecutive whole messages of one stream that a fast lane decoded at
    once (not to be changed).  A base class, not a Protocol, so that the
    pipeline tells a run from a message by one isinstance."""

    __slots__ = ()

    offset: int  # stream offset of the first
    end: int  # stream offset after the last
    messages: int
    size: int  # bytes on the wire
    # What the lane wrote, a line (ending in a newline) per message shown:
    # their canonical lines (LaneKind.SEXP), their JSON objects after the
    # head (LaneKind.JSON) or their table cells (LaneKind.TABLE: read them
    # with `table_rows`); else b"".  Under a selection, only the chosen
    # messages' (`lines` of them).
    text: bytes
    lines: int

    @property
    def problem_count(self) -> int:
        raise NotImplementedError

    def counts(self) -> Iterable[tuple[str, int]]:
        """(type name, messages) for each type present."""
        raise NotImplementedError

    def problems(self, limit: int | None = None) -> Iterator[Problem]:
        """The problems found among them (stream rules), in order."""
        raise NotImplementedError

    def first_lines(self, n: int) -> bytes:
        """The first n lines of `text`."""
        raise NotImplementedError

    def table_rows(self, limit: int | None = None) -> list[TableRow]:
        """The rows of a LaneKind.TABLE run's text (only the first `limit`)."""
        raise NotImplementedError

    def last_table_rows(self, n: int) -> list[TableRow]:
        """The last n rows of a LaneKind.TABLE run's text."""
        raise NotImplementedError

    def last_problems(self, n: int) -> list[Problem]:
        """The last n of `problems`."""
        raise NotImplementedError


Item = Decoded | Problem | Run
