"""Lumberjack v1 and v2 (logstash-forwarder, Beats -> Logstash).

The writer (the TCP client: a Beat, logstash-forwarder) sends `W` (window /
batch size), `D` (key/value event, v1), `J` (JSON event, v2) and `C` (zlib
holding more frames); the reader (Logstash, go-lumber) answers with `A`
acks.  Text form, JSON fields, problems and verify rules: ripple-lumberjack(7).
"""

from __future__ import annotations

from collections.abc import Mapping

from ripple_cli.protocols.base import (
    ConnectionAnalyzer,
    Detection,
    DissectOptions,
    Dissector,
    EncodeError,
    FilterField,
    StreamDissector,
)
from ripple_cli.protocols.lumberjack.analysis import ANALYSIS_KINDS, LumberjackAnalyzer
from ripple_cli.protocols.lumberjack.plausible import ALL_TYPES, CANDIDATE, DETECT_PAYLOAD, Verdict, header
from ripple_cli.protocols.lumberjack.stream import LumberjackStream
from ripple_cli.protocols.lumberjack.text import frame_of_sexp
from ripple_cli.protocols.lumberjack.wire import ACK, WRITER_TYPES, Invalid, Need, encode_frame, read_frame
from ripple_cli.sexp.tree import Sexp

DETECT_FRAMES = 4  # frames of a head that must all look right
RESYNC_FRAMES = 3  # whole plausible frames in a row that recognise a head whose start is damaged
DETECT_SCAN = 64 << 10  # how far into a damaged head they are looked for

STREAM_KINDS: Mapping[str, str] = {
    "bad_frame": "bytes that start no frame: a version byte other than 1 or 2, or an unknown frame type",
    "bad_length": "a J or C length, or D pairs, above --max-payload",
    "truncated": "the stream ends inside a frame",
    "gap": "bytes missing from the stream (a capture hole)",
    "bad_json": "a J payload that is not valid JSON, or with a number past a double's range (the frame is shown)",
    "event_limit": "a J payload whose parsed form would take more than 128 MiB (shown as its bytes, not parsed)",
    "bad_zlib": "a C payload that is not a whole, clean zlib stream",
    "inflate_limit": "a C frame inflating to more than --max-inflate, holding too many frames, or nested too deep",
    "compressed_partial_frame": "a C frame whose inflated data ends inside a frame",
}


class LumberjackDissector(Dissector):
    name = "lumberjack"
    title = "Lumberjack v1/v2 (Beats, logstash-forwarder)"
    ports = (5044,)
    problem_kinds: Mapping[str, str] = {**STREAM_KINDS, **ANALYSIS_KINDS}
    filter_fields: Mapping[str, FilterField] = {
        "version": FilterField("num", "the frame's version byte: 1 or 2"),
        "count": FilterField("num", "Window: the batch (v2) or window (v1) size"),
        "batch": FilterField("num", "Window: its number in the stream, from 1"),
        "previous_count": FilterField("num", "Window: the count of the Window before it"),
        "seq": FilterField("num", "Data, Json: the event's sequence number; Ack: the acknowledged value"),
        "keepalive": FilterField("bool", "Ack: seq 0 (a keepalive while a batch is in progress)"),
        "pairs": FilterField("num", "Data: the number of key/value pairs"),
        "length": FilterField("num", "Json: payload bytes; Compressed: zlib bytes"),
        "event": FilterField("any", "Data: the pairs as an object; Json: the parsed document (event.message ...)"),
        "payload": FilterField("any", 'Json: the payload (text, or {"base64": ...}), only when it is not valid JSON'),
        "inflated_size": FilterField("num", "Compressed: bytes after inflating"),
        "frames": FilterField("num", "Compressed: frames directly inside"),
        "in_compressed": FilterField("num", "a frame found inside a C frame: that C frame's offset"),
        "after_damage": FilterField("bool", "the first frame after damage or a capture hole"),
    }
    type_styles: Mapping[str, str] = {
        "Window": "cyan",
        "Json": "green",
        "Data": "green",
        "Compressed": "magenta",
        "Ack": "yellow",
    }

    def detect(self, head: bytes) -> Detection:
        return detect(head)

    def stream(self, options: DissectOptions, from_client: bool | None) -> StreamDissector:
        return LumberjackStream(options, from_client)

    def analyzer(self, options: DissectOptions) -> ConnectionAnalyzer | None:
        return LumberjackAnalyzer()

    def encode(self, text: Sexp) -> bytes:
        frame, _inside = frame_of_sexp(text)
        return encode_frame(frame)

    def contained(self, text: Sexp) -> bool:
        # A frame read out of a C frame carries `(in_compressed OFFSET)`:
        # its bytes are in the C frame's zlib data, which encode writes.
        try:
            return frame_of_sexp(text)[1] is not None
        except EncodeError:
            return False


def detect(head: bytes) -> Detection:
    """YES when the first frame's header is plausible (see plausible.py) and
    so is every further frame the head holds (up to DETECT_FRAMES): one
    direction's frames are all the writer's (one version) or all acks.

    Leading damage (garbage, a cut frame, an implausible window) does not
    hide the stream: as the decoder resynchronizes, a head whose first
    frame is not plausible is still Lumberjack when, within its first
    DETECT_SCAN bytes, RESYNC_FRAMES whole plausible frames follow one
    another (a stricter test than at the start: the first can be anything)."""
    verdict, _whole = _chain(head, 0, DETECT_FRAMES)
    if verdict is not Detection.NO:
        return verdict
    for m in CANDIDATE.finditer(head, 1, min(len(head), DETECT_SCAN)):
        if _chain(head, m.start(), RESYNC_FRAMES)[1] >= RESYNC_FRAMES:
            return Detection.YES
    return Detection.NO


def _chain(head: bytes, p: int, frames: int) -> tuple[Detection, int]:
    """Whether up to `frames` plausible frames follow one another from
    `head[p]` (YES also when the head ends first, MORE when it ends in the
    first), and how many whole ones."""
    n = len(head)
    types = ALL_TYPES
    version = None
    for seen in range(frames):
        if p >= n:
            return Detection.YES, seen
        verdict, end = header(head, p, n, types)
        if verdict is Verdict.NO:
            return Detection.NO, seen
        if verdict is Verdict.MORE:
            return (Detection.YES if seen else Detection.MORE), seen
        if head[p + 1] == ACK:
            types = frozenset((ACK,))
        else:
            if version is not None and head[p] != version:
                return Detection.NO, seen
            version, types = head[p], WRITER_TYPES
        if end is None:  # a D frame: its end is found by reading its pairs
            r = read_frame(head, p, n, DETECT_PAYLOAD)
            if isinstance(r, Invalid):
                return Detection.NO, seen
            if isinstance(r, Need):
                return Detection.YES, seen
            end = r[1]
        elif end > n:
            return Detection.YES, seen
        p = end
    return Detection.YES, frames
