"""Running the real tshark with a dissector `ripple wireshark` wrote, and
reading its PDML back into the shapes `ripple decode --format jsonl` prints,
so that the two can be compared message for message.

Imported as `tests.wireshark.tsharkkit`."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ripple_cli.codec.schema import EnumOf, FieldType, ListOf, OptionOf, Prim, RecordOf, Schema, text
from ripple_cli.codec.values import bytes_to_json, float_to_json
from ripple_cli.flow.inputs import Inputs
from ripple_cli.flow.pipeline import BaseSink, pump
from ripple_cli.protocols.item import Decoded
from ripple_cli.protocols.origin import Origin
from ripple_cli.sexp.atoms import escape_text
from ripple_cli.sexp.tree import float_atom, parse_float
from ripple_cli.terminal.environment import Environment

REPO = Path(__file__).resolve().parents[2]
TSHARK = shutil.which("tshark") or "/usr/bin/tshark"


def require_tshark() -> None:
    if not os.access(TSHARK, os.X_OK):
        reason = f"tshark is missing ({TSHARK}): make system-deps installs it"
        if "CI" in os.environ:
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)


def ripple(*args: str | Path, codes: tuple[int, ...] = (0,)) -> bytes:
    """`ripple ARGS` as a separate process; another exit status fails the test."""
    env = {k: v for k, v in os.environ.items() if k != "RIPPLE_SCHEMAS"}
    proc = subprocess.run(
        [sys.executable, "-m", "ripple_cli", *map(str, args)], capture_output=True, env=env, cwd=REPO, check=False
    )
    assert proc.returncode in codes, proc.stderr.decode(errors="replace")
    return proc.stdout


def tshark(lua: Path, pcap: Path, *args: str, in_any_order: bool = False) -> str:
    """tshark's output, the dissector loaded; any Lua error fails the test.
    (The captures' ports avoid those Wireshark gives other protocols:
    livecap.WIRESHARK_PORTS.)"""
    require_tshark()
    # `in_any_order`: out-of-order segments reassembled, as ripple does: a
    # live capture on a busy machine can hold a segment lost and sent again,
    # past which Wireshark's default drops what follows (seen in CI: 298 of
    # 300 messages).  (With it, tshark's items for damage follow segments.)
    ooo = ("-o", "tcp.reassemble_out_of_order:TRUE") if in_any_order else ()
    proc = subprocess.run(
        [TSHARK, "-n", *ooo, "-X", f"lua_script:{lua}", "-r", str(pcap), *args],
        capture_output=True,
        check=False,
        timeout=600,
    )
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0 and "Lua: Error" not in err, err
    assert "Lua Error" not in out, out[out.index("Lua Error") - 200 :][:2000]
    return out


def field_types(lua: Path) -> dict[str, str]:
    """Every field tshark registers with the dissector loaded (`tshark -G
    fields`): its abbrev, the name display filters use, and its type
    (FT_INT64...)."""
    require_tshark()
    proc = subprocess.run(
        [TSHARK, "-G", "fields", "-X", f"lua_script:{lua}"], capture_output=True, check=False, timeout=600
    )
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0 and "Lua: Error" not in err, err
    out = {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        cols = line.split("\t")
        if cols[0] == "F":
            out[cols[2]] = cols[3]
    return out


def dissector(protocol: str, factory: pytest.TempPathFactory) -> Path:
    """The Lua file `ripple wireshark --protocol PROTOCOL` writes (for a
    module-scoped fixture)."""
    require_tshark()
    path = factory.mktemp(f"ws-{protocol}") / f"{protocol}.lua"
    ripple("wireshark", "--protocol", protocol, "-o", path)
    return path


def port_of(endpoint: str) -> int:
    """The port of jsonl's "src" or "dst" (`ADDRESS:PORT`)."""
    return int(endpoint.rsplit(":", 1)[1])


