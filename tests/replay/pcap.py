"""Captures built in the tests with dpkt: Ethernet / IPv4 / TCP, a whole
connection (handshake, data both ways, FINs) per pair of byte strings."""

from __future__ import annotations

import io
import socket
from dataclasses import dataclass

import dpkt  # type: ignore[import-untyped, unused-ignore]

CLIENT_MAC = b"\x02\x00\x00\x00\x00\x01"
SERVER_MAC = b"\x02\x00\x00\x00\x00\x02"


@dataclass(frozen=True)
class Connection:
    client_bytes: bytes  # what the client (the producer) sent
    server_bytes: bytes = b""  # what the server answered
    client_port: int = 40000
    server_port: int = 9000


def _frame(src: bytes, dst: bytes, sport: int, dport: int, seq: int, ack: int, flags: int, data: bytes) -> bytes:
    tcp = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq, ack=ack, flags=flags, win=65535, data=data)
    ip = dpkt.ip.IP(src=src, dst=dst, p=dpkt.ip.IP_PROTO_TCP, ttl=64, data=tcp)
    ip.len = len(ip)  # dpkt fills checksums when packed; the length is ours to keep right
    src_mac, dst_mac = (CLIENT_MAC, SERVER_MAC) if src.endswith(b"\x01") else (SERVER_MAC, CLIENT_MAC)
    eth = dpkt.ethernet.Ethernet(src=src_mac, dst=dst_mac, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
    return bytes(eth)


def build_pcap(connections: list[Connection], segment: int = 1400, gap_s: float = 0.01, t0: float = 1.7e9) -> bytes:
    """One connection after the other; each data segment `gap_s` after the
    previous packet, the server's answer after the client's first segment."""
    out = io.BytesIO()
    writer = dpkt.pcap.Writer(out, nano=True)
    t = t0
    client_ip = socket.inet_aton("10.0.0.1")
    server_ip = socket.inet_aton("10.0.0.2")

    def put(frame: bytes) -> None:
        nonlocal t
        writer.writepkt(frame, ts=t)
        t += gap_s

    for conn in connections:
        cp, sp = conn.client_port, conn.server_port
        cseq, sseq = 1000, 5000
        put(_frame(client_ip, server_ip, cp, sp, cseq, 0, dpkt.tcp.TH_SYN, b""))
        put(_frame(server_ip, client_ip, sp, cp, sseq, cseq + 1, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, b""))
        cseq += 1
        sseq += 1
        put(_frame(client_ip, server_ip, cp, sp, cseq, sseq, dpkt.tcp.TH_ACK, b""))
        chunks = [conn.client_bytes[i : i + segment] for i in range(0, len(conn.client_bytes), segment)]
        for i, chunk in enumerate(chunks):
            put(_frame(client_ip, server_ip, cp, sp, cseq, sseq, dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, chunk))
            cseq += len(chunk)
            if i == 0 and conn.server_bytes:
                data = conn.server_bytes
                put(_frame(server_ip, client_ip, sp, cp, sseq, cseq, dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, data))
                sseq += len(data)
        fin_ack = dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK
        put(_frame(client_ip, server_ip, cp, sp, cseq, sseq, fin_ack, b""))
        put(_frame(server_ip, client_ip, sp, cp, sseq, cseq + 1, fin_ack, b""))
        put(_frame(client_ip, server_ip, cp, sp, cseq + 1, sseq + 1, dpkt.tcp.TH_ACK, b""))
    return out.getvalue()
