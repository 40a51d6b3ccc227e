"""One-line summaries of messages, for tables and live views."""

from __future__ import annotations

from ripple_cli.codec.delta import Patch, SetRow
from ripple_cli.codec.messages import (
    Body,
    CheckpointAck,
    CheckpointRequest,
    DeltaMsg,
    DeltaView,
    Handshake,
    Heartbeat,
    SchemaNegotiation,
)
from ripple_cli.codec.schema import text
from ripple_cli.sexp.tree import Sexp
from ripple_cli.sexp.write import atom_text, to_string


def sexp_text(s: Sexp) -> str:
    """A value as its sexp text, atoms unquoted where they can be."""
    return text(atom_text(s) if isinstance(s, bytes) else to_string(s))


def key_text(body: Body) -> str:
    if isinstance(body, DeltaView):
        return sexp_text(body.schema.key.to_sexp(body.key))
    if isinstance(body, DeltaMsg):
        return "0x" + body.key.hex()
    return ""


def output_text(body: Body) -> str:
    if isinstance(body, (DeltaView, DeltaMsg)):
        return text(body.source_output)
    return ""


def summary(body: Body) -> str:
    if isinstance(body, DeltaView):
        s, d = body.schema, body.delta
        if isinstance(d, SetRow):
            pairs = zip(s.field_names, s.fields, strict=True)
            what = "Set " + " ".join(f"{n}={sexp_text(c.to_sexp(d.row[n]))}" for n, c in pairs)
        elif isinstance(d, Patch):
            what = "Patch " + " ".join(f"{s.field_names[i]}={sexp_text(s.fields[i].to_sexp(v))}" for i, v in d.updates)
        else:
            what = "Remove"
        return f"#{body.sequence_no} {what}"
    if isinstance(body, DeltaMsg):
        return f"#{body.sequence_no} schema unknown: {len(body.delta_bytes)} delta bytes"
    if isinstance(body, Heartbeat):
        return f"worker {text(body.worker_id)} load {body.load:.2f}"
    if isinstance(body, Handshake):
        outs = ", ".join(f"{text(n)} ({text(s.fingerprint)})" for n, s in body.output_schemas)
        return f"worker {text(body.source_worker_id)} v{body.protocol_version}: {outs or 'no outputs'}"
    if isinstance(body, CheckpointRequest):
        return f"checkpoint {body.checkpoint_id}"
    if isinstance(body, CheckpointAck):
        pos = " ".join(f"{text(n)}@{q}" for n, q in body.positions)
        return f"worker {text(body.worker_id)} checkpoint {body.checkpoint_id} {pos}".rstrip()
    if isinstance(body, SchemaNegotiation):
        return "ok" if body.ok else "REFUSED: " + "; ".join(text(e) for e in body.errors)
    return f"{len(body.payload)} payload bytes"