def jsonl(pcap: Path, *args: str) -> list[dict[str, Any]]:
    # Exit status 1: problems found, which the lines show.
    lines = ripple("decode", "--format", "jsonl", *args, pcap, codes=(0, 1)).splitlines()
    return [json.loads(line) for line in lines]


# ---------------------------------------------------------------- PDML


@dataclass
class Envelope:
    """One message (a Ripple envelope, a sibling's frame) as tshark dissected it."""

    packet: int  # frame number of the packet where it ends
    node: ET.Element  # its <proto name=...>
    ports: tuple[int, int] = (0, 0)  # TCP source and destination ports

    def field(self, name: str) -> ET.Element | None:
        return next((f for f in self.node.iter("field") if f.get("name") == name), None)

    def show(self, name: str) -> str | None:
        f = self.field(name)
        return None if f is None else f.get("show")


def _show(proto: ET.Element, name: str) -> str:
    return next(f.get("show", "") for f in proto.iter("field") if f.get("name") == name)


def envelopes(pdml: str, protocol: str = "ripple") -> list[Envelope]:
    out = []
    for packet in ET.fromstring(pdml).iter("packet"):
        number, ports = 0, (0, 0)
        for proto in packet.findall("proto"):
            if proto.get("name") == "frame":
                number = int(_show(proto, "frame.number"))
            if proto.get("name") == "tcp":
                ports = (int(_show(proto, "tcp.srcport")), int(_show(proto, "tcp.dstport")))
            if proto.get("name") == protocol:
                out.append(Envelope(number, proto, ports))
    return out


def _label(node: ET.Element) -> str:
    """The text after `NAME: ` of an item's label: ripple's text of the value."""
    return node.get("showname", "").split(": ", 1)[1]


def _children(node: ET.Element) -> list[ET.Element]:
    return [c for c in node if c.tag == "field"]


def _string(node: ET.Element) -> Any:
    return bytes_to_json(bytes.fromhex(node.get("value", "")))


# ---------------------------------------------------------------- typed fields

# tshark's type of a typed field, by ripple's type of the leaf.
LEAF_TYPES = {
    "Int": "FT_INT64",
    "Int64": "FT_INT64",
    "Int32": "FT_INT32",
    "Float": "FT_DOUBLE",
    "Bool": "FT_BOOLEAN",
    "String": "FT_STRING",
    "Enum": "FT_STRING",
}

Place = tuple[int, ...]  # a leaf's place: -1 (the key) or a row field's index, then each record field's index


def abbrev_part(name: bytes) -> str:
    """A schema's or a field's name in an abbrev, as ripple-wireshark(1)
    says: each byte a field name cannot hold (Wireshark's are letters,
    digits, _ and -) as _, an empty name as _."""
    return re.sub(rb"[^A-Za-z0-9_-]", b"_", name).decode() or "_"


def typed_fields(schemas: Iterable[Schema]) -> dict[bytes, dict[Place, tuple[str, str]]]:
    """The field of each leaf of each schema's key and row, by fingerprint
    and leaf: (abbrev, tshark's type), named as ripple-wireshark(1) says:
    ripple.key.NAME and ripple.delta.NAME.FIELD, .SUB for each level of a
    nested record, an option's value and a list's elements under the
    field's own name; a leaf whose name a leaf of another type took first
    (schemas in the order given, a key before its row) gets _2, _3..."""
    taken: dict[str, str] = {}  # abbrev -> the type of its leaves
    out: dict[bytes, dict[Place, tuple[str, str]]] = {}

    def walk(leaves: dict[Place, tuple[str, str]], t: FieldType, path: Place, abbrev: str) -> None:
        if isinstance(t, OptionOf | ListOf):
            walk(leaves, t.inner, path, abbrev)
        elif isinstance(t, RecordOf):
            for i, f in enumerate(t.fields):
                walk(leaves, f.typ, (*path, i), f"{abbrev}.{abbrev_part(f.name)}")
        else:
            kind = "Enum" if isinstance(t, EnumOf) else t.kind
            name, n = abbrev, 1
            while taken.get(name, kind) != kind:
                n += 1
                name = f"{abbrev}_{n}"
            taken[name] = kind
            leaves[path] = (name, LEAF_TYPES[kind])

    for s in schemas:
        leaves = out[s.fingerprint] = {}
        walk(leaves, s.key, (-1,), f"ripple.key.{abbrev_part(s.name)}")
        for i, f in enumerate(s.fields):
            walk(leaves, f.typ, (i,), f"ripple.delta.{abbrev_part(s.name)}.{abbrev_part(f.name)}")
    return out


