"""Choosing which messages to show: --type, --output, --key."""

from __future__ import annotations

from collections.abc import Iterable

from ripple_cli.protocols.base import ANYTHING, Prefilter
from ripple_cli.protocols.item import Decoded


class Selection:
    def __init__(self, types: Iterable[str] = (), outputs: Iterable[str] = (), keys: Iterable[str] = ()) -> None:
        # --type is given back in its protocol's spelling when parsed.
        self.type_names = frozenset(types)
        self.outputs = frozenset(outputs)
        self.keys = frozenset(keys)
        self.everything = not (self.type_names or self.outputs or self.keys)

    @property
    def prefilter(self) -> Prefilter:
        """What a chosen message is: all of it (the flags are equalities)."""
        if self.everything:
            return ANYTHING

        def wire(names: frozenset[str]) -> frozenset[bytes] | None:
            return frozenset(n.encode("utf-8", "surrogateescape") for n in names) if names else None

        return Prefilter(self.type_names or None, wire(self.outputs), wire(self.keys), exact=True)

    def __call__(self, msg: Decoded) -> bool:
        if self.everything:
            return True
        # A type the protocol does not know reads Unknown(9) (its tag): --type
        # Unknown chooses every such one, as -Y 'type == Unknown' does.
        if self.type_names and msg.type not in self.type_names and msg.type.partition("(")[0] not in self.type_names:
            return False
        # --output and --key name fields only some protocols' messages have
        # (Ripple's Deltas): a message without one is not chosen.
        if self.outputs and msg.output not in self.outputs:
            return False
        return not self.keys or msg.key in self.keys
