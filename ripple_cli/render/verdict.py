"""How `verify` reports: a text summary, JSON for scripts, JUnit XML for CI."""

from __future__ import annotations

from typing import Any

from ripple_cli.analysis.report import Report, SourceReport
from ripple_cli.codec.problems import Problem
from ripple_cli.sexp.atoms import escape_text
from ripple_cli.terminal.environment import Environment
from ripple_cli.terminal.words import plural

VERIFY_JSON_VERSION = 1


def problem_line(report: Report, p: Problem) -> str:
    label = "error" if report.is_problem(p) else "warning"
    # One f-string a line in the usual cases: a stream may list 10,000.
    if p.offset < 0:  # a capture's note: its detail says what it skipped
        return f"  {label}: {p.kind}: {p.detail}"
    if p.skipped:
        seq = f" (seq {p.seq})" if p.seq is not None else ""
        skipped = f"; skipped {plural(p.skipped, 'byte')} to offset {p.offset + p.skipped}"
        return f"  {label}: offset {p.offset}{seq}: {p.kind}: {p.detail}{skipped}"
    if p.seq is None:
        return f"  {label}: offset {p.offset}: {p.kind}: {p.detail}"
    return f"  {label}: offset {p.offset} (seq {p.seq}): {p.kind}: {p.detail}"


def source_summary(report: Report, src: SourceReport) -> str:
    errors, warnings = src.counts(report.strict)
    types = ", ".join(f"{n} {t}" for t, n in sorted(src.by_type.items()))
    head = f"{src.name}: {plural(src.messages, 'message')}" + (f" ({types})" if types else "")
    head += f", {plural(src.bytes, 'byte')}"
    if not errors and not warnings:
        # An input with no message is not OK for verify (it fails the run),
        # unless --allow-empty said so, when it is not listed as empty.
        return head + (": empty" if src.empty else ": OK")
    parts = [plural(errors, "problem")] if errors else []
    if warnings:
        parts.append(plural(warnings, "warning"))
    return head + ": " + ", ".join(parts)


def text_report(report: Report, unreadable: list[str]) -> str:
    lines: list[str] = []
    for src in report.sources:
        lines.append(source_summary(report, src))
        lines.extend(problem_line(report, p) for p in src.problems)
        if src.unlisted:
            lines.append(f"  ... and {src.unlisted} more problems not listed")
        if src.analysis is not None:
            lines.extend(analysis_lines(src.analysis))
    total_msgs = sum(s.messages for s in report.sources)
    tail = f"verify: {plural(len(report.sources), 'stream')}, {plural(total_msgs, 'message')}, "
    tail += plural(report.problem_count, "problem")
    if report.warning_count:
        tail += f", {plural(report.warning_count, 'warning')}"
    if unreadable:
        tail += f", {len(unreadable)} unreadable"
    if report.empty:
        tail += f", {plural(len(report.empty), 'input')} with no message"
    if report.interrupted:
        tail += ", interrupted"
    lines.append(tail)
    # Input names and a connection's analysis may hold what does not print
    # (bytes from the wire, a file name that is not UTF-8): escaped.
    return "\n".join([escape_text(line) for line in lines]) + "\n"


def analysis_lines(analysis: dict[str, Any]) -> list[str]:
    """A connection summary, a line per entry, or per item of an entry that
    is a table (a dict or list of records):
        connection: requests: 2
        connection: ops APPLY_EVENT: requests 1, answered 1, unanswered 0
    Empty entries are left out."""
    from ripple_cli.codec.jsonview import dumps

    def value(v: Any) -> str:
        return v if isinstance(v, str) else dumps(v).decode()

    def pairs(d: dict[str, Any]) -> str:
        return ", ".join(f"{a} {value(b)}" for a, b in d.items())

    out = []
    for k, v in analysis.items():
        if k == "protocol" or v in ({}, [], None, ""):
            continue
        if isinstance(v, dict) and all(isinstance(x, dict) for x in v.values()):
            out += [f"  connection: {k} {name}: {pairs(sub)}" for name, sub in v.items()]
        elif isinstance(v, list) and all(isinstance(x, dict) and x for x in v):
            for item in v:
                first, *rest = item.items()
                label = value(first[1]) if isinstance(first[1], str) else pairs(dict([first]))
                out.append(f"  connection: {k} {label}: {pairs(dict(rest))}".rstrip(": "))
        elif isinstance(v, dict):
            out.append(f"  connection: {k}: {pairs(v)}")
        else:
            out.append(f"  connection: {k}: {value(v)}")
    return out


