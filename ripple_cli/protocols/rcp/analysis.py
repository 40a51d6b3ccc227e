"""Rules across one RCP connection: responses against requests.

Responses are paired with requests by id (the id is the only link: a
server may answer out of order, and events come in between).  What is
checked, in capture order:

- a response to an id no request asked, or already answered;
- a request id used again while the first is still waiting (an error: the
  client's table of pending requests would lose one) or after its answer
  (a warning: legal, but the ids no longer tell the answers apart);
- error responses, listed with their code and the op they answer;
- an error whose `retryable` disagrees with its code (the server sets it
  for WAL_IO_ERROR, INTERNAL_ERROR and RATE_LIMITED only);
- events of a subscription no WATCH_INSTANCE / WATCH_ALL on this
  connection opened, or that UNWATCH closed;
- messages in the wrong direction (the server reads every client frame as
  a request; it never sends one);
- requests after BYE was answered (the server closes the connection then);
- at the end, requests never answered.

Per-op figures (requests, answers, errors by code, requests never
answered, and latencies from the capture times) are kept in `stats`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.protocols.base import ConnectionAnalyzer, ProtoMessage
from ripple_cli.protocols.rcp.payload import RETRYABLE_CODES

PROBLEM_KINDS = {
    "unanswered": "a request the connection ended without answering",
    "unknown_response": "a response to an id no request on this connection is waiting for",
    "duplicate_id": "a request id already used on this connection (an error while the first still waits)",
    "error_response": "a response with status error, listed with its code and the op it answers (a warning)",
    "retryable_mismatch": "an error whose retryable flag disagrees with its code (a warning)",
    "unknown_subscription": "an event of a subscription this connection did not open, or closed (a warning)",
    "wrong_direction": "a request from the server, or a response or event from the client",
    "after_bye": "a request after BYE was answered: the server has closed the connection (a warning)",
}


@dataclass(slots=True)
class _Pending:
    op: str
    offset: int
    from_client: bool | None
    index: int  # the request's place among the connection's requests
    time: int | None  # capture time in ns


@dataclass(slots=True)
class OpStats:
    """What one op did on a connection."""

    op: str
    requests: int = 0
    answered: int = 0
    errors: Counter[str] = field(default_factory=Counter)  # error code -> count
    unanswered: int = 0
    latencies: list[int] = field(default_factory=list)  # ns, request to response, in captures
    # How many later requests were sent before each answer came back: the
    # latency in message order (0 = answered before the next request).
    overtaken: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "op": self.op,
            "requests": self.requests,
            "answered": self.answered,
            "errors": dict(sorted(self.errors.items())),
            "unanswered": self.unanswered,
        }
        if self.latencies:
            ordered = sorted(self.latencies)
            out["latency_ns"] = {
                "min": ordered[0],
                "median": ordered[len(ordered) // 2],
                "max": ordered[-1],
            }
        return out


class RcpAnalyzer(ConnectionAnalyzer):
    def __init__(self) -> None:
        self.pending: dict[str, _Pending] = {}
        self.answered_ids: set[str] = set()
        self.subscriptions: set[str] = set()
        self.closed_subscriptions: set[str] = set()
        self.requests = 0
        self.events = 0
        self.events_by_subscription: Counter[str] = Counter()
        self.bye_answered = False
        self._stats: dict[str, OpStats] = {}

    def stats(self) -> list[OpStats]:
        """Per-op figures, by op name."""
        return [self._stats[op] for op in sorted(self._stats)]

    def report(self) -> dict[str, Any]:
        """The connection's figures as JSON (for a summary after `close`)."""
        return {
            "requests": self.requests,
            "ops": [st.to_json() for st in self.stats()],
            "events": self.events,
            "events_by_subscription": dict(sorted(self.events_by_subscription.items())),
        }

    def _op(self, op: str) -> OpStats:
        st = self._stats.get(op)
        if st is None:
            st = self._stats[op] = OpStats(op)
        return st

    def observe(self, from_client: bool | None, msg: ProtoMessage) -> list[Problem]:
        time = self.time_ns  # set by the caller: the capture time of this message
        kind = msg.fields.get("kind")
        value = msg.fields.get("msg")
        if kind is None or not isinstance(value, dict):
            return []
        if (kind == "request" and from_client is False) or (kind != "request" and from_client is True):
            who = "server" if from_client is False else "client"
            return [
                Problem(msg.offset, "wrong_direction", f"a {kind} from the {who}", extra={"from_client": from_client})
            ]
        if kind == "request":
            return self._request(from_client, msg, value, time)
        if kind == "response":
            return self._response(from_client, msg, value, time)
        return self._event(from_client, msg, value)

    def _request(
        self, from_client: bool | None, msg: ProtoMessage, value: dict[str, Any], time: int | None
    ) -> list[Problem]:
        out: list[Problem] = []
        rid = value.get("id")
        op = value.get("op")
        op_name = op if isinstance(op, str) else "?"
        self.requests += 1
        self._op(op_name).requests += 1
        extra: dict[str, object] = {"id": rid, "op": op_name, "from_client": from_client}
        if self.bye_answered:
            out.append(
                Problem(
                    msg.offset,
                    "after_bye",
                    f"request {op_name} after BYE was answered",
                    severity=Severity.WARNING,
                    extra=extra,
                )
            )
        if not isinstance(rid, str):
            return out  # the stream reported the id; nothing can pair with it
        earlier = self.pending.get(rid)
        if earlier is not None:
            detail = f"request id {rid} ({op_name}) reused while {earlier.op} at offset {earlier.offset} still waits"
            out.append(Problem(msg.offset, "duplicate_id", detail, extra=extra))
            # The earlier one can no longer be told apart: count it as never answered.
            self._op(earlier.op).unanswered += 1
        elif rid in self.answered_ids:
            detail = f"request id {rid} ({op_name}) used before on this connection"
            out.append(Problem(msg.offset, "duplicate_id", detail, severity=Severity.WARNING, extra=extra))
        self.pending[rid] = _Pending(op_name, msg.offset, from_client, self.requests, time)
        return out

    def _response(
        self, from_client: bool | None, msg: ProtoMessage, value: dict[str, Any], time: int | None
    ) -> list[Problem]:
        out: list[Problem] = []
        rid = value.get("id")
        if not isinstance(rid, str):
            return out
        req = self.pending.pop(rid, None)
        if req is None:
            again = " (answered already)" if rid in self.answered_ids else ""
            detail = f"response to id {rid}, which no request is waiting for{again}"
            return [Problem(msg.offset, "unknown_response", detail, extra={"id": rid, "from_client": from_client})]
        self.answered_ids.add(rid)
        st = self._op(req.op)
        st.answered += 1
        st.overtaken.append(self.requests - req.index)
        latency = time - req.time if time is not None and req.time is not None else None
        if latency is not None:
            st.latencies.append(latency)
        result = value.get("result")
        if req.op == "BYE" and value.get("status") == "ok":
            self.bye_answered = True
        if req.op in ("WATCH_ALL", "WATCH_INSTANCE") and isinstance(result, dict):
            sub = result.get("subscription_id")
            if isinstance(sub, str):
                self.subscriptions.add(sub)
                self.closed_subscriptions.discard(sub)
        if req.op == "UNWATCH" and isinstance(result, dict):
            sub = result.get("subscription_id")
            if isinstance(sub, str):
                self.subscriptions.discard(sub)
                self.closed_subscriptions.add(sub)
        err = value.get("error")
        if value.get("status") == "error" and isinstance(err, dict):
            code = err.get("code")
            code_name = code if isinstance(code, str) else "?"
            st.errors[code_name] += 1
            message = err.get("message")
            text = f": {message}" if isinstance(message, str) and message else ""
            extra: dict[str, object] = {"id": rid, "op": req.op, "code": code_name, "request_offset": req.offset}
            if latency is not None:
                extra["latency_ns"] = latency
            detail = f"{req.op} (id {rid}) failed with {code_name}{text}"
            out.append(Problem(msg.offset, "error_response", detail, severity=Severity.WARNING, extra=extra))
            retryable = err.get("retryable")
            if isinstance(retryable, bool) and isinstance(code, str) and retryable != (code in RETRYABLE_CODES):
                should = "true" if code in RETRYABLE_CODES else "false"
                detail = f"{code} with retryable {str(retryable).lower()} (the server sets it {should})"
                out.append(Problem(msg.offset, "retryable_mismatch", detail, severity=Severity.WARNING, extra=extra))
        return out

    def _event(self, from_client: bool | None, msg: ProtoMessage, value: dict[str, Any]) -> list[Problem]:
        self.events += 1
        sub = value.get("subscription_id")
        if not isinstance(sub, str):
            return []
        self.events_by_subscription[sub] += 1
        if sub in self.subscriptions:
            return []
        why = "closed by UNWATCH" if sub in self.closed_subscriptions else "not opened on this connection"
        detail = f"event of subscription {sub}, {why}"
        return [
            Problem(
                msg.offset, "unknown_subscription", detail, severity=Severity.WARNING, extra={"subscription_id": sub}
            )
        ]

    def close(self) -> list[Problem]:
        out: list[Problem] = []
        for rid, req in sorted(self.pending.items(), key=lambda kv: kv[1].offset):
            self._op(req.op).unanswered += 1
            detail = f"request {req.op} (id {rid}) never answered"
            out.append(
                Problem(
                    req.offset, "unanswered", detail, extra={"id": rid, "op": req.op, "from_client": req.from_client}
                )
            )
        self.pending.clear()
        return out