def value(t: FieldType, node: ET.Element, names: Mapping[Place, tuple[str, str]] | None = None, at: Place = ()) -> Any:
    """A typed value's JSON as ripple prints it, from its tshark item.
    With `names` (a schema's `typed_fields`), each leaf's item is checked
    to be the field named for its place `at`."""
    name = node.get("name")
    if isinstance(t, OptionOf):
        if name == "ripple.value.none":
            return None
        if isinstance(t.inner, OptionOf):
            assert name == "ripple.value.some", name
            return [value(t.inner, _children(node)[0], names, at)]
        return value(t.inner, node, names, at)
    if isinstance(t, ListOf):
        assert name == "ripple.value.list", name
        return [value(t.inner, c, names, at) for c in _children(node)]
    if isinstance(t, RecordOf):
        assert name == "ripple.value.record", name
        kids = _children(node)
        assert len(kids) == len(t.fields)
        return {
            text(f.name): value(f.typ, c, names, (*at, i)) for i, (f, c) in enumerate(zip(t.fields, kids, strict=True))
        }
    if names is not None:
        assert name == names[at][0], (at, name, names[at][0])
    if isinstance(t, EnumOf):
        return node.get("show")
    assert isinstance(t, Prim)
    if t.kind in ("Int", "Int32", "Int64"):
        return int(node.get("show", ""))
    if t.kind == "Float":
        shown = _label(node)
        x = parse_float(shown)
        assert shown == float_atom(x).decode(), f"{shown} is not ripple's text of {x!r}"
        return float_to_json(x)
    if t.kind == "Bool":
        return _label(node) == "true"
    return _string(node)


def _ints(env: Envelope, name: str) -> list[int]:
    return [int(f.get("show", "")) for f in env.node.iter("field") if f.get("name") == name]


def _strings(env: Envelope, name: str) -> list[Any]:
    return [_string(f) for f in env.node.iter("field") if f.get("name") == name]


def _watermark(env: Envelope) -> int | None:
    w = _ints(env, "ripple.watermark_ns")
    return w[0] if w else None


