"""`check_backward ~reader ~writer` (reference section 6): can a reader with
one schema consume data written with another?"""

from __future__ import annotations

from ripple_cli.codec.schema import (
    EnumOf,
    FieldType,
    ListOf,
    OptionOf,
    Prim,
    RecordOf,
    Schema,
    sexp_of_field_type,
    text,
)
from ripple_cli.sexp.write import to_string

# Widening that keeps every written value readable: (reader, writer).
_WIDENING = {("Int", "Int32"), ("Int64", "Int32"), ("Int64", "Int")}


def compatible(reader: FieldType, writer: FieldType) -> bool:
    if reader == writer:
        return True
    if isinstance(reader, Prim) and isinstance(writer, Prim):
        return (reader.kind, writer.kind) in _WIDENING
    if isinstance(reader, OptionOf):
        if isinstance(writer, OptionOf) and compatible(reader.inner, writer.inner):
            return True
        return compatible(reader.inner, writer)
    if isinstance(reader, ListOf) and isinstance(writer, ListOf):
        return compatible(reader.inner, writer.inner)
    if isinstance(reader, RecordOf) and isinstance(writer, RecordOf):
        return not _field_errors(reader.fields, writer.fields)
    if isinstance(reader, EnumOf) and isinstance(writer, EnumOf):
        return set(writer.names) <= set(reader.names)
    return False


def _type_text(t: FieldType) -> str:
    return text(to_string(sexp_of_field_type(t)))


def _field_errors(reader_fields: tuple, writer_fields: tuple) -> list[str]:  # type: ignore[type-arg]
    written = {f.name: f for f in writer_fields}
    errors = []
    for rf in reader_fields:
        wf = written.get(rf.name)
        if wf is None:
            if rf.default is None:
                errors.append(f"missing field {text(rf.name)}")
        elif not compatible(rf.typ, wf.typ):
            errors.append(
                f"field {text(rf.name)}: type mismatch (reader {_type_text(rf.typ)}, writer {_type_text(wf.typ)})"
            )
    return errors


def check_backward(reader: Schema, writer: Schema) -> list[str]:
    """The errors that stop `reader` from consuming `writer`'s data; empty
    when compatible.  Fields only the writer has are ignored."""
    errors = []
    if reader.key != writer.key:
        errors.append(f"key: type mismatch (reader {_type_text(reader.key)}, writer {_type_text(writer.key)})")
    errors.extend(_field_errors(reader.fields, writer.fields))
    return errors
