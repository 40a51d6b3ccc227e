"""What the sibling protocols' tests share, whatever the protocol: sorting
decoded items, feeding a stream dissector bytes and holes, chunking a
stream every way, the golden files (two layouts: Lumberjack and RCP keep
problems among the items, Pravega and Reactive Streams in a file of their
own), the CLI's decode | encode, checking that messages encode back to
their bytes, and the hypothesis profile.

Each protocol's own kit (lumberjack/ljkit.py, rcp/rcpkit.py,
pravega/pv_bytes.py, reactive_streams/rs_bytes.py) builds that protocol's
bytes by hand and gives `decode` its protocol's defaults; it imports the
rest from here, as `tests.protocols.dissector_kit` (the tests run as
`python -m pytest` from the checkout, so `tests` is importable).
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable, Iterable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings

from ripple_cli.codec.problems import Problem
from ripple_cli.protocols.base import Dissector, Item, ProtoMessage, StreamDissector
from ripple_cli.sexp.parse import parse_one
from tests.conftest import GOLDEN, Result, golden, run_cli

# ---------------------------------------------------------------- items


def messages(items: Iterable[Item]) -> list[ProtoMessage]:
    return [i for i in items if isinstance(i, ProtoMessage)]


def problems(items: Iterable[Item]) -> list[Problem]:
    return [i for i in items if isinstance(i, Problem)]


def kinds(items: Iterable[Item]) -> list[tuple[int, str]]:
    """(offset, kind) of each problem, in order."""
    return [(p.offset, p.kind) for p in problems(items)]


def texts(items: Iterable[Item]) -> list[bytes]:
    """Each message's canonical line, as `decode` prints it."""
    return [m.line for m in messages(items)]


# ---------------------------------------------------------------- feeding


def feed_all(
    stream: StreamDissector,
    pieces: Iterable[bytes | int],
    check: Callable[[StreamDissector], None] | None = None,
) -> list[Item]:
    """Every item of one direction: each bytes piece fed, each int a hole of
    that many bytes (`gap`), then `finish`; `check` (a bound on what the
    decoder holds, say) runs after every call."""
    out: list[Item] = []
    for piece in pieces:
        out += stream.gap(piece) if isinstance(piece, int) else stream.feed(piece)
        if check is not None:
            check(stream)
    out += stream.finish()
    if check is not None:
        check(stream)
    return out


def with_holes(pieces: Iterable[bytes | int]) -> bytes:
    """The stream as the decoder's offsets count it: a hole as zero bytes."""
    return b"".join(bytes(p) if isinstance(p, int) else p for p in pieces)


# ---------------------------------------------------------------- chunkings


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def split(data: bytes, rng: random.Random, most: int) -> list[bytes]:
    """`data` in pieces of 1 to `most` bytes."""
    out, at = [], 0
    while at < len(data):
        n = rng.randint(1, most)
        out.append(data[at : at + n])
        at += n
    return out


def chunkings(data: bytes, seed: int | str = 0, splits: int = 20) -> Iterator[list[bytes]]:
    """The whole, one byte at a time, then `splits` random splits (pieces of
    up to 3, 17 or 200 bytes), the same for the same seed."""
    yield [data]
    yield bytewise(data)
    rng = random.Random(seed)
    for _ in range(splits):
        yield split(data, rng, rng.choice((3, 17, 200)))


def assert_every_chunking_alike(new_stream: Callable[[], StreamDissector], data: bytes, seed: int | str) -> None:
    """`data` fed to a new stream dissector in each of its `chunkings` gives
    the same items as fed whole."""
    whole = feed_all(new_stream(), [data])
    for chunks in chunkings(data, seed):
        assert feed_all(new_stream(), chunks) == whole


def cut(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """`data` cut at each of `cuts` (modulo len(data) + 1): a chunking that
    hypothesis draws as a list of integers, and shrinks."""
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in pairwise(points)]


# ---------------------------------------------------------------- golden files, the CLI


def read_hex(path: Path) -> bytes:
    """A .hex fixture: hex digits, blanks and newlines ignored, `#` comments."""
    digits = "".join(line.split("#", 1)[0] for line in path.read_text().splitlines())
    return bytes.fromhex("".join(digits.split()))


