"""The rules of a Reactive Streams connection, for `verify`.

Both directions are seen in capture order.  A subscription is named by its
subscriber's side and its Id: the subscriber picks the Id and sends
subscribe/request/cancel; the other side publishes onSubscribe, onNext...
for it.  Each side may subscribe to the other, with Ids of its own.  A raw
stream file (no connection, `from_client` None) is read as one transcript
of both sides: subscriptions are named by their Id alone.

Capture order across directions is not the order each side saw: a request
sent before the subscriber received onComplete, or an onNext sent before
the publisher received cancel, crosses on the wire.  Those are warnings
(`in_flight_*`); what a side does after its OWN cancel, goodbye or terminal
signal is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ripple_cli.codec.problems import Problem, Severity
from ripple_cli.protocols.base import ConnectionAnalyzer, ProtoMessage
from ripple_cli.protocols.reactive_streams.wire import LONG_MAX, PUBLISHER_SIGNALS, SUBSCRIBER_SIGNALS

MAX_SUBSCRIPTIONS = 1 << 16  # subscriptions tracked per connection
MAX_PARTS = 1 << 16  # unfinished split elements tracked per connection
HELLOS = {"ClientHello": "client", "ServerHello": "server"}
GOODBYES = frozenset(("Goodbye", "GoodbyeAck"))

Side = bool | None  # from_client: True client, False server, None a raw file's transcript


def _peer(side: Side) -> Side:
    return None if side is None else not side


def _demand(n: int) -> str:
    return "unbounded" if n >= LONG_MAX else str(n)


@dataclass
class _Subscription:
    id: int
    offset: int  # of its subscribe
    outstanding: int  # demand granted and not yet used; LONG_MAX: unbounded
    granted: int
    delivered: int = 0
    subscribed: bool = False  # onSubscribe seen
    cancel_offset: int | None = None
    terminal: tuple[str, int] | None = None  # (OnComplete/OnError, offset)
    goodbye: bool = False  # closed by a goodbye
    # The Id's previous subscription was cancelled: until this one's
    # onSubscribe, the publisher's signals may still be that one's.
    previous_cancelled: bool = False
    parts: dict[int, tuple[int, int]] = field(default_factory=dict)  # element Id -> (parts, first offset)

    @property
    def closed(self) -> bool:
        """Closed for its subscriber: the Id may be used again."""
        return self.cancel_offset is not None or self.terminal is not None or self.goodbye


class ReactiveStreamsAnalyzer(ConnectionAnalyzer):
    def __init__(self) -> None:
        self._subs: dict[tuple[Side, int], _Subscription] = {}
        self._parts = 0
        self._full = False  # the subscription table overflowed: unknown Ids are not reported
        self._greeted: set[Side] = set()
        self._before_hello: set[Side] = set()
        self._versions: dict[str, tuple[int, int]] = {}  # "client"/"server" -> (version, offset)
        self._mismatch: int | None = None  # offset of the hello that made the versions disagree
        self._goodbye_after_mismatch = False
        self._goodbyes: dict[Side, int] = {}  # side -> offset of its goodbye
        self._acked: set[Side] = set()  # sides whose goodbye was answered

    # ------------------------------------------------------------ the contract

    def observe(self, from_client: bool | None, msg: ProtoMessage) -> list[Problem]:
        if msg.type == "Raw":
            return []
        out: list[Problem] = []
        side: Side = from_client
        t = msg.type
        if t in HELLOS:
            self._hello(side, msg, out)
        elif side not in self._greeted and side not in self._before_hello:
            self._before_hello.add(side)  # once per side: the rest would only repeat it
            who = "the stream" if side is None else "the client" if side else "the server"
            out.append(Problem(msg.offset, "before_hello", f"{t} before any hello from {who}"))
        if side in self._goodbyes and t not in GOODBYES:
            out.append(
                Problem(msg.offset, "after_goodbye", f"{t} after this side's Goodbye at offset {self._goodbyes[side]}")
            )
        if t in GOODBYES:
            self._goodbye(side, msg, out)
        elif t in SUBSCRIBER_SIGNALS:
            self._subscriber_signal(side, msg, out)
        elif t in PUBLISHER_SIGNALS:
            self._publisher_signal(_peer(side), msg, out)
        return out

    def close(self) -> list[Problem]:
        out: list[Problem] = []
        for sub in self._subs.values():
            if sub.cancel_offset is None and not sub.goodbye:
                self._unfinished(sub, "the connection ended", out)
        if self._mismatch is not None and not self._goodbye_after_mismatch:
            out.append(
                Problem(
                    self._mismatch,
                    "goodbye_missing",
                    f"the hellos disagree on the version ({self._version_text()}) and no Goodbye followed",
                )
            )
        elif self._mismatch is None:
            for side, offset in self._goodbyes.items():
                if side not in self._acked:
                    out.append(
                        Problem(
                            offset,
                            "goodbye_unanswered",
                            "a Goodbye with no GoodbyeAck (nor Goodbye) from the other side",
                            severity=Severity.WARNING,
                        )
                    )
        return out

    # ------------------------------------------------------------ connection

    def _hello(self, side: Side, msg: ProtoMessage, out: list[Problem]) -> None:
        t = msg.type
        # The sender's hello, whichever it sent (a wrong one is reported below).
        kind = HELLOS[t] if side is None else "client" if side else "server"
        version = msg.fields["version"]
        if side is not None and HELLOS[t] != kind:
            out.append(Problem(msg.offset, "wrong_hello", f"a {t} from the {kind}"))
        if kind in self._versions:
            out.append(
                Problem(msg.offset, "duplicate_hello", f"a second {t} (the first at offset {self._versions[kind][1]})")
            )
        self._greeted.add(side)
        self._versions[kind] = (version, msg.offset)
        if version != 0:
            out.append(
                Problem(
                    msg.offset,
                    "unsupported_version",
                    f"{t} of version {version}: ripple decodes version 0, the draft's only one",
                    severity=Severity.WARNING,
                )
            )
        # Versions disagree: the side that cannot speak the other's MUST say
        # goodbye.  A lone hello is compared with 0, the only version there is.
        versions = {v for v, _o in self._versions.values()}
        disagree = len(versions) > 1 or (len(self._versions) == 1 and version != 0)
        if disagree and self._mismatch is None:
            self._mismatch = msg.offset
            self._goodbye_after_mismatch = False
        elif not disagree:
            self._mismatch = None  # the other side answered with the same (later) version

    def _version_text(self) -> str:
        return ", ".join(f"{k} {v}" for k, (v, _o) in sorted(self._versions.items()))

    def _goodbye(self, side: Side, msg: ProtoMessage, out: list[Problem]) -> None:
        if msg.type == "Goodbye":
            if self._mismatch is not None:
                self._goodbye_after_mismatch = True
            if side is None:  # a transcript: a second goodbye answers the first
                if None in self._goodbyes:
                    self._acked.add(None)
                else:
                    self._goodbyes[None] = msg.offset
            else:
                self._goodbyes.setdefault(side, msg.offset)
                if _peer(side) in self._goodbyes:  # crossing goodbyes answer each other
                    self._acked.update((side, _peer(side)))
            # A goodbye closes every subscription, as cancel or onError would.
            for sub in self._subs.values():
                sub.goodbye = True
            return
        asked = [s for s in self._goodbyes if s == _peer(side) and s not in self._acked]
        if not asked:
            out.append(
                Problem(
                    msg.offset,
                    "unexpected_goodbye_ack",
                    "a GoodbyeAck with no Goodbye to answer",
                    severity=Severity.WARNING,
                )
            )
        self._acked.update(asked)

    # ------------------------------------------------------------ subscriptions

    def _problem(self, out: list[Problem], msg: ProtoMessage, kind: str, detail: str, warn: bool = False) -> None:
        severity = Severity.WARNING if warn else Severity.ERROR
        out.append(Problem(msg.offset, kind, detail, severity=severity, extra={"subscriber": msg.fields["subscriber"]}))

    def _subscriber_signal(self, side: Side, msg: ProtoMessage, out: list[Problem]) -> None:
        t, f = msg.type, msg.fields
        sid: int = f["subscriber"]
        key = (side, sid)
        sub = self._subs.get(key)
        if t == "Subscribe":
            if sub is not None and not sub.closed:
                self._problem(
                    out,
                    msg,
                    "id_in_use",
                    f"Subscribe reuses Id {sid}, whose subscription (offset {sub.offset}) is open: no Cancel sent, "
                    "no OnComplete or OnError received",
                )
            initial = min(f["initial_demand"], LONG_MAX)
            new = _Subscription(sid, msg.offset, initial, initial)
            new.previous_cancelled = sub is not None and sub.cancel_offset is not None and sub.terminal is None
            if sub is not None:
                self._drop_parts(sub)
            self._track(key, new, msg, out)
            return
        if sub is None:
            if not self._full:
                self._problem(out, msg, "unknown_subscription", f"{t} for Id {sid}, which no Subscribe opened")
            return
        if sub.cancel_offset is not None:
            self._problem(
                out, msg, "after_cancel", f"{t} for subscriber {sid} after its Cancel at offset {sub.cancel_offset}"
            )
        elif sub.terminal is not None:
            name, at = sub.terminal
            self._problem(
                out,
                msg,
                "in_flight_after_terminal",
                f"{t} for subscriber {sid} after its {name} at offset {at} (sent before it arrived?)",
                warn=True,
            )
        if t == "Request":
            demand: int = f["demand"]
            if demand == 0:
                self._problem(
                    out, msg, "bad_demand", f"Request of 0 elements for subscriber {sid} (Reactive Streams rule 3.9)"
                )
            sub.outstanding = min(sub.outstanding + demand, LONG_MAX)
            sub.granted = min(sub.granted + demand, LONG_MAX)
        elif sub.cancel_offset is None:  # Cancel
            sub.cancel_offset = msg.offset

    def _publisher_signal(self, side: Side, msg: ProtoMessage, out: list[Problem]) -> None:
        t, f = msg.type, msg.fields
        sid: int = f["subscriber"]
        sub = self._subs.get((side, sid))
        if sub is None:
            if not self._full:
                self._problem(out, msg, "unknown_subscription", f"{t} for Id {sid}, which no Subscribe opened")
            return
        if sub.terminal is not None:
            name, at = sub.terminal
            self._problem(out, msg, "after_terminal", f"{t} for subscriber {sid} after its {name} at offset {at}")
            return
        if not sub.subscribed and t != "OnSubscribe":
            if sub.previous_cancelled:
                self._problem(
                    out,
                    msg,
                    "in_flight_after_cancel",
                    f"{t} for Id {sid} before the OnSubscribe of its new subscription: the cancelled one's, in flight?",
                    warn=True,
                )
                return
            self._problem(out, msg, "before_onsubscribe", f"{t} for subscriber {sid} before its OnSubscribe")
        elif sub.cancel_offset is not None:
            self._problem(
                out,
                msg,
                "in_flight_after_cancel",
                f"{t} for subscriber {sid} after its Cancel at offset {sub.cancel_offset} (sent before it arrived?)",
                warn=True,
            )
        if t == "OnSubscribe":
            if sub.subscribed:
                self._problem(out, msg, "duplicate_onsubscribe", f"a second OnSubscribe for subscriber {sid}")
            sub.subscribed = True
            sub.previous_cancelled = False
        elif t == "OnNext":
            self._deliver(sub, 1, msg, out)
        elif t == "OnNextPacked":
            self._deliver(sub, f["count"], msg, out)
        elif t == "OnNextPart":
            eid: int = f["element_id"]
            if eid in sub.parts:
                n, first = sub.parts[eid]
                sub.parts[eid] = (n + 1, first)
            elif self._parts < MAX_PARTS:
                sub.parts[eid] = (1, msg.offset)
                self._parts += 1
        elif t == "OnNextLastPart":
            if sub.parts.pop(f["element_id"], None) is not None:
                self._parts -= 1
            self._deliver(sub, 1, msg, out)
        else:  # OnComplete, OnError
            self._unfinished(sub, f"its {t} came", out, msg.offset)
            sub.terminal = (t, msg.offset)

    def _deliver(self, sub: _Subscription, n: int, msg: ProtoMessage, out: list[Problem]) -> None:
        if sub.outstanding < LONG_MAX:
            if n > sub.outstanding:
                what = "an element" if n == 1 else f"{n} elements"
                self._problem(
                    out,
                    msg,
                    "demand_exceeded",
                    f"{msg.type} of {what} for subscriber {sub.id} beyond its demand: {sub.outstanding} outstanding "
                    f"({_demand(sub.granted)} granted, {sub.delivered} delivered)",
                )
                sub.outstanding = 0
            else:
                sub.outstanding -= n
        sub.delivered += n

    def _unfinished(self, sub: _Subscription, when: str, out: list[Problem], offset: int | None = None) -> None:
        for eid, (n, first) in sorted(sub.parts.items()):
            out.append(
                Problem(
                    first if offset is None else offset,
                    "unfinished_element",
                    f"element {eid} of subscriber {sub.id} was split ({n} part{'s' if n > 1 else ''} from offset "
                    f"{first}) and {when} before its OnNextLastPart",
                    extra={"subscriber": sub.id},
                )
            )
        self._drop_parts(sub)

    def _drop_parts(self, sub: _Subscription) -> None:
        self._parts -= len(sub.parts)
        sub.parts.clear()

    def _track(self, key: tuple[Side, int], sub: _Subscription, msg: ProtoMessage, out: list[Problem]) -> None:
        if key not in self._subs and len(self._subs) >= MAX_SUBSCRIPTIONS:
            closed = [k for k, s in self._subs.items() if s.closed and not s.parts]
            for k in closed[: max(1, len(closed) // 2)]:
                del self._subs[k]
            if len(self._subs) >= MAX_SUBSCRIPTIONS:
                if not self._full:
                    out.append(
                        Problem(
                            msg.offset,
                            "analysis_limit",
                            f"more than {MAX_SUBSCRIPTIONS} open subscriptions: later ones are not checked",
                            severity=Severity.WARNING,
                        )
                    )
                self._full = True
                return
        self._subs[key] = sub
