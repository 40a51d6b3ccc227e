"""The six payload types of ripple_wire.ml and their bin_prot form.

Each class mirrors an OCaml record field for field.  `read_payload` decodes
a payload exactly (every byte used, else `DecodeError`); `write_payload` is
its inverse.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Union, overload

from ripple_cli.codec import binprot as bp
from ripple_cli.codec.delta import CompiledSchema, Delta
from ripple_cli.codec.errors import DecodeError
from ripple_cli.codec.fast import speedups
from ripple_cli.codec.schema import (
    BOOL,
    FLOAT,
    INT,
    INT32,
    INT64,
    STRING,
    EnumOf,
    Field,
    ListOf,
    OptionOf,
    RecordOf,
    Schema,
    read_schema,
    write_schema,
)
from ripple_cli.terminal.words import plural

HANDSHAKE = 0
DELTA = 1
CHECKPOINT_REQUEST = 2
CHECKPOINT_ACK = 3
HEARTBEAT = 4
SCHEMA_NEGOTIATION = 5

TYPE_NAMES = {
    HANDSHAKE: "Handshake",
    DELTA: "Delta",
    CHECKPOINT_REQUEST: "Checkpoint_request",
    CHECKPOINT_ACK: "Checkpoint_ack",
    HEARTBEAT: "Heartbeat",
    SCHEMA_NEGOTIATION: "Schema_negotiation",
}
TAG_BY_NAME = {v: k for k, v in TYPE_NAMES.items()}

# Fixed fingerprints of the non-Delta types (`fingerprint_of_tag`).
FIXED_FINGERPRINTS = {
    HANDSHAKE: b"ripple.handshake/v1",
    CHECKPOINT_REQUEST: b"ripple.checkpoint_request/v1",
    CHECKPOINT_ACK: b"ripple.checkpoint_ack/v1",
    HEARTBEAT: b"ripple.heartbeat/v1",
    SCHEMA_NEGOTIATION: b"ripple.schema_negotiation/v1",
}


@dataclass(frozen=True, slots=True)
class Handshake:
    source_worker_id: bytes
    # (output name, its schema): a tuple, or, from the C reader, a sequence
    # read from the payload when asked for (fast/handshake.h's OutputSchemas).
    output_schemas: Sequence[tuple[bytes, Schema]]
    protocol_version: int


@dataclass(frozen=True, slots=True)
class DeltaMsg:
    """A Delta as it is on the wire: key and delta still encoded."""

    source_output: bytes
    key: bytes
    delta_bytes: bytes
    sequence_no: int
    watermark_ns: int | None


@dataclass(frozen=True, slots=True)
class DeltaView:
    """A Delta decoded with its schema."""

    source_output: bytes
    key: Any
    delta: Delta
    sequence_no: int
    watermark_ns: int | None
    schema: CompiledSchema


@dataclass(frozen=True, slots=True)
class CheckpointRequest:
    checkpoint_id: int
    requested_at_ns: int


@dataclass(frozen=True, slots=True)
class CheckpointAck:
    worker_id: bytes
    checkpoint_id: int
    positions: tuple[tuple[bytes, int], ...]  # (output name, last sequence_no covered)


@dataclass(frozen=True, slots=True)
class Heartbeat:
    worker_id: bytes
    timestamp_ns: int
    load: float


@dataclass(frozen=True, slots=True)
class SchemaNegotiation:
    ok: bool
    errors: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class UnknownPayload:
    """A message type this version of the protocol does not define."""

    tag: int
    payload: bytes


class DeltaMode(Enum):
    """How much of a Delta is read: a command that only counts need not
    decode keys and rows."""

    DECODE = "decode"  # key and delta decoded into values (DeltaView)
    VALIDATE = "validate"  # checked against the schema, kept raw (DeltaMsg)
    RAW = "raw"  # no schema applied at all


Body = Union[
    Handshake, DeltaMsg, DeltaView, CheckpointRequest, CheckpointAck, Heartbeat, SchemaNegotiation, UnknownPayload
]


def tag_of(body: Body) -> int:
    if isinstance(body, (DeltaMsg, DeltaView)):
        return DELTA
    if isinstance(body, UnknownPayload):
        return body.tag
    return _TAG_BY_CLASS[type(body)]


_TAG_BY_CLASS: dict[type, int] = {
    Handshake: HANDSHAKE,
    CheckpointRequest: CHECKPOINT_REQUEST,
    CheckpointAck: CHECKPOINT_ACK,
    Heartbeat: HEARTBEAT,
    SchemaNegotiation: SCHEMA_NEGOTIATION,
}


# ------------------------------------------------------------- reading


def read_delta_msg(buf: bytes) -> DeltaMsg:
    source_output, pos = bp.read_string(buf, 0)
    key, pos = bp.read_string(buf, pos)
    delta_bytes, pos = bp.read_string(buf, pos)
    sequence_no, pos = bp.read_int(buf, pos)
    present, pos = bp.read_option_tag(buf, pos)
    watermark = None
    if present:
        watermark, pos = bp.read_int64(buf, pos)
    _exact(buf, pos)
    return DeltaMsg(source_output, key, delta_bytes, sequence_no, watermark)


def _read_handshake(buf: bytes) -> Handshake:
    # The C reader (fast/handshake.h) checks every schema but keeps none
    # until asked, as the Python one: a Handshake may declare 100,000, 6 us
    # each to read here.  Where it returns None the payload does not
    # decode, and the Python reader says why.
    accel = speedups()
    if accel is not None:
        found: Handshake | None = accel.read_handshake(buf, HANDSHAKE_KINDS)
        if found is not None:
            return found
    return read_handshake_py(buf)


def read_handshake_py(buf: bytes) -> Handshake:
    """The Handshake reader in Python: the definition the C one follows.
    Every schema is read (and so checked), none is kept: `output_schemas`
    reads them again when asked for, as the C reader's does."""
    worker, pos = bp.read_string(buf, 0)
    n, pos = bp.read_count(buf, pos)
    at = array("Q")
    for _ in range(n):
        at.append(pos)
        _name, pos = bp.read_string(buf, pos)
        _schema, pos = read_schema(buf, pos)
    version, pos = bp.read_int(buf, pos)
    _exact(buf, pos)
    return Handshake(worker, OutputSchemas(buf, at), version)


