"""Which protocol each stream carries: `--protocol`, `--decode-as`, `--port`.

Decided once per connection (both directions share it) and once per raw
stream file: from the options when they say, else by asking each
candidate dissector about the first bytes (see `Demux`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ripple_cli.capture.events import StreamId
from ripple_cli.protocols import registry
from ripple_cli.protocols.base import DissectOptions, Dissector

RIPPLE = "ripple"


@dataclass(frozen=True)
class ProtocolChoice:
    protocol: str = registry.AUTO  # --protocol: auto, or one registered name
    decode_as: Mapping[int, str] = field(default_factory=dict)  # --decode-as PORT=PROTOCOL
    ports: frozenset[int] = frozenset()  # --port: these connections are decoded without detection
    options: DissectOptions = field(default_factory=DissectOptions)
    # What a connection no detector recognises is decoded as: None (a
    # capture's other traffic is left alone), or a protocol (the tap's
    # proxy: its connections are all meant to be decoded).
    undetected: str | None = None

    @property
    def auto(self) -> bool:
        return self.protocol == registry.AUTO

    def fixed(self, stream: StreamId | None) -> str | None:
        """The protocol the options decide for this stream, or None when
        the bytes must tell."""
        if stream is None or (not self.auto and self.undetected is not None):
            return None if self.auto else self.protocol
        for port in (stream.server.port, stream.client.port):
            if port in self.decode_as:
                return self.decode_as[port]
        if self.ports and (stream.server.port in self.ports or stream.client.port in self.ports):
            if not self.auto:
                return self.protocol
            port = stream.server.port if stream.server.port in self.ports else stream.client.port
            return self.registered_for(port)
        return None

    def registered_for(self, port: int) -> str:
        """The protocol whose well-known ports include `port`; Ripple has
        no fixed port and is the default."""
        for name in registry.names():
            if port in registry.get(name).ports:
                return name
        return RIPPLE

    def candidates(self) -> Iterable[Dissector]:
        """The dissectors detection may choose from, in detection order,
        imported as they are asked (see registry.detection_order)."""
        return registry.detection_order() if self.auto else [registry.get(self.protocol)]

    def fallback(self, stream: StreamId | None) -> str | None:
        """When no detector said yes: a raw file is still decoded (as Ripple,
        or the protocol asked for) so that its problems are shown; a
        connection as `undetected` says."""
        if stream is None:
            return RIPPLE if self.auto else self.protocol
        return self.undetected


def parse_decode_as(values: tuple[str, ...]) -> dict[int, str]:
    """`9000=ripple` ... -> {9000: "ripple"}; raises ValueError naming the bad one."""
    out: dict[int, str] = {}
    for v in values:
        port_text, sep, name = v.partition("=")
        if not sep or not port_text.strip().isdigit() or not 1 <= int(port_text) <= 65535:
            raise ValueError(f"{v!r}: expected PORT=PROTOCOL, e.g. 5044=lumberjack")
        name = name.strip().lower()
        if name not in registry.PROTOCOLS:
            raise ValueError(f"{v!r}: unknown protocol {name!r} (known: {', '.join(registry.names())})")
        out[int(port_text)] = name
    return out
