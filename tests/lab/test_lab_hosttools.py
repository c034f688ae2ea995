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
