"""The emulated host commands answer in the real formats: fabwiz's own parsers read them."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path

import pytest

from wizard.lab import scenarios
from wizard.lab.clock import ManualClock
from wizard.lab.hostcmds import Host
from wizard.lab.perftest import Registry
from wizard.lab.world import World

ROOT = Path(__file__).resolve().parents[2]
parsers = pytest.importorskip("wizard.parsers.perftest", reason="parsers not in this build")


class Node:
    """One node's shell on a world whose lab time moves only as its commands wait on it."""

    def __init__(self, w: World, clock: ManualClock, reg: Registry, name: str) -> None:
        self.host = Host(w, w.nodes[name], reg)
        self.clock = clock
        self.reg = reg

    async def _run(self, script: str, stdin: str) -> tuple[str, str, int]:
        out: list[str] = []
        err: list[str] = []
        rc = await self.host.run(script, out.append, err.append, stdin=stdin)
        return "".join(out), "".join(err), rc

    async def run(self, script: str, stdin: str = "") -> tuple[str, str, int]:
        """The script to its end, lab time moving on whenever it only waits for lab time."""
        return await self.clock.run(self._run(script, stdin))

    async def serve(self, script: str) -> asyncio.Task[tuple[str, str, int]]:
        """Start a server (ib_write_bw or iperf3 without a peer); back once it listens."""
        before = len(self.reg.servers) + len(self.reg.iperf)
        task = asyncio.create_task(self._run(script, ""))
        while len(self.reg.servers) + len(self.reg.iperf) == before and not task.done():
            await asyncio.sleep(0)
        return task


def lab(name: str) -> tuple[World, dict[str, Node]]:
    clock = ManualClock()
    w = scenarios.build_world(scenarios.load(name), clock=clock)
    reg = Registry()
    return w, {n: Node(w, clock, reg, n) for n in w.nodes}


# --- the shell subset --------------------------------------------------------------------------


async def test_shell_subset() -> None:
    _w, n = lab("healthy-2node-direct")
    s = n["spark1"]
    assert await s.run("echo a && false || echo b; echo rc=$?") == ("a\nb\nrc=0\n", "", 0)
    assert await s.run("false; echo $?") == ("1\n", "", 0)
    # and-or lists read left to right, as sh does: `c` runs when `a` fails in `a && b || c`
    assert await s.run("false && echo b || echo c") == ("c\n", "", 0)
    assert await s.run("true || echo b && echo c") == ("c\n", "", 0)
    assert await s.run("false || false && echo b; echo rc=$?") == ("rc=1\n", "", 0)
    assert await s.run("foo --bar") == ("", "bash: foo: command not found\n", 127)
    assert await s.run("foo 2>/dev/null; echo $?") == ("127\n", "", 0)
    assert await s.run("cat /nope 2>&1") == ("cat: /nope: No such file or directory\n", "", 1)
    assert await s.run("printf '%s:%s\\n' a b c d") == ("a:b\nc:d\n", "", 0)
    out, _e, rc = await s.run("sh -c 'echo \"x $?\"; exit 3'")
    assert (out, rc) == ("x 0\n", 3)
    out, _e, rc = await s.run("sudo -n dmesg | grep -c 27W")
    assert out == "2\n" and rc == 0
    out, err, rc = await s.run("dmesg")
    assert rc == 1 and "Operation not permitted" in err
    assert await s.run("echo ~ ~/x '~'") == ("/home/fabwiz /home/fabwiz/x ~\n", "", 0)
    assert (await s.run("cat ~/.nccl.conf"))[1] == (
        "cat: /home/fabwiz/.nccl.conf: No such file or directory\n"
    )


async def test_another_users_process_environment_needs_root() -> None:
    # /proc/<pid>/environ is mode 0400, owned by the process's user: EACCES for the login user
    _w, n = lab("healthy-2node-direct")
    s = n["spark1"]
    assert await s.run("cat /proc/1/environ") == (
        "",
        "cat: /proc/1/environ: Permission denied\n",
        1,
    )
    out, err, rc = await s.run("grep -a -z -H -e ^HOME= /proc/[0-9]*/environ")
    assert (out, err, rc) == ("", "grep: /proc/1/environ: Permission denied\n", 2)
    out, err, rc = await s.run("sudo -n grep -a -z -H -e ^HOME= /proc/[0-9]*/environ")
    assert (out, err, rc) == ("/proc/1/environ:HOME=/\0", "", 0)
    assert (await s.run("cat /proc/1/comm"))[0] == "systemd\n"  # comm is world-readable


