"""Host tools refuse like the real ones and change runtime state that a reboot forgets."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from wizard.lab import scenarios
from wizard.lab.hostcmds import Host
from wizard.lab.perftest import Registry
from wizard.lab.physics import FlowSpec, flow
from wizard.lab.world import World


def lab(name: str = "healthy-4node-crs804") -> World:
    return scenarios.build_world(scenarios.load(name), time_scale=1000.0)


async def run(w: World, script: str, node: str = "spark1") -> tuple[str, str, int]:
    host = Host(w, w.nodes[node], Registry())
    out: list[str] = []
    err: list[str] = []
    rc = await host.run(script, out.append, err.append)
    return "".join(out), "".join(err), rc


@pytest.mark.parametrize(
    ("script", "stderr", "rc"),
    [
        ("ip -x link", 'Option "-x" is unknown, try "ip -help".\n', 255),
        ("ip addr frob", 'Command "frob" is unknown, try "ip address help".\n', 255),
        ("sudo -n ip addr add 10.9.9.9/24 dev nosuch", 'Cannot find device "nosuch"\n', 1),
        ("sudo -n ip link set dev nosuch mtu 9000", 'Cannot find device "nosuch"\n', 1),
        ("sysctl --bogus", "sysctl: unrecognized option '--bogus'\n", 0),
        ("sysctl -Z", "sysctl: invalid option -- 'Z'\n", 0),
        ("nvidia-smix -L", "bash: nvidia-smix: command not found\n", 127),
    ],
)
async def test_refusals_like_the_real_tools(script: str, stderr: str, rc: int) -> None:
    w = lab()
    _out, err, status = await run(w, script)
    assert (err, status) == (stderr, rc)
    assert w.refused or "nosuch" in script


@pytest.mark.skipif(shutil.which("sysctl") is None, reason="procps not installed")
def test_sysctl_usage_is_procps_text() -> None:
    from wizard.lab.hostnet import SYSCTL_USAGE

    real = subprocess.run(
        ["sysctl", "--bogus"], capture_output=True, text=True, timeout=10, check=False
    )
    assert real.stdout == SYSCTL_USAGE


async def test_ip_addr_add_and_mtu_change_state_and_are_lost_at_reboot() -> None:
    w = lab()
    rail = w.nodes["spark2"].rails[0]
    _o, err, rc = await run(w, "ip addr add 10.9.1.12/24 dev enp1s0f0np0", "spark2")
    assert (err, rc) == ("RTNETLINK answers: Operation not permitted\n", 2)
    _o, err, rc = await run(w, "sudo -n ip addr add 10.9.1.1/24 dev enp1s0f0np0", "spark2")
    assert rc == 0 and rail.addresses == ["10.9.1.2/24", "10.9.1.1/24"]
    # spark1's 10.9.1.1 now has two owners: ARP flux, the frames vanish
    assert flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0")).stalled
    _o, err, rc = await run(w, "sudo -n ip addr add 10.9.1.1/24 dev enp1s0f0np0", "spark2")
    assert (err, rc) == ("Error: ipv4: Address already assigned.\n", 2)
    _o, _e, rc = await run(w, "sudo -n ip link set dev enp1s0f0np0 mtu 1500", "spark2")
    assert rc == 0 and rail.mtu == 1500
    out, _e, _rc = await run(w, "ip link show enp1s0f0np0", "spark2")
    assert " mtu 1500 qdisc mq state UP mode DEFAULT group default qlen 1000\n" in out
    _o, err, rc = await run(w, "sudo -n ip link set dev enp1s0f0np0 mtu 10000", "spark2")
    assert (err, rc) == ("Error: mtu greater than device maximum.\n", 2)
    _o, _e, rc = await run(w, "sudo -n sysctl -w net.ipv4.conf.all.arp_ignore=0", "spark2")
    assert rc == 0 and w.nodes["spark2"].sysctls["net.ipv4.conf.all.arp_ignore"] == "0"
    _o, err, rc = await run(w, "sudo -n sysctl -w nosuch.key=1", "spark2")
    assert rc == 1 and "cannot stat /proc/sys/nosuch/key" in err
    w.power_off(w.nodes["spark2"])
    w.boot(w.nodes["spark2"])
    assert rail.addresses == ["10.9.1.2/24"] and rail.mtu == 9000
    assert w.nodes["spark2"].sysctls["net.ipv4.conf.all.arp_ignore"] == "1"


async def test_ip_s_link_prints_the_counters() -> None:
    w = lab()
    w.nodes["spark1"].rails[0].counters["tx_bytes_phy"] = 2778086629
    w.nodes["spark1"].rails[0].counters["tx_packets_phy"] = 10062413
    out, _e, rc = await run(w, "ip -s link show enp1s0f0np0")
    lines = out.splitlines()
    assert (
        rc == 0 and lines[2] == "    RX:  bytes  packets errors dropped  missed   mcast           "
    )
    assert lines[5] == "    2778086629 10062413      0       0       0       0 "


async def test_poweroff_powers_off() -> None:
    w = lab()
    seen: list[tuple[str, str]] = []
    host = Host(w, w.nodes["spark3"], Registry(), on_reboot=lambda n, k: seen.append((n, k)))
    sink: list[str] = []
    assert await host.run("sudo -n poweroff", sink.append, sink.append) == 0
    assert await host.run("sudo -n shutdown -r now", sink.append, sink.append) == 0
    assert await host.run("sudo -n reboot", sink.append, sink.append) == 0
    assert seen == [("spark3", "poweroff"), ("spark3", "reboot"), ("spark3", "reboot")]


FIXTURES = __import__("pathlib").Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"


def _fixture(rel: str) -> str:
    path = FIXTURES / "real" / rel
    if not path.exists():
        pytest.skip(f"{path} absent (the shared fixtures are not part of the repo)")
    return path.read_text()


def _shape(text: str) -> list[str]:
    """A line's layout without its values: the key and the tab structure before the value."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        key, sep, _v = line.partition(":")
        out.append(key + sep)
    return out


