"""CI-safe verify: an input with no message, or a selection (--stream, -Y)
that selects nothing, fails with one line saying so, unless --allow-empty."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, run_cli
from tests.replay.pcap import Connection, build_pcap

DEMO = EXAMPLES / "demo.ripple"
MORE = ["--schemas", str(EXAMPLES / "more-schemas")]  # the demo's orders/v3


def _capture(tmp_path: Path) -> Path:
    path = tmp_path / "one.pcap"
    path.write_bytes(build_pcap([Connection(DEMO.read_bytes())]))
    return path


def test_empty_input_fails_with_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty.ripple"
    empty.write_bytes(b"")
    r = run_cli(["verify", str(empty)])
    assert r.code == 1
    assert r.stderr == f"ripple: {empty}: no message (--allow-empty accepts that)\n"
    assert r.text.splitlines() == [
        f"{empty}: 0 messages, 0 bytes: empty",
        "verify: 1 stream, 0 messages, 0 problems, 1 input with no message",
    ]


def test_allow_empty_accepts_it(tmp_path: Path) -> None:
    empty = tmp_path / "empty.ripple"
    empty.write_bytes(b"")
    r = run_cli(["verify", "--allow-empty", str(empty)])
    assert (r.code, r.stderr) == (0, "")
    assert r.text.endswith(": OK\nverify: 1 stream, 0 messages, 0 problems\n")


def test_empty_stdin_fails() -> None:
    r = run_cli(["verify", "-"], stdin=b"")
    assert r.code == 1
    assert r.stderr == "ripple: <stdin>: no message (--allow-empty accepts that)\n"


def test_stream_that_selects_nothing_fails(tmp_path: Path) -> None:
    cap = _capture(tmp_path)
    assert run_cli(["verify", *MORE, "--stream", "1", str(cap)]).code == 0
    r = run_cli(["verify", "--stream", "9", str(cap)])
    assert r.code == 1
    assert r.stderr == f"ripple: {cap}: --stream 9 selects no message (--allow-empty accepts that)\n"
    assert run_cli(["verify", "--allow-empty", "--stream", "9", str(cap)]).code == 0


def test_stream_on_a_raw_stream_selects_nothing(tmp_path: Path) -> None:
    """A raw stream has no connection: --stream checks nothing of it, and
    decode shows nothing of it, with a line saying why (ripple-decode(1))."""
    r = run_cli(["verify", "--stream", "1", str(DEMO)])
    assert r.code == 1
    assert r.text.splitlines()[-1] == "verify: 1 stream, 0 messages, 0 problems, 1 input with no message"
    assert r.stderr == f"ripple: {DEMO}: --stream 1 selects no message (--allow-empty accepts that)\n"
    d = run_cli(["decode", "--stream", "1:c2s", str(DEMO), str(_capture(tmp_path))])
    assert d.code == 0
    assert d.stdout == (EXAMPLES / "demo.sexp").read_bytes()  # the capture's connection 1 only
    assert d.stderr == f"ripple: {DEMO}: --stream 1:c2s selects nothing of a raw stream, which has no connection\n"


def test_stream_of_no_connection_is_said_by_decode(tmp_path: Path) -> None:
    cap = _capture(tmp_path)
    d = run_cli(["decode", "--stream", "9", str(cap)])
    assert (d.code, d.stdout) == (0, b"")
    assert d.stderr == f"ripple: {cap}: --stream 9 selects no stream of this capture (--list-streams lists them)\n"


def test_stream_zero_is_refused() -> None:
    for cmd in ("decode", "verify"):
        r = run_cli([cmd, "--stream", "0", str(DEMO)])
        assert r.code == 2
        assert "Invalid value for --stream: '0': connections are numbered from 1" in r.stderr


def test_filter_that_selects_nothing_fails() -> None:
    assert run_cli(["verify", *MORE, "-Y", "type == Delta", str(DEMO)]).code == 0
    r = run_cli(["verify", "-Y", 'key == "NOSUCH"', str(DEMO)])
    assert r.code == 1, r.stderr
    assert r.stderr == f"ripple: {DEMO}: -Y 'key == \"NOSUCH\"' selects no message (--allow-empty accepts that)\n"
    assert run_cli(["verify", "--allow-empty", "-Y", 'key == "NOSUCH"', str(DEMO)]).code == 0


def test_filters_inside_deltas_select_as_decode_does() -> None:
    """`key` and `field.NAME` in verify's -Y: the Deltas are decoded for
    them, so they select what decode's -Y selects (ripple-verify(1))."""
    for expr in ("key == AAPL", "field.price > 0"):
        shown = run_cli(["decode", *MORE, "-Y", expr, str(DEMO)]).stdout.count(b"\n")
        r = run_cli(["verify", *MORE, "-Y", expr, str(DEMO)])
        assert shown > 5 and r.text.splitlines()[-1] == f"verify: 1 stream, {shown} messages, 0 problems", r.text


