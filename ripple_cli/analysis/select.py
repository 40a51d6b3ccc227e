"""Choosing which messages to show: --type, --output, --key."""

from __future__ import annotations

from collections.abc import Iterable

from ripple_cli.codec.messages import TAG_BY_NAME, DeltaMsg, DeltaView
from ripple_cli.codec.stream import Message
from ripple_cli.render.summary import key_text


class Selection:
    def __init__(self, types: Iterable[str] = (), outputs: Iterable[str] = (), keys: Iterable[str] = ()) -> None:
        by_lower = {k.lower(): v for k, v in TAG_BY_NAME.items()}
        self.tags = frozenset(by_lower[t.lower()] for t in types)
        self.outputs = frozenset(o.encode("utf-8", "surrogateescape") for o in outputs)
        self.keys = frozenset(keys)
        self.everything = not (self.tags or self.outputs or self.keys)

    def __call__(self, msg: Message) -> bool:
        if self.everything:
            return True
        if self.tags and msg.frame.tag not in self.tags:
            return False
        if self.outputs or self.keys:
            body = msg.body
            if not isinstance(body, (DeltaView, DeltaMsg)):
                return False
            if self.outputs and body.source_output not in self.outputs:
                return False
            if self.keys and key_text(body) not in self.keys:
                return False
        return True
