"""A veth pair between two network namespaces the test makes (Ethernet,
1500-byte MTU, offloads off: each packet on the wire is one segment as
the peer's TCP cut it), and a capture of a conversation across it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from livecap import closed_all, tcpdump

PEER = Path(__file__).with_name("nspeer.py")
A_ADDR, B_ADDR = "10.213.0.1", "10.213.0.2"
PORT = 9000


@dataclass(frozen=True)
class Veth:
    a: str  # namespace of the client side, where the capture runs (interface va)
    b: str  # namespace of the server side (interface vb)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


def require_netns() -> None:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    for tool in ("ip", "ethtool"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is missing: make system-deps installs it")


@contextmanager
def veth_pair() -> Iterator[Veth]:
    require_netns()
    tag = f"rpl{os.getpid()}"
    ns = Veth(f"{tag}a", f"{tag}b")
    try:
        for name in (ns.a, ns.b):
            _ip("netns", "add", name)
            _ip("-n", name, "link", "set", "lo", "up")
        _ip("link", "add", f"{tag}va", "netns", ns.a, "type", "veth", "peer", "name", f"{tag}vb", "netns", ns.b)
        for name, side, addr in ((ns.a, "va", A_ADDR), (ns.b, "vb", B_ADDR)):
            _ip("-n", name, "link", "set", f"{tag}{side}", "name", side)
            _ip("-n", name, "link", "set", side, "mtu", "1500", "up")
            _ip("-n", name, "addr", "add", f"{addr}/24", "dev", side)
            off = ["tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off"]
            subprocess.run(["ip", "netns", "exec", name, "ethtool", "-K", side, *off], check=True, capture_output=True)
        yield ns
    finally:
        for name in (ns.a, ns.b):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)


def capture_over_veth(path: Path, payload: Path, connections: int, seed: int) -> None:
    """`connections` conversations across a fresh veth pair, each carrying
    `payload` both ways, captured on the client's side into `path`."""
    with veth_pair() as ns:
        peer = [sys.executable, str(PEER)]
        args = [B_ADDR, str(PORT), str(connections), str(payload)]
        server = subprocess.Popen(["ip", "netns", "exec", ns.b, *peer, "serve", *args], stdout=subprocess.PIPE)
        try:
            assert server.stdout is not None and server.stdout.readline() == b"listening\n"
            with tcpdump(path, f"tcp port {PORT}", "va", netns=ns.a, until=closed_all(PORT, connections)):
                subprocess.run(["ip", "netns", "exec", ns.a, *peer, "send", *args, str(seed)], check=True, timeout=120)
            assert server.wait(timeout=60) == 0
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
