"""The inputs of a batch run: files, directories (walked, sorted) and globs,
local or by URL (s3://, gs://, hdfs://, file://: a prefix is a directory),
each told raw stream, pcap or pcapng by its first bytes, as decode does."""

from __future__ import annotations

import fnmatch
import glob
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from ripple_cli.capture.formats import MAGIC_SIZE, sniff_format
from ripple_cli.codec.envelope import MAGIC
from ripple_cli.errors import InputUnreadable, UsageProblem
from ripple_cli.sources.urls import discover_url, is_url, open_url

_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class InputFile:
    path: str  # as given, or joined to the directory it was found in
    size: int
    kind: str  # "raw", "pcap", "pcapng", or "sibling": a raw stream of a sibling protocol

    @property
    def is_capture(self) -> bool:
        return self.kind in ("pcap", "pcapng")

    @property
    def whole(self) -> bool:
        """Decoded whole, in one task: a capture, or a sibling protocol's raw
        stream (only Ripple's are split into byte ranges)."""
        return self.kind != "raw"


# How much of a raw file detection looks at, as decode's does for a raw
# stream (flow/demux.py: 64 KiB when no detector has decided).
_DETECT_HEAD = 64 << 10


def _kind(path: str) -> str:
    if is_url(path):
        with open_url(path) as f:
            return _kind_of(f)
    try:
        with open(path, "rb") as f:
            return _kind_of(f)
    except PermissionError:
        raise InputUnreadable(f"{path}: permission denied") from None
    except OSError as e:
        raise InputUnreadable(f"{path}: cannot open: {e.strerror or e}") from None


def _kind_of(f: BinaryIO) -> str:
    """Its first bytes tell a capture, or a Ripple stream; the rest of the
    detection head is read only for a raw file that may be a sibling's
    (an object store bills each byte asked of every input)."""
    head = f.read(MAGIC_SIZE)
    kind = sniff_format(head)
    if kind != "raw" or head == MAGIC:
        return kind
    head += f.read(_DETECT_HEAD - len(head))
    return "sibling" if _sibling(head) else kind


def _sibling(head: bytes) -> bool:
    """Whether decode's detection takes these first bytes of a raw file for
    a sibling protocol's (a file none recognises is Ripple's, as there)."""
    from ripple_cli.protocols import registry
    from ripple_cli.protocols.base import Detection

    for dissector in registry.detection_order():
        if dissector.detect(head) is Detection.YES:
            return dissector.name != "ripple"
    return False


def _walk(directory: str) -> list[str]:
    """A directory's files, sorted, hidden ones left out."""
    found: list[str] = []
    for root, _dirs, files in _each_directory_once(directory, hidden=False):
        found.extend(os.path.join(root, f) for f in files if not f.startswith("."))
    return found


def _each_directory_once(top: str, hidden: bool) -> Iterator[tuple[str, list[str], list[str]]]:
    """os.walk's (root, dirs, files), sorted, links to directories followed
    as `find -L` does (a capture set gathered with links is read whole),
    each directory once: a link back up is no loop.  `hidden`: hidden
    directories walked too."""
    seen = {os.path.realpath(top)}
    for root, dirs, files in os.walk(top, followlinks=True):
        kept = []
        for d in sorted(dirs):
            real = os.path.realpath(os.path.join(root, d))
            if (hidden or not d.startswith(".")) and real not in seen:
                seen.add(real)
                kept.append(d)
        dirs[:] = kept
        yield root, kept, sorted(files)


def _glob(pattern: str) -> list[str]:
    """glob.glob(pattern, recursive=True), but `**` visits each directory
    once, links followed: Python's glob follows links without a memory of
    where it has been, and two links back up (`sub/loop -> ..`, `sub/self
    -> ../sub`) made its `**` walk 2^40 paths (a hang, memory growing)."""
    if "**" not in pattern:
        return glob.glob(pattern)
    parts = pattern.split("/")
    fixed = 0
    while fixed < len(parts) - 1 and not _GLOB_CHARS & set(parts[fixed]):
        fixed += 1
    base = "/".join(parts[:fixed]) if fixed else ""
    rest = [p for p in parts[fixed:] if p]
    top = base or "."
    if not os.path.isdir(top):
        return []
    hidden = any(p.startswith(".") for p in rest)  # a component that names hidden ones: walk them too
    found: list[str] = []
    for root, kept, files in _each_directory_once(top, hidden):
        rel = os.path.relpath(root, top)
        under = [] if rel == "." else rel.split(os.sep)
        if _matches(rest, under):
            found.append(os.path.join(base, *under) if under else (base or "."))
        for name in [*kept, *files]:
            if _matches(rest, [*under, name]):
                found.append(os.path.join(base, *under, name))
    return sorted(set(found))


def _matches(pattern: list[str], names: list[str]) -> bool:
    """Whether a path (its names) matches glob's components: `**` any
    number of names (none hidden), another component one name (a hidden
    one only when the component starts with a dot)."""
    if not pattern:
        return not names
    head, tail = pattern[0], pattern[1:]
    if head == "**":
        if _matches(tail, names):
            return True
        return bool(names) and not names[0].startswith(".") and _matches(pattern, names[1:])
    if not names or (names[0].startswith(".") and not head.startswith(".")):
        return False
    return fnmatch.fnmatchcase(names[0], head) and _matches(tail, names[1:])


def discover(specs: Iterable[str]) -> list[InputFile]:
    """Every file the specs name, once each, in the order given (a
    directory's files sorted; a glob's matches sorted).  Hidden files in
    directories are skipped; an empty file is kept (it yields no rows)."""
    paths: list[str | InputFile] = []  # local paths, and files found by URL
    for spec in specs:
        if spec == "-":
            raise UsageProblem("export and stats read files, not stdin (-): save the stream to a file first")
        if is_url(spec):
            paths.extend(InputFile(f.name, f.size, "") for f in discover_url(spec))
        elif os.path.isdir(spec):
            paths.extend(_walk(spec))
        elif os.path.exists(spec):
            paths.append(spec)
        elif _GLOB_CHARS & set(spec):
            matches = sorted(_glob(spec))
            if not matches:
                raise InputUnreadable(f"{spec}: no file matches")
            for m in matches:
                paths.extend(_walk(m) if os.path.isdir(m) else [m])
        else:
            raise InputUnreadable(f"{spec}: no such file or directory")
    seen: set[str] = set()
    out: list[InputFile] = []
    for p in paths:
        if isinstance(p, InputFile):
            if p.path not in seen:
                seen.add(p.path)
                out.append(InputFile(p.path, p.size, _kind(p.path)))
            continue
        real = os.path.realpath(p)
        if real in seen or not os.path.isfile(p):
            continue
        seen.add(real)
        out.append(InputFile(p, os.path.getsize(p), _kind(p)))
    if not out:
        raise InputUnreadable(f"{', '.join(specs)}: no input files")
    return out
