"""Command behaviour: exit codes, errors, filters, terminal vs pipe, stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ripple_cli.sexp import to_string
from tests.conftest import EXAMPLES, ROOT, run_cli

DEMO = EXAMPLES / "demo.ripple"
SCHEMAS = str(EXAMPLES / "schemas")


def ripple(
    *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The real program, in a real process (for pipes and signals)."""
    return subprocess.run(
        [sys.executable, "-m", "ripple_cli", *args],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_missing_file_is_exit_3_one_line() -> None:
    r = run_cli(["decode", "/nonexistent/x.ripple"])
    assert r.code == 3
    assert r.stderr == "ripple: /nonexistent/x.ripple: no such file\n"


def test_a_file_name_with_a_newline_gives_one_line(tmp_path: Path) -> None:
    """The name is escaped as the sexp form escapes text: each diagnostic
    stays one line whatever the file is called."""
    odd = tmp_path / "a\nb\x1b.ripple"
    r = run_cli(["decode", str(odd)])
    assert (r.code, r.stderr) == (3, f"ripple: {tmp_path}/a\\nb\\027.ripple: no such file\n")
    odd.write_bytes(b"xx")
    r = run_cli(["decode", str(odd)])
    assert r.code == 1
    assert r.stderr.splitlines() == [
        f"ripple: {tmp_path}/a\\nb\\027.ripple: error: offset 0: bad magic 78 78 (expected 52 49 50 50, RIPP);"
        " skipped 2 bytes to offset 2"
    ]


def test_directory_is_exit_3(tmp_path: Path) -> None:
    r = run_cli(["verify", str(tmp_path)])
    assert r.code == 3
    assert f"ripple: {tmp_path}: is a directory\n" in r.stderr


def test_bad_option_is_exit_2() -> None:
    r = run_cli(["decode", "--format", "xml", str(DEMO)])
    assert r.code == 2
    assert "Invalid value for '--format'" in r.stderr


def test_pipe_default_is_sexp_and_terminal_default_is_table() -> None:
    piped = run_cli(["decode", "-c", "1", str(DEMO)])
    assert piped.stdout.startswith(b"((seq 1)(time_ns 1718900000000000000)(schema ripple.handshake/v1)")
    term = run_cli(["decode", "-c", "1", str(DEMO)], tty=True)
    assert term.text.splitlines()[0].split() == [
        "offset",
        "seq",
        "time",
        "(UTC)",
        "type",
        "schema",
        "output",
        "key",
        "summary",
    ]


def test_no_color_is_honoured() -> None:
    colored = run_cli(["decode", "-c", "3", str(DEMO)], tty=True, environ={})
    plain = run_cli(["decode", "-c", "3", str(DEMO)], tty=True, environ={"NO_COLOR": "1"})
    assert b"\x1b[" in colored.stdout
    assert b"\x1b[" not in plain.stdout


def test_stdin_dash() -> None:
    r = run_cli(["decode", "-"], stdin=DEMO.read_bytes())
    assert r.code == 0
    assert r.stdout == (EXAMPLES / "demo.sexp").read_bytes()


def test_count_and_type_and_output_and_key_filters() -> None:
    r = run_cli(["decode", "--type", "Heartbeat", str(DEMO)])
    lines = r.text.splitlines()
    assert len(lines) == 4 and all("(msg(Heartbeat(" in x for x in lines)
    r = run_cli(["decode", "--output", "vwap", "-c", "5", str(DEMO)])
    assert len(r.text.splitlines()) == 5
    assert all("(source_output vwap)" in x for x in r.text.splitlines())
    first = r.text.splitlines()[0]
    key = first.split("(key ")[1].split(")")[0]
    by_key = run_cli(["decode", "--key", key, "--output", "vwap", str(DEMO)])
    assert by_key.text.splitlines() and all(f"(key {key})" in x for x in by_key.text.splitlines())


def test_show_offsets_reads_back_with_encode(tmp_path: Path) -> None:
    r = run_cli(["decode", "--show-offsets", str(DEMO)])
    assert r.text.splitlines()[1].endswith(" ; offset 699 size 65")
    text = tmp_path / "with-offsets.sexp"
    text.write_bytes(r.stdout)
    out = tmp_path / "out.ripple"
    assert run_cli(["encode", str(text), "-o", str(out)]).code == 0
    assert out.read_bytes() == DEMO.read_bytes()


def test_raw_applies_no_schema() -> None:
    r = run_cli(["decode", "--raw", "--output", "vwap", "-c", "1", str(DEMO)])
    assert "(delta_bytes" in r.text and "(delta(" not in r.text


def test_encode_is_the_inverse_of_decode(tmp_path: Path) -> None:
    out = tmp_path / "again.ripple"
    r = run_cli(["encode", str(EXAMPLES / "demo.sexp"), "-o", str(out)])
    assert r.code == 0, r.stderr
    assert out.read_bytes() == DEMO.read_bytes()


def test_encode_hum_form(tmp_path: Path) -> None:
    hum = run_cli(["decode", "--format", "hum", str(DEMO)])
    src = tmp_path / "demo.hum"
    src.write_bytes(hum.stdout)
    out = tmp_path / "again.ripple"
    assert run_cli(["encode", str(src), "-o", str(out)]).code == 0
    assert out.read_bytes() == DEMO.read_bytes()


def test_encode_error_names_line_and_field_and_leaves_no_file(tmp_path: Path) -> None:
    lines = (EXAMPLES / "demo.sexp").read_bytes().splitlines(keepends=True)
    bad_line = next(i for i, x in enumerate(lines) if b"(source_output vwap)" in x and b"(Patch(" in x)
    lines[bad_line] = lines[bad_line].replace(b"(Patch((Price", b"(Patch((Prize", 1)
    src = tmp_path / "bad.sexp"
    src.write_bytes(b"".join(lines))
    out = tmp_path / "out.ripple"
    r = run_cli(["encode", str(src), "-o", str(out)])
    assert r.code == 1
    assert r.stderr == (
        f"ripple: {src}: line {bad_line + 1}: msg.Delta.delta.Patch[0]: "
        "Prize is not a field of vwap/v2 (Price Volume Venue)\n"
    )
    assert not out.exists()
    assert not list(tmp_path.glob(".ripple-*"))


def test_encode_errors_show_atoms_as_sexp_text(tmp_path: Path) -> None:
    """An atom in an error line reads as the sexp text writes it, cut when
    long; never as a Python byte string."""
    out = str(tmp_path / "o.ripple")
    r = run_cli(["encode", "-o", out, "-"], stdin=b"garbage\n")
    assert (r.code, r.stderr) == (
        1,
        "ripple: <stdin>: line 1: expected an envelope ((seq ..)(time_ns ..)(schema ..)(msg ..)), found atom garbage\n",
    )
    r = run_cli(["encode", "-o", out, "-"], stdin=b'("\\255' + b"a" * 80 + b'" x)\n')
    cut = '"\\255' + "a" * 32 + "..."  # 40 characters
    assert r.stderr == f"ripple: <stdin>: line 1: expected a (field value) pair, found atom {cut}\n"


def test_encode_refuses_a_constructor_alone_in_parentheses(tmp_path: Path) -> None:
    """`(Remove)` and `(Set)`: ppx_sexp_conv refuses both ("this constructor
    does not take arguments", "has incorrect number of arguments"), so
    encode does too; `Remove` is the form decode prints."""
    lines = (EXAMPLES / "demo.sexp").read_bytes().splitlines(keepends=True)
    remove = next(i for i, x in enumerate(lines) if b"(delta Remove)" in x)
    for written, ctor in ((b"(delta(Remove))", "Remove"), (b"(delta(Set))", "Set")):
        src = tmp_path / "bad.sexp"
        src.write_bytes(b"".join([*lines[:remove], lines[remove].replace(b"(delta Remove)", written)]))
        r = run_cli(["encode", "-o", str(tmp_path / "o.ripple"), str(src)])
        assert (r.code, r.stderr) == (
            1,
            f"ripple: {src}: line {remove + 1}: msg.Delta.delta: "
            f"({ctor}) has no arguments: write {ctor} alone, or give its arguments\n",
        )


def test_encode_refuses_binary_input_and_skips_a_bom(tmp_path: Path) -> None:
    out = tmp_path / "o.ripple"
    for binary in (DEMO, EXAMPLES / "capture.pcap"):
        r = run_cli(["encode", "-o", str(out), str(binary)])
        assert (r.code, r.stderr) == (
            1,
            f"ripple: {binary}: a binary file (a stream or capture?), not s-expression text: "
            "encode reads what `ripple decode` prints\n",
        )
        assert not out.exists()
    r = run_cli(["encode", "-o", str(out), "-"], stdin=b"\xef\xbb\xbf" + (EXAMPLES / "demo.sexp").read_bytes())
    assert r.code == 0 and out.read_bytes() == DEMO.read_bytes()


def test_encode_refuses_a_terminal() -> None:
    r = run_cli(["encode", str(EXAMPLES / "demo.sexp")], tty=True)
    assert r.code == 2
    assert "refusing to write binary envelopes to a terminal" in r.stderr


def test_encode_renumber(tmp_path: Path) -> None:
    out = tmp_path / "renumbered.ripple"
    text = b"".join(
        line.replace(b"((seq ", b"((seq 10", 1) for line in (EXAMPLES / "demo.sexp").read_bytes().splitlines(True)[:5]
    )
    src = tmp_path / "in.sexp"
    src.write_bytes(text)
    assert run_cli(["encode", "--renumber", str(src), "-o", str(out)]).code == 0
    seqs = [line.split(b")")[0] for line in run_cli(["decode", str(out)]).stdout.splitlines()]
    assert seqs == [b"((seq 1", b"((seq 2", b"((seq 3", b"((seq 4", b"((seq 5"]


def test_verify_json_is_machine_readable(tmp_path: Path) -> None:
    r = run_cli(["verify", "--format", "json", "--schemas", SCHEMAS, str(DEMO)])
    doc = json.loads(r.stdout)
    assert doc["v"] == 1 and doc["streams"][0]["messages"] == 300
    assert doc["ok"] is (r.code == 0)


def _encoded(tmp_path: Path, text: bytes) -> Path:
    """The stream `encode` writes from canonical `text`."""
    src = tmp_path / "in.sexp"
    src.write_bytes(text)
    stream = tmp_path / "in.ripple"
    assert run_cli(["encode", str(src), "-o", str(stream)]).code == 0
    return stream


def test_verify_strict_turns_warnings_into_problems(tmp_path: Path) -> None:
    # An envelope with flags 1 and one of an unknown type 9.
    text = (
        b"((seq 1)(time_ns 5)(schema ripple.heartbeat/v1)(flags 1)"
        b"(msg(Heartbeat((worker_id w1)(timestamp_ns 5)(load 0.5)))))\n"
        b'((seq 2)(time_ns 6)(schema x/v1)(msg(Unknown((tag 9)(payload"\\001\\002")))))\n'
    )
    stream = _encoded(tmp_path, text)
    assert run_cli(["decode", str(stream)]).stdout == text
    lax = run_cli(["verify", str(stream)])
    assert lax.code == 0 and "2 warnings" in lax.text
    strict = run_cli(["verify", "--strict", str(stream)])
    assert strict.code == 1 and "2 problems" in strict.text


def test_type_unknown_chooses_the_unknown_types(tmp_path: Path) -> None:
    """--type Unknown chooses the envelopes of a type Ripple does not know,
    as -Y 'type == Unknown' does (they read Unknown(9) in JSON)."""
    text = (
        b"((seq 1)(time_ns 5)(schema ripple.heartbeat/v1)(msg(Heartbeat((worker_id w1)(timestamp_ns 5)(load 0.5)))))\n"
        b'((seq 2)(time_ns 6)(schema x/v1)(msg(Unknown((tag 9)(payload"\\001\\002")))))\n'
        b'((seq 3)(time_ns 7)(schema x/v1)(msg(Unknown((tag 12)(payload"")))))\n'
    )
    stream = _encoded(tmp_path, text)
    unknown = text.splitlines(keepends=True)[1:]
    for args in (["--type", "unknown"], ["-Y", "type == Unknown"]):
        r = run_cli(["decode", *args, str(stream)])
        assert r.stdout == b"".join(unknown), args
    assert run_cli(["decode", "--type", "Unknown", "--type", "Heartbeat", str(stream)]).stdout == text


def test_head_exits_quietly() -> None:
    big = DEMO.read_bytes() * 50
    proc = subprocess.Popen(
        f"{sys.executable} -m ripple_cli decode - | head -n 2",
        shell=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    out, err = proc.communicate(big, timeout=120)
    assert proc.returncode == 0
    assert len(out.splitlines()) == 2
    assert err == b""


def test_real_process_exit_codes_and_no_traceback(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(os.urandom(5000))
    r = ripple("verify", str(garbage))
    assert r.returncode == 1
    assert b"Traceback" not in r.stderr
    assert ripple("verify", str(tmp_path / "nope")).returncode == 3
    assert ripple("decode", "--bogus").returncode == 2


def test_schema_show_and_extract_read_captures_and_stdin(tmp_path: Path) -> None:
    """A capture's connections reassembled, as decode reads them: the same
    schemas as the raw stream they carry; `-` reads stdin (a schema file or
    a stream)."""
    raw = run_cli(["schema", "show", "-F", "json", str(DEMO)])
    assert raw.code == 0
    cap = run_cli(["schema", "show", "-F", "json", str(EXAMPLES / "workers.pcap")])
    assert (cap.code, cap.stdout) == (0, raw.stdout), cap.stderr
    out = tmp_path / "from-capture"
    assert run_cli(["schema", "extract", "-o", str(out), str(EXAMPLES / "workers.pcap")]).code == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in (EXAMPLES / "schemas").iterdir())
    piped = run_cli(["schema", "show", "-F", "json", "-"], stdin=DEMO.read_bytes())
    assert (piped.code, piped.stdout) == (0, raw.stdout)
    one = EXAMPLES / "schemas" / "vwap_v2.sexp"
    r = run_cli(["schema", "show", "-F", "sexp", "-"], stdin=one.read_bytes())
    assert r.code == 0 and r.stdout.startswith(b"((name vwap)(version 2)")
    none = run_cli(["schema", "show", str(EXAMPLES / "beats.pcap")])
    assert (none.code, none.stderr) == (1, f"ripple: {EXAMPLES / 'beats.pcap'}: no Handshake declares a schema\n")


def test_schema_show_check_extract(tmp_path: Path) -> None:
    r = run_cli(["schema", "show", "--format", "sexp", str(EXAMPLES / "schemas" / "vwap_v2.sexp")])
    assert r.stdout == (
        b"((name vwap)(version 2)(key String)(fields(((name price)(typ Float)(default()))"
        b'((name volume)(typ Int)(default()))((name venue)(typ(Option String))(default("()"))))))\n'
    )
    out = tmp_path / "extracted"
    r = run_cli(["schema", "extract", str(DEMO), "-o", str(out)])
    assert r.code == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in (EXAMPLES / "schemas").iterdir())
    for p in out.iterdir():
        assert p.read_bytes() == (EXAMPLES / "schemas" / p.name).read_bytes()
    ok = run_cli(["schema", "check", "--reader", str(out / "vwap_v2.sexp"), "--writer", str(out / "vwap_v2.sexp")])
    assert ok.code == 0 and ok.text.startswith("compatible")


def test_schema_check_incompatible(tmp_path: Path) -> None:
    reader = tmp_path / "r.sexp"
    writer = tmp_path / "w.sexp"
    reader.write_text(
        "((name vwap)(version 3)(key String)(fields(((name price)(typ Float)(default()))"
        "((name volume)(typ Int32)(default()))((name mid)(typ Float)(default())))))"
    )
    writer.write_text(
        "((name vwap)(version 2)(key String)(fields(((name price)(typ Float)(default()))"
        "((name volume)(typ Int)(default())))))"
    )
    r = run_cli(["schema", "check", "--reader", str(reader), "--writer", str(writer)])
    assert r.code == 1
    assert r.text == (
        "incompatible: reader vwap/v3 cannot read writer vwap/v2\n"
        "  field volume: type mismatch (reader Int32, writer Int)\n"
        "  missing field mid\n"
    )


def test_schema_extract_never_writes_outside_dir(tmp_path: Path) -> None:
    line = (
        b"((seq 1)(time_ns 1)(schema ripple.handshake/v1)(msg(Handshake((source_worker_id w)"
        b"(output_schemas((evil((name ../../escape)(version 1)(key String)(fields())))))(protocol_version 1)))))\n"
    )
    src = tmp_path / "evil.sexp"
    src.write_bytes(line)
    stream = tmp_path / "evil.ripple"
    assert run_cli(["encode", str(src), "-o", str(stream)]).code == 0
    out = tmp_path / "a" / "b"
    r = run_cli(["schema", "extract", str(stream), "-o", str(out)])
    assert r.code == 0
    # "/" cannot survive in a name, nor a leading dot.
    assert [p.name for p in out.iterdir()] == ["_._.._escape_v1.sexp"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "evil.ripple", "evil.sexp"]


def test_help_is_fast_and_lazy() -> None:
    code = (
        "import sys, ripple_cli.cli.main as m; "
        "assert 'ripple_cli.cli.commands.decode' not in sys.modules; assert 'rich' not in sys.modules; print('ok')"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT)
    assert r.stdout == b"ok\n", r.stderr
    assert ripple("--help").returncode == 0


def test_ripple_schemas_environment_variable() -> None:
    plain = ripple("decode", "--output", "orders", "-c", "1", str(DEMO))
    assert b'(delta_bytes"' in plain.stdout
    both = os.pathsep.join([str(EXAMPLES / "schemas"), str(EXAMPLES / "more-schemas")])
    r = ripple("decode", "--output", "orders", "-c", "1", str(DEMO), env={"RIPPLE_SCHEMAS": both})
    assert r.returncode == 0
    assert r.stdout.startswith(b"((seq 6)(time_ns 1718900000320276486)(schema orders/v3)(msg(Delta((source_output")
    assert b"(key ORD-34694489)(delta(Patch((Tif Ioc))))" in r.stdout


def test_shell_completion() -> None:
    r = ripple(env={"_RIPPLE_COMPLETE": "bash_complete", "COMP_WORDS": "ripple decode --fo", "COMP_CWORD": "2"})
    assert r.stdout.split() == [b"plain,--format"]
    script = ripple(env={"_RIPPLE_COMPLETE": "bash_source"})
    assert b"_ripple_completion()" in script.stdout


def test_type_takes_the_short_names_the_table_shows() -> None:
    for short, full in (("Negotiation", "Schema_negotiation"), ("ckpt_ack", "Checkpoint_ack")):
        by_short = run_cli(["decode", "--type", short, str(DEMO)])
        by_name = run_cli(["decode", "--type", full, str(DEMO)])
        assert by_short.code == 0 and by_short.stdout == by_name.stdout != b""


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("ripple decode --format t", ["table"]),
        ("ripple decode --type D", ["Delta", "Data", "DataAppended"]),
        ("ripple decode --type h", ["Handshake", "Heartbeat", "Hello"]),
        ("ripple tap --type unk", ["Unknown"]),
        ("ripple decode --type Zz", []),
    ],
)
def test_shell_completion_of_option_values(words: str, expected: list[str]) -> None:
    """ripple(1): the values of --format and --type complete (the message
    types of every protocol, whatever the case typed)."""
    env = {"_RIPPLE_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}
    r = ripple(env=env)
    assert r.stdout.decode().split() == [f"plain,{x}" for x in expected]


def test_closed_stdout_exits_141_silently() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ripple_cli", "decode", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdout is not None and proc.stdin is not None and proc.stderr is not None
    stdin = proc.stdin

    def feed() -> None:
        try:
            stdin.write(DEMO.read_bytes() * 200)
            stdin.close()
        except (BrokenPipeError, ValueError):
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    assert proc.stdout.readline().startswith(b"((seq 1)")
    proc.stdout.close()  # the reader goes away, as `head` does
    assert proc.wait(timeout=120) == 141
    assert proc.stderr.read() == b""
    writer.join(timeout=10)


def test_count_zero_shows_nothing() -> None:
    r = run_cli(["decode", "-c", "0", str(DEMO)])
    assert r.code == 0 and r.stdout == b""


def test_json_with_non_utf8_names(tmp_path: Path) -> None:
    field = [[b"name", b"f\xac"], [b"typ", [b"Enum", [b"E\xab"]]], [b"default", []]]
    schema = [[b"name", b"n\xad"], [b"version", b"1"], [b"key", b"String"], [b"fields", [field]]]
    handshake = [
        [b"seq", b"1"],
        [b"time_ns", b"1"],
        [b"schema", b"ripple.handshake/v1"],
        [
            b"msg",
            [
                b"Handshake",
                [[b"source_worker_id", b"w"], [b"output_schemas", [[b"o", schema]]], [b"protocol_version", b"1"]],
            ],
        ],
    ]
    delta = [
        [b"seq", b"2"],
        [b"time_ns", b"2"],
        [b"schema", b"n\xad/v1"],
        [
            b"msg",
            [
                b"Delta",
                [
                    [b"source_output", b"o"],
                    [b"key", b"k"],
                    [b"delta", [b"Set", [[b"f\xac", b"E\xab"]]]],
                    [b"sequence_no", b"1"],
                    [b"watermark_ns", []],
                ],
            ],
        ],
    ]
    text = to_string(handshake) + b"\n" + to_string(delta) + b"\n"
    src = tmp_path / "odd.sexp"
    src.write_bytes(text)
    stream = tmp_path / "odd.ripple"
    assert run_cli(["encode", str(src), "-o", str(stream)]).code == 0
    assert run_cli(["decode", str(stream)]).stdout == text
    r = run_cli(["decode", "--format", "jsonl", str(stream)])
    assert r.code == 0
    docs = [json.loads(x) for x in r.stdout.splitlines()]
    # Names follow the JSON form's rule for byte strings; a key is escaped
    # as the sexp form does: no lone surrogate, which strict readers refuse.
    assert b"\\ud" not in r.stdout
    assert docs[1]["schema"] == {"base64": "bq0vdjE="}  # n\xad/v1
    assert docs[1]["msg"]["delta"] == {"op": "set", "row": {"f\\172": {"base64": "Ras="}}}


def test_encode_output_file_mode(tmp_path: Path) -> None:
    out = tmp_path / "out.ripple"
    old = os.umask(0o022)
    try:
        assert run_cli(["encode", str(EXAMPLES / "demo.sexp"), "-o", str(out)]).code == 0
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o644


def test_decode_given_the_text_it_prints_says_what_would_read_it() -> None:
    r = run_cli(["decode", str(EXAMPLES / "demo.sexp")])
    assert r.code == 1
    assert r.stderr.splitlines()[0].endswith(
        "error: offset 0: bad magic 28 28 73 65 (expected 52 49 50 50, RIPP): this looks like s-expression text, "
        "which `ripple encode` turns into a stream; skipped 82801 bytes to offset 82801"
    )
