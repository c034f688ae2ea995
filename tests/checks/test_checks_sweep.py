"""The sweep: one SSH connection and one round trip per node, marker-framed batches, shell
quoting, an unreachable node as a finding while the rest goes on; and discovery."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from flows.registry import checks_for, probes_of
from wizard.discovery import discover_rails, pci_half_port, rails_from_observations
from wizard.inventory import load_inventory, resolve_password
from wizard.lab.lab import Lab
from wizard.model import ProbeResult
from wizard.probes import HostProbe
from wizard.sweep import Section, Sweeper, build_script, rail_pairs, split_script_output
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport
from wizard.transports.ssh import SshTarget, SshTransport

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "fixtures" / "real"


def test_script_quotes_and_frames_every_section() -> None:
    sections = [
        Section("ip_addr", "ip -j addr show"),
        Section("nccl_env", "bash -lc 'env | grep ^NCCL_'"),
        Section("mlnx_qos:enp1s0f0np0", "sudo -n mlnx_qos -i enp1s0f0np0"),
    ]
    script = build_script(sections, "@@M@@")
    words = shlex.split(script)
    assert words[:2] == ["sh", "-c"] and len(words) == 3
    inner = words[2]
    assert inner.split("; ")[:3] == [
        "echo '@@M@@ ip_addr' BEGIN",
        "ip -j addr show 2>&1",
        "echo '@@M@@ ip_addr' END $?",
    ]
    assert "bash -lc 'env | grep ^NCCL_' 2>&1" in inner


def test_split_output_by_markers_with_exit_status() -> None:
    sections = [
        Section("a", "cat /etc/nccl.conf"),
        Section("b", "sudo -n dmesg"),
        Section("c", "ibdev2netdev"),
    ]
    out = (
        "@@M@@ a BEGIN\ncat: /etc/nccl.conf: No such file or directory\n@@M@@ a END 1\n"
        "@@M@@ b BEGIN\nsudo: a password is required\n@@M@@ b END 1\n"
        "@@M@@ c BEGIN\nrocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\n"
    )
    res = split_script_output(out, sections, "@@M@@", target="spark1", started=1.0, duration=0.5)
    assert (res["a"].exit_status, res["a"].stdout, res["a"].error) == (
        1,
        "cat: /etc/nccl.conf: No such file or directory\n",
        None,
    )
    assert res["b"].error is not None and res["b"].error.startswith(
        "spark1: sudo needs a password to run dmesg"
    )
    assert res["c"].error == "spark1: the output of `ibdev2netdev` was cut short (no end marker)"
    assert res["c"].stdout == "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\n"


def test_rail_pairs_are_disjoint() -> None:
    assert rail_pairs(["s1", "s2", "s3", "s4"]) == [[("s1", "s2"), ("s3", "s4")]]
    assert rail_pairs(["s1", "s2", "s3"]) == [[("s1", "s2")], [("s3", "s1")]]


def test_pci_half_and_port() -> None:
    assert pci_half_port("0002:01:00.1") == ("B", 1)
    assert pci_half_port("0000:01:00.0") == ("A", 0)
    assert pci_half_port("garbage") is None


def test_discovery_on_a_real_ibdev2netdev() -> None:
    path = REAL / "ibdev2netdev" / "dgx-spark-port1-up-roceP2-listed-first.txt"
    if not path.is_file():
        pytest.skip(f"shared fixtures absent: {path}")
    rails = discover_rails("spark1", path.read_text())
    assert [(r.netdev, r.rdma, r.port, r.half, r.pci, r.up) for r in rails] == [
        ("enp1s0f0np0", "rocep1s0f0", 0, "A", "0000:01:00.0", False),
        ("enP2p1s0f0np0", "roceP2p1s0f0", 0, "B", "0002:01:00.0", False),
        ("enp1s0f1np1", "rocep1s0f1", 1, "A", "0000:01:00.1", True),
        ("enP2p1s0f1np1", "roceP2p1s0f1", 1, "B", "0002:01:00.1", True),
    ]


def test_discovery_prefers_pci_bus_info_over_names() -> None:
    ib = "mlx5_0 port 1 ==> eth2 (Up)\nmlx5_1 port 1 ==> eth3 (Up)\n"
    ethtool_i = {
        "eth2": "driver: mlx5_core\nbus-info: 0002:01:00.1\n",
        "eth3": "driver: mlx5_core\nbus-info: 0000:01:00.0\n",
    }
    rails = discover_rails("n1", ib, ethtool_i=ethtool_i)
    assert [(r.netdev, r.half, r.port) for r in rails] == [("eth3", "A", 0), ("eth2", "B", 1)]


async def _transports(
    lab: Lab, **kw: object
) -> tuple[SshTransport, dict[str, RouterOsTransport], list[str]]:
    inv = load_inventory(lab.inventory_path)
    ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None, **kw)  # type: ignore[arg-type]
    sws = {
        s.name: RouterOsTransport(RouterOsTarget.from_spec(s, resolve_password(s)))
        for s in inv.switches
    }
    return ssh, sws, [n.name for n in inv.nodes]


@pytest.mark.lab
async def test_sweep_uses_one_connection_and_one_round_trip_per_node() -> None:
    async with Lab("healthy-4node-crs804", time_scale=1000.0) as lab:
        ssh, sws, nodes = await _transports(lab)
        events: list[object] = []
        sweeper = Sweeper(ssh=ssh, nodes=nodes, switches=sws, sink=events.append)
        calls: list[str] = []
        real_run = ssh.run

        async def counting_run(name: str, command: str, **kw: object) -> ProbeResult:
            calls.append(name)
            return await real_run(name, command, **kw)  # type: ignore[arg-type]

        ssh.run = counting_run  # type: ignore[method-assign]
        probes = probes_of(checks_for(traffic=False))
        obs = await sweeper.sweep(probes)
        await ssh.close()
        for t in sws.values():
            await t.close()
    assert ssh.handshakes == 4
    # one batch per node (the per-rail probes in the node's own loop), then on the launch node
    # mpirun's SSH to each peer, each login a session of its own as soon as its peer answered
    # (how many overlap depends on when the peers answer: the 12-node test counts them)
    assert sorted(calls) == sorted([*nodes, *[nodes[0]] * (len(nodes) - 1)])
    assert 1 <= ssh.sessions(nodes[0]).peak <= len(nodes) - 1
    assert obs.unreachable == {}
    spark1 = obs.nodes["spark1"]
    assert spark1["ibdev2netdev"].exit_status == 0
    assert "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)" in spark1["ibdev2netdev"].stdout
    assert spark1["mlnx_qos:enP2p1s0f1np1"].command == "sudo -n mlnx_qos -i enP2p1s0f1np1"
    assert spark1["mlnx_qos:enP2p1s0f1np1"].exit_status == 0
    assert "PFC configuration" in spark1["mlnx_qos:enP2p1s0f1np1"].stdout
    # every rail of every node has its per-rail sections, from the node's loop
    per_rail = {p.name for p in probes if isinstance(p, HostProbe) and p.per_rail}
    assert per_rail >= {"ethtool", "ethtool_i", "mlnx_qos"}
    for node in nodes:
        for netdev in ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1"):
            for probe in per_rail:
                res = obs.nodes[node][f"{probe}:{netdev}"]
                assert res.error is None and res.exit_status == 0, (node, probe, netdev)
    assert spark1["nccl_conf"].exit_status == 1
    host_probe_count = sum(1 for p in probes if isinstance(p, HostProbe) and not p.per_rail)
    assert len([k for k in spark1 if ":" not in k]) >= host_probe_count
    mon = obs.switches["crs804"]["monitor"]
    assert {r["name"] for r in mon.rows} >= {"qsfp56-dd-1-1", "qsfp56-dd-4-5"}
    assert all(not r["name"].startswith("ether") for r in mon.rows)
    rails = rails_from_observations(obs)
    assert [(r.netdev, r.addresses, r.switch_port) for r in rails["spark3"]][:2] == [
        ("enp1s0f0np0", ("10.9.1.3/24",), "qsfp56-dd-3-1"),
        ("enP2p1s0f0np0", ("10.9.2.3/24",), "qsfp56-dd-3-1"),
    ]
    kinds = {type(e).__name__ for e in events}
    assert kinds == {"ProbeSent", "ProbeAnswered", "VersionsRecorded"}  # preflight's versions
    assert sum(type(e).__name__ == "VersionsRecorded" for e in events) == 1


@pytest.mark.lab
async def test_an_unreachable_node_is_a_finding_and_the_sweep_goes_on() -> None:
    async with Lab("healthy-4node-crs804", time_scale=1000.0) as lab:
        await lab.ssh["spark2"].stop()
        ssh, sws, nodes = await _transports(lab, connect_timeout=2.0)
        sweeper = Sweeper(ssh=ssh, nodes=nodes, switches=sws)
        obs = await sweeper.sweep(probes_of(checks_for(traffic=False)))
        await ssh.close()
        for t in sws.values():
            await t.close()
    assert list(obs.unreachable) == ["spark2"]
    assert obs.unreachable["spark2"].startswith("spark2: cannot reach 127.0.0.1:")
    assert sorted(obs.nodes) == ["spark1", "spark3", "spark4"]
    assert "crs804" in obs.switches


@pytest.mark.lab
async def test_mpirun_ssh_logins_run_together_within_max_sessions() -> None:
    """Twelve nodes: the launch node's eleven logins to its peers run at once, as many as its
    sshd's MaxSessions (10) lets run together, each its own session; none is refused."""
    from wizard.lab import scenarios

    text = (
        "name: twelve\ntopology: {nodes: 12, switches: [{model: CRS804-4DDQ}, "
        "{model: CRS804-4DDQ}], cables_per_node: 1}\nfaults: []\n"
    )
    async with Lab(scenarios.load_text(text, path="twelve.yaml"), time_scale=1000.0) as lab:
        ssh, sws, nodes = await _transports(lab)
        sweeper = Sweeper(ssh=ssh, nodes=nodes, switches=sws, sink=lambda e: None)
        obs = await sweeper.sweep(probes_of(checks_for(traffic=False)))
        await ssh.close()
        for t in sws.values():
            await t.close()
        launch = lab.ssh[nodes[0]]
        # together (how many depends on when the peers answer), never past MaxSessions
        assert 2 <= launch.peak_sessions <= 10 and launch.refused_sessions == 0
    logins = {k: r for k, r in obs.nodes[nodes[0]].items() if k.startswith("mpirun_ssh:")}
    assert sorted(logins) == sorted(f"mpirun_ssh:{n}" for n in nodes[1:])
    assert all(r.exit_status == 0 and r.error is None for r in logins.values())
    assert 2 <= ssh.sessions(nodes[0]).peak <= 10
