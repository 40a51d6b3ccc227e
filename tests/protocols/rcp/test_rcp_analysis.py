"""The connection rules of RCP (RcpAnalyzer) on hand-built conversations:
exact problem lists and per-op figures."""

from __future__ import annotations

from rcpkit import error, event, frame, ok, request

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import DissectOptions, ProtoMessage
from ripple_cli.protocols.rcp.analysis import RcpAnalyzer
from ripple_cli.protocols.rcp.stream import RcpStream

C, S = True, False


def run(steps: list[tuple[bool | None, bytes]], times: list[int] | None = None) -> tuple[RcpAnalyzer, list[Problem]]:
    """Each step is (from_client, bytes of one message); the analyzer sees
    the messages in that order (with the given capture times)."""
    streams = {d: RcpStream(DissectOptions(), d) for d in (True, False, None)}
    analyzer = RcpAnalyzer()
    out: list[Problem] = []
    for k, (direction, data) in enumerate(steps):
        items = streams[direction].feed(data)
        msgs = [i for i in items if isinstance(i, ProtoMessage)]
        assert len(msgs) == 1, items
        analyzer.time_ns = times[k] if times is not None else None
        out += analyzer.observe(direction, msgs[0])
    out += analyzer.close()
    return analyzer, out


def brief(problems: list[Problem]) -> list[tuple[int, str, str, str]]:
    return [(p.offset, p.kind, str(p.severity), p.detail) for p in problems]


def test_a_clean_session_has_no_problems_and_its_figures() -> None:
    hello, ping, bye = (
        frame(request("1", "HELLO", {"protocol_version": 1})),
        frame(request("2", "PING")),
        frame(request("3", "BYE")),
    )
    steps = [
        (C, hello),
        (S, frame(ok("1", {"wire_mode": "binary_json"}))),
        (C, ping),
        (S, frame(ok("2", {"pong": True}))),
        (C, bye),
        (S, frame(ok("3", {"goodbye": True}))),
    ]
    analyzer, problems = run(steps, times=[0, 1500, 2000, 2600, 5000, 9000])
    assert problems == []
    assert [s.to_json() for s in analyzer.stats()] == [
        {
            "op": "BYE",
            "requests": 1,
            "answered": 1,
            "errors": {},
            "unanswered": 0,
            "latency_ns": {"min": 4000, "median": 4000, "max": 4000},
        },
        {
            "op": "HELLO",
            "requests": 1,
            "answered": 1,
            "errors": {},
            "unanswered": 0,
            "latency_ns": {"min": 1500, "median": 1500, "max": 1500},
        },
        {
            "op": "PING",
            "requests": 1,
            "answered": 1,
            "errors": {},
            "unanswered": 0,
            "latency_ns": {"min": 600, "median": 600, "max": 600},
        },
    ]


def test_pairing_by_id_out_of_order_unknown_and_unanswered() -> None:
    a, b, c = (
        frame(request("1", "GET_INSTANCE", {"instance_id": "x"})),
        frame(request("2", "PING")),
        frame(request("3", "INFO")),
    )
    steps = [
        (C, a),
        (C, b),
        (C, c),
        (S, frame(ok("2", {"pong": True}))),  # answers out of order are fine
        (S, frame(ok("1", {"state": "created"}))),
        (S, frame(ok("9", {}))),  # nobody asked
        (S, frame(ok("2", {"pong": True}))),  # answered already
    ]
    analyzer, problems = run(steps)
    r1 = len(frame(ok("2", {"pong": True}))) + len(frame(ok("1", {"state": "created"})))
    r2 = r1 + len(frame(ok("9", {})))
    assert brief(problems) == [
        (r1, "unknown_response", "error", "response to id 9, which no request is waiting for"),
        (r2, "unknown_response", "error", "response to id 2, which no request is waiting for (answered already)"),
        (len(a) + len(b), "unanswered", "error", "request INFO (id 3) never answered"),
    ]
    assert problems[-1].extra == {"id": "3", "op": "INFO", "from_client": True}
    stats = {s.op: s for s in analyzer.stats()}
    # The answer to 1 came after two later requests had been sent: overtaken twice.
    assert stats["GET_INSTANCE"].overtaken == [2]
    assert stats["PING"].overtaken == [1]
    assert stats["INFO"].unanswered == 1


def test_duplicate_ids_while_waiting_and_after_the_answer() -> None:
    p1, p2 = frame(request("1", "PING")), frame(request("1", "INFO"))
    pong = frame(ok("1", {"pong": True}))
    p3 = frame(request("1", "BYE"))
    _, problems = run([(C, p1), (C, p2), (S, pong), (C, p3), (S, frame(ok("1", {"goodbye": True})))])
    assert brief(problems) == [
        (len(p1), "duplicate_id", "error", "request id 1 (INFO) reused while PING at offset 0 still waits"),
        (len(p1) + len(p2), "duplicate_id", "warning", "request id 1 (BYE) used before on this connection"),
    ]


