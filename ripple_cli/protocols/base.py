"""What a protocol dissector is: the contract every sibling protocol meets.

A protocol lives in its own package folder under `ripple_cli/protocols/`
and is registered by one line in `registry.py`; nothing else is edited to
add one.  The commands (`decode`, `verify`, `tap`, `encode`) only ever talk
to the classes below:

- `Dissector`: the protocol itself (name, ports, detection, encoder, the
  fields the `-Y` filter may name).  One instance, stateless.
- `StreamDissector`: one direction of one connection (or one raw file).
  Pure: bytes in any chunking -> `ProtoMessage`s and `Problem`s, never
  raising on bad input, never allocating more than its bounds allow.
- `ConnectionAnalyzer`: the rules that span a connection (acks against
  batches, responses against requests...).  It sees each message of both
  directions in capture order and returns the problems it finds.

Ripple is one of them (`protocols/ripple/`): its stream dissector wraps
the codec's decoder and owns its fast lane.  What a dissector hands on is
described in `item.py`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ripple_cli.codec.envelope import DEFAULT_MAX_PAYLOAD
from ripple_cli.codec.errors import EncodeError
from ripple_cli.codec.messages import DeltaMode
from ripple_cli.codec.problems import Problem
from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.codec.text import tree_line
from ripple_cli.codec.values import bytes_to_json
from ripple_cli.protocols.item import Cells, Item, Progress
from ripple_cli.protocols.origin import Origin
from ripple_cli.sexp.tree import Sexp
from ripple_cli.sexp.write import to_string_hum

DEFAULT_MAX_INFLATE = 64 << 20  # bytes one compressed frame may inflate to


class Detection(Enum):
    YES = "yes"  # these bytes are this protocol
    NO = "no"  # they are not
    MORE = "more"  # too few bytes to tell: ask again with more


class LaneKind(Enum):
    """What a dissector's fast lane (if it has one) produces for a run of
    messages: the pipeline asks for one only when its sink takes runs."""

    COUNT = "count"  # count them and check the stream rules (verify, --list-streams)
    SEXP = "sexp"  # also write their canonical lines (decode --format sexp)
    JSON = "json"  # also write their typed JSON objects, each after its head (decode --format json, jsonl)
    TABLE = "table"  # also write their table cells (decode --format table): Run.table_rows
    # Also build their rows of the export's table, as Arrow buffers (Ripple's
    # lane: LaneRun.columns; batch/arrow.py makes the record batch).
    ROWS = "rows"
    # Consume those that fail the options' Prefilter (counted, not shown),
    # and leave those that may pass to the dissector's Python decoder
    # (decode, tap with --type/--output/--key/-Y).  With SEXP or JSON and
    # an exact Prefilter, the lane writes those that pass instead (SEXP,
    # JSON or TABLE).
    SELECT = "select"


@dataclass(frozen=True)
class Prefilter:
    """Necessary conditions of a selection (--type, --output, --key, -Y): a
    message that fails one is not shown, so a fast lane may pass over it
    without making a Python message of it; one that may pass is decoded and
    judged by the whole selection.  None: any value.  `exact`: the
    conditions are the whole selection (a message that meets them all is
    chosen), so a lane may write those that pass itself."""

    types: frozenset[str] | None = None  # type names
    outputs: frozenset[bytes] | None = None  # a Delta's output, as on the wire
    keys: frozenset[bytes] | None = None  # a Delta's key text (`Decoded.key`), UTF-8 (surrogateescape)
    exact: bool = True

    @property
    def constrains(self) -> bool:
        return self.types is not None or self.outputs is not None or self.keys is not None

    def _fields(self) -> tuple[frozenset[Any] | None, ...]:
        return (self.types, self.outputs, self.keys)

    def __and__(self, other: Prefilter) -> Prefilter:
        """What both require."""

        def both(a: frozenset[Any] | None, b: frozenset[Any] | None) -> frozenset[Any] | None:
            return b if a is None else a if b is None else a & b

        types, outputs, keys = (both(a, b) for a, b in zip(self._fields(), other._fields(), strict=True))
        return Prefilter(types, outputs, keys, exact=self.exact and other.exact)

    def __or__(self, other: Prefilter) -> Prefilter:
        """What either requires: a field only one of them constrains is
        free.  Exact when both are and they constrain the same one field
        (`type == A or type == B`)."""

        def either(a: frozenset[Any] | None, b: frozenset[Any] | None) -> frozenset[Any] | None:
            return None if a is None or b is None else a | b

        mine, theirs = self._fields(), other._fields()
        used = [a is not None for a in mine]
        same_one = used == [b is not None for b in theirs] and sum(used) == 1
        types, outputs, keys = (either(a, b) for a, b in zip(mine, theirs, strict=True))
        return Prefilter(types, outputs, keys, exact=self.exact and other.exact and same_one)


ANYTHING = Prefilter()  # every message
UNKNOWN = Prefilter(exact=False)  # a condition a lane cannot test: nothing to pass over, nothing exact


@dataclass(frozen=True)
class DissectOptions:
    """Limits and switches every dissector honours (shared CLI options)."""

    max_payload: int = DEFAULT_MAX_PAYLOAD  # largest frame/payload accepted before it is a problem
    max_inflate: int = DEFAULT_MAX_INFLATE  # bound on decompressed bytes per frame
    # Schemas known before the stream's own (--schemas); a stream's decoder
    # adds its Handshakes' to a child of it.  None: only the stream's own.
    registry: SchemaRegistry | None = None
    deltas: DeltaMode = DeltaMode.DECODE  # how much of a Ripple Delta is read
    rules: bool = False  # check the protocol's stream and connection rules (verify)
    lane: LaneKind | None = None  # use a fast lane where there is one, producing this
    prefilter: Prefilter = ANYTHING  # what LaneKind.SELECT passes over
    progress: bool = False  # keep StreamDissector.progress (the tap's live view)
    renumber: bool = False  # encode: write sequence numbers from 1 where the protocol has them


@dataclass(frozen=True, slots=True)
class ProtoMessage:
    """One decoded message of a sibling protocol.

    `text` is the canonical s-expression of the message: the line `decode`
    prints (`to_string`), and what `encode` reads back to the same bytes.
    Its head atom is the protocol's name, then one constructor named after
    the message type, in sexplib's record style:
        (lumberjack(Window((version 2)(count 3))))
    `fields` is the typed JSON view (JSON-safe values only: use
    `json_bytes` for byte strings); the `-Y` filter reads it too, dotted
    names going into nested objects.
    """

    protocol: str  # the registry name, e.g. "lumberjack"
    offset: int  # stream offset of the message's first byte
    size: int  # bytes on the wire
    type: str  # the message type's name, e.g. "Window" (as in `text`)
    text: Sexp
    fields: dict[str, Any]
    summary: str  # one short line for the table's summary column
    direction: str | None = None  # "request"/"response"/"ack"...: the protocol's own notion, if any

    @property
    def line(self) -> bytes:
        return tree_line(self.text)

    @property
    def hum(self) -> bytes:
        return to_string_hum(self.text)

    def to_json(self, context: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON object of `decode -F json`: shape version 1 as Ripple's
        messages, then where it came from, then what it is, then `fields`."""
        out: dict[str, Any] = {"v": 1}
        out.update(context)
        out.update(protocol=self.protocol, offset=self.offset, size=self.size, type=self.type)
        out.update(self.fields)
        return out

    def cells(self) -> Cells:
        return Cells(self.summary)

    @property
    def output(self) -> str | None:
        return None  # --output names Ripple Deltas' outputs

    @property
    def key(self) -> str | None:
        return None


