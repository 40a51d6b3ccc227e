"""The canonical text of a message: sexplib's form of `envelope_view`
(reference section 5), in both directions.

Two extensions keep `encode` the exact inverse of `decode` for inputs the
OCaml view cannot express: `(flags N)` after `(schema ...)` when the
reserved flags are not zero, and `(msg(Unknown((tag N)(payload "..."))))`
for a message type the protocol does not define.  Neither appears for a
well-formed stream.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ripple_cli.codec.envelope import Frame, build_envelope
from ripple_cli.codec.fast import speedups
from ripple_cli.codec.messages import (
    TAG_BY_NAME,
    TYPE_NAMES,
    Body,
    CheckpointAck,
    CheckpointRequest,
    DeltaMsg,
    DeltaView,
    Handshake,
    Heartbeat,
    SchemaNegotiation,
    UnknownPayload,
    tag_of,
    write_payload,
)
from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.codec.schema import (
    SexpShapeError,
    expect_atom,
    expect_list,
    record_fields,
    schema_of_sexp,
    sexp_int,
    sexp_of_schema,
    sexp_option,
    text,
    variant,
)
from ripple_cli.sexp.tree import Sexp, float_atom, parse_float
from ripple_cli.sexp.write import to_string


def _int(n: int) -> bytes:
    return str(n).encode()


def _opt_int(n: int | None) -> Sexp:
    return [] if n is None else [_int(n)]


class _Lazy:
    """A list node whose items are made as the one-line printer reaches them
    (`to_string` only iterates): a Handshake's schemas, whose whole tree at
    once costs far more than the message (100,000 schemas: 780 MB)."""

    def __init__(self, body: Handshake) -> None:
        self.body = body

    def __bool__(self) -> bool:
        return bool(self.body.output_schemas)

    def __iter__(self) -> Iterator[Sexp]:
        return ([name, sexp_of_schema(schema)] for name, schema in self.body.output_schemas)


def body_to_sexp(body: Body, lazy: bool = False) -> Sexp:
    """The `message_view` constructor and its argument."""
    if isinstance(body, DeltaView):
        s = body.schema
        return [
            b"Delta",
            [
                [b"source_output", body.source_output],
                [b"key", s.key.to_sexp(body.key)],
                [b"delta", s.delta_to_sexp(body.delta)],
                [b"sequence_no", _int(body.sequence_no)],
                [b"watermark_ns", _opt_int(body.watermark_ns)],
            ],
        ]
    if isinstance(body, DeltaMsg):
        return [
            b"Delta",
            [
                [b"source_output", body.source_output],
                [b"key", body.key],
                [b"delta_bytes", body.delta_bytes],
                [b"sequence_no", _int(body.sequence_no)],
                [b"watermark_ns", _opt_int(body.watermark_ns)],
            ],
        ]
    if isinstance(body, Heartbeat):
        return [
            b"Heartbeat",
            [
                [b"worker_id", body.worker_id],
                [b"timestamp_ns", _int(body.timestamp_ns)],
                [b"load", float_atom(body.load)],
            ],
        ]
    if isinstance(body, Handshake):
        return [
            b"Handshake",
            [
                [b"source_worker_id", body.source_worker_id],
                [
                    b"output_schemas",
                    _Lazy(body) if lazy else [[name, sexp_of_schema(schema)] for name, schema in body.output_schemas],  # type: ignore[list-item]
                ],
                [b"protocol_version", _int(body.protocol_version)],
            ],
        ]
    if isinstance(body, CheckpointRequest):
        return [
            b"Checkpoint_request",
            [
                [b"checkpoint_id", _int(body.checkpoint_id)],
                [b"requested_at_ns", _int(body.requested_at_ns)],
            ],
        ]
    if isinstance(body, CheckpointAck):
        return [
            b"Checkpoint_ack",
            [
                [b"worker_id", body.worker_id],
                [b"checkpoint_id", _int(body.checkpoint_id)],
                [b"positions", [[name, _int(seq)] for name, seq in body.positions]],
            ],
        ]
    if isinstance(body, SchemaNegotiation):
        return [
            b"Schema_negotiation",
            [
                [b"ok", b"true" if body.ok else b"false"],
                [b"errors", list(body.errors)],
            ],
        ]
    return [b"Unknown", [[b"tag", _int(body.tag)], [b"payload", body.payload]]]


def envelope_to_sexp(f: Frame, body: Body, lazy: bool = False) -> Sexp:
    """An envelope and its decoded payload as `envelope_view`."""
    fields: list[Sexp] = [[b"seq", _int(f.seq)], [b"time_ns", _int(f.time_ns)], [b"schema", f.fingerprint]]
    if f.flags:
        fields.append([b"flags", _int(f.flags)])
    fields.append([b"msg", body_to_sexp(body, lazy)])
    return fields


def envelope_to_line(f: Frame, body: Body) -> bytes:
    """The canonical one-line form, without the newline.  `body` is what
    `f.payload` decodes to (a Message is made of both)."""
    if type(body) is Handshake and (accel := speedups()) is not None:
        # Printed from the payload's bytes (handshake.h): a Handshake may
        # declare 100,000 schemas, and their trees cost 5-9 us each.
        line: bytes | None = accel.handshake_line(f.seq, f.time_ns, f.fingerprint, f.flags, f.payload)
        if line is not None:
            return line
    return tree_line(envelope_to_sexp(f, body, lazy=True))


def tree_line(tree: Sexp) -> bytes:
    """A tree's one-line form (sexp/write.py's `to_string`), printed by the
    C module when it is there: the same bytes (tested both ways), ten times
    faster; every protocol's canonical lines go through it."""
    accel = speedups()
    return accel.to_string(tree) if accel is not None else to_string(tree)


