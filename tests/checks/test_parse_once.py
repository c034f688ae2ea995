"""A text that many rails or nodes print alike is parsed once, and what comes out is what a
fresh parse gives: `once_per_text` (within one check's parse) and discovery's remembered
ethtool answers."""

from __future__ import annotations

import pytest

from flows.checks._common import once_per_text
from wizard import discovery
from wizard.errors import ParseError
from wizard.parsers.ibdev2netdev import parse_ibdev2netdev

ETHTOOL = "Settings for enp1s0f0np0:\n\tSpeed: 200000Mb/s\n\tLink detected: yes\n"
ETHTOOL_I = "driver: mlx5_core\nversion: 6.8.0\nfirmware-version: 28.45.1200 (NVD0000000087)\n"
IBDEV = "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\nroceP2p1s0f1 port 1 ==> enP2p1s0f1np1 (Up)\n"


def test_once_per_text_parses_each_distinct_text_once() -> None:
    calls: list[str] = []

    def parser(text: str) -> tuple[int, ...]:
        calls.append(text)
        if not text.strip():
            raise ParseError("empty", tool="t", raw=text)
        return tuple(int(x) for x in text.split())

    parse = once_per_text(parser)
    assert [parse("1 2"), parse("3"), parse("1 2"), parse("3")] == [(1, 2), (3,), (1, 2), (3,)]
    assert calls == ["1 2", "3"]
    for _ in range(2):  # a failure is not remembered: it raises every time
        with pytest.raises(ParseError):
            parse(" ")
    assert calls == ["1 2", "3", " ", " "]


def test_discovery_gives_the_same_rails_from_remembered_outputs() -> None:
    mapping = parse_ibdev2netdev(IBDEV)
    bus = {
        "enp1s0f0np0": ETHTOOL_I + "bus-info: 0000:01:00.0\n",
        "enP2p1s0f1np1": ETHTOOL_I + "bus-info: 0002:01:00.1\n",
    }
    speeds = {"enp1s0f0np0": ETHTOOL, "enP2p1s0f1np1": ETHTOOL.replace("200000", "100000")}
    first = discovery.discover_rails("spark1", mapping, ethtool_i=bus, ethtool=speeds)
    again = discovery.discover_rails("spark2", mapping, ethtool_i=bus, ethtool=speeds)
    got = [(r.netdev, r.half, r.port, r.pci, r.speed_mbps) for r in first]
    assert got == [
        ("enp1s0f0np0", "A", 0, "0000:01:00.0", 200000),
        ("enP2p1s0f1np1", "B", 1, "0002:01:00.1", 100000),
    ]
    assert [(r.netdev, r.half, r.port, r.pci, r.speed_mbps) for r in again] == got
    assert {r.node for r in again} == {"spark2"}


def test_a_long_output_is_worked_out_but_not_kept() -> None:
    padded = ETHTOOL + "\tPort: Direct Attach Copper\n" * 2000  # longer than any real one
    assert len(padded) > discovery._REMEMBERED
    before = discovery._link_speed.cache_info().currsize
    assert discovery._speed(padded) == 200000
    assert discovery._link_speed.cache_info().currsize == before
    assert discovery._speed("not ethtool") is None


def test_remembered_shares_one_immutable_parse_and_keeps_no_long_text() -> None:
    from wizard.parsers.common import REMEMBERED_TEXT, remembered
    from wizard.parsers.iproute2 import parse_ip_json

    calls: list[int] = []

    def parser(text: str) -> tuple[str, ...]:
        calls.append(len(text))
        if text == "bad":
            raise ParseError("bad", tool="t", raw=text)
        return tuple(text.split())

    parse = remembered(parser)
    assert parse("a b") is parse("a b") == ("a", "b")
    long = "x " * REMEMBERED_TEXT
    assert parse(long) == parse(long)
    for _ in range(2):
        with pytest.raises(ParseError):
            parse("bad")
    assert calls == [3, len(long), len(long), 3, 3]
    text = '[{"ifname":"enp1s0f0np0","mtu":9000,"addr_info":[{"family":"inet","local":"10.9.0.1","prefixlen":24}]}]'
    first, again = parse_ip_json(text), parse_ip_json(text)
    assert first is again and first.interfaces[0].addresses[0].cidr == "10.9.0.1/24"