async def test_ibv_devinfo_has_the_real_layout() -> None:
    real = _fixture("ibv_devinfo/mlx5-cx4lx-4devices-roce-active_mtu1024.txt")
    w = lab()
    out, _e, rc = await run(w, "ibv_devinfo")
    assert rc == 0
    real_block = _shape(real.split("\n\n")[0])
    mine = _shape(out.split("\n\n")[0])
    assert [k.replace("mlx5_0", "D") for k in real_block] == [
        k.replace("rocep1s0f0", "D") for k in mine
    ]
    assert "\tfw_ver:\t\t\t\t28.45.1020\n" in out and "active_mtu:\t\t4096 (5)" in out
    out, _e, rc = await run(w, "ibv_devinfo -l")
    assert out.startswith("4 HCAs found:\n\trocep1s0f0\n")
    _o, err, rc = await run(w, "ibv_devinfo -x")
    assert rc == 255 and err == "ibv_devinfo: invalid option -- 'x'\n"


async def test_rdma_link_and_ethtool_m_have_the_real_layout() -> None:
    real = _fixture("rdma-link/gb10-rdma-link-2-active-2-down.txt").splitlines()[1:]
    w = lab("healthy-2node-direct")
    out, _e, _rc = await run(w, "rdma link")
    assert [line.split()[::2] for line in out.splitlines()] == [line.split()[::2] for line in real]
    real_m = _fixture(
        "ethtool-m/gb10-ethtool-m-qsfp-dac-400g-class-legacy-decode-selected-lines.txt"
    )
    out, _e, rc = await run(w, "ethtool -m enp1s0f0np0")
    assert rc == 0
    mine = {k.strip(): v.strip() for k, _s, v in (x.partition(" : ") for x in out.splitlines())}
    for line in real_m.splitlines():
        key, _s, value = line.partition(" : ")
        assert mine[key.strip()] == value.strip() or key.startswith("Length (OM1")


async def test_the_host_sees_the_switch_side_link() -> None:
    w = lab("fault-switch-link-degraded")
    out, _e, _rc = await run(w, "ethtool enp1s0f0np0; cat /sys/class/net/enp1s0f0np0/speed")
    assert "\tSpeed: 100000Mb/s\n" in out and out.endswith("\n100000\n")
    out, _e, _rc = await run(w, "cat /sys/class/infiniband/rocep1s0f0/ports/1/rate")
    assert out == "100 Gb/sec (4X EDR)\n"
    _o, err, rc = await run(w, "ethtool --frobnicate enp1s0f0np0")
    assert rc == 1 and err.startswith("ethtool: bad command line argument(s)\n")


async def test_journalctl_list_boots_from_the_boot_history() -> None:
    w = lab()
    node = w.nodes["spark2"]
    first = node.boot_id
    w.power_off(node)
    w.boot(node)
    out, _e, rc = await run(w, "journalctl --list-boots", "spark2")
    lines = out.splitlines()
    assert rc == 0 and lines[0].split() == ["IDX", "BOOT", "ID", "FIRST", "ENTRY", "LAST", "ENTRY"]
    assert [line.split()[:2] for line in lines[-2:]] == [
        ["-1", first.replace("-", "")],
        ["0", node.boot_id.replace("-", "")],
    ]
    _o, err, rc = await run(w, "journalctl --bogus")
    assert (err, rc) == ("journalctl: unrecognized option '--bogus'\n", 1)


def test_boot_log_stamps_differ_per_node_and_per_boot() -> None:
    w = lab()
    stamps = {n: next(t for t, m in w.nodes[n].dmesg if "firmware version" in m) for n in w.nodes}
    assert len(set(stamps.values())) == len(stamps)
    node = w.nodes["spark1"]
    before = stamps["spark1"]
    w.power_off(node)
    w.boot(node)
    after = next(t for t, m in node.dmesg if "firmware version" in m)
    assert after != before and 1.0 < after < 1.2


async def test_ethtool_s_has_the_real_layout() -> None:
    import re

    real = _fixture("ethtool-S/mlx5-kernel5.15-xdp-nonzero-only-rx_discards_phy-tx_pause.txt")
    w = lab()
    out, _e, rc = await run(w, "ethtool -S enp1s0f0np0")
    row = re.compile(r"^     [a-z0-9_]+: \d+$")
    for text in (real, out):
        lines = text.splitlines()
        assert lines[0] == "NIC statistics:" and all(row.match(x) for x in lines[1:])
    names = [x.split(":")[0].strip() for x in out.splitlines()[1:]]
    assert names[:4] == [x.split(":")[0].strip() for x in real.splitlines()[1:5]]
    assert rc == 0 and "rx_discards_phy" in names and "tx_pause_ctrl_phy" in names
