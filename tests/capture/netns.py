"""Two network namespaces joined by a veth pair, with real kernel tunnels
between them: the tunnel tests' captures are made by the kernel itself.

`inside(name)` moves the calling thread into a namespace for a while:
sockets it makes there stay there, and threads and processes it starts
there (tcpdump, a conversation's clients) start there."""

from __future__ import annotations

import ctypes
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def ip(*args: str) -> None:
    res = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise AssertionError(f"ip {' '.join(args)}: {res.stderr.strip()}")


@contextmanager
def inside(name: str) -> Iterator[None]:
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    there = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        _setns(there)
        yield
    finally:
        _setns(home)
        os.close(there)
        os.close(home)


@dataclass
class Pair:
    """Namespaces `a` and `b`; veth `a`-side `veth` (10.77.0.1/24,
    fd77::1/64) and `b`-side (10.77.0.2/24, fd77::2/64)."""

    a: str
    b: str
    veth: str = "rv0"


def require_netns() -> None:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    try:
        ip("netns", "list")
    except (AssertionError, FileNotFoundError) as exc:
        pytest.skip(f"network namespaces are not available here: {exc}")


@contextmanager
def pair() -> Iterator[Pair]:
    require_netns()
    tag = f"ripple-{os.getpid()}"
    p = Pair(f"{tag}-a", f"{tag}-b")
    ip("netns", "add", p.a)
    try:
        ip("netns", "add", p.b)
        try:
            ip("-n", p.a, "link", "add", p.veth, "type", "veth", "peer", "name", p.veth, "netns", p.b)
            for ns, k in ((p.a, 1), (p.b, 2)):
                ip("-n", ns, "addr", "add", f"10.77.0.{k}/24", "dev", p.veth)
                ip("-n", ns, "-6", "addr", "add", f"fd77::{k}/64", "dev", p.veth, "nodad")
                ip("-n", ns, "link", "set", p.veth, "up")
                ip("-n", ns, "link", "set", "lo", "up")
            yield p
        finally:
            ip("netns", "del", p.b)
    finally:
        ip("netns", "del", p.a)


def vxlan(p: Pair, dev: str, vni: int, port: int, subnet: str, mtu: int) -> None:
    """A VXLAN tunnel `dev` between the pair over IPv4 (no lower device, so
    that its MTU may exceed what the veth carries: the kernel then fragments
    the outer packets), with `subnet`.1 and `subnet`.2 at its ends.  Each
    end knows the other's MAC address from the start: no ARP inside the
    tunnel, so that the tunnel carries only the conversation."""
    mac = [f"02:00:00:00:{vni:02x}:0{k}" for k in (1, 2)]
    for ns, me, peer in ((p.a, 1, 2), (p.b, 2, 1)):
        ip("-n", ns, "link", "add", dev, "address", mac[me - 1], "type", "vxlan", "id", str(vni),
           "dstport", str(port), "local", f"10.77.0.{me}", "remote", f"10.77.0.{peer}")  # fmt: skip
        ip("-n", ns, "link", "set", dev, "mtu", str(mtu), "up")
        ip("-n", ns, "addr", "add", f"{subnet}.{me}/24", "dev", dev)
        ip("-n", ns, "neigh", "replace", f"{subnet}.{peer}", "lladdr", mac[peer - 1], "dev", dev, "nud", "permanent")
