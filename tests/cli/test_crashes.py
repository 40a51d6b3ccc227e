"""Bad input never crashes (exit 70): names from the wire that are not
UTF-8 or hold control bytes, control bytes in table cells, deep nesting,
odd option values, hostile schema names.  Each gives one clear line and a
documented exit code, and what is printed stays one line, valid JSON, valid
XML."""

from __future__ import annotations

import hashlib
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.conftest import EXAMPLES, run_cli

DEMO_TEXT = (EXAMPLES / "demo.sexp").read_bytes().splitlines()
WORKER = b'"w\\255\\001"'  # a worker id that is not UTF-8, with a control byte
# A stream whose names are not UTF-8: the worker, the vwap schema's name
# (so its fingerprint) and an output that holds ESC[2J.
HOSTILE_NAMES = b"\n".join(
    [
        DEMO_TEXT[0].replace(b"md-worker-07", WORKER).replace(b"(name vwap)", b'(name "vw\\254ap")'),
        DEMO_TEXT[1],
        DEMO_TEXT[2],
        DEMO_TEXT[2].replace(b"(seq 3)", b"(seq 80)").replace(b"(sequence_no 1)", b"(sequence_no 5)"),
        b'((seq 82)(time_ns 1718900000260095115)(schema "vw\\254ap/v2")(msg(Delta((source_output "v\\255\\027[2J")'
        b'(key "\\027]0;x\\007k")(delta(Patch((Price 355.62))))(sequence_no 3)(watermark_ns(1718900000255095115))))))',
    ]
)
PROBLEMS = [
    "  error: offset 924 (seq 80): delta_gap: (w\\255\\001, trades) sequence_no jumped from 1 to 5 (3 missing: 2..4)",
    "  error: offset 1091 (seq 82): delta_gap: (w\\255\\001, v\\255\\027[2J) first sequence_no is 3, expected 1 "
    "(2 missing)",
]


def _stream(tmp_path: Path) -> Path:
    path = tmp_path / "names.ripple"
    r = run_cli(["encode", "-o", str(path)], stdin=HOSTILE_NAMES)
    assert (r.code, r.stderr) == (0, "")
    return path


def _no_surrogate(value: object) -> None:
    if isinstance(value, str):
        assert not any(0xD800 <= ord(c) <= 0xDFFF for c in value), value
    elif isinstance(value, dict):
        for k, v in value.items():
            _no_surrogate(k)
            _no_surrogate(v)
    elif isinstance(value, list):
        for v in value:
            _no_surrogate(v)


def test_verify_text_escapes_names_from_the_wire(tmp_path: Path) -> None:
    path = _stream(tmp_path)
    r = run_cli(["verify", str(path)])
    assert (r.code, r.stderr) == (1, "")
    assert r.text.splitlines() == [
        f"{path}: 5 messages (3 Delta, 1 Handshake, 1 Schema_negotiation), 1193 bytes: 2 problems",
        *PROBLEMS,
        "verify: 1 stream, 5 messages, 2 problems",
    ]


def test_verify_junit_is_valid_xml(tmp_path: Path) -> None:
    path = _stream(tmp_path)
    junit = tmp_path / "report.xml"
    r = run_cli(["verify", "--junit", str(junit), str(path)])
    assert (r.code, r.stderr) == (1, "")
    failure = ET.fromstring(junit.read_bytes()).find("testsuite/testcase/failure")
    assert failure is not None and failure.text == "\n".join(p.strip() for p in PROBLEMS)
    assert not any(b < 0x20 and b not in b"\n" for b in junit.read_bytes())


def test_json_holds_no_lone_surrogate(tmp_path: Path) -> None:
    path = _stream(tmp_path)
    r = run_cli(["verify", "-F", "json", str(path)])
    assert (r.code, r.stderr) == (1, "")
    doc = json.loads(r.stdout.decode("utf-8"))
    _no_surrogate(doc)
    first, _ = doc["streams"][0]["problems"]
    assert first["detail"] == PROBLEMS[0].split("delta_gap: ")[1]
    assert first["extra"]["worker"] == {"base64": "d/8B"}  # the bytes, as the JSON form's byte strings
    r = run_cli(["decode", "-F", "jsonl", str(path)])
    assert r.code == 0
    last = json.loads(r.stdout.splitlines()[-1].decode("utf-8"))
    _no_surrogate(last)
    assert last["schema"] == {"base64": "dnf+YXAvdjI="}  # vw\254ap/v2
    r = run_cli(["schema", "show", "-F", "json", str(path)])
    assert r.code == 0
    assert json.loads(r.stdout.decode("utf-8"))[0]["name"] == {"base64": "dnf+YXA="}


