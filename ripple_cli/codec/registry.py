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

from ripple_cli.codec.delta import CompiledSchema
from ripple_cli.codec.schema import Schema

COMPILED_CACHE = 1024  # compiled schemas shared across registries, most recently used


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


class SchemaRegistry:
    def __init__(self, parent: SchemaRegistry | None = None, cache_size: int = COMPILED_CACHE) -> None:
        self._parent = parent
        self._own: dict[bytes, Schema | CompiledSchema] = {}  # a Schema until first needed
        self._cache: _Compiled = parent._cache if parent else _Compiled(cache_size)

    def child(self) -> SchemaRegistry:
        return SchemaRegistry(self)

    def add(self, schema: Schema) -> CompiledSchema:
        """A schema known from the start (a schema file): compiled now."""
        compiled = self._own[schema.fingerprint] = self._cache.get(schema)
        return compiled

    def declare(self, schema: Schema) -> None:
        """A schema a stream declares: compiled when a Delta needs it."""
        self._own[schema.fingerprint] = schema

    def get(self, fingerprint: bytes) -> CompiledSchema | None:
        found = self._own.get(fingerprint)
        if found is None:
            return self._parent.get(fingerprint) if self._parent is not None else None
        if isinstance(found, Schema):
            found = self._own[fingerprint] = self._cache.get(found)
        return found

    def __contains__(self, fingerprint: bytes) -> bool:
        return fingerprint in self._own or (self._parent is not None and fingerprint in self._parent)

    def schemas(self) -> list[Schema]:
        seen: dict[bytes, Schema] = {}
        if self._parent is not None:
            for s in self._parent.schemas():
                seen[s.fingerprint] = s
        for fp, c in self._own.items():
            seen[fp] = c if isinstance(c, Schema) else c.schema
        return list(seen.values())

    def compiled(self) -> int:
        """Compiled schemas held by the shared cache (for tests)."""
        return len(self._cache)
