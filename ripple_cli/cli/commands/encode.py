"""`ripple encode`: canonical s-expressions -> envelopes, the inverse of decode."""

from __future__ import annotations

import click

from ripple_cli.capture.formats import sniff_format
from ripple_cli.cli.options import OutputPath, schemas_option
from ripple_cli.codec.envelope import MAGIC
from ripple_cli.codec.errors import EncodeError
from ripple_cli.errors import InvalidInput
from ripple_cli.protocols import registry as protocols
from ripple_cli.protocols.base import DissectOptions, Encoder
from ripple_cli.sexp.parse import SexpStream, SexpSyntaxError
from ripple_cli.sexp.tree import Sexp
from ripple_cli.sources.files import display_name, read_chunks
from ripple_cli.sources.output import binary_output
from ripple_cli.sources.schema_files import load_registry
from ripple_cli.terminal.environment import Environment
from ripple_cli.terminal.words import clip_words


@click.command()
@click.argument("file", default="-", type=click.Path(allow_dash=True))
@click.option(
    "--output",
    "-o",
    "output",
    type=OutputPath(dir_okay=False, allow_dash=True),
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
    options = DissectOptions(registry=load_registry(schemas), renumber=renumber)
    encoders: dict[str, Encoder] = {}  # one per protocol: Ripple's keeps the schemas of the lines before
    parser = SexpStream()
    with binary_output(output, env) as out:
        chunks = read_chunks(file, env.stdin, text=True)
        first = True
        while True:
            chunk = next(chunks, None)
            if first and chunk:
                chunk = _text_start(name, chunk)
                first = False
            try:
                items = parser.feed(chunk) if chunk is not None else parser.finish()
            except SexpSyntaxError as e:
                raise InvalidInput(f"{name}: {clip_words(str(e))}") from None
            block = bytearray()
            for line, text in items:
                protocol = protocol_of_text(text)
                encoder = encoders.get(protocol)
                if encoder is None:
                    encoder = encoders[protocol] = protocols.get(protocol).encoder(options)
                try:
                    data = encoder.encode(text)
                except EncodeError as e:
                    raise InvalidInput(f"{name}: line {line}: {clip_words(str(e))}") from None
                if data is not None:  # None: its bytes are inside the message before it
                    block += data
            out.write(block)
            if chunk is None:
                return 0


_BOM = b"\xef\xbb\xbf"


def _text_start(name: str, chunk: bytes) -> bytes:
    """The first chunk of the text, without a UTF-8 byte-order mark (an
    editor's, not the text's); a binary input is refused in one line."""
    # Envelopes and the captures of them are what `decode` reads.
    if chunk.startswith(MAGIC) or sniff_format(chunk) != "raw" or b"\x00" in chunk[:4096]:
        raise InvalidInput(
            f"{name}: a binary file (a stream or capture?), not s-expression text: "
            "encode reads what `ripple decode` prints"
        )
    return chunk[len(_BOM) :] if chunk.startswith(_BOM) else chunk


def protocol_of_text(text: Sexp) -> str:
    """The protocol a line names in its head atom, as `(lumberjack(Window(...)))`;
    Ripple's canonical lines have none."""
    if isinstance(text, list) and text and isinstance(text[0], bytes):
        name = text[0].decode("ascii", "replace")
        if name in protocols.PROTOCOLS:
            return name
    return "ripple"
