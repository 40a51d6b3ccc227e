"""`ripple schema`: show, check and extract schemas."""

from __future__ import annotations

import errno
import hashlib
import itertools
import os
import re
import stat
from collections.abc import Iterator

import click

from ripple_cli.capture.formats import sniff_format
from ripple_cli.cli.options import OutputPath, max_payload_option
from ripple_cli.codec.compat import check_backward
from ripple_cli.codec.envelope import MAGIC
from ripple_cli.codec.jsonview import dumps, schema_to_json, type_text
from ripple_cli.codec.messages import DeltaMode, Handshake
from ripple_cli.codec.schema import Schema, schema_flaw, sexp_of_schema, text
from ripple_cli.errors import EXIT_PROBLEMS, EXIT_UNREADABLE, InputUnreadable
from ripple_cli.flow.inputs import Inputs
from ripple_cli.flow.pipeline import BaseSink, pump
from ripple_cli.protocols.base import LaneKind
from ripple_cli.protocols.item import Decoded, Run
from ripple_cli.protocols.origin import Origin
from ripple_cli.protocols.ripple.message import Message
from ripple_cli.sexp.atoms import escape_text
from ripple_cli.sexp.write import to_string, to_string_hum
from ripple_cli.sources.files import display_name, read_chunks
from ripple_cli.sources.schema_files import MAX_SCHEMA_FILE, load_schema_file, parse_schema_text
from ripple_cli.terminal.environment import Environment


@click.group()
def schema() -> None:
    """Show, check and extract Ripple schemas.

    A schema file holds one Schema.t as an s-expression, e.g. vwap_v2.sexp.
    """


class _Handshakes(BaseSink):
    """Every Handshake's schemas, each fingerprint's first declaration (the
    last of a Handshake that declares one twice, as decode takes it); the
    fast lane (when built) counts the other envelopes in bulk."""

    takes_runs = True

    def __init__(self) -> None:
        self.found: dict[bytes, tuple[bytes, Schema]] = {}

    def message(self, origin: Origin, msg: Decoded) -> None:
        if isinstance(msg, Message) and isinstance(msg.body, Handshake):
            declared = {s.fingerprint: (output, s) for output, s in msg.body.output_schemas}
            for fingerprint, pair in declared.items():
                self.found.setdefault(fingerprint, pair)

    def run(self, origin: Origin, run: Run) -> None:
        pass


def schemas_in_input(
    path: str, env: Environment, max_payload: int, chunks: Iterator[bytes] | None = None
) -> list[tuple[bytes, Schema]]:
    """(output, schema) of every Handshake in a stream or, reassembled as
    decode reads it, in every connection of a capture.  `chunks`: the input
    already opened (see `input_events`)."""
    inputs = Inputs(max_payload=max_payload)
    sink = _Handshakes()
    demux = inputs.demux(display_name(path), deltas=DeltaMode.RAW, lane=LaneKind.COUNT)
    pump(inputs.events(path, env, chunks), demux, sink)
    return list(sink.found.values())


def _load_show_input(path: str, env: Environment, max_payload: int) -> tuple[bool, list[tuple[bytes, Schema]]]:
    """(is a stream, its schemas): a stream's or a capture's Handshake
    schemas, or the one schema of a schema file.  The input is opened once
    and told apart by its first bytes, so that stdin, a pipe and a FIFO
    work as a file does."""
    name = display_name(path)
    chunks = read_chunks(path, env.stdin, text=True)  # a schema file may be typed
    head = b""
    while len(head) < len(MAGIC):
        chunk = next(chunks, None)
        if chunk is None:
            break
        head += chunk
    if head[: len(MAGIC)] == MAGIC or sniff_format(head) != "raw":
        return True, schemas_in_input(path, env, max_payload, itertools.chain((head,), chunks))
    data = bytearray(head)
    for chunk in chunks:
        data += chunk
        if len(data) > MAX_SCHEMA_FILE:
            raise InputUnreadable(f"{name}: schema file larger than {MAX_SCHEMA_FILE} bytes")
    return False, [(b"", parse_schema_text(bytes(data), name))]


@schema.command("show")
@click.argument("file", type=click.Path(allow_dash=True))
@click.option(
    "--format",
    "-F",
    "fmt",
    type=click.Choice(("table", "sexp", "hum", "json")),
    default=None,
    help="Output form. Default: table on a terminal, hum otherwise.",
)
@max_payload_option
@click.pass_obj
def show(env: Environment, file: str, fmt: str | None, max_payload: int) -> int:
    """Show a schema file, or the schemas declared in a stream's Handshakes.

    With --format json a schema file gives one object, a stream an array
    (one object per schema, with its output).  Exit status 1 when a stream
    declares no schema.
    """
    is_stream, items = _load_show_input(file, env, max_payload)
    if not items:
        env.problem_line(f"ripple: {display_name(file)}: no Handshake declares a schema")
        return EXIT_PROBLEMS
    fmt = fmt or ("table" if env.stdout_isatty else "hum")
    out = env.stdout
    if fmt == "json":
        docs = [{"output": text(o), **schema_to_json(s)} if o else schema_to_json(s) for o, s in items]
        out.write(dumps(docs if is_stream else docs[0]) + b"\n")
    elif fmt in ("sexp", "hum"):
        for _o, s in items:
            out.write((to_string(sexp_of_schema(s)) if fmt == "sexp" else to_string_hum(sexp_of_schema(s))) + b"\n")
    else:
        from ripple_cli.render.columns import Column, Trimmed, fitted_table, make_console

        columns = [
            Column("#", keep=True, justify="right"),
            Column("field", priority=3, shrink=True, min_width=8),
            Column("type", priority=2, wrap=True, min_width=12),
            Column("default", priority=1, shrink=True, min_width=8),
        ]
        console, stream = make_console(env)
        for output, s in items:
            title = text(s.fingerprint) + (f"  (output {text(output)})" if output else "")
            rows = [
                [str(i), text(f.name), type_text(f.typ), "" if f.default is None else text(f.default)]
                for i, f in enumerate(s.fields)
            ]
            t = fitted_table(env, columns, rows, style="ruled", title=title, caption=f"key: {type_text(s.key)}")
            console.print(Trimmed(t), crop=False)
        stream.detach()
    out.flush()
    return 0


