"""Which streams and messages a command shows: --stream, --type, --output,
--key and -Y, combined once into two predicates."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ripple_cli.analysis.select import Selection
from ripple_cli.capture.events import StreamId
from ripple_cli.errors import UsageProblem
from ripple_cli.protocols.base import Prefilter
from ripple_cli.protocols.item import Decoded
from ripple_cli.protocols.origin import Origin


def stream_predicate(stream: tuple[int, str | None] | None) -> Callable[[StreamId | None], bool]:
    if stream is None:
        return lambda _s: True
    number, direction = stream

    def want(s: StreamId | None) -> bool:
        if s is None:  # a raw stream file has no connection: none of it is chosen (ripple-decode(1))
            return False
        return s.connection == number and (direction is None or s.direction == direction)

    return want


class MessageSelector:
    """--type/--output/--key and -Y as one predicate on (origin, message)."""

    def __init__(
        self,
        types: tuple[str, ...] = (),
        outputs: tuple[str, ...] = (),
        keys: tuple[str, ...] = (),
        display_filter: str | None = None,
    ) -> None:
        self.selection = Selection(types, outputs, keys)
        self.filter = None
        if display_filter is not None:
            from ripple_cli.analysis.filter import FilterError, compile_filter

            try:
                self.filter = compile_filter(display_filter)
            except FilterError as e:
                raise UsageProblem(f"-Y: {e}") from None

    @property
    def everything(self) -> bool:
        """Every message is chosen: nothing to look at one by one."""
        return self.selection.everything and self.filter is None

    @property
    def prefilter(self) -> Prefilter | None:
        """What a chosen message must be, when that narrows anything: a fast
        lane passes over the others (protocols/base.py)."""
        pre = self.selection.prefilter
        if self.filter is not None:
            pre = pre & self.filter.prefilter
        return pre if pre.constrains else None

    @property
    def needs_decoded_deltas(self) -> bool:
        """True when the choice looks inside Deltas (keys, row fields), so
        they must be decoded with their schema, not only validated."""
        return bool(self.selection.keys) or (self.filter is not None and self.filter.needs_decoded_deltas)

    def __call__(self, origin: Origin, msg: Decoded) -> bool:
        if not self.selection(msg):
            return False
        return self.filter is None or self.filter(origin, msg)


def message_predicate(
    types: tuple[str, ...] = (),
    outputs: tuple[str, ...] = (),
    keys: tuple[str, ...] = (),
    display_filter: str | None = None,
) -> MessageSelector:
    return MessageSelector(types, outputs, keys, display_filter)


@dataclass(frozen=True)
class Show:
    """Which messages are shown: --count, and --type/--output/--key/-Y."""

    count: int | None
    select: MessageSelector
