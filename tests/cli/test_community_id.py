"""Community IDs in decode's outputs: a capture whose connections are the
spec's baseline flows (IPv4 and IPv6) carrying the demo stream, decoded
with seed 0 (the default) and --community-id-seed 1.  A raw stream has
none.  tshark's Community IDs are the same (tshark is required: without
it the test is skipped locally and fails under CI, as the other tests
against tshark)."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import dpkt  # type: ignore[import-untyped, unused-ignore]
import pytest

from tests.capture.mutate import pcap_bytes
from tests.conftest import EXAMPLES, run_cli
from tests.wireshark.tsharkkit import TSHARK, require_tshark

DEMO = (EXAMPLES / "demo.ripple").read_bytes()
# (client, client port, server, server port, seed 0, seed 1): tests/capture/test_community_id_baseline.py's vectors.
FLOWS = [
    ("1.2.3.4", 1122, "5.6.7.8", 3344, "1:wCb3OG7yAFWelaUydu0D+125CLM=", "1:HhA1B+6CoLbiKPEs5nhNYN4XWfk="),
    (
        "2001:470:e5bf:dead:4957:2174:e82c:4887",
        63943,
        "2607:f8b0:400c:c03::1a",
        25,
        "1:/qFaeAR+gFe1KYjMzVDsMv+wgU4=",
        "1:eJYTW6AOzFLlSUoESovMjnu7rMw=",
    ),
]


def _frame(src: str, dst: str, sport: int, dport: int, seq: int, flags: int, data: bytes = b"") -> bytes:
    tcp = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq, ack=0, flags=flags, win=65535, data=data)
    if ":" in src:
        ip: dpkt.Packet = dpkt.ip6.IP6(
            src=socket.inet_pton(socket.AF_INET6, src),
            dst=socket.inet_pton(socket.AF_INET6, dst),
            nxt=dpkt.ip.IP_PROTO_TCP,
            hlim=64,
            data=tcp,
        )
        ip.plen = len(bytes(tcp))
        kind = dpkt.ethernet.ETH_TYPE_IP6
    else:
        ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=dpkt.ip.IP_PROTO_TCP, ttl=64, data=tcp)
        ip.len = len(ip)
        kind = dpkt.ethernet.ETH_TYPE_IP
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=kind, data=ip))


@pytest.fixture(scope="module")
def baseline_pcap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Each flow: SYN, the demo stream in one segment from the client, FIN."""
    records = []
    t = 1_700_000_000_000_000_000
    for client, cport, server, sport, _s0, _s1 in FLOWS:
        for frame in (
            _frame(client, server, cport, sport, 100, dpkt.tcp.TH_SYN),
            _frame(client, server, cport, sport, 101, dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, DEMO),
            _frame(client, server, cport, sport, 101 + len(DEMO), dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK),
        ):
            records.append((t, frame))
            t += 1000
    path = tmp_path_factory.mktemp("cid") / "baseline.pcap"
    path.write_bytes(pcap_bytes(records))
    return path


@pytest.mark.parametrize("seed", [0, 1])
def test_list_streams_json(baseline_pcap: Path, seed: int) -> None:
    args = ["decode", "--list-streams", "-F", "jsonl", str(baseline_pcap)]
    r = run_cli(args if seed == 0 else [*args, "--community-id-seed", str(seed)])
    assert r.code == 0, r.stderr
    records = [json.loads(line) for line in r.text.splitlines()]
    assert [(x["stream"], x["messages"]) for x in records] == [
        ("1:c2s", 300),
        ("1:s2c", 0),
        ("2:c2s", 300),
        ("2:s2c", 0),
    ]
    # Both directions of a connection: one ID.
    assert [x["community_id"] for x in records] == [f[4 + seed] for f in FLOWS for _ in "cs"]


def test_list_streams_table_drops_the_community_id_first(baseline_pcap: Path) -> None:
    wide = run_cli(["decode", "--list-streams", str(baseline_pcap)], tty=True, width=240).text.splitlines()
    assert wide[0].split()[:5] == ["stream", "protocol", "from", "to", "community_id"]
    assert [FLOWS[0][4], FLOWS[0][4], FLOWS[1][4], FLOWS[1][4]] == [row.split()[4] for row in wide[1:]]
    # Narrower: the community_id column goes before any other is cut; the
    # IPv6 endpoints are still whole, and both times are still there.
    narrow = run_cli(["decode", "--list-streams", str(baseline_pcap)], tty=True, width=200).text.splitlines()
    assert "community_id" not in narrow[0]
    assert "first (UTC)" in narrow[0] and "last (UTC)" in narrow[0]
    assert f"[{FLOWS[1][0]}]:{FLOWS[1][1]}  [{FLOWS[1][2]}]:{FLOWS[1][3]}" in narrow[3]


