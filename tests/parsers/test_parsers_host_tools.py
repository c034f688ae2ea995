"""mlnx_qos, sysctl, sysfs counters, lspci, kernel log, ping and iperf3 on every real output."""

from __future__ import annotations

from typing import Any

import pytest
from parsers_support import assert_covers, load_real

from wizard.parsers.iperf3 import parse_iperf3
from wizard.parsers.kernel_log import parse_kernel_log
from wizard.parsers.lspci import PciLink, parse_lspci
from wizard.parsers.mlnx_qos import parse_mlnx_qos
from wizard.parsers.ping import parse_ping
from wizard.parsers.sysctl import parse_sysctl
from wizard.parsers.sysfs import parse_sysfs_counters

QOS: dict[str, dict[str, Any]] = {
    "mlnx_qos-dcbx-firmware-trust-dscp-pfc3-ets-50-50.txt": {
        "interface": None,
        "dcbx_mode": "Firmware controlled",
        "trust": "dscp",
        "pfc": (0, 0, 0, 1, 0, 0, 0, 0),
        "pfc_enabled": (3,),
        "cable_len": 7,
        "receive_buffers": (130944, 130944, 0, 0, 0, 0, 0, 0),
        "tcs": [
            (0, "ets", 50, (0, 1, 2, 4, 5, 7)),
            (3, "ets", 50, (3,)),
            (6, "vendor", None, (6,)),
        ],
    },
    "mlnx_qos-os-controlled-dscp2prio-truncated.txt": {
        "interface": "rdma0",
        "dcbx_mode": "OS controlled",
        "trust": "dscp",
        "pfc": None,
        "pfc_enabled": (),
        "tcs": [],
    },
    "mlnx_qos-trust-pcp-set-pfc3-buffer-map-vendor-tsa.txt": {
        "interface": "ens14f0",
        "dcbx_mode": "OS controlled",
        "trust": "pcp",
        "pfc": (0, 0, 0, 1, 0, 0, 0, 0),
        "pfc_enabled": (3,),
        "pfc_buffer": (0, 2, 5, 7, 1, 2, 3, 6),
        "tcs": [(i, "vendor", None, (1 if i == 0 else 0 if i == 1 else i,)) for i in range(8)],
    },
}


def test_every_host_tool_fixture_has_expectations() -> None:
    assert_covers("mlnx_qos", QOS)
    assert_covers("sysctl", SYSCTL)
    assert_covers(
        "sysfs-infiniband",
        {
            "gb10-ports-rate-state-4devices.txt",
            "ls-l-hw_counters-mlx5_bond_0.txt",
            "show_counters-mlx5_bond_0-roce-cnp-ecn-nonzero.txt",
        },
    )
    assert_covers("lspci", LSPCI)
    assert_covers("dmesg", DMESG)
    assert_covers("ping", PING)
    assert_covers("iperf3-json", IPERF)


@pytest.mark.parametrize("name", sorted(QOS))
def test_mlnx_qos_real(name: str) -> None:
    r = parse_mlnx_qos(load_real("mlnx_qos", name))
    want = dict(QOS[name])
    tcs = want.pop("tcs")
    for key, value in want.items():
        assert getattr(r, key) == value, key
    assert [(t.tc, t.tsa, t.bw_pct, t.priorities) for t in r.traffic_classes] == tcs


def test_mlnx_qos_dscp_map() -> None:
    r = parse_mlnx_qos(load_real("mlnx_qos", "mlnx_qos-os-controlled-dscp2prio-truncated.txt"))
    assert r.dscp2prio is not None
    assert r.dscp2prio[3] == (31, 30, 29, 28, 27, 26, 25, 24)


SYSCTL: dict[str, tuple[int, dict[str, int | None]]] = {
    "sysctl-a-centos7-net-ipv4-conf-slice.txt": (
        140,
        {"arp_ignore": 0, "arp_announce": 0, "rp_filter": 1},
    ),
    "sysctl-arp-defaults.txt": (3, {"arp_ignore": 0, "arp_announce": 0, "rp_filter": 0}),
    "sysctl-n-arp_ignore.txt": (1, {}),
    "sysctl-w-arp-roce.txt": (3, {"arp_ignore": 1, "arp_announce": 2, "rp_filter": 2}),
}


@pytest.mark.parametrize("name", sorted(SYSCTL))
def test_sysctl_real(name: str) -> None:
    r = parse_sysctl(load_real("sysctl", name))
    count, arp = SYSCTL[name]
    assert len(r.values) == count
    assert r.arp == arp


def test_sysctl_values() -> None:
    r = parse_sysctl(load_real("sysctl", "sysctl-n-arp_ignore.txt"))
    assert r.values == {"": "1"}
    r = parse_sysctl(load_real("sysctl", "sysctl-a-centos7-net-ipv4-conf-slice.txt"))
    assert r.get_int("net.ipv4.conf.all.forwarding") == 1
    assert r.get_int("net.ipv4.conf.docker0.accept_redirects") == 1