def message(env: Envelope, schemas: dict[bytes, Schema]) -> dict[str, Any]:
    """The envelope's "msg" in jsonl's shape, from tshark's fields; each
    typed leaf checked to be the field `typed_fields` names (`schemas` in
    the order the dissector was written with)."""
    kind = env.show("ripple.type")
    msg = env.field("ripple.msg")
    assert msg is not None
    if kind == "Delta":
        fp = (env.show("ripple.schema") or "").encode()
        s = schemas.get(fp)
        head = {"source_output": _strings(env, "ripple.output")[0]}
        tail = {"sequence_no": _ints(env, "ripple.sequence_no")[0], "watermark_ns": _watermark(env)}
        if s is None:
            raw = {n: bytes.fromhex(env.field(f"ripple.{n}").get("value", "")) for n in ("key_bytes", "delta_bytes")}  # type: ignore[union-attr]
            return {
                **head,
                "schema_known": False,
                **{n: base64.b64encode(b).decode() for n, b in raw.items()},
                **tail,
            }
        leaves = typed_fields(schemas.values())[fp]
        key = env.field("ripple.key")
        delta = env.field("ripple.delta")
        assert key is not None and delta is not None
        op = delta.get("show")
        if op == "set":
            kids = _children(delta)
            row = {
                text(f.name): value(f.typ, c, leaves, (i,)) for i, (f, c) in enumerate(zip(s.fields, kids, strict=True))
            }
            d: dict[str, Any] = {"op": "set", "row": row}
        elif op == "patch":
            by_name = {text(f.name): i for i, f in enumerate(s.fields)}
            updates = []
            for u in _children(delta):
                name = u.get("show", "")
                i = by_name[name]
                updates.append({"field": name, "value": value(s.fields[i].typ, _children(u)[0], leaves, (i,))})
            d = {"op": "patch", "updates": updates}
        else:
            d = {"op": "remove"}
        return {**head, "key": value(s.key, _children(key)[0], leaves, (-1,)), "delta": d, **tail}
    if kind == "Heartbeat":
        load = env.field("ripple.load")
        assert load is not None
        return {
            "worker_id": _strings(env, "ripple.worker")[0],
            "timestamp_ns": _ints(env, "ripple.timestamp_ns")[0],
            "load": float_to_json(parse_float(_label(load))),
        }
    if kind == "Checkpoint_request":
        return {
            "checkpoint_id": _ints(env, "ripple.checkpoint_id")[0],
            "requested_at_ns": _ints(env, "ripple.requested_at_ns")[0],
        }
    if kind == "Checkpoint_ack":
        outs, seqs = _strings(env, "ripple.position.output"), _ints(env, "ripple.position.sequence_no")
        return {
            "worker_id": _strings(env, "ripple.worker")[0],
            "checkpoint_id": _ints(env, "ripple.checkpoint_id")[0],
            "positions": [{"output": o, "sequence_no": q} for o, q in zip(outs, seqs, strict=True)],
        }
    if kind == "Schema_negotiation":
        ok = env.field("ripple.ok")
        assert ok is not None
        return {"ok": ok.get("show") in ("1", "True"), "errors": _strings(env, "ripple.errors")}
    assert kind == "Handshake", kind
    outs = _strings(env, "ripple.handshake.output")
    names = [
        bytes.fromhex(f.get("value", ""))
        for f in env.node.iter("field")
        if f.get("name") == "ripple.handshake.schema.name"
    ]
    versions = _ints(env, "ripple.handshake.schema.version")
    fps = [bytes_to_json(n + b"/v%d" % v) for n, v in zip(names, versions, strict=True)]
    return {
        "source_worker_id": _strings(env, "ripple.worker")[0],
        "outputs": list(zip(outs, fps, strict=True)),
        "protocol_version": _ints(env, "ripple.protocol_version")[0],
    }


def handshake_view(msg: dict[str, Any]) -> dict[str, Any]:
    """What the dissector's Handshake fields hold of jsonl's Handshake."""
    return {
        "source_worker_id": msg["source_worker_id"],
        "outputs": [(o["output"], o["schema"]["fingerprint"]) for o in msg["output_schemas"]],
        "protocol_version": msg["protocol_version"],
    }


# ---------------------------------------------------------------- Info


class _TableRows(BaseSink):
    """Each message's type and summary as `ripple decode --format table`
    shows them (its protocols' layout), by direction."""

    def __init__(self) -> None:
        self.rows: dict[tuple[int, int], list[str]] = {}

    def message(self, origin: Origin, msg: Decoded) -> None:
        st = origin.stream
        assert st is not None
        src, dst = (st.client, st.server) if st.from_client else (st.server, st.client)
        c = msg.cells()
        what = " ".join(x for x in (c.output, c.key, c.summary) if x)
        line = " ".join(escape_text(x) for x in (msg.type, what) if x)  # as the table's cells escape
        self.rows.setdefault((src.port, dst.port), []).append(line)


def table_rows(pcap: Path, decode_as: dict[int, str] | None = None) -> dict[tuple[int, int], list[str]]:
    inputs = Inputs(decode_as=decode_as or {})
    env = Environment(stdin=io.BytesIO(), stdout=io.BytesIO(), stderr=io.StringIO(), stdout_isatty=False, environ={})
    sink = _TableRows()
    pump(inputs.events(str(pcap), env), inputs.demux(str(pcap)), sink)
    return sink.rows


