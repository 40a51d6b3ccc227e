"""The fields `-Y` reads from Ripple messages, straight from the frame,
the payload and the decoded Delta (nothing is rendered except a key's text
when a key is compared as text): Ripple's `Dissector.filter_fields`."""

from __future__ import annotations

from typing import Any

from ripple_cli.codec.delta import CompiledSchema, Patch, SetRow
from ripple_cli.codec.messages import (
    TYPE_NAMES,
    CheckpointAck,
    CheckpointRequest,
    DeltaMsg,
    DeltaView,
    Handshake,
    Heartbeat,
    SchemaNegotiation,
)
from ripple_cli.protocols.base import FilterField, Getter
from ripple_cli.protocols.origin import Origin
from ripple_cli.protocols.ripple.message import Message


def _g_type(o: Origin, m: Message) -> Any:
    return _TYPE_BY_TAG.get(m.frame.tag, "Unknown")


_TYPE_BY_TAG = dict(TYPE_NAMES)
TYPE_CHOICES = (*TYPE_NAMES.values(), "Unknown")


def _g_seq(o: Origin, m: Message) -> Any:
    return m.frame.seq


def _g_time_ns(o: Origin, m: Message) -> Any:
    return m.frame.time_ns


def _g_schema(o: Origin, m: Message) -> Any:
    return m.frame.fingerprint


def _g_flags(o: Origin, m: Message) -> Any:
    return m.frame.flags


def _g_offset(o: Origin, m: Message) -> Any:
    return m.frame.offset


def _g_size(o: Origin, m: Message) -> Any:
    return m.frame.size


def _g_output(o: Origin, m: Message) -> Any:
    body = m.body
    t = type(body)
    return body.source_output if t is DeltaView or t is DeltaMsg else None  # type: ignore[union-attr]


def _g_sequence_no(o: Origin, m: Message) -> Any:
    body = m.body
    t = type(body)
    return body.sequence_no if t is DeltaView or t is DeltaMsg else None  # type: ignore[union-attr]


def _g_watermark_ns(o: Origin, m: Message) -> Any:
    body = m.body
    t = type(body)
    return body.watermark_ns if t is DeltaView or t is DeltaMsg else None  # type: ignore[union-attr]


_DELTA_BY_TAG = {0: "set", 1: "patch", 2: "remove"}


def _g_delta(o: Origin, m: Message) -> Any:
    body = m.body
    if type(body) is DeltaView:
        d = type(body.delta)
        return "set" if d is SetRow else "patch" if d is Patch else "remove"
    if type(body) is DeltaMsg:
        # The variant tag is the first byte whatever the schema.
        raw = body.delta_bytes
        return _DELTA_BY_TAG.get(raw[0]) if raw else None
    return None


def _g_key(o: Origin, m: Message) -> Any:
    body = m.body
    if type(body) is DeltaView:
        k = body.key
        while type(k) is tuple:
            k = k[0]
        return k
    if type(body) is DeltaMsg:
        return body.key
    return None


def _g_worker(o: Origin, m: Message) -> Any:
    body = m.body
    t = type(body)
    if t is Heartbeat or t is CheckpointAck:
        return body.worker_id  # type: ignore[union-attr]
    if t is Handshake:
        return body.source_worker_id  # type: ignore[union-attr]
    return None


def _g_load(o: Origin, m: Message) -> Any:
    body = m.body
    return body.load if type(body) is Heartbeat else None


def _g_checkpoint_id(o: Origin, m: Message) -> Any:
    body = m.body
    t = type(body)
    return body.checkpoint_id if t is CheckpointRequest or t is CheckpointAck else None  # type: ignore[union-attr]


def _g_ok(o: Origin, m: Message) -> Any:
    body = m.body
    return body.ok if type(body) is SchemaNegotiation else None


def _g_errors(o: Origin, m: Message) -> Any:
    body = m.body
    return body.errors if type(body) is SchemaNegotiation else None


def row_getter(name: str, path: tuple[str, ...]) -> Getter:
    """`field.NAME.SUB...`: the value of a row field of a decoded Delta (a
    Set's row, a Patch's update of that field), options unwrapped."""
    indexes: dict[CompiledSchema, int | None] = {}

    def index_of(schema: CompiledSchema) -> int | None:
        try:
            return indexes[schema]
        except KeyError:
            names = schema.field_names
            found = names.index(name) if name in names else None
            indexes[schema] = found
            return found

    def get(o: Origin, m: Message) -> Any:
        body = m.body
        if type(body) is not DeltaView:
            return None
        d = body.delta
        if type(d) is SetRow:
            v = d.row.get(name)
        elif type(d) is Patch:
            i = index_of(body.schema)
            v = None
            if i is not None:
                for j, x in d.updates:
                    if j == i:
                        v = x  # the last update of a field wins, as in field_values
        else:
            return None
        while type(v) is tuple:
            v = v[0]
        for part in path:
            if type(v) is not dict:
                return None
            v = v.get(part)
            while type(v) is tuple:
                v = v[0]
        return v

    return get


def _none(o: Origin, m: Message) -> Any:
    return None


FILTER_FIELDS: dict[str, FilterField] = {
    "type": FilterField("str", "the message type", _g_type, TYPE_CHOICES, "message type"),
    "seq": FilterField("num", "the envelope sequence number", _g_seq),
    "time_ns": FilterField("num", "the envelope's event time, ns since the epoch", _g_time_ns),
    "schema": FilterField("bytes", "the schema fingerprint", _g_schema),
    "flags": FilterField("num", "the reserved flags byte", _g_flags),
    "offset": FilterField("num", "stream offset of the envelope", _g_offset),
    "size": FilterField("num", "bytes of the envelope", _g_size),
    "output": FilterField("bytes", "a Delta's source output", _g_output),
    "key": FilterField("key", "a Delta's key: its text, or its number", _g_key),
    "sequence_no": FilterField("num", "a Delta's sequence_no", _g_sequence_no),
    "watermark_ns": FilterField("num", "a Delta's watermark", _g_watermark_ns),
    "delta": FilterField("str", "a Delta's kind", _g_delta, ("set", "patch", "remove"), "delta kind"),
    "worker": FilterField("bytes", "the worker id (Heartbeat, Handshake, Checkpoint_ack)", _g_worker),
    "load": FilterField("num", "a Heartbeat's load", _g_load),
    "checkpoint_id": FilterField("num", "a checkpoint's id", _g_checkpoint_id),
    "ok": FilterField("bool", "a Schema_negotiation's verdict", _g_ok),
    "errors": FilterField("list", "a Schema_negotiation's errors", _g_errors),
}


def getter(name: str) -> Getter:
    """A Ripple field, a row field (`field.NAME.SUB`), or absent (None)."""
    f = FILTER_FIELDS.get(name)
    if f is not None and f.get is not None:
        return f.get
    head, _, rest = name.partition(".")
    if head == "field" and rest:
        parts = rest.split(".")
        return row_getter(parts[0], tuple(parts[1:]))
    return _none