def test_sysfs_rate_state() -> None:
    r = parse_sysfs_counters(load_real("sysfs-infiniband", "gb10-ports-rate-state-4devices.txt"))
    assert [(p.device, p.rate_gbps, p.width, p.state) for p in r.rates] == [
        ("rocep1s0f0", 40.0, "4X QDR", "DOWN"),
        ("rocep1s0f1", 200.0, "4X HDR", "ACTIVE"),
        ("roceP2p1s0f0", 40.0, "4X QDR", "DOWN"),
        ("roceP2p1s0f1", 200.0, "4X HDR", "ACTIVE"),
    ]


def test_sysfs_hw_counter_listing() -> None:
    r = parse_sysfs_counters(load_real("sysfs-infiniband", "ls-l-hw_counters-mlx5_bond_0.txt"))
    assert r.device == "mlx5_bond_0"
    assert len(r.listed) == 30
    assert {
        "local_ack_timeout_err",
        "np_cnp_sent",
        "rp_cnp_handled",
        "roce_adp_retrans",
        "packet_seq_err",
        "out_of_sequence",
    } <= set(r.listed)


def test_show_counters() -> None:
    r = parse_sysfs_counters(
        load_real("sysfs-infiniband", "show_counters-mlx5_bond_0-roce-cnp-ecn-nonzero.txt")
    )
    assert (r.device, r.port) == ("mlx5_bond_0", 1)
    assert r.get("np_cnp_sent") == 1052612505
    assert r.get("np_ecn_marked_roce_packets") == 21278189006
    assert r.get("out_of_sequence") == 1811101
    assert r.get("local_ack_timeout_err") == 0
    assert r.get("rx_write_requests") == 2402134794


def test_grep_h_counters_probe_format() -> None:
    text = (
        "/sys/class/infiniband/rocep1s0f0/ports/1/hw_counters/local_ack_timeout_err:17\n"
        "/sys/class/infiniband/rocep1s0f0/ports/1/hw_counters/np_cnp_sent:0\n"
        "/sys/class/infiniband/rocep1s0f0/ports/1/counters/port_xmit_data:1000\n"
        "/sys/class/infiniband/rocep1s0f0/ports/1/counters/port_rcv_data:250\n"
    )
    r = parse_sysfs_counters(text)
    assert (r.device, r.port) == ("rocep1s0f0", 1)
    assert r.hw_counters == {"local_ack_timeout_err": 17, "np_cnp_sent": 0}
    assert (r.xmit_bytes, r.rcv_bytes) == (4000, 1000)


LSPCI: dict[str, list[tuple[Any, ...]]] = {
    "dgx-spark-lspci-grep-mellanox-realtek.txt": [
        ("0000:01:00.0", True, None),
        ("0000:01:00.1", True, None),
        ("0002:01:00.0", True, None),
        ("0002:01:00.1", True, None),
        ("0007:01:00.0", False, None),
    ],
    "gb10-lspci-mellanox-4-functions.txt": [
        ("0000:01:00.0", True, None),
        ("0000:01:00.1", True, None),
        ("0002:01:00.0", True, None),
        ("0002:01:00.1", True, None),
    ],
    "gb10-lspci-vvv-lnkcap-lnksta-x4.txt": [("0000:01:00.0", False, PciLink("32GT/s", 4))],
}


@pytest.mark.parametrize("name", sorted(LSPCI))
def test_lspci_real(name: str) -> None:
    r = parse_lspci(load_real("lspci", name))
    assert [(d.address, d.mellanox, d.lnksta) for d in r.devices] == LSPCI[name]


def test_lspci_description_and_cap() -> None:
    r = parse_lspci(load_real("lspci", "gb10-lspci-mellanox-4-functions.txt"))
    assert r.devices[0].description == "Mellanox Technologies MT2910 Family [ConnectX-7]"
    r = parse_lspci(load_real("lspci", "gb10-lspci-vvv-lnkcap-lnksta-x4.txt"))
    assert r.devices[0].lnkcap == PciLink("32GT/s", 4)
    narrow = parse_lspci(
        "0000:01:00.0 Ethernet controller: Mellanox [ConnectX-7]\n"
        "\t\tLnkSta:\tSpeed 32GT/s (ok), Width x2 (downgraded)\n"
    )
    assert narrow.devices[0].lnksta == PciLink("32GT/s", 2)


