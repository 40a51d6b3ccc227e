"""The Reactive Streams network protocol (the reactive-streams-io draft).

The draft fixes messages and semantics but no bytes: the encoding ripple
reads and writes is ripple's own convention (see wire.py and
man/ripple-reactive-streams.7), as is the TCP port 7373.
"""

from __future__ import annotations

from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.protocols.base import (
    ConnectionAnalyzer,
    Detection,
    DissectOptions,
    Dissector,
    FilterField,
    StreamDissector,
)
from ripple_cli.protocols.reactive_streams.analysis import ReactiveStreamsAnalyzer
from ripple_cli.protocols.reactive_streams.stream import ReactiveStreamsStream
from ripple_cli.protocols.reactive_streams.text import PROTOCOL, from_sexp
from ripple_cli.protocols.reactive_streams.wire import FramingLost, read_varint, write_message
from ripple_cli.sexp.tree import Sexp

DETECT_MAX_EXTENSIONS = 64  # a hello listing more is not taken for this protocol
DETECT_MAX_EXTENSION_ID = (1 << 32) - 1
DETECT_WINDOW = 4096  # bytes after the hello decoded to confirm it

PROBLEM_KINDS: dict[str, str] = {
    # decoding (one direction)
    "unknown_type": "a type code that is no message (0, 15-255): framing is lost, the rest is shown raw",
    "bad_varint": "a varint that is not minimal or above 2^64-1 (the message is shown raw), or runs past 10 bytes "
    "(framing is lost)",
    "bad_long": "a Long (demand) above Long.MAX_VALUE, 2^63-1: the message is shown raw",
    "bad_count": "a hello listing more than 65536 extensions (or above --max-payload): framing is lost",
    "bad_utf8": "a String field that is not UTF-8 (a warning)",
    "too_long": "a field above --max-payload, or an onNextPacked of more than 65536 elements: the message is skipped",
    "no_element_size": "an onNextPacked for a subscription with no elementSize: framing is lost",
    "state_limit": "more than 65536 fixed-size subscriptions at once on a direction: decoding stops",
    "join_limit": "split elements too many or too large to join: their parts are shown unjoined (a warning)",
    "gap": "bytes missing from a capture: framing is lost, the rest of the direction is shown raw",
    "truncated": "the stream ends inside a message",
    # the connection (verify)
    "before_hello": "a side's first message is not its hello",
    "wrong_hello": "a ServerHello from the client, or a ClientHello from the server",
    "duplicate_hello": "a second hello of the same kind",
    "unsupported_version": "a hello of a version other than 0 (a warning)",
    "goodbye_missing": "the hellos disagree on the version and no Goodbye followed",
    "after_goodbye": "a message from a side after its own Goodbye (other than GoodbyeAck)",
    "unexpected_goodbye_ack": "a GoodbyeAck with no Goodbye to answer (a warning)",
    "goodbye_unanswered": "a Goodbye that got no GoodbyeAck (a warning)",
    "unknown_subscription": "a message for an Id that no Subscribe opened",
    "id_in_use": "a Subscribe reusing the Id of a subscription still open",
    "before_onsubscribe": "a publisher signal before the subscription's OnSubscribe",
    "duplicate_onsubscribe": "a second OnSubscribe for one subscription",
    "bad_demand": "a Request of 0 elements (Reactive Streams rule 3.9)",
    "demand_exceeded": "more elements delivered than the subscriber requested",
    "after_cancel": "a Request or Cancel after the subscriber's own Cancel",
    "in_flight_after_cancel": "a publisher signal after the subscriber's Cancel, maybe in flight (a warning)",
    "after_terminal": "a publisher signal after its own OnComplete or OnError",
    "in_flight_after_terminal": "a Request or Cancel after the OnComplete or OnError, maybe in flight (a warning)",
    "unfinished_element": "a split element with no OnNextLastPart when its subscription ends or the connection closes",
    "analysis_limit": "more than 65536 subscriptions open at once: later ones are not checked (a warning)",
}