def test_only_the_empty_input_is_named(tmp_path: Path) -> None:
    empty = tmp_path / "empty.ripple"
    empty.write_bytes(b"")
    r = run_cli(["verify", *MORE, str(DEMO), str(empty)])
    assert r.code == 1
    assert r.stderr == f"ripple: {empty}: no message (--allow-empty accepts that)\n"


def test_json_and_junit_say_so(tmp_path: Path) -> None:
    empty = tmp_path / "empty.ripple"
    empty.write_bytes(b"")
    junit = tmp_path / "report.xml"
    r = run_cli(["verify", "-F", "json", "--junit", str(junit), str(empty)])
    assert r.code == 1
    doc = json.loads(r.stdout)
    assert (doc["ok"], doc["problems"], doc["empty"]) == (False, 0, [str(empty)])
    xml = junit.read_text()
    assert 'failures="1"' in xml
    assert '<failure message="no message" type="ripple.empty"' in xml
    ok = json.loads(run_cli(["verify", *MORE, "-F", "json", str(DEMO)]).stdout)
    assert (ok["ok"], ok["empty"]) == (True, [])


def test_the_junit_report_says_what_it_does_not_list() -> None:
    """Past the problems kept, the failure's text ends as the text report's
    list does (it stopped without a word)."""
    from ripple_cli.analysis.report import Report
    from ripple_cli.protocols.ripple.rules import before_schema_problem
    from ripple_cli.render.verdict import junit_report

    report = Report(keep_problems=3)
    src = report.source("s")
    for i in range(5):
        report.problem(src, before_schema_problem(i * 100, i, b"x/v1"))
    xml = junit_report(report, []).decode()
    assert "error: offset 200 (seq 2): delta_before_schema" in xml
    assert "offset 300" not in xml
    assert xml.count("... and 2 more problems not listed") == 1


def test_junit_and_encode_write_through_a_link(tmp_path: Path) -> None:
    """As a redirection would: the link stays, its target gets the bytes
    (the link was replaced by a file, the target left as it was)."""
    import os

    target, link = tmp_path / "report.xml", tmp_path / "latest.xml"
    target.write_bytes(b"old")
    os.symlink(target.name, link)
    r = run_cli(["verify", "--junit", str(link), str(EXAMPLES / "session.ripple")])
    assert r.code == 0, r.stderr
    assert os.path.islink(link) and target.read_bytes().startswith(b"<?xml")
    out, out_link = tmp_path / "s.ripple", tmp_path / "s-link.ripple"
    os.symlink(out.name, out_link)  # dangling: the target is created, as `>` does
    text = run_cli(["decode", str(EXAMPLES / "session.ripple")]).stdout
    assert run_cli(["encode", "-o", str(out_link)], stdin=text).code == 0
    assert os.path.islink(out_link) and out.read_bytes() == (EXAMPLES / "session.ripple").read_bytes()


@pytest.mark.parametrize("command", ["encode", "junit", "wireshark"])
def test_a_fifo_or_a_device_as_the_output_is_written_not_replaced(tmp_path: Path, command: str) -> None:
    """-o /dev/null, a named pipe: written as a redirection writes them.
    The temporary file renamed into place replaced them with a regular file
    (as root, /dev/null became a file that filled up)."""
    import os
    import stat
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    session = EXAMPLES / "session.ripple"
    if command == "encode":
        r = run_cli(["encode", "-o", str(fifo)], stdin=run_cli(["decode", str(session)]).stdout)
    elif command == "junit":
        r = run_cli(["verify", "--junit", str(fifo), str(session)])
    else:
        r = run_cli(["wireshark", "-o", str(fifo), str(session)])
    reader.join(timeout=60)
    assert r.code == 0, r.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still the pipe
    expected = {"encode": session.read_bytes(), "junit": b"<?xml", "wireshark": b"--"}[command]
    assert got and got[0].startswith(expected), got[:1]


def test_the_empty_mark_follows_the_input_not_its_name() -> None:
    """`verify - -`: the first read of stdin has the messages, the second
    none; only the second is marked empty (both were)."""
    r = run_cli(["verify", "-", "-"], stdin=(EXAMPLES / "session.ripple").read_bytes())
    assert r.code == 1
    assert r.text.splitlines()[:2] == [
        "<stdin>: 5 messages (3 Delta, 1 Handshake, 1 Heartbeat), 465 bytes: OK",
        "<stdin>: 0 messages, 0 bytes: empty",
    ]
