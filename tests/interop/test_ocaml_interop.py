"""`ripple` against real OCaml: bin_prot bytes and sexplib text, both ways.

ripple_gen (OCaml: the concrete types of ocaml/gen_schemas.ml, bin_prot,
sexplib) writes an adversarial stream together with the text sexplib prints
for it.  The CLI must turn those bytes into exactly that text, that text
back into exactly those bytes, and OCaml must read back what the CLI wrote.
Every comparison is byte for byte: "equivalent" output is a bug here.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.interop.ocamlkit import OcamlTools

REPO = Path(__file__).resolve().parents[2]
SEEDS = (1, 2, 3)
# A few thousand messages: every value class shows up (the generator forces
# strings past 65535 bytes near the start), and each test stays well under 30 s.
COUNT = 3000

HEADER = 59  # envelope bytes before the payload
OVERHEAD = 63  # header + CRC
FIELDS = (
    (0, "magic"),
    (4, "version"),
    (5, "type"),
    (6, "flags"),
    (7, "seq"),
    (15, "time"),
    (23, "fingerprint"),
    (55, "payload length"),
    (59, "payload"),
)


# ---------- running things ----------


def run(args: list[str | Path], what: str) -> subprocess.CompletedProcess[bytes]:
    """Run to completion; a non-zero exit fails the test with its stderr."""
    # RIPPLE_SCHEMAS from the caller's shell would change how Deltas decode.
    env = {k: v for k, v in os.environ.items() if k != "RIPPLE_SCHEMAS"}
    proc = subprocess.run([str(a) for a in args], capture_output=True, env=env, cwd=REPO, timeout=300, check=False)
    if proc.returncode != 0:
        stderr = proc.stderr.decode("utf-8", "replace")
        pytest.fail(f"{what}: exit {proc.returncode}\n{stderr[:4000]}", pytrace=False)
    return proc


def ripple(*args: str | Path) -> subprocess.CompletedProcess[bytes]:
    return run([sys.executable, "-m", "ripple_cli", *args], "ripple " + " ".join(str(a) for a in args[:1]))


# ---------- comparing without drowning in a 5 MB diff ----------


def _clip(line: bytes, col: int) -> str:
    start = max(0, col - 80)
    return ("..." if start else "") + repr(line[start : col + 160])[2:-1] + ("..." if len(line) > col + 160 else "")


def assert_same_text(actual: bytes, expected: bytes, what: str) -> None:
    """Equal bytes, or fail showing the first differing line around the first differing column."""
    if actual == expected:
        return
    got, want = actual.split(b"\n"), expected.split(b"\n")
    for n, (a, e) in enumerate(zip(got, want, strict=False), start=1):
        if a != e:
            col = next((i for i, (x, y) in enumerate(zip(a, e, strict=False)) if x != y), min(len(a), len(e)))
            pytest.fail(
                f"{what}: line {n} differs at column {col + 1}\n"
                f"  expected: {_clip(e, col)}\n"
                f"  actual:   {_clip(a, col)}",
                pytrace=False,
            )
    pytest.fail(f"{what}: {len(got)} lines, expected {len(want)}; all common lines are equal", pytrace=False)


def envelopes(stream: bytes) -> list[tuple[int, int]]:
    """(offset, length) of each envelope, trusting the length fields."""
    out, pos = [], 0
    while pos + HEADER <= len(stream):
        (n,) = struct.unpack_from("<i", stream, pos + 55)
        out.append((pos, OVERHEAD + n))
        pos += OVERHEAD + n
    return out


def assert_same_stream(actual: bytes, expected: bytes, what: str) -> None:
    """Equal bytes, or fail naming the envelope and field of the first difference."""
    if actual == expected:
        return
    at = next((i for i, (x, y) in enumerate(zip(actual, expected, strict=False)) if x != y), None)
    if at is None:
        pytest.fail(
            f"{what}: {len(actual)} bytes, expected {len(expected)}; one is a prefix of the other", pytrace=False
        )
    where = f"byte {at}"
    for index, (off, length) in enumerate(envelopes(expected), start=1):
        if off <= at < off + length:
            rel = at - off
            field = "CRC" if rel >= length - 4 else [name for start, name in FIELDS if rel >= start][-1]
            where = f"envelope {index} (offset {off}), byte {rel} of it, in its {field}"
            break
    lo = max(0, at - 16)
    pytest.fail(
        f"{what}: first difference at {where}\n"
        f"  expected: {expected[lo : at + 32].hex(' ')}\n"
        f"  actual:   {actual[lo : at + 32].hex(' ')}",
        pytrace=False,
    )


# ---------- the generated streams ----------


@dataclass(frozen=True)
class Generated:
    seed: int
    bin: Path  # the stream, as bin_prot wrote it
    sexp: Path  # Sexp.to_string of each message, one per line
    hum: Path  # Sexp.to_string_hum of each message, each followed by a newline
    schemas: Path  # NAME_vVERSION.sexp of each declared schema


@pytest.fixture(scope="module", params=SEEDS, ids=lambda s: f"seed{s}")
def stream(
    request: pytest.FixtureRequest, ocaml_tools: OcamlTools, tmp_path_factory: pytest.TempPathFactory
) -> Generated:
    seed: int = request.param
    d = tmp_path_factory.mktemp(f"interop-seed{seed}")
    g = Generated(seed, d / "stream.bin", d / "lines.sexp", d / "lines.hum", d / "schemas")
    run(
        [
            ocaml_tools.gen,
            "-profile",
            "interop",
            "-seed",
            str(seed),
            "-count",
            str(COUNT),
            "-bin",
            g.bin,
            "-sexp",
            g.sexp,
            "-hum",
            g.hum,
            "-schemas",
            g.schemas,
        ],
        "ripple_gen",
    )
    return g


def test_selftest(ocaml_tools: OcamlTools) -> None:
    """The generator reproduces the README's worked bytes and lines, and its
    hand-written Schema.t values describe its OCaml types (checked by decoding
    typed encodings generically, from the Schema.t alone)."""
    proc = run([ocaml_tools.gen, "-selftest"], "ripple_gen -selftest")
    assert proc.stdout.startswith(b"selftest ok")


def test_ocaml_reads_its_own_stream(ocaml_tools: OcamlTools, stream: Generated) -> None:
    # The anchor for everything below: if this fails, the OCaml side is broken, not the CLI.
    proc = run([ocaml_tools.read, stream.bin], "ripple_read")
    assert_same_text(proc.stdout, stream.sexp.read_bytes(), "ripple_read vs ripple_gen -sexp")


def test_stream_is_adversarial(ocaml_tools: OcamlTools, stream: Generated) -> None:
    """Guards the generator's coverage: a change that loses it fails here."""
    text = stream.sexp.read_bytes()
    data = stream.bin.read_bytes()
    for needle in (
        b" NAN)",
        b" -NAN)",
        b" INF)",
        b" -INF)",
        b" -0)",
        b" 4611686018427387903)",
        b" -4611686018427387904)",
        b" -9223372036854775808)",
        b" -2147483648)",
        b'""',
        b"\\000",
        b"\\255",
        b"#|",
        b"|#",
        b"(schema orders/v3)",
        b"(delta_bytes",
        b"(schema positions_by_account_and_desk/v1)",
    ):
        assert needle in text, needle
    for kind in (b"Handshake", b"Delta", b"Checkpoint_request", b"Checkpoint_ack", b"Heartbeat", b"Schema_negotiation"):
        assert b"(msg(" + kind + b"(" in text, kind
    assert b"(Set(" in text and b"(Patch(" in text and b"(delta Remove)" in text
    sizes = [length - OVERHEAD for _, length in envelopes(data)]
    assert len(sizes) == COUNT and max(sizes) > 65535
    proc = run([ocaml_tools.walk, stream.bin], "ripple_walk")
    assert proc.stdout.startswith(f"messages={COUNT} bytes={len(data)} seconds=".encode())