def test_schema_extract_and_check_escape_names(tmp_path: Path) -> None:
    path = _stream(tmp_path)
    out = tmp_path / "out"
    r = run_cli(["schema", "extract", "-o", str(out), str(path)])
    assert (r.code, r.stderr) == (0, "")
    assert r.text.splitlines()[0] == f"{out}/vw_ap_v2.sexp  vw\\254ap/v2"
    assert len(r.text.splitlines()) == 4
    vwap = str(EXAMPLES / "schemas" / "vwap_v2.sexp")
    r = run_cli(["schema", "check", "--reader", str(out / "vw_ap_v2.sexp"), "--writer", vwap])
    assert (r.code, r.stderr) == (0, "")
    assert r.text == "compatible: reader vw\\254ap/v2 can read writer vwap/v2\n"


def test_an_error_line_quoting_a_name_is_escaped() -> None:
    text = DEMO_TEXT[2].replace(b"(schema trades/v1)", b'(schema "x\\255\\027[2J/v1")')
    r = run_cli(["encode", "-o", "/dev/null"], stdin=text)
    assert r.code == 1
    assert r.stderr == (
        "ripple: <stdin>: line 1: msg.Delta: no schema known for x\\255\\027[2J/v1: "
        "give --schemas, or a Handshake line before this one\n"
    )


# A worker id, a key and a string field that would clear the screen and
# set the terminal's title, were they printed raw.
CONTROLS = b"\n".join(
    [
        DEMO_TEXT[0].replace(b"md-worker-07", b'"\\027[2J"'),
        DEMO_TEXT[2].replace(b"(key 7075368050)", b"(key 1)").replace(b"(symbol V)", b'(symbol "\\027]0;x\\007")'),
        DEMO_TEXT[3]
        .replace(b"(key BRK.B)", b'(key "\\027[2J\\027]0;x\\007")')
        .replace(b"(source_output vwap)", b'(source_output "\\027]0;x\\007")'),
        DEMO_TEXT[72].replace(b"md-worker-07", b'"\\027[2J"'),
    ]
)


def test_table_cells_escape_control_bytes(tmp_path: Path) -> None:
    path = tmp_path / "controls.ripple"
    assert run_cli(["encode", "-o", str(path)], stdin=CONTROLS).code == 0
    r = run_cli(["decode", "-F", "table", str(path)])
    assert (r.code, r.stderr) == (0, "")
    assert b"\x1b" not in r.stdout and b"\x07" not in r.stdout
    lines = r.text.splitlines()
    assert "worker \\027[2J v1: " in lines[2]
    assert '#1 Set symbol="\\027]0;x\\007" ' in lines[3]
    assert '\\027]0;x\\007  "\\027[2J\\027]0;x\\007"  #1 Patch price=355.62' in lines[4]
    assert lines[5].endswith("worker \\027[2J load 0.81")
    # On a terminal the control bytes are the table's own only (no colour
    # asked: none at all), and the cells are the same.
    r = run_cli(["decode", "-F", "table", str(path)], tty=True, width=200)
    assert b"\x1b[2J" not in r.stdout and b"\x1b]" not in r.stdout and b"\x07" not in r.stdout
    assert "worker \\027[2J v1: " in r.text


def test_tap_live_view_escapes_control_bytes(tmp_path: Path) -> None:
    from tests.cli.test_table_widths import _live_view

    path = tmp_path / "controls.ripple"
    assert run_cli(["encode", "-o", str(path)], stdin=CONTROLS).code == 0
    view, out = _live_view(path, None)
    view.console.print(view.render(max_rows=10))
    view.close()
    assert b"\x1b" not in out.getvalue() and b"\x07" not in out.getvalue()
    assert "worker \\027[2J load 0.81" in out.getvalue().decode()


def test_encode_refuses_text_nested_too_deep() -> None:
    r = run_cli(["encode", "-o", "/dev/null"], stdin=b"(" * 500 + b")" * 500 + b"\n")
    assert (r.code, r.stderr) == (1, "ripple: <stdin>: line 1, column 257: lists nested more than 256 deep\n")