# ------------------------------------------------------------- reading text


@dataclass(frozen=True, slots=True)
class EnvelopeSpec:
    """An envelope described by text, ready to be written."""

    seq: int
    time_ns: int
    fingerprint: bytes
    flags: int
    body: Body

    @property
    def tag(self) -> int:
        return tag_of(self.body)

    def to_bytes(self) -> bytes:
        return build_envelope(self.tag, self.seq, self.time_ns, self.fingerprint, write_payload(self.body), self.flags)


def _str(s: Sexp, path: str) -> bytes:
    return expect_atom(s, "a string", path)


def _bool(s: Sexp, path: str) -> bool:
    a = expect_atom(s, "a bool", path)
    if a in (b"true", b"True"):
        return True
    if a in (b"false", b"False"):
        return False
    raise SexpShapeError(f"expected true or false, found {a.decode('latin-1')!r}", path)


def _float(s: Sexp, path: str) -> float:
    a = expect_atom(s, "a float", path)
    try:
        return parse_float(a.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        raise SexpShapeError(f"expected a float, found {a.decode('latin-1')!r}", path) from None


def _opt_int64(s: Sexp, path: str) -> int | None:
    x = sexp_option(s, path)
    return None if x is None else sexp_int(x, "int64", path)


_DELTA_VIEW = ("source_output", "key", "delta", "sequence_no", "watermark_ns")
_DELTA_RAW = ("source_output", "key", "delta_bytes", "sequence_no", "watermark_ns")


def body_of_sexp(ctor: str, arg: Sexp, fingerprint: bytes, registry: SchemaRegistry, path: str) -> Body:
    if ctor == "Delta":
        names = [p[0] for p in expect_list(arg, "a record", path) if isinstance(p, list) and p]
        if b"delta_bytes" in names:
            f = record_fields(arg, _DELTA_RAW, path)
            return DeltaMsg(
                _str(f["source_output"], path + ".source_output"),
                _str(f["key"], path + ".key"),
                _str(f["delta_bytes"], path + ".delta_bytes"),
                sexp_int(f["sequence_no"], "int", path + ".sequence_no"),
                _opt_int64(f["watermark_ns"], path + ".watermark_ns"),
            )
        f = record_fields(arg, _DELTA_VIEW, path)
        schema = registry.get(fingerprint)
        if schema is None:
            raise SexpShapeError(
                f"no schema known for {text(fingerprint)}: give --schemas, or a Handshake line before this one", path
            )
        if schema.flaw is not None:
            raise SexpShapeError(f"schema {text(fingerprint)} {schema.flaw}: its Deltas have no text form", path)
        return DeltaView(
            _str(f["source_output"], path + ".source_output"),
            schema.key.of_sexp(f["key"], path + ".key"),
            schema.delta_of_sexp(f["delta"], path + ".delta"),
            sexp_int(f["sequence_no"], "int", path + ".sequence_no"),
            _opt_int64(f["watermark_ns"], path + ".watermark_ns"),
            schema,
        )
    if ctor == "Heartbeat":
        f = record_fields(arg, ("worker_id", "timestamp_ns", "load"), path)
        return Heartbeat(
            _str(f["worker_id"], path + ".worker_id"),
            sexp_int(f["timestamp_ns"], "int64", path + ".timestamp_ns"),
            _float(f["load"], path + ".load"),
        )
    if ctor == "Handshake":
        f = record_fields(arg, ("source_worker_id", "output_schemas", "protocol_version"), path)
        outputs = []
        for i, pair in enumerate(expect_list(f["output_schemas"], "a list", path + ".output_schemas")):
            where = f"{path}.output_schemas[{i}]"
            p = expect_list(pair, "an (output schema) pair", where)
            if len(p) != 2:
                raise SexpShapeError("expected an (output schema) pair", where)
            outputs.append((_str(p[0], where), schema_of_sexp(p[1], where)))
        return Handshake(
            _str(f["source_worker_id"], path + ".source_worker_id"),
            tuple(outputs),
            sexp_int(f["protocol_version"], "int", path + ".protocol_version"),
        )
    if ctor == "Checkpoint_request":
        f = record_fields(arg, ("checkpoint_id", "requested_at_ns"), path)
        return CheckpointRequest(
            sexp_int(f["checkpoint_id"], "int", path + ".checkpoint_id"),
            sexp_int(f["requested_at_ns"], "int64", path + ".requested_at_ns"),
        )
    if ctor == "Checkpoint_ack":
        f = record_fields(arg, ("worker_id", "checkpoint_id", "positions"), path)
        positions = []
        for i, pair in enumerate(expect_list(f["positions"], "a list", path + ".positions")):
            where = f"{path}.positions[{i}]"
            p = expect_list(pair, "an (output sequence_no) pair", where)
            if len(p) != 2:
                raise SexpShapeError("expected an (output sequence_no) pair", where)
            positions.append((_str(p[0], where), sexp_int(p[1], "int", where)))
        return CheckpointAck(
            _str(f["worker_id"], path + ".worker_id"),
            sexp_int(f["checkpoint_id"], "int", path + ".checkpoint_id"),
            tuple(positions),
        )
    if ctor == "Schema_negotiation":
        f = record_fields(arg, ("ok", "errors"), path)
        errors = expect_list(f["errors"], "a list of strings", path + ".errors")
        return SchemaNegotiation(
            _bool(f["ok"], path + ".ok"), tuple(_str(e, f"{path}.errors[{i}]") for i, e in enumerate(errors))
        )
    if ctor == "Unknown":
        f = record_fields(arg, ("tag", "payload"), path)
        tag = sexp_int(f["tag"], "int", path + ".tag")
        if not 0 <= tag <= 255 or tag in TYPE_NAMES:
            raise SexpShapeError(f"Unknown needs a tag from 6 to 255, not {tag}", path + ".tag")
        return UnknownPayload(tag, _str(f["payload"], path + ".payload"))
    known = ", ".join([*TAG_BY_NAME, "Unknown"])
    raise SexpShapeError(f"unknown message type {ctor} (expected one of {known})", path)


def envelope_of_sexp(s: Sexp, registry: SchemaRegistry) -> EnvelopeSpec:
    """Read an `envelope_view` back.  A Handshake's schemas are added to the
    registry, so that the Deltas after it can be written."""
    items = expect_list(s, "an envelope ((seq ..)(time_ns ..)(schema ..)(msg ..))", "")
    has_flags = any(isinstance(p, list) and p and p[0] == b"flags" for p in items)
    names = ("seq", "time_ns", "schema", "flags", "msg") if has_flags else ("seq", "time_ns", "schema", "msg")
    f = record_fields(s, names, "")
    seq = sexp_int(f["seq"], "int64", "seq")
    time_ns = sexp_int(f["time_ns"], "int64", "time_ns")
    fingerprint = expect_atom(f["schema"], "a schema fingerprint", "schema")
    flags = sexp_int(f["flags"], "int", "flags") if has_flags else 0
    if not 0 <= flags <= 255:
        raise SexpShapeError(f"flags {flags} outside 0..255", "flags")
    ctor, args = variant(f["msg"], "msg")
    if len(args) != 1:
        raise SexpShapeError(f"{ctor} takes one argument", "msg")
    body = body_of_sexp(ctor, args[0], fingerprint, registry, f"msg.{ctor}")
    if isinstance(body, Handshake):
        registry.declare(body.output_schemas)
    return EnvelopeSpec(seq, time_ns, fingerprint, flags, body)
