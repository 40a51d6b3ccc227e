"""Options shared by several commands, defined once so that a flag means the
same everywhere (as sqlite-utils does)."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import click

from ripple_cli.codec.envelope import DEFAULT_MAX_PAYLOAD
from ripple_cli.codec.messages import TAG_BY_NAME
from ripple_cli.protocols.base import DEFAULT_MAX_INFLATE, DissectOptions

if TYPE_CHECKING:
    from ripple_cli.flow.inputs import Inputs
    from ripple_cli.flow.protocol_choice import ProtocolChoice
    from ripple_cli.flow.select import Show
    from ripple_cli.render.base import View

F = TypeVar("F", bound=Callable[..., Any])

# Option values are bounded where they are parsed, with exit status 2:
# beyond these, a value would overflow the C integers it reaches.
MAX_SIZE = 1 << 40  # a size (--buffer, --split-size): 1T
MAX_PAYLOAD = 1 << 32  # --max-payload, --max-inflate: 4G (the protocols' lengths are 32-bit)
MAX_TIMEOUT = 86400.0  # --handshake-timeout: a day
MAX_CONNECTIONS = 1 << 20  # the tap's --max-connections: more than any descriptor table


def _compose(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    def apply(f: F) -> F:
        for d in reversed(decorators):
            f = d(f)
        return f

    return apply


def _size_text(n: int) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


class ByteSize(click.ParamType):  # type: ignore[type-arg]
    """A size in bytes: `4096`, `64K`, `16M`, `1G`; at most `maximum`
    (a value beyond any use would overflow the C code it reaches)."""

    name = "size"
    _UNITS: ClassVar[dict[str, int]] = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}

    def __init__(self, maximum: int = MAX_SIZE) -> None:
        self.maximum = maximum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        s = str(value).strip().upper().removesuffix("IB").removesuffix("B")
        unit = s[-1:] if s[-1:] in self._UNITS else ""
        try:
            n = int(s[: len(s) - len(unit)]) * self._UNITS[unit]
        except ValueError:
            self.fail(f"{value!r} is not a size (e.g. 4096, 64K, 16M)", param, ctx)
        if n < 0:
            self.fail("a size cannot be negative", param, ctx)
        if n > self.maximum:
            self.fail(f"{value!r} is above the largest size accepted, {_size_text(self.maximum)}", param, ctx)
        return n


class Number(click.FloatRange):
    """A FloatRange that is also a finite number: `nan`, which every
    comparison lets through, and `inf` are refused."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return rv