def test_error_responses_are_listed_with_their_code_and_op() -> None:
    req = frame(request("4", "APPLY_EVENT", {"instance_id": "o-1", "event": "ship"}))
    err = frame(error("4", "INVALID_TRANSITION", "no transition from created on ship"))
    req2 = frame(request("5", "PUT_MACHINE", {"machine": "m", "version": 1, "definition": {}}))
    err2 = frame(error("5", "MACHINE_VERSION_EXISTS", "exists", retryable=True))
    analyzer, problems = run([(C, req), (S, err), (C, req2), (S, err2)], times=[10, 25, 30, 31])
    assert brief(problems) == [
        (
            0,
            "error_response",
            "warning",
            "APPLY_EVENT (id 4) failed with INVALID_TRANSITION: no transition from created on ship",
        ),
        (len(err), "error_response", "warning", "PUT_MACHINE (id 5) failed with MACHINE_VERSION_EXISTS: exists"),
        (
            len(err),
            "retryable_mismatch",
            "warning",
            "MACHINE_VERSION_EXISTS with retryable true (the server sets it false)",
        ),
    ]
    assert problems[0].extra == {
        "id": "4",
        "op": "APPLY_EVENT",
        "code": "INVALID_TRANSITION",
        "request_offset": 0,
        "latency_ns": 15,
    }
    assert {s.op: dict(s.errors) for s in analyzer.stats()} == {
        "APPLY_EVENT": {"INVALID_TRANSITION": 1},
        "PUT_MACHINE": {"MACHINE_VERSION_EXISTS": 1},
    }


def test_events_belong_to_a_subscription_the_connection_opened() -> None:
    watch = frame(request("1", "WATCH_ALL", {"include_ctx": True}))
    opened = frame(ok("1", {"subscription_id": "sub-1", "wal_offset": 0}))
    ev1 = frame(event("sub-1", "o-1", "created", "paid", "pay"))
    ev2 = frame(event("sub-7", "o-1", "paid", "shipped", "ship"))
    unwatch = frame(request("2", "UNWATCH", {"subscription_id": "sub-1"}))
    closed = frame(ok("2", {"subscription_id": "sub-1", "removed": True}))
    ev3 = frame(event("sub-1", "o-2", "created", "paid", "pay"))
    analyzer, problems = run([(C, watch), (S, opened), (S, ev1), (S, ev2), (C, unwatch), (S, closed), (S, ev3)])
    at2 = len(opened) + len(ev1)
    at3 = at2 + len(ev2) + len(closed)
    assert brief(problems) == [
        (at2, "unknown_subscription", "warning", "event of subscription sub-7, not opened on this connection"),
        (at3, "unknown_subscription", "warning", "event of subscription sub-1, closed by UNWATCH"),
    ]
    assert analyzer.report() == {
        "requests": 2,
        "ops": [
            {"op": "UNWATCH", "requests": 1, "answered": 1, "errors": {}, "unanswered": 0},
            {"op": "WATCH_ALL", "requests": 1, "answered": 1, "errors": {}, "unanswered": 0},
        ],
        "events": 3,
        "events_by_subscription": {"sub-1": 2, "sub-7": 1},
    }


def test_wrong_direction_and_requests_after_bye() -> None:
    bye = frame(request("1", "BYE"))
    goodbye = frame(ok("1", {"goodbye": True}))
    late = frame(request("2", "PING"))
    from_server = frame(request("3", "PING"))
    from_client = frame(ok("3", {}))
    _, problems = run([(C, bye), (S, goodbye), (C, late), (S, from_server), (C, from_client)])
    assert brief(problems) == [
        (len(bye), "after_bye", "warning", "request PING after BYE was answered"),
        (len(goodbye), "wrong_direction", "error", "a request from the server"),
        (len(bye) + len(late), "wrong_direction", "error", "a response from the client"),
        (len(bye), "unanswered", "error", "request PING (id 2) never answered"),
    ]


def test_a_raw_stream_pairs_by_kind_alone() -> None:
    req, res = frame(request("1", "PING")), frame(ok("1", {"pong": True}))
    analyzer, problems = run([(None, req), (None, res)])
    assert problems == []
    assert [(s.op, s.answered) for s in analyzer.stats()] == [("PING", 1)]


def test_jsonl_answers_pair_like_frames() -> None:
    hello = frame(request("1", "HELLO", {"protocol_version": 1, "wire_modes": ["jsonl"]}))
    hello_ok = ok(
        "1", {"protocol_version": 1, "wire_mode": "jsonl", "server_name": "s", "server_version": "1", "features": []}
    )
    ping = frame(request("2", "PING"))
    _, problems = run(
        [(C, hello), (S, hello_ok + b"\n"), (C, ping), (S, error("2", "RATE_LIMITED", "slow down", True) + b"\n")]
    )
    assert brief(problems) == [
        (len(hello_ok) + 1, "error_response", "warning", "PING (id 2) failed with RATE_LIMITED: slow down")
    ]


def test_messages_that_are_not_json_or_have_bad_ids_are_left_to_the_stream() -> None:
    _, problems = run([(C, frame(b"not json")), (C, frame(b'{"type":"request","id":5,"op":"PING"}'))])
    assert problems == []