def test_a_run_of_sexp_comments_is_counted_not_recursed_into() -> None:
    """`#;` comments out the next s-expression, and n of them in a row the
    next n (as parsexp reads them): 5,000 in a row ended in a RecursionError
    (exit 70)."""
    heartbeat = next(line for line in DEMO_TEXT if b"Heartbeat" in line)
    text = b"#;" * 5000 + b" a" * 5000 + b"\n" + heartbeat + b"\n"
    r = run_cli(["encode", "-o", "-"], stdin=text)
    assert r.code == 0, r.stderr
    assert r.stdout == run_cli(["encode", "-o", "-"], stdin=heartbeat + b"\n").stdout
    r = run_cli(["encode", "-o", "/dev/null"], stdin=b"#;" * 5000 + b" a" * 4999 + b"\n")
    assert (r.code, r.stderr) == (1, "ripple: <stdin>: line 2, column 1: unexpected end of input\n")


def test_an_error_quoting_a_long_atom_cuts_it() -> None:
    """An unknown field named with 70,000 bytes: the error line quotes 297
    of them, not all."""
    line = DEMO_TEXT[0].replace(b"(default())", b"(" + b"x" * 70_000 + b"())", 1)
    r = run_cli(["encode", "-o", "/dev/null"], stdin=line + b"\n")
    assert r.code == 1
    assert r.stderr.startswith("ripple: <stdin>: line 1: msg.Handshake.output_schemas[0].fields[0]: unknown field xxx")
    assert r.stderr.endswith("x" * 200 + "...\n") and len(r.stderr) < 400


def test_an_output_file_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    """A full device, and a file past the process's size limit: exit 3 and
    the line that names it (was exit 70, OSError), no file left behind."""
    import resource
    import subprocess
    import sys

    demo = str(EXAMPLES / "demo.sexp")
    if Path("/dev/full").exists():
        r = run_cli(["encode", "-o", "/dev/full", demo])
        assert (r.code, r.stderr) == (3, "ripple: /dev/full: cannot write: No space left on device\n")
    out = tmp_path / "out.ripple"
    limited = subprocess.run(
        [sys.executable, "-m", "ripple_cli", "encode", "-o", str(out), demo],
        capture_output=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192)),
        check=False,
    )
    assert (limited.returncode, limited.stderr) == (3, f"ripple: {out}: cannot write: File too large\n".encode())
    assert list(tmp_path.iterdir()) == []


def test_a_schema_file_nested_too_deep_is_not_a_schema(tmp_path: Path) -> None:
    parens = tmp_path / "parens.sexp"
    parens.write_bytes(b"(" * 600 + b")" * 600)
    r = run_cli(["schema", "show", str(parens)])
    assert (r.code, r.stderr) == (
        3,
        f"ripple: {parens}: not a schema: line 1, column 257: lists nested more than 256 deep\n",
    )
    typ = "String"
    for _ in range(600):
        typ = f"(Option {typ})"
    options = tmp_path / "options.sexp"
    options.write_text(f"((name x)(version 1)(key {typ})(fields()))")
    r = run_cli(["decode", "--schemas", str(options), str(EXAMPLES / "demo.ripple")])
    assert r.code == 3
    assert r.stderr == f"ripple: {options}: not a schema: line 1, column 2058: lists nested more than 256 deep\n"


def test_a_filter_nested_too_deep_is_a_usage_error() -> None:
    demo = str(EXAMPLES / "demo.ripple")
    r = run_cli(["decode", "-Y", "(" * 600 + "seq == 1" + ")" * 600, demo])
    assert (r.code, r.stderr) == (2, "ripple: -Y: column 65: parentheses nested more than 64 deep\n")
    # Any number of `not`s: a loop, not a recursion.
    r = run_cli(["decode", "-Y", "not " * 2000 + "seq == 1", demo])
    assert (r.code, r.stderr) == (0, "")
    assert r.text.startswith("((seq 1)")
    r = run_cli(["decode", "-Y", "not " * 2001 + "seq == 1", demo])
    assert (r.code, r.stderr) == (0, "")
    assert r.text.startswith("((seq 2)")


def _usage_error(args: list[str], message: str) -> None:
    r = run_cli(args)
    assert r.code == 2, r.stderr
    # One line, as every error (Click's own form is four): the command, Click's words, where help is.
    assert r.stderr == f"ripple: {args[0]}: {message} (see 'ripple {args[0]} --help')\n", r.stderr
    assert "Traceback" not in r.stderr and "listening" not in r.stderr


