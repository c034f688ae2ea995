"""The ethtool family on every real output: settings, -i, -S, --show-fec, -m."""

from __future__ import annotations

from typing import Any

import pytest
from parsers_support import assert_covers, load_real

from wizard.parsers.ethtool import (
    parse_ethtool,
    parse_ethtool_driver,
    parse_ethtool_fec,
    parse_ethtool_module,
    parse_ethtool_stats,
)

SETTINGS: dict[str, list[tuple[Any, ...]]] = {  # (interface, speed, duplex, autoneg, link, port)
    "dgx-spark-speed-grep-200G-after-switch-fix.txt": [
        ("enp1s0f1np1", 200000, None, None, None, None),
        ("enP2p1s0f1np1", 200000, None, None, None, None),
    ],
    "ethtool-bond-200G-not-reported.txt": [("bond0", 200000, "Full", False, True, "Other")],
    "ethtool-default-40G-fibre-mlx-autoneg-off.txt": [
        ("enp1s0", 40000, "Full", False, True, "FIBRE")
    ],
    "ethtool-veth.txt": [("enp1s0f0np0", 10000, "Full", False, True, "Twisted Pair")],
    "gb10-ethtool-grep-speed-and-sysfs-rate.txt": [("enp1s0f1np1", 200000, None, None, None, None)],
}
DRIVER = {  # (driver, version, firmware, psid, bus)
    "ethtool-i-mlx5_core-ofed-5.0-eth02.txt": (
        "mlx5_core",
        "5.0-2.1.8",
        "14.28.2006",
        "MT_2420110034",
        "0000:2f:00.1",
    ),
    "ethtool-i-veth.txt": ("veth", "1.0", None, None, None),
}
STATS: dict[str, tuple[str | None, int, dict[str, int]]] = {
    "byteps-grep-prio-before.txt": (
        None,
        32,
        {"rx_prio0_bytes": 88034564921216, "tx_prio0_packets": 40177770079, "tx_prio7_packets": 0},
    ),
    "cx4lx-grep-discards-prio-discards.txt": (
        "eth03",
        14,
        {"rx_steer_missed_packets": 24627, "rx_discards_phy": 0},
    ),
    "ethtool-S-veth.txt": (None, 10, {"peer_ifindex": 2, "rx_queue_0_xdp_packets": 0}),
    "grep-rdma-vport-counters-bond-member.txt": (
        "eth01",
        8,
        {"rx_vport_rdma_unicast_packets": 439107945, "tx_vport_rdma_unicast_bytes": 147370719852},
    ),
    "mlx5-kernel5.15-xdp-nonzero-only-rx_discards_phy-tx_pause.txt": (
        None,
        101,
        {
            "tx_packets_phy": 5588396729,
            "rx_discards_phy": 58591428329,
            "tx_pause_ctrl_phy": 5745055,
        },
    ),
    "mlx5-old-driver-naming-no-phy-suffix-partial.txt": (
        "p3p1",
        49,
        {"rx_packets": 5487361, "tx_bytes": 5813725708, "octets_received": 1084993260},
    ),
}
FEC = {  # (interface, configured, active, error)
    "dgx-spark-set-fec-rs-then-show-fec-configured-RS.txt": ("enp1s0f0np0", ("RS",), "RS", None),
    "dgx-spark-show-fec-auto-active-RS-via-switch.txt": ("enp1s0f1np1", ("Auto",), "RS", None),
    "ethtool-show-fec-unsupported.txt": (None, (), None, "netlink error: Operation not supported"),
}


def test_every_ethtool_fixture_has_expectations() -> None:
    assert_covers("ethtool", set(SETTINGS) | set(DRIVER))
    assert_covers("ethtool-S", STATS)
    assert_covers("ethtool-fec", FEC)
    assert_covers(
        "ethtool-m", {"gb10-ethtool-m-qsfp-dac-400g-class-legacy-decode-selected-lines.txt"}
    )


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_ethtool_settings_real(name: str) -> None:
    r = parse_ethtool(load_real("ethtool", name))
    got = [
        (x.interface, x.speed_mbps, x.duplex, x.autoneg, x.link_detected, x.port) for x in r.links
    ]
    assert got == SETTINGS[name]


def test_ethtool_sysfs_rate_and_modes() -> None:
    r = parse_ethtool(load_real("ethtool", "gb10-ethtool-grep-speed-and-sysfs-rate.txt"))
    assert r.ib_rates_gbps == (200.0,)
    r = parse_ethtool(load_real("ethtool", "ethtool-default-40G-fibre-mlx-autoneg-off.txt"))
    assert "56000baseCR4/Full" in r.links[0].supported_modes
    assert "56000baseCR4/Full" not in r.links[0].advertised_modes
    assert len(r.links[0].advertised_modes) == 6


@pytest.mark.parametrize("name", sorted(DRIVER))
def test_ethtool_driver_real(name: str) -> None:
    r = parse_ethtool_driver(load_real("ethtool", name))
    assert (r.driver, r.version, r.firmware_version, r.psid, r.bus_info) == DRIVER[name]


@pytest.mark.parametrize("name", sorted(STATS))
def test_ethtool_stats_real(name: str) -> None:
    r = parse_ethtool_stats(load_real("ethtool-S", name))
    iface, count, values = STATS[name]
    assert r.interface == iface
    assert len(r.counters) == count
    for key, value in values.items():
        assert r.get(key) == value, key


@pytest.mark.parametrize("name", sorted(FEC))
def test_ethtool_fec_real(name: str) -> None:
    r = parse_ethtool_fec(load_real("ethtool-fec", name))
    assert (r.interface, r.configured, r.active, r.error) == FEC[name]


def test_ethtool_module_real() -> None:
    r = parse_ethtool_module(
        load_real(
            "ethtool-m", "gb10-ethtool-m-qsfp-dac-400g-class-legacy-decode-selected-lines.txt"
        )
    )
    assert r.identifier == "0x11 (QSFP28)"
    assert r.fields["Transceiver type"] == "40G Ethernet: 40G Base-CR4"
    assert r.fields["BR, Nominal"] == "25500Mbps"
    assert r.fields["Vendor PN"] == "NJAAKK-N911"
    assert r.length_m == 1.0