# Bytes in JSON as Ripple's JSON view shows them: a string when UTF-8, else
# {"base64": ...}.  One rule for every protocol.
json_bytes = bytes_to_json


class StreamDissector(ABC):
    """One direction of a connection, or one raw stream file."""

    # Its progress by the protocol's own numbering, kept when
    # DissectOptions.progress asks and the protocol numbers anything the
    # tap's live view shows; else None.
    progress: Progress | None = None
    # `feed` takes a read-only mmap window of a file as it is (through the
    # buffer protocol; the window stays mapped while the dissector holds
    # it); else the Demux gives it bytes.
    takes_buffers: bool = False

    def midstream(self) -> None:
        """The capture did not see this connection open: the stream may start
        inside a message (a dissector that can tell says so as a warning).
        By default nothing changes."""
        return None

    @abstractmethod
    def feed(self, data: bytes) -> list[Item]:
        """More bytes of the stream; the messages and problems they complete.
        A partial message at the end waits for the next call."""

    @abstractmethod
    def gap(self, size: int) -> list[Item]:
        """`size` bytes of the stream are missing (a capture hole): report it
        and resynchronise where the framing allows."""

    @abstractmethod
    def finish(self) -> list[Item]:
        """The stream is over: a partial message left is a `truncated` problem."""

    # The pipeline reads a dissector through these two: a dissector whose
    # one chunk may give more items than fit in memory (inflated frames)
    # yields them as it decodes them, to be delivered before the next.

    def feed_lazily(self, data: bytes) -> Iterable[Item]:
        """`feed`, item by item: consumed whole before the next call."""
        return self.feed(data)

    def finish_lazily(self) -> Iterable[Item]:
        """`finish`, item by item."""
        return self.finish()