def test_message_records_and_show_connection(baseline_pcap: Path) -> None:
    r = run_cli(["decode", "-F", "jsonl", "--community-id-seed", "1", str(baseline_pcap)])
    assert r.code == 0, r.stderr
    by_conn = {}
    for line in r.text.splitlines():
        obj = json.loads(line)
        keys = list(obj)
        assert keys[keys.index("dst") + 1] == "community_id"  # beside src and dst
        by_conn.setdefault(obj["connection"], set()).add(obj["community_id"])
    assert by_conn == {1: {FLOWS[0][5]}, 2: {FLOWS[1][5]}}
    sexp = run_cli(["decode", "--show-connection", "-c", "1", "--stream", "2", str(baseline_pcap)]).text
    assert sexp.endswith(f" ; 2 [{FLOWS[1][0]}]:{FLOWS[1][1]} -> [{FLOWS[1][2]}]:{FLOWS[1][3]} {FLOWS[1][4]}\n")
    table = run_cli(["decode", "-F", "table", "--show-connection", "-c", "1", str(baseline_pcap)], width=200).text
    assert table.splitlines()[0].split()[:2] == ["conn", "community_id"]
    assert f"1 c2s  {FLOWS[0][4]}" in table


@pytest.mark.parametrize("seed", [0, 1])
def test_filter_on_the_community_id(baseline_pcap: Path, seed: int) -> None:
    """-Y community_id == "...": the connection that Zeek or Suricata
    logged under that id, by the seed given."""
    for conn, flow in enumerate(FLOWS, start=1):
        cid = flow[4 + seed]
        args = ["--community-id-seed", str(seed), "-F", "jsonl", "-Y", f'community_id == "{cid}"', str(baseline_pcap)]
        records = [json.loads(x) for x in run_cli(["decode", *args]).text.splitlines()]
        assert len(records) == 300 and {(r["connection"], r["community_id"]) for r in records} == {(conn, cid)}
    none = run_cli(["decode", "-Y", "community_id", str(EXAMPLES / "demo.ripple")])
    assert (none.code, none.stdout) == (0, b"")  # a raw stream has none


def test_raw_stream_has_none(tmp_path: Path) -> None:
    [rec] = [
        json.loads(x)
        for x in run_cli(["decode", "--list-streams", "-F", "jsonl", str(EXAMPLES / "demo.ripple")]).text.splitlines()
    ]
    assert rec["community_id"] is None
    first = json.loads(run_cli(["decode", "-F", "jsonl", "-c", "1", str(EXAMPLES / "demo.ripple")]).text)
    assert "community_id" not in first and "src" not in first


def test_seed_out_of_range(baseline_pcap: Path) -> None:
    r = run_cli(["decode", "--community-id-seed", "65536", str(baseline_pcap)])
    assert r.code == 2
    assert "--community-id-seed" in r.stderr


def _tshark_ids(path: Path, seed: int) -> dict[frozenset[str], str]:
    """Wireshark's Community ID post-dissector: {the two endpoints: ID}."""
    fields = ["ip.src", "ipv6.src", "tcp.srcport", "ip.dst", "ipv6.dst", "tcp.dstport", "communityid"]
    out = subprocess.run(
        [
            TSHARK,
            "-r",
            str(path),
            "-o",
            f"communityid.seed:{seed}",
            "--enable-protocol",
            "communityid",
            "-T",
            "fields",
        ]
        + [arg for f in fields for arg in ("-e", f)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    ids = {}
    for line in out.splitlines():
        # A tunnelled packet lists every IP layer's address: the flow is the innermost's.
        src4, src6, sport, dst4, dst6, dport, cid = (v.rsplit(",", 1)[-1] for v in line.split("\t"))
        src, dst = src4 or f"[{src6}]", dst4 or f"[{dst6}]"
        ids[frozenset((f"{src}:{sport}", f"{dst}:{dport}"))] = cid
    return ids


@pytest.mark.parametrize("seed", [0, 65535])
def test_same_ids_as_wireshark(baseline_pcap: Path, seed: int) -> None:
    """tshark's Community IDs, for every connection of the bundled captures
    and of the IPv4/IPv6 baseline flows."""
    require_tshark()
    for path in [baseline_pcap, *sorted(EXAMPLES.glob("*.pcap"))]:
        r = run_cli(["decode", "--list-streams", "-F", "jsonl", "--community-id-seed", str(seed), str(path)])
        ours = {frozenset((x["src"], x["dst"])): x["community_id"] for x in map(json.loads, r.text.splitlines())}
        assert ours and ours.items() <= _tshark_ids(path, seed).items(), path
