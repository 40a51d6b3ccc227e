"""Imports run one way, down the layers of ripple_cli.

LAYERS is the one place the order is written (ARCHITECTURE.md draws it):
a package may import from the packages of lower layers and from itself,
never from its own layer's other packages or from above.  Every import
counts, at module level or inside a function, under TYPE_CHECKING or not:
each is a dependency someone reading the code has to follow.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "ripple_cli"

# Bottom first.  A name is a subpackage or a module directly under ripple_cli.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),  # exit codes and the exceptions that carry them
    ("sexp",),  # s-expressions as sexplib writes and reads them
    ("terminal",),  # the injected Environment: streams, width, colour
    ("capture",),  # pcap/pcapng, packets, TCP reassembly -> stream events
    ("codec",),  # Ripple's bytes: envelope, bin_prot, schemas, values, text, the C module
    ("protocols",),  # the dissector contract, the message contract, each protocol
    ("analysis",),  # what is learnt from decoded items: filter, selection, report, verify
    ("sources",),  # where bytes come from (files, stdin, schema files) and go
    ("flow",),  # events -> demux -> dissectors -> a sink: the pipeline
    ("render",),  # sinks that write: sexp, hum, table, json; stream and protocol lists
    ("tap", "replay", "batch", "wireshark"),  # the live tap, replay, the Spark pipeline, Lua dissectors
    ("cli",),  # the commands, options, the exit-code wrapper
    ("__main__",),
)
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}


def unit_of(module: str) -> str | None:
    """`ripple_cli.codec.fast.lane` -> `codec`; None outside ripple_cli."""
    parts = module.split(".")
    if parts[0] != "ripple_cli" or len(parts) < 2:
        return None
    return parts[1]


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, me: str | None = None) -> list[tuple[int, str]]:
    """(line, module) of every import of ripple_cli in the file (the module `me`)."""
    tree = ast.parse(path.read_text(), str(path))
    me = me or module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.append((node.lineno, target))
    return [(line, m) for line, m in out if m.split(".")[0] == "ripple_cli"]


def all_edges() -> list[tuple[str, int, str, str]]:
    """(file, line, from unit, to unit) for every import across units."""
    edges = []
    for path in sorted(PACKAGE.rglob("*.py")):
        src = unit_of(module_name(path))
        if src is None:
            continue
        for line, target in imports_of(path):
            dst = unit_of(target)
            if dst is not None and dst != src:
                edges.append((str(path.relative_to(PACKAGE.parent)), line, src, dst))
    return edges


def test_every_unit_has_a_layer() -> None:
    units = {unit_of(module_name(p)) for p in PACKAGE.rglob("*.py")} - {None}
    assert units <= set(RANK), f"give these a layer in LAYERS: {sorted(units - set(RANK))}"


def test_imports_run_down_the_layers() -> None:
    wrong = [
        f"{file}:{line}: {src} (layer {RANK[src]}) imports {dst} (layer {RANK[dst]})"
        for file, line, src, dst in all_edges()
        if RANK[dst] >= RANK[src]
    ]
    assert not wrong, "imports that run up or across a layer:\n" + "\n".join(wrong)


def test_no_circle_between_packages() -> None:
    graph: dict[str, set[str]] = {}
    for _file, _line, src, dst in all_edges():
        graph.setdefault(src, set()).add(dst)

    def on_circle(start: str) -> bool:
        seen: set[str] = set()
        todo = list(graph.get(start, ()))
        while todo:
            n = todo.pop()
            if n == start:
                return True
            if n not in seen:
                seen.add(n)
                todo.extend(graph.get(n, ()))
        return False

    circles = sorted(a for a in graph if on_circle(a))
    assert not circles, f"packages on a circle of imports: {circles}"


@pytest.mark.parametrize(
    ("module", "expected"),
    [("ripple_cli.codec.fast.lane", "codec"), ("ripple_cli.errors", "errors"), ("os.path", None)],
)
def test_unit_of(module: str, expected: str | None) -> None:
    assert unit_of(module) == expected


def test_the_test_sees_an_upward_import(tmp_path: Path) -> None:
    f = tmp_path / "x.py"
    f.write_text("def f():\n    from ripple_cli.cli.main import main\n    from ..tap import live\n")
    assert imports_of(f, "ripple_cli.render.x") == [(2, "ripple_cli.cli.main"), (3, "ripple_cli.tap")]
