"""iproute2 (ip -j, ip -br, ip addr / ip -s link text) on every real output."""

from __future__ import annotations

from typing import Any

import pytest
from parsers_support import assert_covers, load_real

from wizard.parsers.iproute2 import parse_ip

SPARK1 = {
    "lo": ("UNKNOWN", ["127.0.0.1/8", "::1/128"]),
    "enp1s0f0np0": ("UP", ["10.9.0.1/24", "fe80::b0fd:87ff:fe0c:ba78/64"]),
    "enP2p1s0f0np0": ("UP", ["10.9.2.1/24", "fe80::d8a6:9ff:fe82:5d1/64"]),
    "enp1s0f1np1": ("UP", ["10.9.0.1/24", "fe80::e88d:b6ff:fe81:72a7/64"]),
}

EXPECTED: dict[str, dict[str, Any]] = {
    "dgx-spark-ip-br-addr-linklocal-twin-noipv4.txt": {
        "format": "brief",
        "names": [
            "lo",
            "enP7s7",
            "enp1s0f0np0",
            "enp1s0f1np1",
            "enP2p1s0f0np0",
            "enP2p1s0f1np1",
            "wlP9s9",
            "docker0",
        ],
        "addrs": {
            "enp1s0f1np1": ["169.254.127.30/16", "fe80::4ebb:47ff:fe2f:9113/64"],
            "enP2p1s0f1np1": ["fe80::fc88:5ca8:11e8:e01b/64"],
            "enp1s0f0np0": [],
        },
        "states": {"enp1s0f0np0": "DOWN", "enP2p1s0f1np1": "UP"},
        "dup": {},
    },
    "ip-addr-modern-altname-metric-partial.txt": {
        "format": "text",
        "names": ["lo", "eth0", "docker0", "br-5f24f722517c"],
        "addrs": {"eth0": ["172.22.42.25/18", "fe80::216:3eff:fe10:7a6c/64"]},
        "mtus": {"lo": 65536, "eth0": 1500},
        "macs": {"eth0": "00:16:3e:10:7a:6c"},
        "states": {"br-5f24f722517c": "DOWN"},
        "dup": {},
    },
    "ip-br-addr-spark1.txt": {
        "format": "brief",
        "names": list(SPARK1),
        "addrs": {k: v[1] for k, v in SPARK1.items()},
        "dup": {"10.9.0.1": ("enp1s0f0np0", "enp1s0f1np1")},
    },
    "ip-br-link-spark2.txt": {
        "format": "brief",
        "names": ["lo", "enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1"],
        "macs": {
            "enp1s0f0np0": "1e:9f:13:17:05:68",
            "enP2p1s0f0np0": "aa:fd:54:e5:50:43",
            "enp1s0f1np1": "2e:47:38:ab:7e:16",
        },
        "dup": {},
    },
    "ip-d-j-addr-7-interfaces-netplan-status-fixture.json": {
        "format": "json",
        "names": ["lo", "enp0s31f6", "wlan0", "wg0", "wwan0", "tun0", "tun1"],
        "mtus": {"wg0": 1420, "tun0": 1480},
        "addrs": {"wg0": ["10.10.0.2/24"], "wwan0": []},
        "states": {"wwan0": "DOWN"},
        "dup": {},
    },
    "ip-j-addr-spark1-dup-ip-two-rails.json": {
        "format": "json",
        "names": list(SPARK1),
        "addrs": {k: v[1] for k, v in SPARK1.items()},
        "mtus": {"enp1s0f0np0": 9000, "enP2p1s0f0np0": 9000, "enp1s0f1np1": 1500},
        "macs": {"enp1s0f0np0": "b2:fd:87:0c:ba:78"},
        "dup": {"10.9.0.1": ("enp1s0f0np0", "enp1s0f1np1")},
    },
    "ip-j-p-addr-spark1-pretty.json": {
        "format": "json",
        "names": list(SPARK1),
        "mtus": {"enp1s0f1np1": 1500},
        "dup": {"10.9.0.1": ("enp1s0f0np0", "enp1s0f1np1")},
    },
    "ip-s-link-one-rail.txt": {
        "format": "text",
        "names": ["enp1s0f0np0"],
        "mtus": {"enp1s0f0np0": 9000},
        "stats": {"enp1s0f0np0": (516, 6, 516, 6)},
        "dup": {},
    },
    "ip-s-link-rhel9-3ifaces-no-carrier-altname-after-stats.txt": {
        "format": "text",
        "names": ["lo", "ens160", "ens192"],
        "states": {"ens192": "DOWN"},
        "stats": {"ens160": (618448437, 863326, 60765079, 600771), "ens192": (0, 0, 0, 0)},
        "dup": {},
    },
    "ip-s-s-d-link-proxmox-vm-cilium-rx-tx-errors-rows-trimmed.txt": {
        "format": "text",
        "names": ["lo", "ens18", "cilium_net"],
        "stats": {
            "ens18": (653824626, 2253259, 56961448, 420246),
            "cilium_net": (478214, 6261, 2810, 39),
        },
        "dup": {},
    },
}


def test_every_iproute2_fixture_has_expectations() -> None:
    assert_covers("iproute2", EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_iproute2_real(name: str) -> None:
    r = parse_ip(load_real("iproute2", name))
    want = EXPECTED[name]
    assert r.format == want["format"]
    assert [i.name for i in r.interfaces] == want["names"]
    for ifname, addrs in want.get("addrs", {}).items():
        assert [a.cidr for a in r.get(ifname).addresses] == addrs, ifname  # type: ignore[union-attr]
    for ifname, mtu in want.get("mtus", {}).items():
        assert r.get(ifname).mtu == mtu, ifname  # type: ignore[union-attr]
    for ifname, mac in want.get("macs", {}).items():
        assert r.get(ifname).mac == mac, ifname  # type: ignore[union-attr]
    for ifname, state in want.get("states", {}).items():
        assert r.get(ifname).state == state, ifname  # type: ignore[union-attr]
    for ifname, stats in want.get("stats", {}).items():
        i = r.get(ifname)
        assert i is not None
        assert (i.rx_bytes, i.rx_packets, i.tx_bytes, i.tx_packets) == stats, ifname
    assert r.duplicate_ipv4() == want["dup"]


def test_no_carrier_flag() -> None:
    r = parse_ip(
        load_real("iproute2", "ip-s-link-rhel9-3ifaces-no-carrier-altname-after-stats.txt")
    )
    ens192 = r.get("ens192")
    assert ens192 is not None and "NO-CARRIER" in ens192.flags and not ens192.carrier
