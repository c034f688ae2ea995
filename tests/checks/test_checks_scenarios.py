"""`fabwiz check --lab` on every built-in scenario reports exactly the injected fault ids.

None missed, none extra (benign red herrings are allowed: they are not faults); healthy
scenarios exit 0, the others 1. Scenarios whose fault needs traffic run with --perf.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from flows.checks import perf_rails
from screens.commands.check import check
from wizard.lab import scenarios

# a throttle verdict needs the bandwidth signature: an old firmware alone is information
TRAFFIC_FAULTS = {"host.cx7-degraded", "host.cx7-throttled", "process.undrained-measurement"}

# Where the lab, not the check, disagrees with FAULTS.md (see the checks helper's report).
# Scenarios the lab cannot model faithfully yet, with the reason (none at the moment): listed
# here as strict xfails so that a fix in the lab makes the suite say so.
LAB_ISSUES: dict[str, str] = {}

# Node-readiness and switch-release scenarios set facts, not faults: the preflight finding each one gives (and, on a
# node whose sudo asks a password, the checks that need sudo there are unknown).
READINESS: dict[str, set[str]] = {
    "node-without-perftest": {"preflight.tool-missing"},
    "node-without-nccl-tests": {"preflight.tool-missing"},
    "node-broken-mpirun-ssh": {"preflight.mpirun-ssh"},
    "node-without-passwordless-sudo": {
        "preflight.sudo",
        "host.pfc-enabled",
        "host.pcie-width",
        "persist.netplan-addresses",  # its netplan files are root's: unread, so unknown
    },
    "routeros-7-21-regression": {"switch.routeros-rdma-regression"},
    "nm-profile-fights": {"persist.nm-profile"},  # a profile of its own that wins at boot
}

# faults only the job's own NCCL run shows (no config sweep reads where they are): with --perf
JOB_ENV_ONLY = {"nccl-hca-user-conf"}


def _run(name: str, *extra: str) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(
        check, ["--lab", name, "--json", "--time-scale", "1000", *extra], catch_exceptions=False
    )
    return result.exit_code, json.loads(result.stdout)


def _case(name: str) -> object:
    marks = [pytest.mark.xfail(reason=LAB_ISSUES[name], strict=True)] if name in LAB_ISSUES else []
    return pytest.param(name, marks=marks, id=name)


@pytest.mark.lab
@pytest.mark.parametrize("name", [_case(n) for n in scenarios.builtin_names()])
def test_check_lab_reports_exactly_the_injected_faults(name: str) -> None:
    scenario = scenarios.load(name)
    injected = {f.id for f in scenario.faults} | READINESS.get(name, set())
    if any(p.hw_offload is False for p in scenario.facts.ports.values()):
        injected.add("switch.offload-lost")  # offload lost with no modelled cause (a fact)
    extra = ("--perf",) if injected & TRAFFIC_FAULTS or name in JOB_ENV_ONLY else ()
    code, report = _run(name, *extra)
    findings = report["findings"]
    assert isinstance(findings, list)
    got = {f["fault"] for f in findings if f["status"] != "benign"}
    assert got == injected
    assert code == (0 if not injected else 1)
    assert report["healthy"] is (not injected)
    for f in findings:
        assert set(f) == {"fault", "status", "targets", "summary", "evidence"}
        assert f["status"] in ("fail", "warn", "unknown", "benign")
        assert f["evidence"] and f["targets"]


@pytest.mark.lab
@pytest.mark.parametrize(
    "name",
    [
        "healthy-4node-crs804",
        "crs804-three-bugs",
        # nothing moves on any rail, NCCL either: no rail is "left idle" by an HCA filter
        "fault-switch-qos-pfc-stall",
    ],
)
def test_perf_adds_no_extra_fault(name: str) -> None:
    injected = {f.id for f in scenarios.load(name).faults}
    code, report = _run(name, "--perf")
    findings = report["findings"]
    assert isinstance(findings, list)
    got = {f["fault"] for f in findings if f["status"] not in ("benign", "unknown")}
    assert got == injected
    # rails the injected faults cap show nothing of their CX7s: unknown, masked (never a pass)
    unknown = {f["fault"]: f for f in findings if f["status"] == "unknown"}
    assert set(unknown) == (set(perf_rails.CX7) if injected else set())
    assert all("masked by switch." in f["summary"] for f in unknown.values())
    rails = [m for m in report["measurements"] if m["kind"] == "rail"]  # type: ignore[union-attr]
    nccl = [m for m in report["measurements"] if m["kind"] == "nccl"]  # type: ignore[union-attr]
    # every pair of 4 nodes (6) on each of the 4 planes, then one bidirectional rail (-b)
    uni = [m for m in rails if "->" in m["target"]][:24]
    assert len(uni) == 24 and len(rails) in (24, 25)
    # all_reduce over the cluster, sendrecv on the first two nodes, the job's own environment
    assert [m["target"] for m in nccl] == [
        "cluster",
        "spark1+spark2/sendrecv_perf",
        "cluster/job-env",
    ]
    if not injected:
        assert code == 0
        assert len(rails) == 25 and 200 < rails[-1]["value"] < 210  # -b: ~206 aggregate
        rails = uni
        assert all(105 < m["value"] < 112 for m in rails)
        assert 21.875 <= nccl[0]["value"] < 27
    else:
        assert code == 1
        assert all(m["value"] < 11 for m in uni)  # software forwarding / stall
        # -b: both directions share the switch CPU's forwarding (CRS804 15.5 Gb/s in all)
        assert all(m["value"] < 16 for m in rails[24:])


@pytest.mark.lab
def test_nodes_and_switches_in_json() -> None:
    code, report = _run("healthy-2node-direct")
    assert code == 0
    nodes = report["nodes"]
    assert isinstance(nodes, list) and [n["name"] for n in nodes] == ["spark1", "spark2"]
    rails = nodes[0]["rails"]
    assert [(r["netdev"], r["port"], r["half"]) for r in rails] == [
        ("enp1s0f0np0", 0, "A"),
        ("enP2p1s0f0np0", 0, "B"),
        ("enp1s0f1np1", 1, "A"),
        ("enP2p1s0f1np1", 1, "B"),
    ]
    assert rails[0]["addresses"] == ["10.9.1.1/24"] and rails[0]["mtu"] == 9000
    assert report["switches"] == []


def test_bad_inventory_exits_2(tmp_path: object) -> None:
    from pathlib import Path

    p = Path(str(tmp_path)) / "fab.yaml"
    p.write_text("nodes:\n  - name: a\n    prot: 22\n    host: a.lab\n")
    result = CliRunner().invoke(check, ["-i", str(p)])
    assert result.exit_code == 2
    assert "fab.yaml:3: nodes.0.prot: unknown key 'prot'" in result.output


def test_every_target_unreachable_exits_2(tmp_path: object) -> None:
    import socket
    from pathlib import Path

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nobody listens there now
    p = Path(str(tmp_path)) / "fab.yaml"
    p.write_text(f"nodes:\n  - {{name: spark1, host: 127.0.0.1, port: {port}, known_hosts: kh}}\n")
    result = CliRunner().invoke(check, ["-i", str(p), "--json"])
    assert result.exit_code == 2
    report = json.loads(result.stdout)
    assert report["healthy"] is False
    by_fault = {f["fault"]: f for f in report["findings"]}
    finding = by_fault.pop("preflight.unreachable")
    assert finding["targets"] == ["spark1"]
    assert finding["evidence"][0]["observed"].startswith(f"spark1: cannot reach 127.0.0.1:{port}")
    # Every check that needed spark1 is unknown for spark1: none of them passed unseen.
    assert "host.duplicate-ip" in by_fault
    assert {f["status"] for f in by_fault.values()} == {"unknown"}
    assert {tuple(f["targets"]) for f in by_fault.values()} == {("spark1",)}


@pytest.mark.lab
def test_readable_output_groups_findings_by_step() -> None:
    result = CliRunner().invoke(check, ["--lab", "crs804-three-bugs", "--time-scale", "1000"])
    assert result.exit_code == 1
    out = result.output
    assert out.splitlines()[0].startswith("3 finding(s), 3 failing  4/4 nodes, 1/1 switches")
    offload, qos, addressing = (out.index(t) for t in ("Switch offload", "QoS", "Addressing"))
    assert offload < qos < addressing
    assert "FAIL    switch.qos-pfc-stall" in out
    assert "trust-l3=keep" in out and "pfc=pfc-tc3" in out  # wrapped in 80 columns
    assert out.index("seen, harmless") > addressing
    assert "benign.pcie-27w" in out


@pytest.mark.lab
@pytest.mark.parametrize(
    "name",
    [
        # behind a CPU-forwarding switch the rails NCCL used carried very unequal shares
        "fault-switch-offload-disabled",
        # the rails NCCL could not pair up idle because a rail is down, or a half unconfigured
        "fault-host-rail-down",
        "fault-host-half-unused",
        # the detour: a number that does not move with the QP count, across switches only
        "fault-switch-rstp-isl-blocked",
        "crs812-six-node",
    ],
)
def test_perf_blames_no_fault_the_fabric_does_not_have(name: str) -> None:
    """`--perf` adds NCCL and the rail matrix: what they show is put on the injected faults
    (seen before: nccl.hca-filter, switch.offload-lost and nccl.busbw-low failing on these
    labs, none of them there). CX7s a switch fault masks stay unknown, never a finding."""
    injected = {f.id for f in scenarios.load(name).faults}
    code, report = _run(name, "--perf")
    findings = report["findings"]
    assert isinstance(findings, list)
    assert {f["fault"] for f in findings if f["status"] in ("fail", "warn")} == injected
    unknown = {f["fault"] for f in findings if f["status"] == "unknown"}
    assert unknown <= set(perf_rails.CX7)
    assert code == 1
