"""The Ripple dissector: the static Lua (lua/ripple.lua) with the schemas
baked in as a Lua table, so that each Delta's key and row decode into typed
fields (ripple.delta.NAME.FIELD, ripple.key.NAME)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ripple_cli.codec.schema import EnumOf, FieldType, ListOf, OptionOf, Prim, RecordOf, Schema
from ripple_cli.wireshark.lua import fill, lua_string, template

DEFAULT_PORT = 7077


def lua_type(t: FieldType) -> str:
    if isinstance(t, Prim):
        return f'{{k = "{t.kind}"}}'
    if isinstance(t, OptionOf):
        return f'{{k = "Option", t = {lua_type(t.inner)}}}'
    if isinstance(t, ListOf):
        return f'{{k = "List", t = {lua_type(t.inner)}}}'
    if isinstance(t, RecordOf):
        fields = ", ".join(f"{{name = {lua_string(f.name)}, t = {lua_type(f.typ)}}}" for f in t.fields)
        return f'{{k = "Record", fields = {{{fields}}}}}'
    assert isinstance(t, EnumOf)
    return f'{{k = "Enum", names = {{{", ".join(lua_string(n) for n in t.names)}}}}}'


def lua_schemas(schemas: Iterable[Schema]) -> str:
    rows = []
    for s in schemas:
        fields = ", ".join(f"{{name = {lua_string(f.name)}, t = {lua_type(f.typ)}}}" for f in s.fields)
        rows.append(
            f"    [{lua_string(s.fingerprint)}] = {{name = {lua_string(s.name)}, version = {s.version},\n"
            f"        key = {lua_type(s.key)},\n        fields = {{{fields}}}}},\n"
        )
    return "{\n" + "".join(rows) + "}"


def lua_order(schemas: Sequence[Schema]) -> str:
    """The fingerprints in the order given: the order the dissector names
    the schemas' fields in (which leaf keeps a name two types share)."""
    return "{" + ", ".join(lua_string(s.fingerprint) for s in schemas) + "}"


def ripple_lua(schemas: Iterable[Schema], port: int = DEFAULT_PORT) -> str:
    listed = list(schemas)
    values = {"PORT": str(port), "SCHEMAS": lua_schemas(listed), "ORDER": lua_order(listed)}
    return fill(template("ripple.lua"), values)