DMESG: dict[str, list[tuple[str, str | None, str | None, str | None]]] = {
    "dgx-spark-dmesg-grep-insufficient-power-pcie-bandwidth-hotplug.txt": [
        ("pcie-bandwidth", "000f:01:00.0", None, "0.000 Gb/s 2.5 GT/s x16"),
        ("pcie-bandwidth", "0000:01:00.0", None, "126.028 Gb/s 32.0 GT/s x4"),
        ("pcie-27w", "0000:01:00.0", None, "27W"),
        ("hotplug", None, None, "PCIe hotplug driver initialized successfully"),
        ("hotplug", None, None, "Hotplug enabled"),
    ],
    "gb10-cx7-pcie-hotplug-cable-plugin-link-up.txt": [
        ("hotplug", None, None, "Cable plugin"),
        ("cable", "0000:01:00.0", None, "plugged"),
        ("link", "0000:01:00.0", "enp1s0f0np0", "up"),
    ],
    "gb10-kernel-oops-mstflint-access-pci-config-read.txt": [("oops", None, None, None)],
    "gb10-spark05-mlx5-boot-eswitch-cleanup-cards-vanish-failure.txt": [
        ("firmware", "0000:01:00.0", None, "28.45.4028"),
        ("pcie-bandwidth", "0000:01:00.0", None, "126.028 Gb/s 32.0 GT/s x4"),
        ("cable", "0000:01:00.0", None, "unplugged"),
        ("pcie-27w", "0000:01:00.0", None, "27W"),
    ],
    "mlx5-cx4lx-probe-failed-handle_hca_cap-error-22.txt": [
        ("firmware", "0000:03:00.0", None, "14.32.1010"),
        ("error", "0000:03:00.0", None, None),
        ("error", "0000:03:00.0", None, None),
        ("probe-failed", "0000:03:00.0", None, "-22"),
    ],
}


@pytest.mark.parametrize("name", sorted(DMESG))
def test_kernel_log_real(name: str) -> None:
    r = parse_kernel_log(load_real("dmesg", name))
    assert [(e.kind, e.device, e.netdev, e.value) for e in r.events] == DMESG[name]


def test_kernel_log_27w_and_times() -> None:
    r = parse_kernel_log(
        load_real("dmesg", "dgx-spark-dmesg-grep-insufficient-power-pcie-bandwidth-hotplug.txt")
    )
    assert r.insufficient_power_27w
    assert r.of("pcie-27w")[0].time == 1.533198


PING: dict[str, dict[str, Any]] = {
    "ping-M-do-s1432-success-at-path-mtu.txt": {
        "target": "github.com",
        "address": "192.30.253.112",
        "payload": 1432,
        "packet_size": 1460,
        "dont_fragment": True,
        "transmitted": 1,
        "received": 1,
        "loss_pct": 0.0,
        "mtu_errors": 0,
        "ok": True,
    },
    "ping-M-do-s1433-message-too-long-mtu1460-failure.txt": {
        "payload": 1433,
        "packet_size": 1461,
        "dont_fragment": True,
        "transmitted": 1,
        "received": 0,
        "errors": 1,
        "loss_pct": 100.0,
        "mtu_errors": 1,
        "reported_mtu": 1460,
        "ok": False,
    },
    "ping-M-do-s8972-jumbo-ok.txt": {
        "address": "10.9.0.2",
        "source": "10.9.0.1",
        "interface": "enp1s0f0np0",
        "payload": 8972,
        "packet_size": 9000,
        "transmitted": 3,
        "received": 3,
        "replies": 3,
        "rtt_avg_ms": 0.060,
        "ok": True,
    },
    "ping-M-do-s8972-peer-mtu1500-veth-nobufs.txt": {
        "address": "10.9.2.2",
        "interface": "enP2p1s0f0np0",
        "payload": 8972,
        "transmitted": 3,
        "received": 0,
        "loss_pct": 100.0,
        "mtu_errors": 0,
        "error_lines": ("ping: sendmsg: No buffer space available",),
        "ok": False,
    },
    "ping-centos-missing-hostname-summary.txt": {
        "target": None,
        "address": "100.68.105.124",
        "payload": 56,
        "packet_size": 84,
        "received": 1,
        "rtt_avg_ms": 0.040,
        "ok": True,
    },
}


@pytest.mark.parametrize("name", sorted(PING))
def test_ping_real(name: str) -> None:
    r = parse_ping(load_real("ping", name))
    for key, value in PING[name].items():
        assert getattr(r, key) == value, key


def test_ping_newer_lowercase_message() -> None:
    r = parse_ping("ping: local error: message too long, mtu=1280\n")
    assert r.mtu_errors == 1 and r.reported_mtu == 1280


IPERF: dict[str, dict[str, Any]] = {
    "iperf3-J-connect-failed.json": {
        "error": "unable to connect to server: No route to host",
        "sent_gbps": None,
        "streams": None,
    },
    "iperf3-J-veth-1stream.json": {
        "protocol": "TCP",
        "streams": 1,
        "sent_gbps": 37.512,
        "received_gbps": 37.508,
        "retransmits": 674,
        "remote_host": "10.9.0.2",
        "error": None,
    },
    "iperf3-J-veth-4streams.json": {
        "protocol": "TCP",
        "streams": 4,
        "sent_gbps": 34.78,
        "received_gbps": 34.777,
        "retransmits": 0,
        "error": None,
    },
    "iperf3.9-J-tcp-1stream-bytes-200MB-wan.json": {
        "protocol": "TCP",
        "streams": 1,
        "sent_gbps": 0.262,
        "received_gbps": 0.258,
        "retransmits": 46,
        "remote_host": "35.83.97.126",
        "error": None,
    },
}


@pytest.mark.parametrize("name", sorted(IPERF))
def test_iperf3_real(name: str) -> None:
    r = parse_iperf3(load_real("iperf3-json", name))
    for key, value in IPERF[name].items():
        assert getattr(r, key) == value, key
