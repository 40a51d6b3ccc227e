"""A small rstmdb server for the tests, and sessions of the real rstmdb
client (PyPI `rstmdb` 0.2.1) against it.

The server speaks RCP over real sockets on 127.0.0.1, one thread per
connection.  Its framing is written here by hand (struct and the crc32c
package): neither ripple's code nor the client's `Frame` class, so that
the three sides are not the same code.  It follows the rstmdb server where
the tests can see it: HELLO picks `binary_json` when the client lists it,
else `jsonl`; after `jsonl` it writes responses and events as JSON lines
and still reads frames; the HELLO response itself is a line, as the real
server writes it (it records the mode before encoding the response), or,
with `hello_as_frame`, a frame followed by lines; events follow the
APPLY_EVENT response; after BYE's answer it closes; bad framing closes the
connection without an answer.  Each connection keeps the exact bytes of
every message each way, and the server one log of all of them in the order
it read and wrote them.

The client 0.2.1 cannot negotiate JSONL (its handshake hard-codes
`wire_modes: ["binary_json"]` and it reads only frames).  The JSONL
session therefore drives the client's own request and frame encoders
(`Request`, `Frame`) and reads the lines with its own models (`Response`,
`StreamEvent`); the binary session uses its `Client` as an application
would.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import struct
import threading
from dataclasses import dataclass, field
from typing import Any

import crc32c
from rstmdb import Client, Frame, Operation, Request, Response, ServerError, StreamEvent

HEADER = struct.Struct(">4sHHHII")

DEFINITION = {
    "states": ["created", "paid", "shipped"],
    "initial": "created",
    "transitions": [
        {"from": "created", "event": "pay", "to": "paid"},
        {"from": "paid", "event": "ship", "to": "shipped"},
    ],
}
RETRYABLE = {"WAL_IO_ERROR", "INTERNAL_ERROR", "RATE_LIMITED"}


def compact(obj: Any) -> bytes:
    """JSON as serde_json writes it: no spaces, members in struct order."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def write_frame(payload: bytes) -> bytes:
    """A frame as the rstmdb server writes one (`Frame::new`: CRC_PRESENT)."""
    return HEADER.pack(b"RCPX", 1, 1, 0, len(payload), crc32c.crc32c(payload)) + payload


class _Closed(Exception):
    pass