class OutputPath(click.Path):
    """A file or directory to write: an empty name is no file."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value == "":
            self.fail("an empty name is no file", param, ctx)
        return super().convert(value, param, ctx)


def _no_empty_schemas(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    # RIPPLE_SCHEMAS may hold empty entries, as PATH may; `--schemas ""` on
    # the command line is a mistake, not "no schemas".
    if "" in value and ctx.get_parameter_source("schemas") is click.core.ParameterSource.COMMANDLINE:
        raise click.BadParameter("an empty name is no file", ctx, param)
    return value


def schemas_option(f: F) -> F:
    return click.option(
        "--schemas",
        "schemas",
        multiple=True,
        type=click.Path(),
        callback=_no_empty_schemas,
        envvar="RIPPLE_SCHEMAS",
        help="A directory of schema files (*.sexp), or one file. Repeatable. "
        f"Default: $RIPPLE_SCHEMAS ({os.pathsep}-separated).",
    )(f)


def max_payload_option(f: F) -> F:
    return click.option(
        "--max-payload",
        type=ByteSize(MAX_PAYLOAD),
        default="16M",  # DEFAULT_MAX_PAYLOAD
        show_default=True,
        help="Largest payload length accepted; a longer one is a framing problem.",
    )(f)


class RegisteredName(click.Choice):  # type: ignore[type-arg]
    """One of a registry's names (the output formats), read when the
    command line is parsed, so that a format registered later is a choice."""

    def __init__(self, names: Mapping[str, Any]) -> None:
        self.registered = names
        super().__init__(tuple(names))

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(self.registered)

    @choices.setter
    def choices(self, value: Any) -> None:
        pass  # always the registry's


def format_option(choices: tuple[str, ...] | Mapping[str, Any], default_help: str) -> Callable[[F], F]:
    return click.option(
        "--format",
        "-F",
        "fmt",
        type=RegisteredName(choices) if isinstance(choices, Mapping) else click.Choice(choices),
        default=None,
        help=f"Output form. {default_help}",
    )


def strict_option(f: F) -> F:
    return click.option(
        "--strict", is_flag=True, help="Treat warnings (non-zero flags, unknown message types) as problems."
    )(f)


class MessageTypeName(click.ParamType):  # type: ignore[type-arg]
    """A message type of any known protocol, case-insensitive, given back as
    the protocol spells it.  Checked when parsed (not at import), so that
    `--help` loads no dissector."""

    name = "type"

    @staticmethod
    def known() -> list[str]:
        from ripple_cli.protocols import registry

        known = list(TAG_BY_NAME)
        for name in registry.names():
            known += [t for t in registry.get(name).type_styles if t not in known]
        return known

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[click.shell_completion.CompletionItem]:
        from click.shell_completion import CompletionItem

        prefix = incomplete.lower()
        names = dict.fromkeys([*self.known(), "Unknown"])  # Unknown: any protocol's unknown tag
        return [CompletionItem(t) for t in names if t.lower().startswith(prefix)]

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from ripple_cli.protocols.ripple.message import SHORT_TYPES

        known = self.known()
        by_lower = {k.lower(): k for k in known}
        # The table's short names (Negotiation, Ckpt_ack) name their types too.
        by_lower.update({short.lower(): name for name, short in SHORT_TYPES.items()})
        if str(value).lower() in by_lower:
            return by_lower[str(value).lower()]
        import difflib

        close = difflib.get_close_matches(str(value), known, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else f" (Ripple's: {', '.join(TAG_BY_NAME)}, Unknown)"
        self.fail(f"{value!r} is not a message type of any protocol{hint}", param, ctx)


def selection_options(f: F) -> F:
    """Which messages to show: the same for every command that prints them."""
    return _compose(
        click.option(
            "--count",
            "-c",
            type=click.IntRange(min=0),
            metavar="N",
            default=None,
            help="Stop after showing N messages.",
        ),
        click.option(
            "--type",
            "types",
            multiple=True,
            type=MessageTypeName(),
            help="Only messages of this type (of any protocol, e.g. Delta, Window). Repeatable.",
        ),
        click.option(
            "--output", "outputs", multiple=True, metavar="NAME", help="Only Deltas of this source output. Repeatable."
        ),
        click.option(
            "--key",
            "keys",
            multiple=True,
            metavar="K",
            help="Only Deltas whose key prints as K (e.g. AAPL, 42). Repeatable.",
        ),
    )(f)


def filter_option(f: F) -> F:
    return click.option(
        "-Y",
        "--filter",
        "display_filter",
        metavar="EXPR",
        help="Display filter on decoded fields, e.g. 'type == Delta and key == \"AAPL\"' (see FILTER EXPRESSIONS).",
    )(f)


def community_id_seed_option(f: F) -> F:
    """--community-id-seed N: the seed of each connection's Community ID."""
    return click.option(
        "--community-id-seed",
        type=click.IntRange(0, 65535),
        metavar="N",
        default=0,
        show_default=True,
        help="Seed of the connections' Community IDs (0..65535; Zeek's community_id_seed).",
    )(f)


def ports_option(help_text: str) -> Callable[[F], F]:
    """--port P (repeatable): which capture connections; the help says what
    the command does with them."""
    return click.option("--port", "ports", multiple=True, type=click.IntRange(1, 65535), metavar="P", help=help_text)


def max_flows_option(help_text: str) -> Callable[[F], F]:
    return click.option(
        "--max-flows", type=click.IntRange(min=1), metavar="N", default=10000, show_default=True, help=help_text
    )


DEFAULT_REASSEMBLY_WINDOW = 8 << 20

reassembly_window_option = click.option(
    "--reassembly-window",
    type=ByteSize(),
    default="8M",  # DEFAULT_REASSEMBLY_WINDOW
    show_default=True,
    help="Bytes a capture's TCP direction may hold after a missing segment, waiting for it; "
    "beyond it the hole is declared missing, with a note.",
)


PORT_HELP = (
    "Only connections on this TCP port, decoded without detection: as --protocol, else as the "
    "protocol registered for the port, else as Ripple (repeatable). Default: all, detected by content."
)
# For a command without --protocol (replay).
PORT_HELP_NO_PROTOCOL = (
    "Only connections on this TCP port, decoded without detection: as the protocol registered for "
    "the port, else as Ripple (repeatable). Default: all, detected by content."
)


def capture_options(f: F) -> F:
    """How captures (pcap, pcapng) are read; ignored for raw streams."""
    return capture_options_with(PORT_HELP)(f)


def capture_options_with(port_help: str) -> Callable[[F], F]:
    return _compose(
        ports_option(port_help),
        click.option(
            "--stream",
            "stream_id",
            metavar="ID",
            help="Only this connection of a capture: N (both directions) or N:c2s / N:s2c.",
        ),
        max_flows_option("Open connections kept at once; the idlest beyond it is evicted with a note."),
        reassembly_window_option,
    )


