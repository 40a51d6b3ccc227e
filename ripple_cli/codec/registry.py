"""Known schemas, by envelope fingerprint.

A stream's own Handshakes add to what schema files provided; each stream
(each connection, in a capture) gets its own `child()` so that a Handshake
applies only where it was sent.

A schema is compiled when a Delta first needs it, not when it is declared:
a Handshake may declare any number of schemas, and what that costs is then
reading them, not compiling them all.  Compiled schemas are shared between
identical declarations (every connection of a capture sends the same ones)
through a cache bounded to the COMPILED_CACHE most recently used, so a
long-running tap does not keep every schema it ever saw.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Protocol, Union, cast

from ripple_cli.codec.delta import CompiledSchema
from ripple_cli.codec.schema import Schema

COMPILED_CACHE = 1024  # compiled schemas shared across registries, most recently used
MAX_LAYERS = 8  # Handshakes a registry keeps as they came, before the oldest are merged


class _Compiled:
    """Schema -> CompiledSchema, least recently used evicted past its size."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._lru: OrderedDict[Schema, CompiledSchema] = OrderedDict()

    def get(self, schema: Schema) -> CompiledSchema:
        compiled = self._lru.get(schema)
        if compiled is None:
            compiled = self._lru[schema] = CompiledSchema(schema)
            if len(self._lru) > self.size:
                self._lru.popitem(last=False)
        else:
            self._lru.move_to_end(schema)
        return compiled

    def __len__(self) -> int:
        return len(self._lru)


class Declared(Protocol):
    """A Handshake's schemas as the C reader keeps them (fast/handshake.h's
    OutputSchemas): (output name, schema) pairs read from the payload when
    asked for, and the lookup a Delta makes, by an index built in C."""

    def get(self, fingerprint: bytes, /) -> Schema | None: ...

    def __iter__(self) -> Iterator[tuple[bytes, Schema]]: ...


Layer = Union[dict[bytes, Schema], Declared]


class SchemaRegistry:
    def __init__(self, parent: SchemaRegistry | None = None, cache_size: int = COMPILED_CACHE) -> None:
        self._parent = parent
        # What this registry was told, oldest first; a later layer's schema
        # of a fingerprint replaces an earlier one's.  A dict for schema
        # files and Handshakes read in Python; what the C reader kept
        # for the others, so that 100,000 schemas declared cost what the
        # Deltas look up, not 100,000 objects.
        self._layers: list[Layer] = []
        # Compiled by fingerprint since the last declaration (a new one may
        # replace any of them).
        self._found: dict[bytes, CompiledSchema] = {}
        self._cache: _Compiled = parent._cache if parent else _Compiled(cache_size)

    def child(self) -> SchemaRegistry:
        return SchemaRegistry(self)

    def add(self, schema: Schema) -> CompiledSchema:
        """A schema known from the start (a schema file): compiled now."""
        self._dict()[schema.fingerprint] = schema
        compiled = self._found[schema.fingerprint] = self._cache.get(schema)
        return compiled

    def declare(self, outputs: Sequence[tuple[bytes, Schema]]) -> None:
        """The schemas a stream declares: a Handshake's (output name,
        schema) pairs, a later one of a fingerprint replacing an earlier.
        Compiled when a Delta needs them."""
        if isinstance(outputs, (tuple, list)):
            self._dict().update({s.fingerprint: s for _output, s in outputs})
        else:
            self._layers.append(cast(Declared, outputs))
            if len(self._layers) > MAX_LAYERS:
                self._merge_oldest()
        self._found.clear()

    def get(self, fingerprint: bytes) -> CompiledSchema | None:
        found = self._found.get(fingerprint)
        if found is not None:
            return found
        for layer in reversed(self._layers):
            schema = layer.get(fingerprint)
            if schema is not None:
                found = self._found[fingerprint] = self._cache.get(schema)
                return found
        return self._parent.get(fingerprint) if self._parent is not None else None

    def __contains__(self, fingerprint: bytes) -> bool:
        return (
            fingerprint in self._found
            or any(layer.get(fingerprint) is not None for layer in self._layers)
            or (self._parent is not None and fingerprint in self._parent)
        )

    def schemas(self) -> list[Schema]:
        seen: dict[bytes, Schema] = {}
        if self._parent is not None:
            for s in self._parent.schemas():
                seen[s.fingerprint] = s
        for layer in self._layers:
            for s in _schemas(layer):
                seen[s.fingerprint] = s
        return list(seen.values())

    def compiled(self) -> int:
        """Compiled schemas held by the shared cache (for tests)."""
        return len(self._cache)

    def _dict(self) -> dict[bytes, Schema]:
        """The newest layer, when it is a dict; else a new one."""
        if not self._layers or not isinstance(self._layers[-1], dict):
            self._layers.append({})
        last = self._layers[-1]
        assert isinstance(last, dict)
        return last

    def _merge_oldest(self) -> None:
        """A stream that declares again and again: its two oldest layers
        become one dict, so that a lookup asks at most MAX_LAYERS."""
        older, newer = self._layers[0], self._layers[1]
        merged = older if isinstance(older, dict) else {s.fingerprint: s for s in _schemas(older)}
        merged.update((s.fingerprint, s) for s in _schemas(newer))
        self._layers[0:2] = [merged]


def _schemas(layer: Layer) -> Iterator[Schema]:
    if isinstance(layer, dict):
        return iter(layer.values())
    return (s for _output, s in layer)