def assert_info_is_table(
    lua: Path, pcap: Path, protocol: str, *args: str, decode_as: dict[int, str] | None = None
) -> int:
    """tshark's Info column of each packet where messages end is ripple's
    table rows of those messages (type and summary), joined by " | ".
    `envelopes` of the PDML say in which packet each message ends (the
    other tests show they are ripple's messages, in order).  Returns how
    many messages were compared."""
    rows = table_rows(pcap, decode_as)
    seen: dict[tuple[int, int], int] = {}
    want: dict[int, list[str]] = {}
    for e in envelopes(tshark(lua, pcap, *args, "-T", "pdml"), protocol):
        nodes = [e.node, *(p for p in e.node.iter("proto") if p is not e.node and p.get("name") == protocol)]
        for _ in nodes:
            i = seen.get(e.ports, 0)
            seen[e.ports] = i + 1
            want.setdefault(e.packet, []).append(rows[e.ports][i])
    assert seen == {k: len(v) for k, v in rows.items()}
    out = tshark(lua, pcap, *args, "-T", "fields", "-e", "frame.number", "-e", "_ws.col.Info", "-Y", protocol)
    got = dict(line.split("\t", 1) for line in out.splitlines())
    shown, table = {int(k): v for k, v in got.items()}, {k: " | ".join(v) for k, v in want.items()}
    differ = {k: (shown.get(k), table.get(k)) for k in shown.keys() | table.keys() if shown.get(k) != table.get(k)}
    assert not differ, differ  # packet: (Info, ripple's rows)
    return sum(seen.values())


# ---------------------------------------------------------------- display filters


def _packets_of_messages(
    lua: Path, pcap: Path, protocol: str, *args: str, unshown: Callable[[Envelope], bool] | None = None
) -> dict[tuple[int, int], list[int]]:
    """The packet where each message ends, by direction, in order (a
    compressed frame's frames after it); those `unshown` says ripple
    reports only as a problem left out."""
    out: dict[tuple[int, int], list[int]] = {}
    for e in envelopes(tshark(lua, pcap, *args, "-T", "pdml"), protocol):
        if unshown is not None and unshown(e):
            continue
        nested = [p for p in e.node.iter("proto") if p is not e.node and p.get("name") == protocol]
        out.setdefault(e.ports, []).extend([e.packet] * (1 + len(nested)))
    return out


def assert_same_selection(
    lua: Path,
    pcap: Path,
    protocol: str,
    filters: dict[str, str],
    *args: str,
    decode: tuple[str, ...] = (),
    unshown: Callable[[Envelope], bool] | None = None,
) -> dict[str, int]:
    """For each `ripple decode -Y` expression (a key of `filters`), the
    packets tshark's display filter (its value) selects are those where
    the messages ripple selects end, and there are some.  `unshown`: the
    messages tshark dissects that ripple reports only as a problem (a
    Ripple envelope with a bad CRC), which its -Y never selects.  Returns
    how many messages each selected."""
    where = _packets_of_messages(lua, pcap, protocol, *args, unshown=unshown)
    every = [d for d in jsonl(pcap, *decode) if "problem" not in d]
    counts = {}
    for expr, display in filters.items():
        chosen = [d for d in jsonl(pcap, *decode, "-Y", expr) if "problem" not in d]
        assert chosen, expr
        want: set[int] = set()
        index: dict[tuple[int, int], int] = {}
        for d in chosen:
            ports = (port_of(d["src"]), port_of(d["dst"]))
            mine = [m for m in every if (port_of(m["src"]), port_of(m["dst"])) == ports]
            i = mine.index(d, index.get(ports, 0))
            index[ports] = i + 1
            want.add(where[ports][i])
        out = tshark(lua, pcap, *args, "-T", "fields", "-e", "frame.number", "-Y", display)
        assert {int(n) for n in out.split()} == want, (expr, display)
        counts[expr] = len(chosen)
    return counts