class _Failed(Exception):
    """An op the handler refuses: answered with an error response."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Served:
    """One connection as the server saw it."""

    c2s: bytearray = field(default_factory=bytearray)  # every byte received
    s2c: bytearray = field(default_factory=bytearray)  # every byte sent
    requests: list[bytes] = field(default_factory=list)  # each frame received, exactly
    answers: list[bytes] = field(default_factory=list)  # each frame or line sent, exactly
    client_port: int = 0
    jsonl: bool = False
    closed_by_server: bool = False


@dataclass
class _Instance:
    machine: str
    version: int
    state: str
    ctx: dict[str, Any]
    last_wal_offset: int = 0
    last_event_id: str | None = None


class RcpServer:
    def __init__(self, hello_as_frame: bool = False) -> None:
        self.hello_as_frame = hello_as_frame
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(16)
        self.port = int(self.srv.getsockname()[1])
        self.connections: list[Served] = []
        # (connection number, from_client, exact bytes) in the order read and written
        self.log: list[tuple[int, bool, bytes]] = []
        self._lock = threading.Lock()
        self._machines: dict[tuple[str, int], dict[str, Any]] = {}
        self._instances: dict[str, _Instance] = {}
        self._subs: dict[str, tuple[int, list[str] | None, bool]] = {}  # id -> (connection, machines, include_ctx)
        self._wal = 0
        self._count = {"sub": 0, "evt": 0, "inst": 0}
        self._threads: list[threading.Thread] = []
        self._socks: dict[int, socket.socket] = {}
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.srv.close()
        for t in self._threads:
            t.join(10)

    def _accept(self) -> None:
        while True:
            try:
                conn, addr = self.srv.accept()
            except OSError:
                return
            with self._lock:
                number = len(self.connections)
                self.connections.append(Served(client_port=int(addr[1])))
                self._socks[number] = conn
            t = threading.Thread(target=self._serve, args=(number, conn), daemon=True)
            self._threads.append(t)
            t.start()

    # ------------------------------------------------------------ I/O

    def _send(self, number: int, body: bytes, force_frame: bool = False) -> None:
        served = self.connections[number]
        data = write_frame(body) if force_frame or not served.jsonl else body + b"\n"
        with self._lock:
            served.answers.append(data)
            served.s2c += data
            self.log.append((number, False, data))
            self._socks[number].sendall(data)

    def _serve(self, number: int, conn: socket.socket) -> None:
        served = self.connections[number]
        buf = b""
        try:
            with conn:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                while True:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                    with self._lock:
                        served.c2s += chunk
                    while len(buf) >= HEADER.size:
                        magic, version, flags, hlen, plen, crc = HEADER.unpack_from(buf)
                        if magic != b"RCPX" or version != 1 or flags & ~0xF or plen > 16 << 20:
                            raise _Closed  # the real server drops the connection, no answer
                        size = HEADER.size + hlen + plen
                        if len(buf) < size:
                            break
                        raw, buf = buf[:size], buf[size:]
                        payload = raw[HEADER.size + hlen :]
                        if flags & 1 and crc32c.crc32c(payload) != crc:
                            raise _Closed
                        with self._lock:
                            served.requests.append(raw)
                            self.log.append((number, True, raw))
                        self._handle(number, json.loads(payload))
        except (_Closed, OSError):
            pass
        finally:
            served.closed_by_server = True

    # ------------------------------------------------------------ the ops

    def _handle(self, number: int, req: dict[str, Any]) -> None:
        rid, op, params = req["id"], req["op"], req.get("params") or {}
        if not isinstance(rid, str) or op not in Operation.__members__:
            raise _Closed
        served = self.connections[number]
        try:
            result, after = getattr(self, f"_op_{op.lower()}")(number, params)
        except _Failed as e:
            err = {"code": e.code, "message": e.message, "retryable": e.code in RETRYABLE}
            self._send(number, compact({"type": "response", "id": rid, "status": "error", "error": err}))
            return
        body = compact({"type": "response", "id": rid, "status": "ok", "result": result})
        if op == "HELLO" and result["wire_mode"] == "jsonl":
            if self.hello_as_frame:
                self._send(number, body, force_frame=True)
                served.jsonl = True
            else:
                served.jsonl = True  # as the real server: the mode is set before the response is encoded
                self._send(number, body)
        else:
            self._send(number, body)
        for sub_number, event in after:
            self._send(sub_number, event)
        if op == "BYE":
            raise _Closed

    def _op_hello(self, number: int, p: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[int, bytes]]]:
        if p.get("protocol_version") != 1:
            raise _Failed("BAD_REQUEST", f"unsupported protocol version: {p.get('protocol_version')}")
        modes = p.get("wire_modes") or []
        mode = "binary_json" if "binary_json" in modes or "jsonl" not in modes else "jsonl"
        features = sorted(set(p.get("features") or []) & {"idempotency", "batch", "wal_read"})
        info = {"protocol_version": 1, "wire_mode": mode, "server_name": "ripple-test", "server_version": "0.0.1"}
        return {**info, "features": features}, []

    def _op_ping(self, number: int, p: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[int, bytes]]]:
        return {"pong": True}, []

    def _op_bye(self, number: int, p: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[int, bytes]]]:
        return {"goodbye": True}, []

    def _op_info(self, number: int, p: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[int, bytes]]]:
        return {
            "server_name": "ripple-test",
            "server_version": "0.0.1",
            "protocol_version": 1,
            "features": ["idempotency", "batch", "wal_read"],
            "max_frame_bytes": 16 << 20,
            "max_batch_ops": 100,
        }, []

    def _op_put_machine(self, number: int, p: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[int, bytes]]]:
        key = (p["machine"], p["version"])
        checksum = hashlib.sha256(compact(p["definition"])).hexdigest()
        with self._lock:
            old = self._machines.get(key)
            if old is not None and old != p["definition"]:
                raise _Failed("MACHINE_VERSION_EXISTS", f"machine {key[0]} version {key[1]} exists")
            self._machines[key] = p["definition"]
        return {"machine": key[0], "version": key[1], "stored_checksum": checksum, "created": old is None}, []

    def _op_create_instance(self, number: int, p: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[int, bytes]]]:
        with self._lock:
            definition = self._machines.get((p["machine"], p["version"]))
            if definition is None:
                raise _Failed("MACHINE_NOT_FOUND", f"machine not found: {p['machine']}")
            self._count["inst"] += 1
            iid = p.get("instance_id") or f"inst-{self._count['inst']}"
            if iid in self._instances:
                raise _Failed("INSTANCE_EXISTS", f"instance exists: {iid}")
            self._wal += 1
            inst = _Instance(p["machine"], p["version"], definition["initial"], p.get("initial_ctx") or {}, self._wal)
            self._instances[iid] = inst
        return {"instance_id": iid, "state": inst.state, "wal_offset": inst.last_wal_offset}, []

    def _op_get_instance(self, number: int, p: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[int, bytes]]]:
        inst = self._instances.get(p["instance_id"])
        if inst is None:
            raise _Failed("INSTANCE_NOT_FOUND", f"instance not found: {p['instance_id']}")
        return {
            "machine": inst.machine,
            "version": inst.version,
            "state": inst.state,
            "ctx": inst.ctx,
            "last_event_id": inst.last_event_id,
            "last_wal_offset": inst.last_wal_offset,
        }, []

    def _op_apply_event(self, number: int, p: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[int, bytes]]]:
        with self._lock:
            inst = self._instances.get(p["instance_id"])
            if inst is None:
                raise _Failed("INSTANCE_NOT_FOUND", f"instance not found: {p['instance_id']}")
            definition = self._machines[(inst.machine, inst.version)]
            moves = [t for t in definition["transitions"] if t["from"] == inst.state and t["event"] == p["event"]]
            if not moves:
                raise _Failed("INVALID_TRANSITION", f"no transition from {inst.state} on {p['event']}")
            frm, inst.state = inst.state, moves[0]["to"]
            self._wal += 1
            self._count["evt"] += 1
            inst.last_wal_offset, inst.last_event_id = self._wal, f"evt-{self._count['evt']}"
            events = []
            for sub, (sub_number, machines, include_ctx) in sorted(self._subs.items()):
                if machines is None or inst.machine in machines:
                    ev: dict[str, Any] = {
                        "type": "event",
                        "subscription_id": sub,
                        "instance_id": p["instance_id"],
                        "machine": inst.machine,
                        "version": inst.version,
                        "wal_offset": self._wal,
                        "from_state": frm,
                        "to_state": inst.state,
                        "event": p["event"],
                        "payload": p.get("payload") or {},
                    }
                    if include_ctx:
                        ev["ctx"] = inst.ctx
                    events.append((sub_number, compact(ev)))
        result = {
            "from_state": frm,
            "to_state": inst.state,
            "ctx": inst.ctx,
            "wal_offset": self._wal,
            "applied": True,
            "event_id": inst.last_event_id,
        }
        return result, events

    def _op_watch_all(self, number: int, p: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[int, bytes]]]:
        with self._lock:
            self._count["sub"] += 1
            sub = f"sub-{self._count['sub']}"
            self._subs[sub] = (number, p.get("machines"), bool(p.get("include_ctx", True)))
        return {"subscription_id": sub, "wal_offset": self._wal}, []

    def _op_unwatch(self, number: int, p: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[int, bytes]]]:
        with self._lock:
            removed = self._subs.pop(p["subscription_id"], None) is not None
        return {"subscription_id": p["subscription_id"], "removed": removed}, []


# ---------------------------------------------------------------- client sessions


@dataclass
class BinaryResults:
    pong: bool
    info: dict[str, Any]
    created: bool
    state: str
    subscription: str
    to_state: str
    event_to_state: str
    event_subscription: str
    error_codes: list[str]


async def binary_session(port: int) -> BinaryResults:
    """The real client as an application uses it: HELLO (on connect), PING,
    INFO, PUT_MACHINE, CREATE_INSTANCE, WATCH_ALL, APPLY_EVENT and its
    event, an APPLY_EVENT and a GET_INSTANCE the server refuses, BYE."""
    client = Client("127.0.0.1", port, request_timeout=20, connect_timeout=20)
    await client.connect()
    pong = await client.ping()
    info = await client.info()
    pm = await client.put_machine("order", 1, DEFINITION)
    ci = await client.create_instance("order", 1, instance_id="order-1", initial_ctx={"customer": "c-7"})
    watch = await client.watch_all(machines=["order"])
    applied = await client.apply_event("order-1", "pay", payload={"amount": 42.5})
    events = client.events()
    event = await asyncio.wait_for(anext(events), 20)
    codes = []
    for call in (client.apply_event("order-1", "pay"), client.get_instance("order-404")):
        try:
            await call
        except ServerError as e:
            codes.append(e.code.value)
    # The client has no bye(): its own generic request path sends one.
    await client._request(Operation.BYE, {})
    await events.aclose()
    await client.close()
    return BinaryResults(
        pong,
        info,
        pm.created,
        ci.state,
        watch.subscription_id,
        applied.to_state,
        event.to_state,
        event.subscription_id,
        codes,
    )


@dataclass
class JsonlResults:
    wire_mode: str
    responses: list[Response] = field(default_factory=list)
    events: list[StreamEvent] = field(default_factory=list)


async def jsonl_session(port: int, hello_as_frame: bool) -> JsonlResults:
    """A JSONL session: the client's own encoders write the request frames,
    its models read the answers (see the module's docstring)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    counter = 0

    def send(op: Operation, params: dict[str, Any]) -> None:
        nonlocal counter
        counter += 1
        writer.write(Frame(Request(id=str(counter), op=op, params=params).model_dump_json().encode()).encode())

    async def line() -> bytes:
        data = await asyncio.wait_for(reader.readline(), 20)
        assert data.endswith(b"\n"), data
        return data

    hello = {"protocol_version": 1, "client_name": "rstmdb-py", "wire_modes": ["jsonl"], "features": ["batch"]}
    send(Operation.HELLO, hello)
    if hello_as_frame:
        buf = b""
        decoded = None
        while decoded is None:
            buf += await asyncio.wait_for(reader.read(8192), 20)
            decoded, buf = Frame.decode(buf)
        assert buf == b""
        first = Response.model_validate_json(decoded.payload)
    else:
        first = Response.model_validate_json(await line())
    assert first.result is not None
    out = JsonlResults(first.result["wire_mode"], [first])
    send(Operation.PING, {})
    out.responses.append(Response.model_validate_json(await line()))
    send(Operation.PUT_MACHINE, {"machine": "door", "version": 1, "definition": {**DEFINITION}})
    out.responses.append(Response.model_validate_json(await line()))
    send(Operation.CREATE_INSTANCE, {"machine": "door", "version": 1, "instance_id": "door-1"})
    out.responses.append(Response.model_validate_json(await line()))
    send(Operation.WATCH_ALL, {"include_ctx": False})
    out.responses.append(Response.model_validate_json(await line()))
    send(Operation.APPLY_EVENT, {"instance_id": "door-1", "event": "pay"})
    out.responses.append(Response.model_validate_json(await line()))
    out.events.append(StreamEvent.model_validate_json(await line()))
    send(Operation.GET_INSTANCE, {"instance_id": "door-404"})
    out.responses.append(Response.model_validate_json(await line()))
    send(Operation.BYE, {})
    out.responses.append(Response.model_validate_json(await line()))
    assert await asyncio.wait_for(reader.read(), 20) == b""  # the server closed after BYE
    writer.close()
    await writer.wait_closed()
    return out