async def test_sweep_style_batched_script() -> None:
    _w, n = lab("healthy-2node-direct")
    script = (
        "echo '@@fabwiz 1'; ibdev2netdev 2>&1; echo \"@@rc $?\"; "
        "echo '@@fabwiz 2'; cat /etc/nccl.conf 2>&1; echo \"@@rc $?\"; "
        "echo '@@fabwiz 3'; bash -lc 'env | grep ^NCCL_' 2>&1; echo \"@@rc $?\""
    )
    out, _e, rc = await n["spark1"].run(script)
    assert rc == 0
    assert "@@rc 0" in out.split("@@fabwiz 2")[0]
    assert "cat: /etc/nccl.conf: No such file or directory\n@@rc 1" in out
    assert out.rstrip().endswith("@@rc 1")


# --- real formats, read by the real parsers -----------------------------------------------------


async def test_probe_outputs_parse() -> None:
    from wizard.parsers import (
        ethtool,
        ibdev2netdev,
        iproute2,
        kernel_log,
        lspci,
        mlnx_qos,
        ping,
        sysctl,
        sysfs,
    )

    _w, n = lab("healthy-4node-crs804")
    s = n["spark1"]
    r = ibdev2netdev.parse_ibdev2netdev((await s.run("ibdev2netdev"))[0])
    assert {(m.rdma, m.netdev, m.up) for m in r.mappings} == {
        ("rocep1s0f0", "enp1s0f0np0", True),
        ("rocep1s0f1", "enp1s0f1np1", True),
        ("roceP2p1s0f0", "enP2p1s0f0np0", True),
        ("roceP2p1s0f1", "enP2p1s0f1np1", True),
    }
    ip = iproute2.parse_ip((await s.run("ip -j addr show"))[0])
    by = {i.name: i for i in ip.interfaces}
    assert by["enP2p1s0f0np0"].mtu == 9000
    assert [(a.family, a.address, a.prefixlen) for a in by["enP2p1s0f0np0"].addresses] == [
        ("inet", "10.9.2.1", 24)
    ]
    link = iproute2.parse_ip((await s.run("ip -j link show"))[0])
    assert {i.name for i in link.interfaces} >= {"enp1s0f0np0", "enP2p1s0f1np1"}
    e = ethtool.parse_ethtool((await s.run("ethtool enp1s0f0np0"))[0])
    assert e.links[0].speed_mbps == 200000 and e.links[0].link_detected
    d = ethtool.parse_ethtool_driver((await s.run("ethtool -i enp1s0f0np0"))[0])
    assert d.driver == "mlx5_core" and d.bus_info == "0000:01:00.0"
    assert d.firmware_version == "28.45.1020"
    st = ethtool.parse_ethtool_stats((await s.run("ethtool -S enp1s0f0np0"))[0])
    assert "tx_packets_phy" in st.counters and "link_down_events_phy" in st.counters
    cmd = (
        "grep -H . /sys/class/infiniband/rocep1s0f0/ports/1/hw_counters/* "
        "/sys/class/infiniband/rocep1s0f0/ports/1/counters/*"
    )
    c = sysfs.parse_sysfs_counters((await s.run(cmd))[0])
    assert c.device == "rocep1s0f0"
    assert c.hw_counters["local_ack_timeout_err"] == 0
    q = mlnx_qos.parse_mlnx_qos((await s.run("sudo -n mlnx_qos -i enp1s0f0np0"))[0])
    assert q.pfc == (0,) * 8
    sc = sysctl.parse_sysctl(
        (
            await s.run(
                "sysctl net.ipv4.conf.all.arp_ignore net.ipv4.conf.all.arp_announce "
                "net.ipv4.conf.all.rp_filter"
            )
        )[0]
    )
    assert sc.values == {
        "net.ipv4.conf.all.arp_ignore": "1",
        "net.ipv4.conf.all.arp_announce": "2",
        "net.ipv4.conf.all.rp_filter": "2",
    }
    pci = lspci.parse_lspci((await s.run("sudo -n lspci -vv -d 15b3:"))[0])
    assert len(pci.devices) == 4
    assert all(dv.lnksta is not None and dv.lnksta.width == 4 for dv in pci.devices)
    k = kernel_log.parse_kernel_log((await s.run("sudo -n dmesg"))[0])
    assert any("27W" in ev.text for ev in k.events)
    pg = ping.parse_ping((await s.run("ping -c 3 -M do -s 8972 -I enp1s0f0np0 10.9.1.2"))[0])
    assert pg.transmitted == 3 and pg.received == 3 and pg.packet_size == 9000


