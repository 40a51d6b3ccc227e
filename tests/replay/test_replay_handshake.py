"""replay --handshake none: a consumer that never answers the Handshake
(a plain listener, nc -l) gets the whole stream; --handshake wait (the
default) still waits for the answer."""

from __future__ import annotations

import socket
import threading

from tests.conftest import EXAMPLES, run_cli

DEMO = EXAMPLES / "demo.ripple"


def _silent_listener() -> tuple[socket.socket, list[bytes], threading.Thread]:
    srv = socket.create_server(("127.0.0.1", 0))
    got: list[bytes] = []

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            while data := conn.recv(1 << 16):
                got.append(data)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return srv, got, t


def test_none_sends_everything_to_a_listener_that_never_answers() -> None:
    srv, got, t = _silent_listener()
    port = srv.getsockname()[1]
    r = run_cli(["replay", "--topspeed", "--handshake", "none", "--to", f"127.0.0.1:{port}", str(DEMO)])
    t.join(10)
    srv.close()
    assert r.code == 0, r.stderr
    # the demo's own Schema_negotiation is an answer, not sent by a producer
    sent = b"".join(got)
    assert sent and DEMO.read_bytes().startswith(sent[:64])
    assert len(sent) > 30_000


def test_wait_gives_up_on_a_listener_that_never_answers() -> None:
    srv, _got, _t = _silent_listener()
    port = srv.getsockname()[1]
    r = run_cli(["replay", "--topspeed", "--handshake-timeout", "0.5", "--to", f"127.0.0.1:{port}", str(DEMO)])
    srv.close()
    assert r.code == 1
    assert "no Schema_negotiation" in r.stderr
