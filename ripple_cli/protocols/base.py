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

Ripple itself keeps its own (faster) path in `codec/` and `flow/demux.py`;
its entry here serves detection and `--list-protocols`.
"""

from __future__ import annotations

import base64
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ripple_cli.codec.problems import Problem
from ripple_cli.sexp.tree import Sexp
from ripple_cli.sexp.write import to_string, to_string_hum

DEFAULT_MAX_INFLATE = 64 << 20  # bytes one compressed frame may inflate to


class Detection(Enum):
    YES = "yes"  # these bytes are this protocol
    NO = "no"  # they are not
    MORE = "more"  # too few bytes to tell: ask again with more


@dataclass(frozen=True, slots=True)
class DissectOptions:
    """Limits and switches every dissector honours (shared CLI options)."""

    max_payload: int = 16 << 20  # largest frame/payload accepted before it is a problem
    max_inflate: int = DEFAULT_MAX_INFLATE  # bound on decompressed bytes per frame


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
        return to_string(self.text)

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


Item = ProtoMessage | Problem


def json_bytes(b: bytes) -> str | dict[str, str]:
    """Bytes in JSON, as Ripple's JSON view does: a string when UTF-8, else
    {"base64": ...}."""
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(b).decode("ascii")}


class StreamDissector(ABC):
    """One direction of a connection, or one raw stream file."""

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


@dataclass(frozen=True)
class FilterField:
    """A name `-Y` accepts for this protocol, with its kind and meaning."""

    kind: str  # "num", "str", "bool", "bytes", "list", "any"
    help: str


class Dissector(ABC):
    name: str = ""  # registry name, lower case: the `--protocol` value and text head atom
    title: str = ""  # e.g. "Lumberjack v1/v2 (Beats, logstash-forwarder)"
    ports: tuple[int, ...] = ()  # well-known TCP ports (shown by --list-protocols)
    # Detection order among protocols whose detectors both say YES (lower first).
    priority: int = 100
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
        return None

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


class EncodeError(ValueError):
    """A text form that does not describe a message of the protocol."""


@dataclass
class DetectState:
    """Bytes seen so far on one direction while its protocol is undecided."""

    head: bytearray = field(default_factory=bytearray)