# The kinds reported as warnings (legal oddities, and ripple's own limits).
WARNING_KINDS = frozenset(
    (
        "bad_utf8",
        "join_limit",
        "unsupported_version",
        "unexpected_goodbye_ack",
        "goodbye_unanswered",
        "in_flight_after_cancel",
        "in_flight_after_terminal",
        "analysis_limit",
    )
)

FILTER_FIELDS: dict[str, FilterField] = {
    "version": FilterField("num", "ClientHello/ServerHello: the protocol version (0)"),
    "extensions": FilterField("list", "ClientHello/ServerHello: the extension Ids"),
    "publisher": FilterField("str", "Subscribe: the publisher's name"),
    "subscriber": FilterField("num", "the subscriber Id of every subscription message"),
    "initial_demand": FilterField("num", "Subscribe: the demand granted with it"),
    "demand": FilterField("num", "Request: the demand added (9223372036854775807: unbounded)"),
    "element_size": FilterField("num", "OnSubscribe, OnNext, OnNextPacked: the fixed element size, 0 if none"),
    "element": FilterField("bytes", "OnNext: the element; OnNextLastPart: the element joined from its parts"),
    "count": FilterField("num", "OnNextPacked: how many elements"),
    "elements": FilterField("list", "OnNextPacked: the elements"),
    "element_id": FilterField("num", "OnNextPart, OnNextLastPart: the element's Id (the draft's `element`)"),
    "data": FilterField("bytes", "OnNextPart, OnNextLastPart: this part's bytes; Raw: the bytes"),
    "parts": FilterField("num", "OnNextLastPart: how many parts the element had, this one included"),
    "error": FilterField("str", "OnError: the error"),
    "reason": FilterField("str", "Goodbye: the reason"),
    "message": FilterField("str", "GoodbyeAck: the message"),
}

TYPE_STYLES: dict[str, str] = {
    "ClientHello": "bold cyan",
    "ServerHello": "bold cyan",
    "Subscribe": "green",
    "Request": "green",
    "Cancel": "yellow",
    "OnSubscribe": "blue",
    "OnNext": "default",
    "OnNextPacked": "default",
    "OnNextPart": "dim",
    "OnNextLastPart": "default",
    "OnComplete": "bold blue",
    "OnError": "bold red",
    "Goodbye": "magenta",
    "GoodbyeAck": "magenta",
    "Raw": "red",
}


class ReactiveStreamsDissector(Dissector):
    name = PROTOCOL
    title = "Reactive Streams network protocol (draft; ripple's byte convention)"
    ports = (7373,)  # ripple's choice: the draft names no port
    problem_kinds = PROBLEM_KINDS
    filter_fields = FILTER_FIELDS
    type_styles = TYPE_STYLES

    def detect(self, head: bytes) -> Detection:
        """Yes: a ClientHello or ServerHello of version 0 with at most 64
        minimal extension Ids below 2^32, and whatever follows it (up to
        4 KiB) decodes without an error."""
        if not head:
            return Detection.MORE
        if head[0] not in (1, 2):
            return Detection.NO
        if len(head) < 2:
            return Detection.MORE
        if head[1] != 0:
            return Detection.NO
        p = 2
        count = 0
        for k in range(DETECT_MAX_EXTENSIONS + 1):
            try:
                v, q, minimal = read_varint(head, p, len(head))
            except FramingLost:
                return Detection.NO
            if q < 0:
                return Detection.MORE
            if not minimal or v > (DETECT_MAX_EXTENSIONS if k == 0 else DETECT_MAX_EXTENSION_ID):
                return Detection.NO
            p = q
            if k == 0:
                count = v
            if k == count:
                break
        decoder = ReactiveStreamsStream(DissectOptions())
        items = decoder.feed(head[: p + DETECT_WINDOW])
        if any(isinstance(i, Problem) and i.severity is Severity.ERROR for i in items):
            return Detection.NO
        return Detection.YES

    def stream(self, options: DissectOptions, from_client: bool | None) -> StreamDissector:
        return ReactiveStreamsStream(options)

    def analyzer(self, options: DissectOptions) -> ConnectionAnalyzer | None:
        return ReactiveStreamsAnalyzer()

    def encode(self, text: Sexp) -> bytes:
        return write_message(from_sexp(text))
