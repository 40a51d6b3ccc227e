"""The smaller points of a newcomer's first hour, one test each."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT, run_cli
from tests.replay.pcap import Connection, build_pcap

DEMO = EXAMPLES / "demo.ripple"
VWAP = str(EXAMPLES / "schemas" / "vwap_v2.sexp")


def test_schema_show_missing_file_says_no_such_file() -> None:
    r = run_cli(["schema", "show", "nosuch"])
    assert (r.code, r.stderr) == (3, "ripple: nosuch: no such file\n")


def test_schema_check_reader_directory_is_exit_3() -> None:
    r = run_cli(["schema", "check", "--reader", str(EXAMPLES / "schemas"), "--writer", VWAP])
    assert (r.code, r.stderr) == (3, f"ripple: {EXAMPLES / 'schemas'}: is a directory\n")
    r = run_cli(["schema", "check", "--reader", VWAP, "--writer", "nosuch"])
    assert (r.code, r.stderr) == (3, "ripple: nosuch: no such file\n")


def test_list_streams_json(tmp_path: Path) -> None:
    cap = tmp_path / "two.pcap"
    cap.write_bytes(build_pcap([Connection(DEMO.read_bytes(), client_port=40001), Connection(b"GET / HTTP/1.1\r\n")]))
    r = run_cli(["decode", "--list-streams", "-F", "json", str(cap)])
    assert r.code == 0, r.stderr
    streams = json.loads(r.stdout)
    assert r.text.startswith("[\n{") and len(r.text.splitlines()) == 2 + len(streams)
    by_key = {s["stream"]: s for s in streams}
    assert set(by_key) == {"1:c2s", "1:s2c", "2:c2s", "2:s2c"}
    ripple = by_key["1:c2s"]
    assert (ripple["protocol"], ripple["messages"], ripple["bytes"]) == ("ripple", 300, len(DEMO.read_bytes()))
    assert (ripple["src"], ripple["dst"], ripple["connection"], ripple["direction"]) == (
        "10.0.0.1:40001",
        "10.0.0.2:9000",
        1,
        "c2s",
    )
    assert ripple["first"].endswith("Z") and isinstance(ripple["first_ns"], int)
    assert by_key["2:c2s"]["protocol"] is None and by_key["2:c2s"]["end"]
    lines = run_cli(["decode", "--list-streams", "-F", "jsonl", str(cap)])
    assert [json.loads(x) for x in lines.stdout.splitlines()] == streams


def test_list_streams_json_of_a_raw_stream_and_bad_format() -> None:
    (only,) = json.loads(run_cli(["decode", "--list-streams", "-F", "json", str(DEMO)]).stdout)
    assert (only["stream"], only["src"], only["messages"], only["end"]) == (None, None, 300, "end of input")
    r = run_cli(["decode", "--list-streams", "-F", "sexp", str(DEMO)])
    assert r.code == 2
    assert "--list-streams prints table, json, jsonl, not sexp" in r.stderr


def test_no_tracked_file_is_ignored() -> None:
    proc = subprocess.run(
        ["git", "ls-files", "--cached", "--ignored", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip("not a git checkout")
    assert proc.stdout == "", f".gitignore ignores tracked files: {proc.stdout.split()}"
    assert "examples/demo.ripple" not in (ROOT / ".gitignore").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--silence", "1e300"], "'--silence': 1e+300 is not in the range"),
        (["--silence", "1e-10"], "'--silence': 1e-10 is not in the range"),
        (["--top", str(2**63)], "'--top': 9223372036854775808 is not in the range"),
    ],
)
def test_stats_numbers_out_of_range_are_usage_errors(args: list[str], message: str) -> None:
    r = run_cli(["stats", "-q", *args, str(DEMO)])
    assert r.code == 2 and message in r.stderr, r.stderr


def test_stats_largest_silence_is_whole_nanoseconds() -> None:
    r = run_cli(["stats", "-q", "-F", "json", "--silence", "1e9", "--top", str(2**31 - 1), str(DEMO)])
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["silence_ns"] == 10**18


def test_capture_notes_carry_what_they_skipped_and_no_made_up_time(tmp_path: Path) -> None:
    pcap = (EXAMPLES / "capture.pcap").read_bytes()
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(pcap[:32] + b"\xff\xff\xff\x7f" + pcap[36:])  # the first record's caplen
    (note,) = [json.loads(x) for x in run_cli(["decode", "-F", "jsonl", str(bad)]).stdout.splitlines()[:1]]
    assert note["problem"]["kind"] == "bad_capture" and "capture_time_ns" not in note
    skipped = note["problem"]["skipped"]
    assert skipped > 0 and f"skipped {skipped} bytes to the next plausible record" in note["problem"]["detail"]
    text = run_cli(["verify", str(bad)]).text.splitlines()[1]
    assert text.count("skipped") == 1, text  # the detail says it; no offset-based tail after it
    tiny = tmp_path / "tiny.pcap"
    tiny.write_bytes(pcap[:12])
    r = run_cli(["decode", "-F", "jsonl", str(tiny)])
    assert r.code == 1
    assert json.loads(r.stdout)["problem"] == {
        "kind": "bad_capture",
        "severity": "error",
        "detail": "the capture ends inside the pcap file header at offset 0: 12 of 24 bytes",
        "skipped": 0,
        "seq": None,
    }


_TWICE_HANDSHAKE = (
    b"((seq 1)(time_ns 1)(schema ripple.handshake/v1)(msg(Handshake((source_worker_id w)(output_schemas((o((name d)"
    b"(version 1)(key Int)(fields(((name x)(typ Int)(default()))((name x)(typ %s)(default()))))))))"
    b"(protocol_version 1)))))\n"
)
_TWICE_DELTA = (
    b'((seq 2)(time_ns 2)(schema d/v1)(msg(Delta((source_output o)(key "\\005")(delta_bytes "%s")'
    b"(sequence_no 1)(watermark_ns())))))\n"
)


@pytest.mark.parametrize("pure", ["0", "1"])
@pytest.mark.parametrize(
    ("second", "delta_bytes"),
    [(b"Int", b"\\000\\001\\002"), (b"Float", b"\\000\\001\\000\\000\\000\\000\\000\\000\\000@")],
)
@pytest.mark.parametrize("fmt", ["sexp", "jsonl", "table"])
def test_a_schema_naming_a_field_twice_is_not_decoded_with(
    monkeypatch: pytest.MonkeyPatch, pure: str, second: bytes, delta_bytes: bytes, fmt: str
) -> None:
    """No OCaml record names a field twice: a Handshake may still carry
    such a schema (it is data), but its Deltas are shown undecoded with a
    bad_delta problem, on both lanes and in every format (they used to
    show one value twice, differ between lanes, or stop with exit 70)."""
    monkeypatch.setenv("RIPPLE_PURE", pure)
    text = _TWICE_HANDSHAKE % second + _TWICE_DELTA % delta_bytes
    stream = run_cli(["encode"], stdin=text)
    assert stream.code == 0, stream.stderr
    r = run_cli(["decode", "-F", fmt, "-"], stdin=stream.stdout)
    assert r.code == 1
    detail = "Delta not decoded: schema d/v1 names field x twice in its row, which no OCaml record can"
    if fmt != "sexp":  # the problem is in-line
        assert detail in r.text.replace("\n", " ") or fmt == "table", r.text
        assert "bad_delta" in r.text and ('"schema_known":false' in r.text or fmt == "table")
        return
    assert r.stderr == f"ripple: <stdin>: error: offset 82: {detail}\n"
    if fmt == "sexp":
        assert r.stdout == text.replace(b'(key "', b'(key"').replace(b'(delta_bytes "', b'(delta_bytes"')
        assert run_cli(["encode"], stdin=r.stdout).stdout == stream.stdout  # decode | encode: the same bytes
    v = run_cli(["verify", "-"], stdin=stream.stdout)
    assert v.code == 1 and "bad_delta: Delta not decoded: schema d/v1 names field x twice" in v.text


def test_a_schema_file_naming_a_field_twice_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "d_v1.sexp"
    bad.write_text(
        "((name d)(version 1)(key(Record(((name a)(typ Int)(default()))((name a)(typ Int)(default())))))"
        "(fields(((name x)(typ Int)(default())))))"
    )
    r = run_cli(["decode", "--schemas", str(bad), str(DEMO)])
    assert (r.code, r.stderr) == (
        3,
        f"ripple: {bad}: not a schema a worker can have: it names field a twice in its key\n",
    )


_ONE_FIELD = (
    b"((seq 1)(time_ns 1)(schema ripple.handshake/v1)(msg(Handshake((source_worker_id w)(output_schemas((o((name p)"
    b"(version 1)(key Int)(fields(%s))))))(protocol_version 1)))))\n"
    b'((seq 2)(time_ns 2)(schema p/v1)(msg(Delta((source_output o)(key "\\005")(delta_bytes "%s")'
    b"(sequence_no 1)(watermark_ns())))))\n"
)


def test_a_patch_to_a_field_named_in_utf8_reads_back() -> None:
    """capitalize_ascii leaves `été` as it is: decode prints the update so,
    and encode reads it back (it used to look for `Été`)."""
    stream = run_cli(
        ["encode"],
        stdin=_ONE_FIELD % (b'((name "\\195\\169t\\195\\169")(typ Int)(default()))', b"\\001\\001\\000\\004"),
    )
    text = run_cli(["decode", "-"], stdin=stream.stdout)
    assert b'(delta(Patch(("\\195\\169t\\195\\169"4))))' in text.stdout
    again = run_cli(["encode"], stdin=text.stdout)
    assert (again.code, again.stdout) == (0, stream.stdout)


def test_an_update_that_names_two_fields_is_refused() -> None:
    fields = b"((name price)(typ Int)(default()))((name Price)(typ Int)(default()))"
    stream = run_cli(["encode"], stdin=_ONE_FIELD % (fields, b"\\001\\001\\001\\004"))
    text = run_cli(["decode", "-"], stdin=stream.stdout)
    assert b"(delta(Patch((Price 4))))" in text.stdout
    r = run_cli(["encode"], stdin=text.stdout)
    assert (r.code, r.stderr) == (
        1,
        "ripple: <stdin>: line 2: msg.Delta.delta.Patch[0]: Price updates price and Price of p/v1 alike: "
        "the text cannot say which\n",
    )


def test_type_unknown_selects_the_messages_of_an_unknown_tag() -> None:
    """`--type Unknown` as `-Y 'type == Unknown'`: the message whose tag
    ripple does not know, on both lanes; a bad type name lists it."""
    from tests.unit.test_framing import heartbeat, raw_envelope

    data = heartbeat(1) + raw_envelope(9, 2, b"\x01\x02") + heartbeat(3)
    for environ in ({"NO_COLOR": "1"}, {"NO_COLOR": "1", "RIPPLE_PURE": "1"}):
        by_type = run_cli(["decode", "--type", "unknown", "-"], stdin=data, environ=environ)
        by_filter = run_cli(["decode", "-Y", "type == Unknown", "-"], stdin=data, environ=environ)
        assert by_type.code == 0 and by_type.stdout == by_filter.stdout
        assert by_type.stdout.count(b"\n") == 1 and b"(seq 2)" in by_type.stdout and b"Unknown" in by_type.stdout
    r = run_cli(["decode", "--type", "Bogus", "-"], stdin=data)
    assert r.code == 2 and "Heartbeat, Schema_negotiation, Unknown) (see " in r.stderr


def test_y_reaches_row_fields_named_as_ocaml_names_them() -> None:
    """A prime (`px'`) and letters beyond ASCII (`café`): OCaml record field
    names that -Y could not address ("unexpected character")."""
    fields = b'((name px\')(typ Int)(default()))((name "caf\\195\\169")(typ Int)(default()))'
    stream = run_cli(["encode"], stdin=_ONE_FIELD % (fields, b"\\001\\001\\000\\004"))
    assert stream.code == 0, stream.stderr
    for expression, selected in [
        ("field.px' == 4", 1),
        ("field.px' != 4", 0),
        ("field.café", 0),  # the Patch updates px' only
        ("type == Delta and not field.café", 1),
    ]:
        r = run_cli(["decode", "-Y", expression, "-"], stdin=stream.stdout)
        assert (r.code, r.stdout.count(b"\n")) == (0, selected), (expression, r.stderr)


def test_usage_errors_are_one_line_and_a_group_alone_shows_its_help() -> None:
    r = run_cli(["decode", "-c", "-1", "x"])
    assert (r.code, r.stderr) == (
        2,
        "ripple: decode: Invalid value for '--count' / '-c': -1 is not in the range x>=0. "
        "(see 'ripple decode --help')\n",
    )
    r = run_cli(["decoed"])
    assert (r.code, r.stderr) == (2, "ripple: No such command 'decoed'. (see 'ripple --help')\n")
    r = run_cli(["schema"])
    assert r.code == 2 and r.stderr.startswith("Usage: ripple schema [OPTIONS] COMMAND [ARGS]...\n")
    assert "  extract " in r.stderr


def test_schema_extract_does_not_write_a_schema_that_schemas_would_refuse(tmp_path: Path) -> None:
    """A Handshake may carry a record naming a field twice (no OCaml record
    can): extract writes the others and says so of it, exit 3; the
    directory stays one that --schemas takes (it held a file that made
    every verify --schemas DIR exit 3)."""
    good = b"(g((name g)(version 1)(key Int)(fields(((name a)(typ Int)(default()))))))"
    bad = b"(d((name d)(version 1)(key Int)(fields(((name a)(typ Int)(default()))((name a)(typ Int)(default()))))))"
    text = (
        b"((seq 1)(time_ns 1)(schema ripple.handshake/v1)(msg(Handshake((source_worker_id w)(output_schemas("
        + good
        + bad
        + b"))(protocol_version 1)))))\n"
    )
    stream = run_cli(["encode"], stdin=text)
    assert stream.code == 0, stream.stderr
    out = tmp_path / "schemas"
    r = run_cli(["schema", "extract", "-o", str(out), "-"], stdin=stream.stdout)
    assert r.code == 3
    assert r.stderr == "ripple: d/v1: not written: it names field a twice in its row\n"
    assert sorted(p.name for p in out.iterdir()) == ["g_v1.sexp"]
    assert run_cli(["verify", "--schemas", str(out), str(EXAMPLES / "session.ripple")]).code == 0


def test_schema_extract_into_a_file_is_exit_3(tmp_path: Path) -> None:
    (tmp_path / "afile").write_bytes(b"")
    r = run_cli(["schema", "extract", "-o", str(tmp_path / "afile"), str(EXAMPLES / "session.ripple")])
    assert (r.code, r.stderr) == (3, f"ripple: {tmp_path / 'afile'}: cannot create directory: a file is there\n")


def test_a_stream_given_as_a_schema_file_is_said_so() -> None:
    """It was `not a schema: line 1, column 256: unexpected ')'`."""
    session = str(EXAMPLES / "session.ripple")
    r = run_cli(["schema", "check", "--reader", session, "--writer", str(EXAMPLES / "schemas" / "vwap_v2.sexp")])
    assert (r.code, r.stderr) == (
        3,
        f"ripple: {session}: not a schema: a Ripple stream (ripple schema extract writes its schemas out)\n",
    )
    pcap = str(EXAMPLES / "beats.pcap")
    r = run_cli(["verify", "--schemas", pcap, session])
    assert (r.code, r.stderr) == (3, f"ripple: {pcap}: not a schema: binary data, not the text of an s-expression\n")


_DUP_HANDSHAKE = (
    b"((seq 1)(time_ns 1)(schema ripple.handshake/v1)(msg(Handshake((source_worker_id w)(output_schemas("
    b"(first((name v)(version 1)(key String)(fields(((name p)(typ Int)(default())))))) %s"
    b"))(protocol_version 1)))))\n"
)
_DUP_LAST = b"(last((name v)(version 1)(key String)(fields(((name p)(typ Float)(default()))))))"
_DUP_SAME = b"(again((name v)(version 1)(key String)(fields(((name p)(typ Int)(default()))))))"
_DUP_DELTA = (
    b"((seq 2)(time_ns 2)(schema v/v1)(msg(Delta((source_output last)(key k)(delta(Set((p 1.5))))"
    b"(sequence_no 1)(watermark_ns())))))\n"
)


@pytest.mark.parametrize("pure", ["0", "1"])
def test_a_handshake_declaring_a_fingerprint_twice_is_a_warning(monkeypatch: pytest.MonkeyPatch, pure: str) -> None:
    """The reference does not say which of two different declarations of
    one fingerprint holds: decode and encode took the last, schema show and
    extract the first, and verify said nothing.  Now the last everywhere,
    and a warning (the same schema twice is none)."""
    monkeypatch.setenv("RIPPLE_PURE", pure)
    text = _DUP_HANDSHAKE % _DUP_LAST + _DUP_DELTA
    stream = run_cli(["encode"], stdin=text)
    assert stream.code == 0, stream.stderr
    v = run_cli(["verify", "-"], stdin=stream.stdout)
    warning = "duplicate_schema: v/v1 declared twice, differently (outputs first and last): the last is used"
    assert (v.code, v.text.splitlines()[1]) == (0, f"  warning: offset 0 (seq 1): {warning}")
    assert run_cli(["verify", "--strict", "-"], stdin=stream.stdout).code == 1
    d = run_cli(["decode", "-"], stdin=stream.stdout)
    assert d.stdout.splitlines()[1] == _DUP_DELTA.rstrip()  # the Float schema: 1.5
    shown = run_cli(["schema", "show", "-"], stdin=stream.stdout)
    assert shown.code == 0 and b"(typ Float)" in shown.stdout and b"(typ Int)" not in shown.stdout
    same = run_cli(["encode"], stdin=_DUP_HANDSHAKE % _DUP_SAME)
    assert run_cli(["verify", "-"], stdin=same.stdout).text.endswith("verify: 1 stream, 1 message, 0 problems\n")