def test_option_values_are_bounded_where_they_are_parsed() -> None:
    demo = str(EXAMPLES / "demo.ripple")
    big = "99999999999999999999"
    above = "is above the largest size accepted"
    _usage_error(
        ["decode", "--max-payload", big + "G", demo], f"Invalid value for '--max-payload': '{big}G' {above}, 4G"
    )
    _usage_error(
        ["verify", "--max-payload", "9223372036854775808", demo],
        f"Invalid value for '--max-payload': '9223372036854775808' {above}, 4G",
    )
    _usage_error(["decode", "--max-inflate", "5G", demo], f"Invalid value for '--max-inflate': '5G' {above}, 4G")
    replay = ["replay", "--to", "127.0.0.1:1", demo]
    _usage_error(
        [*replay, "--handshake-timeout", "1e300"],
        "Invalid value for '--handshake-timeout': 1e+300 is not in the range 0<x<=86400.0.",
    )
    _usage_error(
        [*replay, "--handshake-timeout", "nan"], "Invalid value for '--handshake-timeout': 'nan' is not a finite number"
    )
    _usage_error([*replay, "--pps", "inf"], "Invalid value for '--pps': 'inf' is not a finite number")
    _usage_error(
        ["encode", "-o", "", str(EXAMPLES / "demo.sexp")],
        "Invalid value for '--output' / '-o': an empty name is no file",
    )
    _usage_error(["verify", "--junit", "", demo], "Invalid value for '--junit': an empty name is no file")
    tap = ["tap", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1", "-F", "sexp"]
    _usage_error([*tap, "--buffer", big + "G"], f"Invalid value for '--buffer': '{big}G' {above}, 1024G")
    _usage_error(
        [*tap, "--max-connections", big],
        f"Invalid value for '--max-connections': {big} is not in the range 1<=x<=1048576.",
    )
    _usage_error([*tap, "-w", ""], "Invalid value for '-w' / '--write': an empty name is no file")


def test_rotate_values_are_bounded(tmp_path: Path) -> None:
    tap = ["tap", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1", "-F", "sexp"]
    tap += ["-w", str(tmp_path / "t.pcapng")]
    for spec, why in (
        ("size:1e999", "'1e999' is above the largest accepted, 1,000,000,000"),
        ("time:nan", "'nan' is not a positive number"),
        ("time:-inf", "'-inf' is not a positive number"),
        ("files:99999999999", "'99999999999' is above the largest accepted, 1,000,000,000"),
    ):
        r = run_cli([*tap, "--rotate", spec, "--rotate", "size:1"])
        assert (r.code, r.stderr) == (2, f"ripple: --rotate: '{spec}': {why}\n")
    assert not (tmp_path / "t.pcapng").exists()


def _hostile_schemas(tmp_path: Path) -> Path:
    """The demo's Handshake, its vwap schema named with 300 bytes, its
    trades schema with a newline and ESC[2J in its name."""
    handshake = (
        DEMO_TEXT[0]
        .replace(b"(name vwap)", b"(name " + b"v" * 300 + b")")
        .replace(b"(name trades)", b'(name "tr\\nades\\027[2J")')
    )
    path = tmp_path / "hostile.ripple"
    assert run_cli(["encode", "-o", str(path)], stdin=handshake).code == 0
    return path


def test_schema_extract_names_are_safe_and_bounded(tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = run_cli(["schema", "extract", "-o", str(out), str(_hostile_schemas(tmp_path))])
    assert (r.code, r.stderr) == (0, "")
    long_name = "v" * 100 + "-" + hashlib.sha256(b"v" * 300).hexdigest()[:8] + "_v2.sexp"
    assert r.text.splitlines() == [
        f"{out}/{long_name}  {'v' * 300}/v2",
        f"{out}/tr_ades__2J_v1.sexp  tr\\nades\\027[2J/v1",
        f"{out}/book_v4.sexp  book/v4",
        f"{out}/positions_by_account_and_desk_v1.sexp  positions_by_account_and_desk/v1",
    ]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [long_name, "tr_ades__2J_v1.sexp", "book_v4.sexp", "positions_by_account_and_desk_v1.sexp"]
    )


def test_schema_extract_never_follows_a_symlink(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "precious"
    target.write_text("keep me\n")
    (out / "book_v4.sexp").symlink_to(target)
    (out / "trades_v1.sexp").mkdir()
    r = run_cli(["schema", "extract", "-o", str(out), str(EXAMPLES / "demo.ripple")])
    assert r.code == 3
    assert r.stderr.splitlines() == [
        f"ripple: {out}/trades_v1.sexp: exists and is not a regular file: not overwritten",
        f"ripple: {out}/book_v4.sexp: is a symbolic link: not followed, not overwritten",
    ]
    assert target.read_text() == "keep me\n"
    # The others are extracted all the same.
    assert r.text.splitlines() == [
        f"{out}/vwap_v2.sexp  vwap/v2",
        f"{out}/positions_by_account_and_desk_v1.sexp  positions_by_account_and_desk/v1",
    ]
    assert (out / "vwap_v2.sexp").read_bytes() == (EXAMPLES / "schemas" / "vwap_v2.sexp").read_bytes()


def test_table_cells_are_not_read_as_markup(tmp_path: Path) -> None:
    schema = tmp_path / "markup.sexp"
    schema.write_bytes((EXAMPLES / "schemas" / "vwap_v2.sexp").read_bytes().replace(b"(name price)", b'(name "[/x]")'))
    r = run_cli(["schema", "show", "-F", "table", str(schema)])
    assert (r.code, r.stderr) == (0, "")
    assert r.text.splitlines()[3].split() == ["0", "│", "[/x]", "│", "Float", "│"]
    stream = tmp_path / "markup.ripple"
    text = b"\n".join([DEMO_TEXT[0].replace(b"md-worker-07", b'"[/w]"'), DEMO_TEXT[3].replace(b"BRK.B", b"[bold]")])
    assert run_cli(["encode", "-o", str(stream)], stdin=text).code == 0
    r = run_cli(["decode", "-F", "table", str(stream)])
    assert (r.code, r.stderr) == (0, "")
    assert "worker [/w] v1: " in r.text and " [bold] " in r.text


def test_replay_rates_are_bounded() -> None:
    replay = ["replay", "--to", "127.0.0.1:1", str(EXAMPLES / "demo.ripple")]
    _usage_error(
        [*replay, "-x", "1e-300"], "Invalid value for '--multiplier' / '-x': 1e-300 is not in the range x>=1e-06."
    )
    _usage_error([*replay, "--pps", "1e-300"], "Invalid value for '--pps': 1e-300 is not in the range x>=1e-06.")


def test_replay_renumbering_past_the_largest_sequence_no_is_one_line_before_connecting() -> None:
    """Refused before any connection (port 1 would be exit 3): no consumer
    is left holding a Handshake and part of the stream."""
    start = (1 << 62) - 1
    args = ["replay", str(EXAMPLES / "demo.ripple"), "--to", "127.0.0.1:1", "-t"]
    r = run_cli([*args, "--renumber", "--renumber-from", str(start)])
    assert r.code == 2
    assert r.stderr == (
        f"ripple: --renumber-from {start}: a Delta sequence_no would pass {start}, the largest it holds, "
        "after 1 Deltas of one output\n"
    )


def test_replay_renumbering_to_the_largest_sequence_no() -> None:
    """Room for the demo's 90 vwap Deltas: the last is numbered 2^62-1;
    twice over (--loop 2) is refused before connecting."""
    from ripple_cli.codec.messages import DeltaMode, DeltaMsg
    from ripple_cli.protocols.ripple.decoder import StreamDecoder
    from ripple_cli.protocols.ripple.message import Message
    from tests.replay.consumer import Consumer

    start = (1 << 62) - 90
    args = ["replay", str(EXAMPLES / "demo.ripple"), "-t", "--renumber", "--renumber-from", str(start)]
    with Consumer() as c:
        r = run_cli([*args, "--to", c.address])
    assert r.code == 0, r.stderr
    got = [
        e for e in StreamDecoder(None, DeltaMode.RAW).feed(b"".join(c.received[0].envelopes)) if isinstance(e, Message)
    ]
    vwap = [m.body.sequence_no for m in got if isinstance(m.body, DeltaMsg) and m.body.source_output == b"vwap"]
    assert vwap == list(range(start, 1 << 62))
    r = run_cli([*args, "--to", "127.0.0.1:1", "--loop", "2"])
    assert r.code == 2 and "after 90 Deltas of one output" in r.stderr


def test_replay_renumber_from_needs_renumber() -> None:
    r = run_cli(["replay", str(EXAMPLES / "demo.ripple"), "--to", "127.0.0.1:1", "--renumber-from", "5"])
    assert (r.code, r.stderr) == (2, "ripple: --renumber-from 5: give --renumber too (it numbers from N)\n")


def test_a_gap_of_centuries_in_the_timestamps_waits_an_hour_at_a_time() -> None:
    from ripple_cli.replay.schedule import NS, sleep_until

    now = [0]
    waits: list[float] = []

    def idle(seconds: float) -> None:
        waits.append(seconds)
        now[0] += int(seconds * NS)

    def clock() -> int:
        now[0] += 1000  # a microsecond a look: the final spin ends
        return now[0]

    sleep_until(3 * 3600 * NS + 1, idle, clock=clock)
    assert max(waits) == 3600 and len(waits) >= 3