async def test_jumbo_ping_fails_with_host_mtu_1500() -> None:
    from wizard.parsers import ping

    _w, n = lab("fault-host-mtu")
    out, _e, rc = await n["spark2"].run("ping -c 3 -M do -s 8972 -I enp1s0f0np0 10.9.1.1")
    p = ping.parse_ping(out)
    assert rc == 1 and p.received == 0 and p.errors == 3 and p.reported_mtu == 1500
    out, _e, rc = await n["spark1"].run("ping -c 3 -M do -s 8972 -I enp1s0f0np0 10.9.1.2")
    assert rc == 1 and ping.parse_ping(out).received == 0  # the far end drops it


async def test_ib_write_bw_pair_and_stall() -> None:
    from wizard.parsers import perftest

    _w, n = lab("healthy-4node-crs804")
    server = await n["spark2"].serve("ib_write_bw -d rocep1s0f0 -x 3 -q 1 -D 5 -F --report_gbits")
    out, err, rc = await n["spark1"].run(
        "ib_write_bw -d rocep1s0f0 -x 3 -q 1 -D 5 -F --report_gbits 10.9.1.2"
    )
    sout, _serr, src = await server
    assert rc == 0 and src == 0, err
    r = perftest.parse_perftest(out)
    assert r.bw_avg_gbps == pytest.approx(109.2, rel=0.01)
    assert r.gid_index == 3 and r.mtu == 4096 and r.device == "rocep1s0f0"
    assert perftest.parse_perftest(sout).waiting_for_client

    _w, n = lab("fault-switch-qos-pfc-stall")
    server = await n["spark2"].serve("ib_write_bw -d rocep1s0f0 -x 3 -q 1 -D 5 -F --report_gbits")
    out, err, rc = await n["spark1"].run(
        "ib_write_bw -d rocep1s0f0 -x 3 -q 1 -D 5 -F --report_gbits 10.9.1.2 2>&1"
    )
    assert rc == 1
    r = perftest.parse_perftest(out)
    assert r.wc_status == 12 and not r.rows
    _sout, _serr, src = await server
    assert src == 1


async def test_client_without_server() -> None:
    _w, n = lab("healthy-2node-direct")
    _out, err, rc = await n["spark1"].run("ib_write_bw -d rocep1s0f0 -x 3 --report_gbits 10.9.1.2")
    assert rc == 1 and "Couldn't connect to 10.9.1.2:18515" in err


async def test_nccl_all_reduce_healthy_and_hca_prefix() -> None:
    from wizard.parsers import nccl

    cmd = (
        "mpirun --allow-run-as-root -np 2 -H spark1,spark2 -x NCCL_DEBUG=INFO "
        "/home/fabwiz/nccl-tests/build/all_reduce_perf -b 1G -e 4G -f 2 -g 1"
    )
    _w, n = lab("healthy-2node-direct")
    out, _e, rc = await n["spark1"].run(cmd)
    r = nccl.parse_nccl(out)
    assert rc == 0 and r.transport == "IB"
    assert r.largest_size_busbw == pytest.approx(26.58, rel=0.05)
    assert r.net_ib_device_count == 2

    _w, n = lab("nccl-hca-prefix")
    env, _e, rc = await n["spark1"].run("bash -lc 'env | grep ^NCCL_'")
    assert env == "NCCL_IB_HCA=rocep1s0f\n" and rc == 0
    # mpirun from a plain ssh command reads no /etc/profile.d: NCCL sees no filter
    out, _e, rc = await n["spark1"].run(cmd)
    r = nccl.parse_nccl(out)
    assert rc == 0 and r.ib_hca is None and r.net_ib_device_count == 2
    # from the operator's login shell, the launch node's rank inherits the prefix filter (the
    # rank mpirun starts over ssh does not, and the ring runs at the slowest rank's pace)
    out, _e, rc = await n["spark1"].run(f"bash -lc {shlex.quote(cmd)}")
    r = nccl.parse_nccl(out)
    assert r.ib_hca == "rocep1s0f"
    assert dict(r.net_ib_devices_per_host) == {"spark1": 1, "spark2": 2}
    assert r.largest_size_busbw == pytest.approx(26.58 / 2, rel=0.05)
    # the -x override wins over the login env
    out, _e, rc = await n["spark1"].run(
        cmd.replace("-x NCCL_DEBUG", "-x NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0 -x NCCL_DEBUG")
    )
    assert nccl.parse_nccl(out).largest_size_busbw == pytest.approx(26.58, rel=0.05)