class OutputSchemas(Sequence[tuple[bytes, Schema]]):
    """A Handshake's (output name, schema) pairs over its payload, each read
    when asked for; `get` is the registry's lookup by fingerprint, by an
    index made on the first one.  The pure lane's form of the C reader's
    (fast/handshake.h): a Handshake may declare 650,000 schemas in its 16
    MiB, some 700 MB as objects.  Iterated, compared, hashed, printed or
    pickled, it is the tuple of pairs."""

    __slots__ = ("_at", "_buf", "_index")

    def __init__(self, buf: bytes, at: array[int]) -> None:
        self._buf = buf
        self._at = at  # where each pair starts: its output name, then its schema
        self._index: dict[bytes, int] | None = None

    def __len__(self) -> int:
        return len(self._at)

    @overload
    def __getitem__(self, i: int) -> tuple[bytes, Schema]: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[tuple[bytes, Schema], ...]: ...

    def __getitem__(self, i: int | slice) -> tuple[bytes, Schema] | tuple[tuple[bytes, Schema], ...]:
        if isinstance(i, slice):
            return tuple(self[k] for k in range(*i.indices(len(self))))
        name, pos = bp.read_string(self._buf, self._at[i])
        return name, read_schema(self._buf, pos)[0]

    def get(self, fingerprint: bytes) -> Schema | None:
        """The schema declared under `fingerprint` (the last one), or None."""
        if self._index is None:
            index: dict[bytes, int] = {}
            for i, pos in enumerate(self._at):
                _output, pos = bp.read_string(self._buf, pos)
                name, pos = bp.read_string(self._buf, pos)
                index[b"%b/v%d" % (name, bp.read_int(self._buf, pos)[0])] = i
            self._index = index
        found = self._index.get(fingerprint)
        return None if found is None else self[found][1]

    def __eq__(self, other: object) -> bool:
        # a tuple, or another such sequence (the C reader's OutputSchemas,
        # a Sequence once loaded: codec/fast/__init__.py); never a list, as
        # a tuple is never equal to one
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes, bytearray, list)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __reduce__(self) -> tuple[type, tuple[tuple[tuple[bytes, Schema], ...]]]:
        return tuple, (tuple(self),)


# What the C reader builds (handshake.h): the classes, then the primitives
# in their constructor order.
HANDSHAKE_KINDS = (
    Handshake,
    Schema,
    Field,
    OptionOf,
    ListOf,
    RecordOf,
    EnumOf,
    (INT, INT32, INT64, FLOAT, BOOL, STRING),
)