class ConnectionAnalyzer(ABC):
    """Rules across one connection (both directions), for `verify`."""

    # The capture time of the message being observed (None: not a capture),
    # set by the caller before each `observe`, for latencies and silences.
    time_ns: int | None = None

    @abstractmethod
    def observe(self, from_client: bool | None, msg: ProtoMessage) -> list[Problem]:
        """A message, in capture order.  `from_client` is None for a raw
        stream file (no connection)."""

    @abstractmethod
    def close(self) -> list[Problem]:
        """The connection (or input) is over: what was left unanswered.  A
        problem that belongs to one direction says which in
        `extra["from_client"]` (True/False), and is reported on it."""

    def report(self) -> dict[str, Any] | None:
        """After `close`: a summary of the connection for `verify`'s report
        (counts, latencies, windows...), JSON-safe values; None: nothing."""
        return None


Getter = Callable[[Origin, Any], Any]  # (origin, message) -> a field's value, None when absent


@dataclass(frozen=True)
class FilterField:
    """A name `-Y` accepts for this protocol, with its kind and meaning."""

    kind: str  # "num", "str", "bool", "bytes", "list", "any", "key"
    help: str
    # How to read it from a message; None: the message's JSON view at the
    # dotted name (ProtoMessage.fields).
    get: Getter | None = None
    choices: tuple[str, ...] = ()  # the only values ==, != and in accept
    choice_what: str = ""


_ATTRIBUTES = frozenset(("type", "offset", "size", "protocol"))


def json_view_getter(name: str) -> Getter:
    """A ProtoMessage's field by name: an attribute, or a value of `fields`."""
    if name in _ATTRIBUTES:
        return lambda o, m: getattr(m, name)
    path = tuple(name.split("."))

    def get(o: Origin, m: Any) -> Any:
        v: Any = m.fields
        for part in path:
            if type(v) is not dict:
                return None
            v = v.get(part)
        return v

    return get


class Encoder:
    """Text to bytes for one stream (`ripple encode`): the protocol's
    `encode`, message by message.  A protocol whose text depends on what
    came before (Ripple: schemas from Handshakes) keeps that state here."""

    def __init__(self, dissector: Dissector) -> None:
        self.dissector = dissector

    def encode(self, text: Sexp) -> bytes | None:
        """A message's bytes; None for a message whose bytes another one
        carries (`Dissector.contained`).  Raises `EncodeError` whose text
        names the protocol and what is wrong."""
        if self.dissector.contained(text):
            return None
        try:
            return self.dissector.encode(text)
        except EncodeError as e:
            raise EncodeError(f"{self.dissector.name}: {e}") from None


class Dissector(ABC):
    name: str = ""  # registry name, lower case: the `--protocol` value and text head atom
    title: str = ""  # e.g. "Lumberjack v1/v2 (Beats, logstash-forwarder)"
    ports: tuple[int, ...] = ()  # well-known TCP ports (shown by --list-protocols)
    problem_kinds: Mapping[str, str] = {}
    filter_fields: Mapping[str, FilterField] = {}
    # The message type names and a rich style for each, for the table.
    type_styles: Mapping[str, str] = {}

    @abstractmethod
    def detect(self, head: bytes) -> Detection:
        """Are these first bytes of a stream direction this protocol?  Be
        strict: a YES on another protocol's bytes misdecodes a connection."""

    @abstractmethod
    def stream(self, options: DissectOptions, from_client: bool | None) -> StreamDissector:
        """A decoder for one direction (`from_client` None: a raw file)."""

    def analyzer(self, options: DissectOptions) -> ConnectionAnalyzer | None:
        """The rules across a connection, when `options.rules`; None: none."""
        return None

    def getter(self, name: str) -> Getter:
        """How `-Y` reads field `name` from this protocol's messages: its
        FilterField's `get`, else the message's attribute (type, offset,
        size, protocol) or its JSON view's value at the dotted name
        (`params.machine`); the getter gives None where there is none."""
        f = self.filter_fields.get(name)
        if f is not None and f.get is not None:
            return f.get
        return json_view_getter(name)

    def encoder(self, options: DissectOptions) -> Encoder:
        return Encoder(self)

    def contained(self, text: Sexp) -> bool:
        """Whether a message's text describes bytes carried inside another
        message (a frame read out of a compressed frame).  `encode` writes
        the outer message's bytes and skips these, so that a whole decoded
        stream encodes back to itself."""
        return False

    @abstractmethod
    def encode(self, text: Sexp) -> bytes:
        """A message's canonical s-expression (as `ProtoMessage.text`) back
        to its bytes.  Raises `EncodeError` naming what is wrong."""


__all__ = [
    "ANYTHING",
    "UNKNOWN",
    "Cells",
    "ConnectionAnalyzer",
    "Detection",
    "DissectOptions",
    "Dissector",
    "EncodeError",
    "Encoder",
    "FilterField",
    "Item",
    "LaneKind",
    "Prefilter",
    "ProtoMessage",
    "StreamDissector",
]