def parse_stream_id(value: str | None) -> tuple[int, str | None] | None:
    """`3` -> (3, None); `3:c2s` -> (3, "c2s")."""
    if value is None:
        return None
    num, _, direction = value.partition(":")
    if not num.isdigit() or direction not in ("", "c2s", "s2c"):
        raise click.BadParameter(f"{value!r}: expected N, N:c2s or N:s2c", param_hint="--stream")
    if int(num) == 0:
        raise click.BadParameter(f"{value!r}: connections are numbered from 1", param_hint="--stream")
    return int(num), direction or None


def protocol_options(f: F) -> F:
    """Which protocol each stream carries, and the limits every dissector
    honours; the same for decode, verify and tap."""
    return _compose(
        click.option(
            "--protocol",
            "-P",
            "protocol",
            default="auto",
            show_default=True,
            metavar="NAME",
            help="auto (recognise each connection by its first bytes), "
            "or one protocol of ripple decode --list-protocols.",
        ),
        click.option(
            "--decode-as",
            "decode_as",
            multiple=True,
            metavar="PORT=PROTOCOL",
            help="Connections on this TCP port carry this protocol, whatever their bytes (as tshark -d). Repeatable.",
        ),
        click.option(
            "--max-inflate",
            type=ByteSize(MAX_PAYLOAD),
            default="64M",  # DEFAULT_MAX_INFLATE
            show_default=True,
            help="Largest size one compressed frame may inflate to; beyond it is a problem, not a decompression bomb.",
        ),
    )(f)


def protocol_choice(
    protocol: str,
    decode_as: tuple[str, ...],
    ports: tuple[int, ...] | frozenset[int],
    options: DissectOptions,
) -> ProtocolChoice:
    """The options of `protocol_options` (and --port) as one value for
    `Demux`; a bad value is a usage error naming the option."""
    from ripple_cli.flow.protocol_choice import ProtocolChoice, parse_decode_as
    from ripple_cli.protocols import registry

    name = protocol.strip().lower()
    if name != registry.AUTO and name not in registry.PROTOCOLS:
        raise click.BadParameter(
            f"{protocol!r} is not a protocol (known: auto, {', '.join(registry.names())})", param_hint="--protocol"
        )
    try:
        by_port = parse_decode_as(decode_as)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--decode-as") from None
    return ProtocolChoice(name, by_port, frozenset(ports), options)


# ------------------------------------------------------------ option groups
#
# A command takes each group of options as one value: `group` pops the
# group's parameters from what Click passes and hands the command the value
# `build` makes of them (built when the command runs, so that a bad value
# is a usage error of that run).


def group(name: str, build: Callable[..., Any], *params: str) -> Callable[[F], F]:
    def apply(f: F) -> F:
        @functools.wraps(f)
        def command(*args: Any, **kwargs: Any) -> Any:
            kwargs[name] = build(**{p: kwargs.pop(p) for p in params if p in kwargs})
            return f(*args, **kwargs)

        return command  # type: ignore[return-value]

    return apply


def _inputs(
    schemas: tuple[str, ...] = (),
    ports: tuple[int, ...] = (),
    stream_id: str | None = None,
    max_flows: int = 10000,
    reassembly_window: int = DEFAULT_REASSEMBLY_WINDOW,
    protocol: str = "auto",
    decode_as: tuple[str, ...] = (),
    max_payload: int = DEFAULT_MAX_PAYLOAD,
    max_inflate: int = DEFAULT_MAX_INFLATE,
    community_id_seed: int = 0,
) -> Inputs:
    from ripple_cli.flow.inputs import Inputs

    # A bad --protocol or --decode-as is a usage error before any input is read.
    choice = protocol_choice(protocol, decode_as, ports, DissectOptions())
    return Inputs(
        schemas,
        frozenset(ports),
        parse_stream_id(stream_id),
        max_flows,
        choice.protocol,
        dict(choice.decode_as),
        max_payload,
        max_inflate,
        community_id_seed,
        reassembly_window,
    )


inputs_group = group(
    "inputs",
    _inputs,
    "schemas",
    "ports",
    "stream_id",
    "max_flows",
    "reassembly_window",
    "protocol",
    "decode_as",
    "max_payload",
    "max_inflate",
    "community_id_seed",
)


def _show(
    count: int | None = None,
    types: tuple[str, ...] = (),
    outputs: tuple[str, ...] = (),
    keys: tuple[str, ...] = (),
    display_filter: str | None = None,
) -> Show:
    from ripple_cli.flow.select import Show, message_predicate

    return Show(count, message_predicate(types, outputs, keys, display_filter))


show_group = group("show", _show, "count", "types", "outputs", "keys", "display_filter")


def _view(show_offsets: bool = False, show_connection: bool = False) -> View:
    from ripple_cli.render.base import View

    return View(offsets=show_offsets, connection=show_connection)


view_group = group("view", _view, "show_offsets", "show_connection")
