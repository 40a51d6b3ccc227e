"""From inputs to tasks: the scan tasks of the first pass, then, with what
they found, the decode tasks and the settings every task shares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ripple_cli.codec.schema import Schema

from .inputs import InputFile
from .scan import ConnSeen, ScanResult
from .split import plan_ranges
from .tasks import CaptureFile, ConnKey, ConnPart, RawRange, Rotated, RotatedPart, Settings, Task

DEFAULT_SPLIT = 64 << 20


def scan_tasks(inputs: Sequence[InputFile], split_size: int = DEFAULT_SPLIT) -> list[Task]:
    """Raw streams in byte ranges, captures whole: the tasks of both passes
    (the decode pass adds what the scan found)."""
    tasks: list[Task] = []
    for inp in inputs:
        if inp.whole:
            tasks.append(CaptureFile(inp.path, sibling=inp.kind == "sibling"))
        else:
            tasks.extend(RawRange(inp.path, inp.size, s, e) for s, e in plan_ranges(inp.size, split_size))
    return tasks


@dataclass
class Plan:
    settings: Settings
    tasks: list[Task]  # one partition each
    rotated_parts: list[RotatedPart]  # the files to read for the shuffle
    rotated: dict[ConnKey, Rotated]  # the connections it groups

    @property
    def handshakes(self) -> int:
        return len(self.settings.schemas)


def decode_plan(
    tasks: Sequence[Task], scans: Sequence[ScanResult], settings: Settings, file_schemas: Sequence[Schema] = ()
) -> Plan:
    """`scans[i]` is what the scan of `tasks[i]` found."""
    schemas: list[Schema] = list(file_schemas)
    for scan in scans:
        schemas.extend(s for hs in scan.handshakes for s in hs.schemas)
    settings = replace(settings, schemas=tuple(_dedup(schemas)))

    # Rotated connections: seen in two files or more, and cut in one of them.
    by_key: dict[ConnKey, list[ConnSeen]] = {}
    ranks: dict[str, int] = {}
    for task, scan in zip(tasks, scans, strict=True):
        if isinstance(task, CaptureFile):
            ranks[task.path] = len(ranks)
            for c in scan.connections:
                by_key.setdefault(c.key, []).append(c)
    rotated: dict[ConnKey, Rotated] = {}
    for key, seen in by_key.items():
        if len({c.path for c in seen}) > 1 and any(c.cut for c in seen):
            # Capture order: a file's first packet of the connection, then
            # the order the files were given in.
            seen.sort(key=lambda c: (c.first_ns, ranks[c.path], c.connection))
            rotated[key] = Rotated(key, tuple(ConnPart(c.path, ranks[c.path], c.connection, c.first_ns) for c in seen))
    keys_by_file: dict[str, set[ConnKey]] = {}
    for key, group in rotated.items():
        for part in group.parts:
            keys_by_file.setdefault(part.path, set()).add(key)

    # Each raw range gets the worker of the last Handshake before it.
    handshakes: dict[str, list[tuple[int, bytes]]] = {}
    for scan in scans:
        for hs in scan.handshakes:
            if hs.offset >= 0:
                handshakes.setdefault(hs.path, []).append((hs.offset, hs.worker))
    out: list[Task] = []
    for task in tasks:
        if isinstance(task, RawRange):
            before = [w for off, w in handshakes.get(task.path, ()) if off < task.start]
            out.append(replace(task, worker=before[-1] if before else None))
        else:
            out.append(replace(task, rotated=frozenset(keys_by_file.get(task.path, ()))))
    parts = [RotatedPart(path, ranks[path], frozenset(keys)) for path, keys in sorted(keys_by_file.items())]
    return Plan(settings, out, parts, rotated)


def _dedup(schemas: list[Schema]) -> list[Schema]:
    """One per fingerprint, the last given winning (as a later Handshake
    would in a stream), in first-seen order."""
    last: dict[bytes, Schema] = {}
    for s in schemas:
        last[s.fingerprint] = s
    return list(last.values())