async def test_nccl_socket_fallback_from_nccl_conf() -> None:
    from wizard.parsers import nccl

    _w, n = lab("fault-nccl-socket-fallback")
    out, _e, rc = await n["spark1"].run("cat /etc/nccl.conf")
    assert out == "NCCL_IB_DISABLE=1\n"
    out, _e, rc = await n["spark1"].run(
        "mpirun -np 4 -H spark1,spark2,spark3,spark4 -x NCCL_DEBUG=INFO "
        "/home/fabwiz/nccl-tests/build/all_reduce_perf -b 1G -e 1G"
    )
    r = nccl.parse_nccl(out)
    assert rc == 0 and r.transport == "Socket"
    assert 2.0 <= (r.largest_size_busbw or 0) <= 3.0


# --- fixes have their effect --------------------------------------------------------------------


async def test_netplan_fix_for_duplicate_ip_and_reboot_persistence() -> None:
    w, n = lab("fault-host-duplicate-ip")
    s = n["spark3"]
    plan = "network:\n  version: 2\n  ethernets:\n" + "".join(
        f"    {dev}: {{addresses: [10.9.{r}.3/24], mtu: 9000, dhcp4: false, link-local: []}}\n"
        for r, dev in enumerate(
            ["enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1"], start=1
        )
    )
    out, err, rc = await s.run("tee /etc/netplan/40-cx7.yaml", stdin=plan)
    assert rc == 1 and "Permission denied" in err
    assert (await s.run("sudo -n cp /etc/netplan/40-cx7.yaml /etc/netplan/40-cx7.yaml.fabwiz-bak"))[
        2
    ] == 0
    out, err, rc = await s.run("sudo -n tee /etc/netplan/40-cx7.yaml", stdin=plan)
    assert rc == 0 and out == plan
    assert w.nodes["spark3"].rails[0].addresses == ["10.9.1.2/24"]  # not applied yet
    assert (await s.run("sudo -n netplan apply"))[2] == 0
    assert w.nodes["spark3"].rails[0].addresses == ["10.9.1.3/24"]
    assert "/etc/netplan/40-cx7.yaml.fabwiz-bak" in w.nodes["spark3"].files


async def test_pfc_fix_runtime_then_systemd_oneshot_survives_reboot() -> None:
    from wizard.lab.hands import Hands

    w, n = lab("fault-host-pfc-enabled")
    s = n["spark1"]
    rail = w.nodes["spark1"].rails[0]
    assert rail.pfc == (0, 0, 0, 1, 0, 0, 0, 0)
    await s.run("sudo -n mlnx_qos -i enp1s0f0np0 --pfc 0,0,0,0,0,0,0,0")
    assert rail.pfc == (0,) * 8
    Hands(w).reboot("spark1")
    assert rail.pfc == (0, 0, 0, 1, 0, 0, 0, 0)  # runtime only: back after reboot
    unit = (
        "[Unit]\nDescription=PFC off\n[Service]\nType=oneshot\n"
        + "".join(
            f"ExecStart=/usr/bin/mlnx_qos -i {d} --pfc 0,0,0,0,0,0,0,0\n"
            for d in ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")
        )
        + "[Install]\nWantedBy=multi-user.target\n"
    )
    await s.run("sudo -n tee /etc/systemd/system/fabwiz-pfc-off.service", stdin=unit)
    assert (await s.run("sudo -n systemctl daemon-reload"))[2] == 0
    assert (await s.run("sudo -n systemctl enable --now fabwiz-pfc-off.service"))[2] == 0
    assert rail.pfc == (0,) * 8
    Hands(w).reboot("spark1")
    assert all(r.pfc == (0,) * 8 for r in w.nodes["spark1"].rails)