@schema.command("check")
@click.option(
    "--reader",
    "reader_path",
    required=True,
    type=click.Path(),
    help="Schema file of the side that reads (the consumer).",
)
@click.option(
    "--writer",
    "writer_path",
    required=True,
    type=click.Path(),
    help="Schema file of the side that writes (the producer).",
)
@click.pass_obj
def check(env: Environment, reader_path: str, writer_path: str) -> int:
    """Can a reader with one schema consume a writer's data?

    Applies check_backward (reference section 6).  Prints `compatible`
    and exits 0, or prints each error and exits 1.
    """
    reader = load_schema_file(reader_path)
    writer = load_schema_file(writer_path)
    errors = check_backward(reader, writer)
    # Names are bytes: one that is not UTF-8 or holds a control byte is
    # escaped as the sexp form does.
    rfp, wfp = escape_text(text(reader.fingerprint)), escape_text(text(writer.fingerprint))
    if not errors:
        env.stdout.write(f"compatible: reader {rfp} can read writer {wfp}\n".encode())
        return 0
    env.stdout.write(f"incompatible: reader {rfp} cannot read writer {wfp}\n".encode())
    for e in errors:
        env.stdout.write(f"  {escape_text(e)}\n".encode())
    return EXIT_PROBLEMS


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
MAX_NAME = 100  # characters of a schema's name kept in its file name


def schema_file_name(s: Schema) -> str:
    """`NAME_vVERSION.sexp`, with anything but letters, digits, `.`, `_`, `-`
    replaced, so a hostile name cannot leave the directory; a name longer
    than MAX_NAME is cut there and marked with 8 hex digits of its SHA-256,
    so that the file name stays short and two long names stay apart."""
    name = _UNSAFE.sub("_", text(s.name)) or "_"
    if name.startswith("."):
        name = "_" + name[1:]
    if len(name) > MAX_NAME:
        name = name[:MAX_NAME] + "-" + hashlib.sha256(s.name).hexdigest()[:8]
    return f"{name}_v{s.version}.sexp"


def _write_schema_file(path: str, data: bytes) -> str | None:
    """Write a schema file, never through a symbolic link nor over what is
    not a regular file: None when written, else why not."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        return f"cannot write: {e.strerror or e}"
    else:
        if stat.S_ISLNK(st.st_mode):
            return "is a symbolic link: not followed, not overwritten"
        if not stat.S_ISREG(st.st_mode):
            return "exists and is not a regular file: not overwritten"
    try:
        # O_NOFOLLOW: a link made since lstat is not followed either.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o666)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "is a symbolic link: not followed, not overwritten"
        return f"cannot write: {e.strerror or e}"
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except OSError as e:
        return f"cannot write: {e.strerror or e}"
    return None


@schema.command("extract")
@click.argument("stream", type=click.Path(allow_dash=True))
@click.option(
    "--output-dir",
    "-o",
    "out_dir",
    required=True,
    type=OutputPath(),  # a file there: "cannot create directory", exit 3, as the page says
    help="Directory to write the schema files into (created if missing).",
)
@max_payload_option
@click.pass_obj
def extract(env: Environment, stream: str, out_dir: str, max_payload: int) -> int:
    """Write one schema file per schema declared in a stream's Handshakes.

    Files are named NAME_vVERSION.sexp and hold the indented s-expression,
    ready for ripple decode --schemas (or verify's).  Nothing is written
    outside DIR.
    """
    items = schemas_in_input(stream, env, max_payload)
    if not items:
        env.problem_line(f"ripple: {display_name(stream)}: no Handshake declares a schema")
        return EXIT_PROBLEMS
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise InputUnreadable(f"{out_dir}: cannot create directory: a file is there")
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise InputUnreadable(f"{out_dir}: cannot create directory: {e.strerror or e}") from None
    used: set[str] = set()
    failed = 0
    for _output, s in items:
        flaw = schema_flaw(s)
        if flaw is not None:
            # A file --schemas would refuse, and with it the whole directory: not written.
            env.problem_line(f"ripple: {escape_text(text(s.fingerprint))}: not written: it {flaw}")
            failed += 1
            continue
        name = schema_file_name(s)
        base, n = name, 2
        while name in used:  # two fingerprints that sanitize alike
            name = f"{base.removesuffix('.sexp')}-{n}.sexp"
            n += 1
        used.add(name)
        path = os.path.join(out_dir, name)  # a name holds no '/': it stays in DIR
        why = _write_schema_file(path, to_string_hum(sexp_of_schema(s)) + b"\n")
        if why is not None:
            # One line, and the other schemas are still extracted.
            env.problem_line(f"ripple: {path}: {why}")
            failed += 1
            continue
        env.stdout.write(f"{escape_text(path)}  {escape_text(text(s.fingerprint))}\n".encode())
    return EXIT_UNREADABLE if failed else 0