def _read_checkpoint_request(buf: bytes) -> CheckpointRequest:
    cid, pos = bp.read_int(buf, 0)
    at, pos = bp.read_int64(buf, pos)
    _exact(buf, pos)
    return CheckpointRequest(cid, at)


def _read_checkpoint_ack(buf: bytes) -> CheckpointAck:
    worker, pos = bp.read_string(buf, 0)
    cid, pos = bp.read_int(buf, pos)
    n, pos = bp.read_count(buf, pos)
    positions = []
    for _ in range(n):
        name, pos = bp.read_string(buf, pos)
        seq, pos = bp.read_int(buf, pos)
        positions.append((name, seq))
    _exact(buf, pos)
    return CheckpointAck(worker, cid, tuple(positions))


def _read_heartbeat(buf: bytes) -> Heartbeat:
    worker, pos = bp.read_string(buf, 0)
    ts, pos = bp.read_int64(buf, pos)
    load, pos = bp.read_float(buf, pos)
    _exact(buf, pos)
    return Heartbeat(worker, ts, load)


def _read_schema_negotiation(buf: bytes) -> SchemaNegotiation:
    ok, pos = bp.read_bool(buf, 0)
    n, pos = bp.read_count(buf, pos)
    errors = []
    for _ in range(n):
        e, pos = bp.read_string(buf, pos)
        errors.append(e)
    _exact(buf, pos)
    return SchemaNegotiation(ok, tuple(errors))


def _exact(buf: bytes, pos: int) -> None:
    if pos != len(buf):
        raise DecodeError(f"{plural(len(buf) - pos, 'byte')} left over after the payload", pos)


_READERS: dict[int, Callable[[bytes], Body]] = {
    HANDSHAKE: _read_handshake,
    DELTA: read_delta_msg,
    CHECKPOINT_REQUEST: _read_checkpoint_request,
    CHECKPOINT_ACK: _read_checkpoint_ack,
    HEARTBEAT: _read_heartbeat,
    SCHEMA_NEGOTIATION: _read_schema_negotiation,
}


def read_payload(tag: int, payload: bytes) -> Body:
    """Decode a payload of a known type exactly; an unknown tag stays raw."""
    reader = _READERS.get(tag)
    if reader is None:
        return UnknownPayload(tag, payload)
    return reader(payload)


# ------------------------------------------------------------- writing


def write_payload(body: Body) -> bytes:
    out = bytearray()
    if isinstance(body, DeltaView):
        body = DeltaMsg(
            body.source_output,
            body.schema.write_key(body.key),
            body.schema.write_delta(body.delta),
            body.sequence_no,
            body.watermark_ns,
        )
    if isinstance(body, DeltaMsg):
        bp.write_string(out, body.source_output)
        bp.write_string(out, body.key)
        bp.write_string(out, body.delta_bytes)
        bp.write_int(out, body.sequence_no)
        if body.watermark_ns is None:
            out.append(0)
        else:
            out.append(1)
            bp.write_int64(out, body.watermark_ns)
    elif isinstance(body, Handshake):
        bp.write_string(out, body.source_worker_id)
        bp.write_nat0(out, len(body.output_schemas))
        for name, schema in body.output_schemas:
            bp.write_string(out, name)
            write_schema(out, schema)
        bp.write_int(out, body.protocol_version)
    elif isinstance(body, CheckpointRequest):
        bp.write_int(out, body.checkpoint_id)
        bp.write_int64(out, body.requested_at_ns)
    elif isinstance(body, CheckpointAck):
        bp.write_string(out, body.worker_id)
        bp.write_int(out, body.checkpoint_id)
        bp.write_nat0(out, len(body.positions))
        for name, seq in body.positions:
            bp.write_string(out, name)
            bp.write_int(out, seq)
    elif isinstance(body, Heartbeat):
        bp.write_string(out, body.worker_id)
        bp.write_int64(out, body.timestamp_ns)
        bp.write_float(out, body.load)
    elif isinstance(body, SchemaNegotiation):
        bp.write_bool(out, body.ok)
        bp.write_nat0(out, len(body.errors))
        for e in body.errors:
            bp.write_string(out, e)
    else:
        out += body.payload
    return bytes(out)
