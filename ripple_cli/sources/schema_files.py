"""Schema files: one `Schema.t` s-expression per file (reference section 4)."""

from __future__ import annotations

import os
from collections.abc import Iterable

from ripple_cli.codec.registry import SchemaRegistry
from ripple_cli.codec.schema import Schema, SexpShapeError, schema_flaw, schema_of_sexp
from ripple_cli.errors import InputUnreadable
from ripple_cli.sexp import SexpSyntaxError, parse_one
from ripple_cli.sources.files import open_error

SCHEMA_SUFFIX = ".sexp"
MAX_SCHEMA_FILE = 16 << 20


def load_schema_file(path: str) -> Schema:
    try:
        with open(path, "rb") as f:
            text = f.read(MAX_SCHEMA_FILE + 1)
    except OSError as e:
        raise open_error(path, e, "cannot read schema file") from None
    if len(text) > MAX_SCHEMA_FILE:
        raise InputUnreadable(f"{path}: schema file larger than {MAX_SCHEMA_FILE} bytes")
    return parse_schema_text(text, path)


def parse_schema_text(text: bytes, name: str) -> Schema:
    if text.startswith(b"RIPP"):  # the magic: a stream given for a schema file
        raise InputUnreadable(f"{name}: not a schema: a Ripple stream (ripple schema extract writes its schemas out)")
    if b"\0" in text[:4096]:
        raise InputUnreadable(f"{name}: not a schema: binary data, not the text of an s-expression")
    try:
        schema = schema_of_sexp(parse_one(text))
    except (SexpSyntaxError, SexpShapeError) as e:
        raise InputUnreadable(f"{name}: not a schema: {e}") from None
    flaw = schema_flaw(schema)
    if flaw is not None:
        raise InputUnreadable(f"{name}: not a schema a worker can have: it {flaw}")
    return schema


def schema_paths(locations: Iterable[str]) -> list[str]:
    """Every `*.sexp` in the given directories (sorted), and files named directly."""
    paths: list[str] = []
    for loc in locations:
        if not loc:  # an empty entry of RIPPLE_SCHEMAS, as in PATH (the option refuses one)
            continue
        if os.path.isdir(loc):
            for root, dirs, files in os.walk(loc):
                dirs.sort()
                paths.extend(os.path.join(root, f) for f in sorted(files) if f.endswith(SCHEMA_SUFFIX))
        elif os.path.exists(loc):  # a file, or a FIFO or /dev/fd/N from the shell's <(...)
            paths.append(loc)
        else:
            raise InputUnreadable(f"{loc}: no such schema directory or file")
    return paths


def load_registry(locations: Iterable[str]) -> SchemaRegistry:
    registry = SchemaRegistry()
    for path in schema_paths(locations):
        registry.add(load_schema_file(path))
    return registry
