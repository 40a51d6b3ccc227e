"""Community ID v1 against the published baseline of the spec
(github.com/corelight/community-id-spec, baseline/): the TCP flows of its
README tables and of baseline_deflt.json / baseline_seed1.json, over IPv4
and IPv6, seed 0 and seed 1, each flow in both directions.  The other
protocols' vectors check that the protocol byte is where the spec puts it.

Zeek is not installed here: these published values are the reference."""

from __future__ import annotations

import pytest

from ripple_cli.capture.community_id import community_id
from ripple_cli.capture.events import Endpoint, StreamId

# (saddr, sport, daddr, dport, seed 0, seed 1)
TCP_VECTORS = [
    # README: "Default settings" and "A custom seed=1 value"
    ("1.2.3.4", 1122, "5.6.7.8", 3344, "1:wCb3OG7yAFWelaUydu0D+125CLM=", "1:HhA1B+6CoLbiKPEs5nhNYN4XWfk="),
    # baseline_deflt.json and baseline_seed1.json
    (
        "128.232.110.120",
        34855,
        "66.35.250.204",
        80,
        "1:LQU9qZlK+B5F3KDmev6m5PMibrg=",
        "1:3V71V58M3Ksw/yuFALMcW0LAHvc=",
    ),
    (
        "2001:470:e5bf:dead:4957:2174:e82c:4887",
        63943,
        "2607:f8b0:400c:c03::1a",
        25,
        "1:/qFaeAR+gFe1KYjMzVDsMv+wgU4=",
        "1:eJYTW6AOzFLlSUoESovMjnu7rMw=",
    ),
]

# Other protocols of the same files: (proto, saddr, sport, daddr, dport, seed 0, seed 1).
OTHER_VECTORS = [
    (17, "1.2.3.4", 1122, "5.6.7.8", 3344, "1:0Mu9InQx6z4ZiCZM/7HXi2WMhOg=", "1:OShq+iKDAMVouh/4bMxB9Sz4amw="),
    (17, "192.168.1.52", 54585, "8.8.8.8", 53, "1:d/FP5EW3wiY1vCndhwleRRKHowQ=", "1:Q9We8WO3piVF8yEQBNJF4uiSVrI="),
    (132, "192.168.170.8", 7, "192.168.170.56", 7, "1:MP2EtRCAUIZvTw6MxJHLV7N7JDs=", "1:5w3ZRjeKBzqT3zsaEECDGjUbYeg="),
]


@pytest.mark.parametrize(("saddr", "sport", "daddr", "dport", "seed0", "seed1"), TCP_VECTORS)
def test_tcp_baseline(saddr: str, sport: int, daddr: str, dport: int, seed0: str, seed1: str) -> None:
    a, b = Endpoint(saddr, sport), Endpoint(daddr, dport)
    for seed, expected in ((0, seed0), (1, seed1)):
        assert community_id(a, b, seed) == expected
        assert community_id(b, a, seed) == expected  # the same for the way back
        for from_client in (True, False):
            assert StreamId(3, a, b, from_client).community_id(seed) == expected
            assert StreamId(3, b, a, from_client).community_id(seed) == expected
    assert StreamId(1, a, b, True).community_id() == seed0  # seed 0 by default


@pytest.mark.parametrize(("proto", "saddr", "sport", "daddr", "dport", "seed0", "seed1"), OTHER_VECTORS)
def test_other_protocols_baseline(
    proto: int, saddr: str, sport: int, daddr: str, dport: int, seed0: str, seed1: str
) -> None:
    a, b = Endpoint(saddr, sport), Endpoint(daddr, dport)
    assert community_id(a, b, 0, proto) == community_id(b, a, 0, proto) == seed0
    assert community_id(a, b, 1, proto) == community_id(b, a, 1, proto) == seed1


def test_equal_addresses_order_by_port() -> None:
    a, b = Endpoint("127.0.0.1", 9000), Endpoint("127.0.0.1", 50412)
    assert community_id(a, b) == community_id(b, a)
    assert community_id(a, b) != community_id(a, b, 1)


def test_bad_seed_and_mixed_families() -> None:
    a, b = Endpoint("1.2.3.4", 1), Endpoint("::1", 2)
    with pytest.raises(ValueError, match="seed"):
        community_id(a, Endpoint("5.6.7.8", 2), 65536)
    # Mixed (the tap's proxy): the IPv4 address IPv4-mapped, as the tap's recording writes it.
    assert community_id(a, b) == community_id(Endpoint("::ffff:1.2.3.4", 1), b)
