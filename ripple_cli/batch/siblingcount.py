"""`stats`' count of the sibling protocols' messages (Lumberjack, rstmdb
RCP, Pravega, Reactive Streams), per protocol and message type: they have
no rows in the all-messages table, so each task counts them as it decodes.

Each task's counts are kept apart, under the task's number, until the
report is made: a task Spark runs again gives the same counts under the
same number, so none is counted twice (Spark may apply an accumulator's
update from a task run more than once).
"""

from __future__ import annotations

from typing import Any

from ripple_cli.protocols.base import ProtoMessage

# (protocol, message type) -> [messages, bytes on the wire]
Tally = dict[tuple[str, str], list[int]]


def count(tally: Tally, msg: ProtoMessage) -> None:
    c = tally.get((msg.protocol, msg.type))
    if c is None:
        tally[(msg.protocol, msg.type)] = [1, msg.size]
    else:
        c[0] += 1
        c[1] += msg.size


def sibling_records(by_task: dict[int, Tally]) -> list[dict[str, Any]]:
    """The report's `siblings`: one record per (protocol, type), in that order."""
    total: Tally = {}
    for tally in by_task.values():
        for key, (n, size) in tally.items():
            c = total.setdefault(key, [0, 0])
            c[0] += n
            c[1] += size
    return [{"protocol": p, "type": t, "messages": n, "bytes": size} for (p, t), (n, size) in sorted(total.items())]