def item_json(item: Item) -> dict[str, Any]:
    """A message as `decode -F json` shows it (no origin), a problem as an
    object naming it."""
    if isinstance(item, ProtoMessage):
        return item.to_json({})
    return {
        "problem": item.kind,
        "offset": item.offset,
        "severity": str(item.severity),
        "detail": item.detail,
        "skipped": item.skipped,
    }


def jsonl(items: Iterable[Item]) -> bytes:
    """Every item, messages and problems in stream order, one JSON line each
    (the golden .jsonl of Lumberjack and RCP)."""
    return b"".join(json.dumps(item_json(i), ensure_ascii=False).encode() + b"\n" for i in items)


def sexp_lines(items: Iterable[Item]) -> bytes:
    """The golden .sexp: one canonical line per message."""
    return b"".join(line + b"\n" for line in texts(items))


def assert_golden_items(directory: str, name: str, items: list[Item]) -> None:
    """Lumberjack's and RCP's golden files: NAME.sexp and NAME.jsonl (every
    item, problems among the messages).  RIPPLE_UPDATE_GOLDEN=1 rewrites them."""
    golden(f"{directory}/{name}.sexp", sexp_lines(items))
    golden(f"{directory}/{name}.jsonl", jsonl(items))


def assert_golden_split(directory: str, name: str, items: list[Item]) -> None:
    """Pravega's and Reactive Streams' golden files: NAME.sexp, NAME.jsonl
    (messages only) and NAME.problems (one `severity kind description` line
    each).  RIPPLE_UPDATE_GOLDEN=1 rewrites them."""
    messages_jsonl = "".join(json.dumps(m.to_json({}), ensure_ascii=False) + "\n" for m in messages(items))
    problem_lines = "".join(f"{p.severity} {p.kind} {p.describe()}\n" for p in problems(items))
    golden(f"{directory}/{name}.sexp", sexp_lines(items))
    golden(f"{directory}/{name}.jsonl", messages_jsonl.encode())
    golden(f"{directory}/{name}.problems", problem_lines.encode())


def golden_stream(directory: str, name: str, data: bytes) -> Path:
    """A fixture stream committed as NAME.bin (what the CLI tests read),
    checked against the builder that made `data`; its path."""
    if os.environ.get("RIPPLE_UPDATE_GOLDEN"):
        (GOLDEN / directory).mkdir(parents=True, exist_ok=True)
    golden(f"{directory}/{name}.bin", data)
    return GOLDEN / directory / f"{name}.bin"


def decode_then_encode(args: list[str]) -> tuple[Result, Result]:
    """`ripple decode ARGS`, then `ripple encode` of the text it printed."""
    decoded = run_cli(["decode", *args])
    return decoded, run_cli(["encode"], stdin=decoded.stdout)


# ---------------------------------------------------------------- checks


def assert_encodes_back(dissector: Dissector, items: Iterable[Item], stream: bytes) -> None:
    """Every message's text (as `decode` prints it, in both forms) encodes
    to the message's own bytes of `stream`; a message read out of another
    one (`Dissector.contained`) to the same bytes from either form."""
    for m in messages(items):
        encoded = dissector.encode(m.text)
        assert dissector.encode(parse_one(m.line)) == encoded, m.line
        assert dissector.encode(parse_one(m.hum)) == encoded, m.line
        if not dissector.contained(m.text):
            assert encoded == stream[m.offset : m.offset + m.size], m.line


# ---------------------------------------------------------------- hypothesis

SCALE = int(os.environ.get("RIPPLE_HYPOTHESIS_SCALE", "1"))


def prop(n: int = 100) -> settings:
    """The property suite's profile (tests/property/conftest.py: derandomized,
    no database, no deadline) with n examples, times RIPPLE_HYPOTHESIS_SCALE.
    Spelled out here: that profile is registered only when tests/property is
    collected."""
    return settings(
        derandomize=True,
        deadline=None,
        database=None,
        print_blob=False,
        max_examples=n * SCALE,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
