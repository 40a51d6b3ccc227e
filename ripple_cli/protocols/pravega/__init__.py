"""Pravega's segment-store wire protocol (the real, current commands).

The protocol between Pravega's writers/readers and its segment store:
`int32 type, int32 length, body`, big-endian, Java `DataOutput` fields.
The modules, each pure (bytes or text in, values out):

- `commands.py`: the type codes, names and sides;
- `mutf8.py`: Java's modified UTF-8;
- `records.py`: the Event records inside appended and read data;
- `wire.py`: the documented body layouts, read and written;
- `text.py`: a command <-> its s-expression, JSON fields, summary;
- `stream.py`: framing, resynchronisation, joining cut events;
- `detect.py`: is a stream direction Pravega;
- `analysis.py`: the server's rules across a connection, for `verify`.

man/ripple-pravega.7 documents what ripple shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ripple_cli.protocols.base import (
    ConnectionAnalyzer,
    Detection,
    DissectOptions,
    Dissector,
    EncodeError,
    FilterField,
    StreamDissector,
)
from ripple_cli.protocols.pravega.analysis import KINDS, PravegaAnalyzer
from ripple_cli.protocols.pravega.commands import HEADER_SIZE
from ripple_cli.protocols.pravega.detect import detect
from ripple_cli.protocols.pravega.stream import PravegaStream
from ripple_cli.protocols.pravega.text import from_sexp, to_sexp
from ripple_cli.protocols.pravega.wire import Data, read_body, write_command
from ripple_cli.sexp.tree import Sexp
from ripple_cli.sexp.write import to_string

PORT = 12345  # the segment store's default listening port

STREAM_KINDS = {
    "bad_header": "bytes where a command header should be that cannot be one; skipped to the next header",
    "too_large": "a command above the 16 MiB - 1 frame limit, or above --max-payload (passed over)",
    "truncated": "the stream ends inside a command",
    "gap": "bytes missing from the stream (a capture hole)",
    "unknown_type": "a type code the protocol does not define (shown as Unknown with its raw body)",
    "bad_body": "a body that does not fit its command's layout (shown raw)",
    "bad_string": "a string that is not modified UTF-8 as Java writes it (kept as raw bytes)",
    "bad_bool": "a boolean byte other than 0 or 1 (a warning: Java reads it as true)",
    "trailing_bytes": "bytes after a command's last field (a warning: Java ignores them)",
    "nonzero_padding": "a Padding command whose bytes are not all zero (a warning)",
}

_NUM, _STR, _BOOL, _BYTES, _LIST, _ANY = "num", "str", "bool", "bytes", "list", "any"
FILTER_FIELDS = {
    "type_code": FilterField(_NUM, "the command's type code"),
    "writer_id": FilterField(_STR, "the writer's UUID"),
    "segment": FilterField(_STR, "the segment's name"),
    "request_id": FilterField(_NUM, "the request id"),
    "event_number": FilterField(_NUM, "an event number (ConditionalAppend, DataAppended...)"),
    "previous_event_number": FilterField(_NUM, "DataAppended: the previous ack"),
    "last_event_number": FilterField(_NUM, "AppendSetup, AppendBlockEnd: the last event number"),
    "num_events": FilterField(_NUM, "AppendBlockEnd: the events of the append"),
    "size_of_whole_events": FilterField(_NUM, "AppendBlockEnd: where the block's whole events end"),
    "expected_offset": FilterField(_NUM, "conditional appends: the segment length expected"),
    "current_segment_write_offset": FilterField(_NUM, "DataAppended: the segment's length after the append"),
    "segment_offset": FilterField(_NUM, "an offset in the segment (reads, errors)"),
    "start_offset": FilterField(_NUM, "SegmentIsTruncated: the segment's first offset"),
    "suggested_length": FilterField(_NUM, "ReadSegment: the bytes asked for"),
    "at_tail": FilterField(_BOOL, "SegmentRead: the read reached the segment's tail"),
    "end_of_segment": FilterField(_BOOL, "SegmentRead: the segment is sealed and fully read"),
    "high_version": FilterField(_NUM, "Hello: the highest wire version"),
    "low_version": FilterField(_NUM, "Hello: the lowest wire version"),
    "delegation_token": FilterField(_STR, "SetupAppend, ReadSegment: the token"),
    "correct_host": FilterField(_STR, "WrongHost: where the segment lives"),
    "server_stack_trace": FilterField(_STR, "error replies: the server's stack trace"),
    "operation_name": FilterField(_STR, "OperationUnsupported: the operation"),
    "message": FilterField(_STR, "ErrorMessage: the message"),
    "error_code": FilterField(_NUM, "ErrorMessage, AuthTokenCheckFailed: the code"),
    "data.length": FilterField(_NUM, "appended or read data: its bytes"),
    "data.event_count": FilterField(_NUM, "appended or read data: its whole Event records"),
    "data.records": FilterField(_LIST, "appended or read data: its records"),
    "data": FilterField(_BYTES, "PartialEvent: its bytes"),
    "event": FilterField(_ANY, "ConditionalAppend: its Event record"),
    "completes_partial_event": FilterField(_LIST, "AppendBlockEnd: the event(s) a block's PartialEvent began"),
    "completes_event": FilterField(_LIST, "SegmentRead: the event an earlier read of the segment cut"),
    "length": FilterField(_NUM, "Padding: its zero bytes"),
    "body": FilterField(_BYTES, "a body shown raw (no documented layout, unknown code, malformed)"),
    "trailing": FilterField(_BYTES, "bytes after the last field"),
}

_APPEND, _ACK, _READ, _ERROR = "green", "bold green", "cyan", "bold red"
TYPE_STYLES = {
    "Hello": "bold magenta",
    "KeepAlive": "dim",
    "SetupAppend": _APPEND,
    "AppendSetup": _ACK,
    "AppendBlock": _APPEND,
    "AppendBlockEnd": _APPEND,
    "ConditionalAppend": _APPEND,
    "ConditionalBlockEnd": _APPEND,
    "PartialEvent": "yellow",
    "Padding": "dim",
    "Event": "yellow",
    "DataAppended": _ACK,
    "ConditionalCheckFailed": "yellow",
    "ReadSegment": _READ,
    "SegmentRead": "bold cyan",
    "WrongHost": _ERROR,
    "SegmentIsSealed": _ERROR,
    "SegmentAlreadyExists": _ERROR,
    "NoSuchSegment": _ERROR,
    "InvalidEventNumber": _ERROR,
    "SegmentIsTruncated": _ERROR,
    "OperationUnsupported": _ERROR,
    "AuthTokenCheckFailed": _ERROR,
    "ErrorMessage": _ERROR,
    "Unknown": "magenta",
}


class PravegaDissector(Dissector):
    name = "pravega"
    title = "Pravega segment-store wire protocol (wire version 17)"
    ports = (PORT,)
    type_styles = TYPE_STYLES
    filter_fields = FILTER_FIELDS
    problem_kinds: Mapping[str, str] = MappingProxyType({**STREAM_KINDS, **KINDS})

    def detect(self, head: bytes) -> Detection:
        return detect(head)

    def stream(self, options: DissectOptions, from_client: bool | None) -> StreamDissector:
        return PravegaStream(options, from_client)

    def analyzer(self, options: DissectOptions) -> ConnectionAnalyzer | None:
        return PravegaAnalyzer()

    def encode(self, text: Sexp) -> bytes:
        cmd = from_sexp(text)
        out = write_command(cmd)
        if cmd.raw is None:
            # Fields that would not read back as given (an optional field
            # after a missing one, trailing bytes that are a field...) are
            # refused rather than written as something else.
            back = read_body(cmd.code, out[HEADER_SIZE:])
            data = cmd.values.get("data")
            if isinstance(data, Data) and data.continuation and back.raw is None:
                back = back.with_data(Data.of(data.raw, data.continuation))
            if to_sexp(back) != to_sexp(cmd):
                shown = to_string(to_sexp(back)).decode("utf-8", "replace")
                if len(shown) > 200:
                    shown = shown[:200] + "..."
                raise EncodeError(f"{cmd.name}: these fields would not read back as given; the bytes read as {shown}")
        return out
