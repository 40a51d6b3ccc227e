"""The schemas a generated Ripple dissector knows: the --schemas, then those
the Handshakes of the inputs (streams or captures) declare, as `ripple
schema extract` finds them, but through the one pipeline so that captures
count too."""

from __future__ import annotations

from collections.abc import Iterable

from ripple_cli.codec.messages import DeltaMode, Handshake
from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.codec.schema import Schema
from ripple_cli.flow.inputs import Inputs
from ripple_cli.flow.pipeline import BaseSink, pump
from ripple_cli.protocols.item import Decoded
from ripple_cli.protocols.origin import Origin
from ripple_cli.protocols.ripple.message import Message
from ripple_cli.sources.files import display_name
from ripple_cli.terminal.environment import Environment


class _Declared(BaseSink):
    """Every Handshake's schemas, the first declaration of a fingerprint kept
    (the last of a Handshake that declares one twice, as decode takes it)."""

    def __init__(self, found: dict[bytes, Schema]) -> None:
        self.found = found

    def message(self, origin: Origin, msg: Decoded) -> None:
        if isinstance(msg, Message) and isinstance(msg.body, Handshake):
            declared = {s.fingerprint: s for _output, s in msg.body.output_schemas}
            for fingerprint, schema in declared.items():
                self.found.setdefault(fingerprint, schema)


def collect_schemas(inputs: Inputs, paths: Iterable[str], env: Environment) -> list[Schema]:
    found: dict[bytes, Schema] = {}
    registry: SchemaRegistry = inputs.registry
    for s in registry.schemas():
        found.setdefault(s.fingerprint, s)
    sink = _Declared(found)
    for path in paths:
        demux = inputs.demux(display_name(path), deltas=DeltaMode.RAW)
        pump(inputs.events(path, env), demux, sink)
    return list(found.values())
