"""The inputs of a command and how they are dissected, as one value: the
options --schemas, --port, --stream, --max-flows, --reassembly-window, --protocol, --decode-as,
--max-inflate, --max-payload and --community-id-seed (cli/options.py builds
it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ripple_cli.capture.events import CaptureEvent, StreamId
from ripple_cli.codec.envelope import DEFAULT_MAX_PAYLOAD
from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.flow.demux import Demux
from ripple_cli.flow.protocol_choice import ProtocolChoice
from ripple_cli.flow.select import stream_predicate
from ripple_cli.protocols.base import DEFAULT_MAX_INFLATE, DissectOptions
from ripple_cli.terminal.environment import Environment


@dataclass(frozen=True)
class Inputs:
    schemas: tuple[str, ...] = ()
    ports: frozenset[int] = frozenset()
    stream: tuple[int, str | None] | None = None  # --stream N[:c2s|s2c]
    max_flows: int = 10000
    protocol: str = "auto"
    decode_as: Mapping[int, str] = field(default_factory=dict)
    max_payload: int = DEFAULT_MAX_PAYLOAD
    max_inflate: int = DEFAULT_MAX_INFLATE
    community_id_seed: int = 0  # the seed of each connection's Community ID (Origin.community_id)
    reassembly_window: int = 8 << 20  # --reassembly-window: see CaptureOptions.window

    @cached_property
    def registry(self) -> SchemaRegistry:
        """The --schemas, loaded once, when first needed."""
        from ripple_cli.sources.schema_files import load_registry

        return load_registry(self.schemas)

    def choice(self, **dissect: Any) -> ProtocolChoice:
        """How each stream is dissected; `dissect` sets the DissectOptions
        switches (registry, deltas, rules, lane...)."""
        options = DissectOptions(max_payload=self.max_payload, max_inflate=self.max_inflate, **dissect)
        return ProtocolChoice(self.protocol, self.decode_as, self.ports, options)

    def want(self) -> Callable[[StreamId | None], bool]:
        return stream_predicate(self.stream)

    def demux(self, name: str, choice: ProtocolChoice | None = None, **dissect: Any) -> Demux:
        """A Demux for the input shown as `name`, with the --schemas."""
        choice = choice or self.choice(registry=self.registry, **dissect)
        return Demux(name, choice, want=self.want(), seed=self.community_id_seed)

    def events(self, path: str, env: Environment, chunks: Iterator[bytes] | None = None) -> Iterator[CaptureEvent]:
        """`chunks`: the input already opened (see `input_events`)."""
        from ripple_cli.sources.inputs import input_events

        return input_events(path, env.stdin, self.ports, self.max_flows, window=self.reassembly_window, chunks=chunks)
