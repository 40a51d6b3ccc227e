"""Known schemas, by envelope fingerprint.

A stream's own Handshakes add to what schema files provided; each stream
(each connection, in a capture) gets its own `child()` so that a Handshake
applies only where it was sent.
"""

from __future__ import annotations

from ripple_cli.codec.delta import CompiledSchema
from ripple_cli.codec.schema import Schema


class SchemaRegistry:
    def __init__(self, parent: SchemaRegistry | None = None) -> None:
        self._parent = parent
        self._own: dict[bytes, CompiledSchema] = {}
        # Compiling is the expensive part; identical schemas share one.
        self._cache: dict[Schema, CompiledSchema] = parent._cache if parent else {}

    def child(self) -> SchemaRegistry:
        return SchemaRegistry(self)

    def add(self, schema: Schema) -> CompiledSchema:
        compiled = self._cache.get(schema)
        if compiled is None:
            compiled = CompiledSchema(schema)
            self._cache[schema] = compiled
        self._own[schema.fingerprint] = compiled
        return compiled

    def get(self, fingerprint: bytes) -> CompiledSchema | None:
        found = self._own.get(fingerprint)
        if found is None and self._parent is not None:
            return self._parent.get(fingerprint)
        return found

    def __contains__(self, fingerprint: bytes) -> bool:
        return self.get(fingerprint) is not None

    def schemas(self) -> list[Schema]:
        seen: dict[bytes, Schema] = {}
        if self._parent is not None:
            for s in self._parent.schemas():
                seen[s.fingerprint] = s
        for fp, c in self._own.items():
            seen[fp] = c.schema
        return list(seen.values())