def _problem_json(report: Report, p: Problem) -> dict[str, Any]:
    return {
        "offset": p.offset if p.offset >= 0 else None,
        "kind": p.kind,
        "severity": "error" if report.is_problem(p) else "warning",
        "detail": p.detail,
        "skipped": p.skipped,
        "seq": p.seq,
        **({"extra": p.extra} if p.extra else {}),
    }


def json_report(report: Report, unreadable: list[str]) -> bytes:
    from ripple_cli.codec.jsonview import dumps  # here: verify's start-up is a good part of its time

    doc = {
        "v": VERIFY_JSON_VERSION,
        "ok": report.problem_count == 0 and not unreadable and not report.empty and not report.interrupted,
        "strict": report.strict,
        "problems": report.problem_count,
        "warnings": report.warning_count,
        "streams": [
            {
                "source": s.name,
                "messages": s.messages,
                "bytes": s.bytes,
                "by_type": dict(sorted(s.by_type.items())),
                "problems": [_problem_json(report, p) for p in s.problems],
                "problems_not_listed": s.unlisted,
                **({"analysis": s.analysis} if s.analysis is not None else {}),
            }
            for s in report.sources
        ],
        "unreadable": unreadable,
        "empty": report.empty,
        "interrupted": report.interrupted,
    }
    return dumps(doc) + b"\n"


def junit_report(report: Report, unreadable: list[str]) -> bytes:
    """One test case per stream; its problems are the failure's text."""
    import xml.etree.ElementTree as ET  # here: verify's start-up is a good part of its time

    cases = len(report.sources) + len(unreadable) + len(report.empty)
    failures = sum(1 for s in report.sources if s.counts(report.strict)[0]) + len(report.empty)
    suites = ET.Element(
        "testsuites", name="ripple verify", tests=str(cases), failures=str(failures), errors=str(len(unreadable))
    )
    suite = ET.SubElement(
        suites, "testsuite", name="ripple verify", tests=str(cases), failures=str(failures), errors=str(len(unreadable))
    )
    for s in report.sources:
        case = ET.SubElement(suite, "testcase", classname="ripple.verify", name=escape_text(s.name))
        errors, warnings = s.counts(report.strict)
        # XML 1.0 holds no control character but tab and newline: escaped.
        lines = [escape_text(problem_line(report, p).strip()) for p in s.problems]
        if s.unlisted:  # as the text report ends its list
            lines.append(f"... and {s.unlisted} more problems not listed")
        body = "\n".join(lines)
        if errors:
            failure = ET.SubElement(case, "failure", message=plural(errors, "problem"), type="ripple.verify")
            failure.text = body
        elif warnings:
            out = ET.SubElement(case, "system-out")
            out.text = body
    for name in unreadable:
        case = ET.SubElement(suite, "testcase", classname="ripple.verify", name=escape_text(name))
        ET.SubElement(case, "error", message="unreadable input", type="ripple.unreadable")
    for name in report.empty:
        case = ET.SubElement(suite, "testcase", classname="ripple.verify", name=escape_text(f"{name} (messages)"))
        ET.SubElement(case, "failure", message="no message", type="ripple.empty")
    ET.indent(suites)
    data: bytes = ET.tostring(suites, encoding="utf-8", xml_declaration=True)
    return data + b"\n"


def write_reports(env: Environment, report: Report, unreadable: list[str], fmt: str, junit: str | None) -> None:
    """The report on stdout as `fmt` (text or json), and as JUnit XML to `junit`."""
    if fmt == "json":
        env.stdout.write(json_report(report, unreadable))
    else:
        env.stdout.write(text_report(report, unreadable).encode())
    env.stdout.flush()
    if junit:
        from ripple_cli.sources.output import binary_output

        with binary_output(junit, env) as f:
            f.write(junit_report(report, unreadable))
