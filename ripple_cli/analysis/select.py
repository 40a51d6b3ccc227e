"""Choosing which messages to show: --type, --output, --key."""

from __future__ import annotations

from collections.abc import Iterable

from ripple_cli.codec.messages import TAG_BY_NAME, DeltaMsg, DeltaView
from ripple_cli.flow.items import Decoded
from ripple_cli.protocols.base import ProtoMessage
from ripple_cli.render.summary import key_text


class Selection:
    def __init__(self, types: Iterable[str] = (), outputs: Iterable[str] = (), keys: Iterable[str] = ()) -> None:
        by_lower = {k.lower(): v for k, v in TAG_BY_NAME.items()}
        # Ripple's types by tag; every protocol's by name (--type is checked
        # against the known names when parsed).
        self.tags = frozenset(by_lower[t.lower()] for t in types if t.lower() in by_lower)
        self.type_names = frozenset(types)
        self.outputs = frozenset(o.encode("utf-8", "surrogateescape") for o in outputs)
        self.keys = frozenset(keys)
        self.everything = not (self.type_names or self.outputs or self.keys)

    def __call__(self, msg: Decoded) -> bool:
        if self.everything:
            return True
        if isinstance(msg, ProtoMessage):
            # --output and --key name Ripple Deltas' fields: no other message has them.
            return not (self.outputs or self.keys) and (not self.type_names or msg.type in self.type_names)
        if self.type_names and msg.frame.tag not in self.tags:
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
