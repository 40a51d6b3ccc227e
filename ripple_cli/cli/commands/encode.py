"""`ripple encode`: canonical s-expressions -> envelopes, the inverse of decode."""

from __future__ import annotations

import click

from ripple_cli.cli.environment import Environment
from ripple_cli.cli.options import schemas_option
from ripple_cli.codec.errors import EncodeError
from ripple_cli.codec.schema import SexpShapeError
from ripple_cli.codec.text import envelope_of_sexp
from ripple_cli.errors import InvalidInput
from ripple_cli.protocols import registry as protocols
from ripple_cli.protocols.base import EncodeError as ProtoEncodeError
from ripple_cli.sexp.parse import SexpStream, SexpSyntaxError
from ripple_cli.sexp.tree import Sexp
from ripple_cli.sources.files import display_name, read_chunks
from ripple_cli.sources.output import binary_output
from ripple_cli.sources.schema_files import load_registry


@click.command()
@click.argument("file", default="-", type=click.Path(allow_dash=True))
@click.option(
    "--output",
    "-o",
    "output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write envelopes here (default: stdout, which must not be a terminal).",
)
@schemas_option
@click.option("--renumber", is_flag=True, help="Rewrite envelope sequence numbers from 1.")
@click.pass_obj
def encode(env: Environment, file: str, output: str | None, schemas: tuple[str, ...], renumber: bool) -> int:
    """Write Ripple envelopes from s-expressions (FILE, or - for stdin).

    Reads the canonical lines that `ripple decode --format sexp` prints (or
    the indented `hum` form), one message each, and writes their envelopes
    with CRCs: decode then encode gives back the same bytes.  A line whose
    head names a sibling protocol, e.g. `(lumberjack(Window(...)))`, is
    written as that protocol's bytes (see ripple-lumberjack(7), ...); a
    frame read out of a compressed frame is not written again.  Deltas take
    their schema from Handshake lines earlier in the input or from
    --schemas.  The first invalid message stops with an error naming its
    line and field, and exit status 1; no output file is left behind.
    """
    name = display_name(file)
    registry = load_registry(schemas)
    parser = SexpStream()
    seq = 0
    written = 0
    with binary_output(output, env) as out:
        chunks = read_chunks(file, env.stdin)
        while True:
            chunk = next(chunks, None)
            try:
                items = parser.feed(chunk) if chunk is not None else parser.finish()
            except SexpSyntaxError as e:
                raise InvalidInput(f"{name}: {e}") from None
            block = bytearray()
            for line, sexp in items:
                sibling = _sibling_protocol(sexp)
                if sibling is not None:
                    dissector = protocols.get(sibling)
                    if dissector.contained(sexp):
                        continue  # its bytes are inside the message before it
                    try:
                        block += dissector.encode(sexp)
                    except ProtoEncodeError as e:
                        raise InvalidInput(f"{name}: line {line}: {sibling}: {e}") from None
                    written += 1
                    continue
                try:
                    spec = envelope_of_sexp(sexp, registry)
                    if renumber:
                        seq += 1
                        spec = type(spec)(seq, spec.time_ns, spec.fingerprint, spec.flags, spec.body)
                    block += spec.to_bytes()
                except SexpShapeError as e:
                    where = f"{e.path}: " if e.path else ""
                    raise InvalidInput(f"{name}: line {line}: {where}{e.message}") from None
                except EncodeError as e:
                    raise InvalidInput(f"{name}: line {line}: {e}") from None
                written += 1
            out.write(block)
            if chunk is None:
                break
    return 0


def _sibling_protocol(sexp: Sexp) -> str | None:
    """The protocol a sibling's line names in its head atom, as
    `(lumberjack(Window(...)))`; None for Ripple's lines."""
    if isinstance(sexp, list) and sexp and isinstance(sexp[0], bytes):
        name = sexp[0].decode("ascii", "replace")
        if name != "ripple" and name in protocols.PROTOCOLS:
            return name
    return None