def test_decode_sexp_matches_sexplib(stream: Generated) -> None:
    proc = ripple("decode", "--format", "sexp", stream.bin)
    assert proc.stderr == b""
    assert_same_text(proc.stdout, stream.sexp.read_bytes(), "ripple decode --format sexp vs sexplib")


def test_encode_sexp_matches_bin_prot(stream: Generated, tmp_path: Path) -> None:
    out = tmp_path / "out.bin"
    ripple("encode", stream.sexp, "-o", out)
    assert_same_stream(out.read_bytes(), stream.bin.read_bytes(), "ripple encode of the -sexp lines vs bin_prot")


def test_ocaml_reads_what_ripple_encoded(ocaml_tools: OcamlTools, stream: Generated, tmp_path: Path) -> None:
    out = tmp_path / "out.bin"
    ripple("encode", stream.sexp, "-o", out)
    proc = run([ocaml_tools.read, out], "ripple_read of ripple encode's output")
    assert_same_text(proc.stdout, stream.sexp.read_bytes(), "ripple_read of ripple encode's output")


def test_encode_hum_matches_bin_prot(stream: Generated, tmp_path: Path) -> None:
    out = tmp_path / "out.bin"
    ripple("encode", stream.hum, "-o", out)
    assert_same_stream(out.read_bytes(), stream.bin.read_bytes(), "ripple encode of the -hum text vs bin_prot")


def test_decode_hum_matches_sexplib(stream: Generated) -> None:
    # Byte equality with sexplib's Sexp.to_string_hum (Format, margin 78,
    # indent 1), multi-line string atoms and all: not merely "same sexp".
    proc = ripple("decode", "--format", "hum", stream.bin)
    assert proc.stderr == b""
    assert_same_text(proc.stdout, stream.hum.read_bytes(), "ripple decode --format hum vs Sexp.to_string_hum")


def test_decode_without_handshake_uses_schema_files(stream: Generated, tmp_path: Path) -> None:
    """Schemas from files (README section 4) decode exactly as from the Handshake."""
    data = stream.bin.read_bytes()
    (n,) = struct.unpack_from("<i", data, 55)
    assert data[5] == 0, "the first envelope must be the Handshake"
    headless = tmp_path / "headless.bin"
    headless.write_bytes(data[OVERHEAD + n :])
    proc = ripple("decode", "--format", "sexp", "--schemas", stream.schemas, headless)
    assert proc.stderr == b""
    expected = stream.sexp.read_bytes().split(b"\n", 1)[1]
    assert_same_text(proc.stdout, expected, "ripple decode --schemas of the stream without its Handshake")