async def test_sysctl_fix() -> None:
    _w, n = lab("fault-host-arp-sysctls")
    s = n["spark1"]
    assert (await s.run("sysctl -n net.ipv4.conf.all.arp_ignore"))[0] == "0\n"
    conf = "net.ipv4.conf.all.arp_ignore = 1\nnet.ipv4.conf.all.arp_announce = 2\n"
    await s.run("sudo -n tee /etc/sysctl.d/98-roce.conf", stdin=conf)
    out, _e, rc = await s.run("sudo -n sysctl --system")
    assert rc == 0 and "* Applying /etc/sysctl.d/98-roce.conf ..." in out
    assert (await s.run("cat /proc/sys/net/ipv4/conf/all/arp_ignore"))[0] == "1\n"
    assert (await s.run("sudo -n sysctl -w net.ipv4.conf.all.rp_filter=2"))[0] == (
        "net.ipv4.conf.all.rp_filter = 2\n"
    )


async def test_netplan_try_reverts_without_confirmation() -> None:
    w, n = lab("fault-host-mtu")
    s = n["spark2"]
    node = w.nodes["spark2"]
    good = node.files["/etc/netplan/40-cx7.yaml"].replace("mtu: 1500", "mtu: 9000")
    await s.run("sudo -n tee /etc/netplan/40-cx7.yaml", stdin=good)
    out, _e, rc = await s.run("sudo -n netplan try --timeout 30")
    assert rc == 78 and "Reverting." in out and node.rails[0].mtu == 1500
    out, _e, rc = await s.run("sudo -n netplan try --timeout 30", stdin="\n")
    assert rc == 0 and node.rails[0].mtu == 9000


async def test_iperf3_single_stream_is_cpu_bound_parallel_reaches_93() -> None:
    from wizard.parsers import iperf3

    _w, n = lab("healthy-2node-direct")

    async def measure(streams: int) -> float:
        server = await n["spark2"].serve("iperf3 -s -1")
        out, err, rc = await n["spark1"].run(f"iperf3 -c 10.9.1.2 -P {streams} -t 5 -J")
        await server
        assert rc == 0, err
        r = iperf3.parse_iperf3(out)
        assert r.streams == streams and r.protocol == "TCP"
        return r.sent_gbps or 0.0

    assert await measure(1) == pytest.approx(12.0, rel=0.05)  # benign.iperf-single-stream
    assert await measure(8) == pytest.approx(93.1, rel=0.05)
    out, _e, rc = await n["spark1"].run("iperf3 -c 10.9.1.2 -J")
    assert rc == 1 and "Connection refused" in iperf3.parse_iperf3(out).error


async def test_show_gids_and_rdma_link_parse_and_ipv6_shifts_the_ipv4_gid() -> None:
    from wizard.parsers import rdma

    _w, n = lab("healthy-2node-direct")
    g = rdma.parse_show_gids((await n["spark1"].run("show_gids rocep1s0f0"))[0])
    assert [(x.index, x.ipv4, x.version) for x in g.gids] == [
        (0, None, "v1"),
        (1, None, "v2"),
        (2, "10.9.1.1", "v1"),
        (3, "10.9.1.1", "v2"),
    ]
    links = rdma.parse_rdma_link((await n["spark1"].run("rdma link"))[0]).links
    assert {(x.device, x.state) for x in links} >= {
        ("rocep1s0f0", "ACTIVE"),
        ("rocep1s0f1", "DOWN"),
    }
    _w, n = lab("fault-host-ipv6-on-fabric")
    g = rdma.parse_show_gids((await n["spark1"].run("show_gids rocep1s0f0"))[0])
    assert [x.index for x in g.gids if x.ipv4 == "10.9.1.1"] == [4, 5]  # "index 3" is not IPv4
