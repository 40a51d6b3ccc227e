"""Which streams and messages a command shows: --stream, --type, --output,
--key and -Y, combined once into two predicates."""

from __future__ import annotations

from collections.abc import Callable

from ripple_cli.analysis.select import Selection
from ripple_cli.capture.events import StreamId
from ripple_cli.codec.stream import Message
from ripple_cli.errors import UsageProblem
from ripple_cli.flow.origin import Origin

MessagePredicate = Callable[[Origin, Message], bool]


def stream_predicate(stream: tuple[int, str | None] | None) -> Callable[[StreamId | None], bool]:
    if stream is None:
        return lambda _s: True
    number, direction = stream

    def want(s: StreamId | None) -> bool:
        return s is not None and s.connection == number and (direction is None or s.direction == direction)

    return want


def message_predicate(
    types: tuple[str, ...] = (),
    outputs: tuple[str, ...] = (),
    keys: tuple[str, ...] = (),
    display_filter: str | None = None,
) -> MessagePredicate:
    selection = Selection(types, outputs, keys)
    if display_filter is None:
        return lambda _origin, msg: selection(msg)
    from ripple_cli.analysis.filter import FilterError, compile_filter

    try:
        flt = compile_filter(display_filter)
    except FilterError as e:
        raise UsageProblem(f"-Y: {e}") from None
    return lambda origin, msg: selection(msg) and flt(origin, msg)
