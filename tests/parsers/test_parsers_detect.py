"""`detect` recognises every real fixture by content; tools fabwiz does not parse are `unknown`."""

from __future__ import annotations

import pytest
from parsers_support import REAL, load_real, real_files

from flows.analyze import analyze_text
from wizard.parsers.detect import KINDS, detect

FOLDER_KIND = {
    "perftest": "perftest",
    "perftest-json": "perftest",
    "nccl-tests": "nccl-tests",
    "nccl-debug": "nccl-tests",
    "ibdev2netdev": "ibdev2netdev",
    "ethtool": "ethtool",
    "ethtool-fec": "ethtool",
    "ethtool-m": "ethtool",
    "ethtool-S": "ethtool-stats",
    "mlnx_qos": "mlnx_qos",
    "sysctl": "sysctl",
    "lspci": "lspci",
    "dmesg": "kernel-log",
    "ping": "ping",
    "iperf3-json": "iperf3",
    "routeros-api": "routeros",
    "routeros-cli": "routeros",
    "routeros-export": "routeros",
    "sysfs-infiniband": "sysfs",
    # tools fabwiz does not parse (yet): recognised as unknown, never misread as another tool
    "arping": "unknown",
    "ibstat": "ibstat",
    "ibv_devinfo": "unknown",
    "mlxfwmanager": "unknown",
    "mlxlink": "unknown",
    "mstflint": "unknown",
    "netplan": "unknown",
    "rdma-link": "rdma-link",
    "show_gids": "show-gids",
    "sysfs-net": "unknown",
}
IPROUTE2 = {
    "dgx-spark-ip-br-addr-linklocal-twin-noipv4.txt": "ip-brief",
    "ip-addr-modern-altname-metric-partial.txt": "ip-text",
    "ip-br-addr-spark1.txt": "ip-brief",
    "ip-br-link-spark2.txt": "ip-brief",
    "ip-d-j-addr-7-interfaces-netplan-status-fixture.json": "ip-json",
    "ip-j-addr-spark1-dup-ip-two-rails.json": "ip-json",
    "ip-j-p-addr-spark1-pretty.json": "ip-json",
    "ip-s-link-one-rail.txt": "ip-text",
    "ip-s-link-rhel9-3ifaces-no-carrier-altname-after-stats.txt": "ip-text",
    "ip-s-s-d-link-proxmox-vm-cilium-rx-tx-errors-rows-trimmed.txt": "ip-text",
}
CASES = [
    (folder, name, kind)
    for folder, kind in sorted(FOLDER_KIND.items())
    for name in real_files(folder)
] + [("iproute2", n, k) for n, k in sorted(IPROUTE2.items())]


def test_every_fixture_folder_is_classified() -> None:
    if not REAL.is_dir():
        pytest.skip("../shared/fixtures/real is absent")
    folders = {p.name for p in REAL.iterdir() if p.is_dir()}
    assert folders == set(FOLDER_KIND) | {"iproute2"}
    assert set(real_files("iproute2")) == set(IPROUTE2)


@pytest.mark.parametrize(("folder", "name", "kind"), CASES)
def test_detect_real(folder: str, name: str, kind: str) -> None:
    text = load_real(folder, name)
    assert detect(text) == kind
    result = analyze_text(text)
    assert result.kind == kind
    if kind == "unknown":
        assert result.parsed is None and result.error == "output not recognised"
    else:
        assert result.parsed is not None and result.error is None


def test_kinds_contract() -> None:
    assert {
        "perftest",
        "nccl-tests",
        "ibdev2netdev",
        "ip-json",
        "ip-brief",
        "ethtool",
        "ethtool-stats",
        "mlnx_qos",
        "sysctl",
        "lspci",
        "kernel-log",
        "ping",
        "iperf3",
        "routeros",
        "unknown",
    } <= set(KINDS)
    assert detect("") == "unknown"
    assert detect("hello world\n") == "unknown"
