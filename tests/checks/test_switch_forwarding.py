"""Switch-side proof of forwarding: H flags, the offload log line, host-table flags, cpu-load
sampled during a transfer, and `switch.offload-lost` when no modelled cause explains a port
without hardware offload."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.checks import forwarding, perf_rails, switch_offload
from flows.expectations import DEFAULT
from flows.registry import checks_for, make_context, probes_of
from wizard.inventory import load_inventory, resolve_password
from wizard.lab.lab import Lab
from wizard.lab.scenarios import load_text
from wizard.model import Measurement, ProbeResult, Status
from wizard.probes import Observations
from wizard.sweep import Sweeper
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport
from wizard.transports.ssh import SshTarget, SshTransport

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "fixtures" / "real"

LOST = """
name: lost-two
topology: {nodes: 2, switches: [{model: CRS804-4DDQ}], cables_per_node: 1}
facts:
  ports:
    crs804/qsfp56-dd-1-1: {hw-offload: false}
    crs804/qsfp56-dd-1-5: {hw-offload: false}
"""


def _sw(rows: dict[str, list[dict[str, str]]]) -> Observations:
    return Observations(
        switches={
            "sw": {
                k: ProbeResult(target="sw", kind="api", command=k, rows=tuple(v))
                for k, v in rows.items()
            }
        }
    )


def test_latest_offload_line_per_bridge_wins() -> None:
    log = [
        {
            "time": "10:00:01",
            "message": 'hardware offloading activated on bridge "bridge" ports: a',
        },
        {
            "time": "10:00:02",
            "message": 'hardware offloading activated on bridge "roce" ports: x,y',
        },
        {
            "time": "10:05:00",
            "message": 'hardware offloading deactivated on bridge "roce" ports: x',
        },
        {"time": "10:06:00", "message": "ether1 link up (speed 1G, full duplex)"},
    ]
    lines = forwarding.offload_lines(log)
    assert lines["roce"].activated is False and lines["roce"].time == "10:05:00"
    assert lines["bridge"].activated is True and lines["bridge"].ports == ("a",)
    ev = forwarding.log_evidence(_sw({"log": log}), "sw", "roce")
    assert ev.status == Status.FAIL and "deactivated" in ev.observed


def test_activation_line_that_does_not_name_the_port_is_no_proof() -> None:
    log = [{"time": "t", "message": 'hardware offloading activated on bridge "b" ports: p1,p2'}]
    ok = forwarding.log_evidence(_sw({"log": log}), "sw", "b", ["p1"])
    bad = forwarding.log_evidence(_sw({"log": log}), "sw", "b", ["p3"])
    assert ok.status == Status.PASS
    assert bad.status == Status.FAIL and "p3" in bad.observed


def test_cpu_ports_come_from_the_switch_model() -> None:
    obs = _sw({"resource": [{"board-name": "CRS812-8DS-2DQ-2DDQ", "cpu-load": "3"}]})
    assert forwarding.cpu_ports(obs, "sw") == ("ether1",)
    assert forwarding.is_cpu_attached(obs, "sw", "ether2") is False
    assert forwarding.cpu_at_rest(obs, "sw") == 3.0
    unknown = _sw({"resource": [{"board-name": "CCR2004-16G-2S+"}]})
    assert forwarding.cpu_ports(unknown, "sw") is None
    assert forwarding.is_cpu_attached(unknown, "sw", "ether2") is True


def test_cpu_during_a_transfer_is_judged_against_the_table() -> None:
    m = Measurement("rail", "a->b", 9.4, "Gb/s", extra={"switch_cpu": {"sw": 97.0}})
    obs = Observations(measurements=(m,))
    ev = forwarding.cpu_evidence(obs, "sw", 10.0)
    assert ev.status == Status.FAIL and ev.observed == "97 % during a transfer"
    idle = forwarding.cpu_evidence(Observations(), "sw", 10.0)
    assert idle.status == Status.UNKNOWN


@pytest.mark.skipif(not (REAL / "routeros-api").is_dir(), reason="shared fixtures absent")
def test_host_flags_on_the_real_librouteros_host_table() -> None:
    import json

    from wizard.model import Rail

    data = json.loads(
        (REAL / "routeros-api/interface-bridge-host-print-librouteros.json").read_text()
    )
    table = [
        {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in r.items()}
        for r in data["data"]
    ]
    obs = _sw({"bridge_host": table})
    remote = next(r for r in table if r["local"] == "false")
    rail = Rail("n1", "eth3", "mlx5_0", 0, "A", mac=remote["mac-address"].lower())
    ctx = make_context(Observations(), nodes=["n1"], switches=["sw"])
    from dataclasses import replace

    ctx = replace(ctx, rails={"n1": (rail,)})
    [entry] = forwarding.host_entries(obs, "sw", ctx) or []
    assert entry.rail == "n1/eth3" and entry.interface == remote["on-interface"]
    assert entry.external is (remote["external"] == "true")
    [ev] = forwarding.host_evidence(obs, "sw", ctx)
    assert ev.status == (Status.PASS if entry.external else Status.FAIL)


async def _sweep(lab: Lab, *, perf: bool, duration_s: int = 5) -> tuple[Observations, object]:
    inv = load_inventory(lab.inventory_path)
    ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
    sws = {
        s.name: RouterOsTransport(RouterOsTarget.from_spec(s, resolve_password(s)))
        for s in inv.switches
    }
    nodes = [n.name for n in inv.nodes]
    sweeper = Sweeper(ssh=ssh, nodes=nodes, switches=sws, limits=DEFAULT)
    obs = await sweeper.sweep(probes_of(checks_for(traffic=perf)))
    if perf:
        from dataclasses import replace

        ms = await sweeper.rail_tests(duration_s=duration_s)
        obs = replace(obs, measurements=tuple(ms))
    await ssh.close()
    for t in sws.values():
        await t.close()
    ctx = make_context(
        obs,
        nodes=nodes,
        switches=[s.name for s in inv.switches],
        cabling=inv.cabling,
        management={s.name: tuple(s.management_ports) for s in inv.switches},
    )
    return obs, ctx


@pytest.mark.lab
async def test_offload_lost_without_a_modelled_cause_fails_with_the_switch_evidence() -> None:
    async with Lab(load_text(LOST, path="lost.yaml"), time_scale=1000.0) as lab:
        obs, ctx = await _sweep(lab, perf=False)
    verdicts = {v.fault: v for v in switch_offload.CHECK.run(obs, ctx)}  # type: ignore[arg-type]
    lost = verdicts["switch.offload-lost"]
    assert lost.status == Status.FAIL
    assert lost.targets == ("crs804/bridge",)
    for other in (
        "switch.offload-split-cage",
        "switch.offload-second-bridge",
        "switch.offload-disabled",
    ):
        assert verdicts[other].status == Status.PASS
    observed = [e.observed for e in lost.evidence]
    assert "bridge=bridge hw=yes hw-offload=false" in observed
    assert any("learned D (software: switch CPU)" in o for o in observed)
    assert any(e.command == "/log print" for e in lost.evidence)


@pytest.mark.lab
async def test_healthy_bridge_passes_with_the_activation_line_and_external_hosts() -> None:
    healthy = LOST.split("facts:", maxsplit=1)[0]
    async with Lab(load_text(healthy, path="ok.yaml"), time_scale=1000.0) as lab:
        obs, ctx = await _sweep(lab, perf=False)
    v = {v.fault: v for v in switch_offload.CHECK.run(obs, ctx)}["switch.offload-lost"]  # type: ignore[arg-type]
    assert v.status == Status.PASS
    assert any(e.command == "/log print" and e.status == Status.PASS for e in v.evidence)
    assert any("learned E (external" in e.observed for e in v.evidence)


@pytest.mark.lab
async def test_cpu_load_sampled_during_the_transfer_shows_software_forwarding() -> None:
    # a slow clock so that the 2 s transfers last long enough in wall time to be sampled
    async with Lab(load_text(LOST, path="lost.yaml"), time_scale=1.0) as lab:
        obs, ctx = await _sweep(lab, perf=True, duration_s=2)
    cpus = [m.extra.get("switch_cpu", {}).get("crs804") for m in obs.measurements]
    # busy = above the expectations' idle ceiling; one software-forwarded flow of 9.5 Gb/s on
    # the CRS804's 15.5 Gb/s of CPU forwarding is ~62 % (seed 000: "busy", no number given)
    busy = ctx.expectations.switch_cpu_idle_max_pct
    assert cpus and all(c is not None and c > busy for c in cpus)
    assert min(c for c in cpus if c is not None) >= 60
    # one direction: the CPU's ~9.5 Gb/s per flow; both directions together (-b) share the
    # CRS804 CPU's 15.5 Gb/s, which is why that sample reads 100 %
    one_way = [m for m in obs.measurements if not m.extra.get("bidir")]
    both = [m for m in obs.measurements if m.extra.get("bidir")]
    assert one_way and all(m.value < 10.0 for m in one_way)
    assert all(10.0 < m.value < 16.0 for m in both)
    lost = {v.fault: v for v in switch_offload.CHECK.run(obs, ctx)}["switch.offload-lost"]  # type: ignore[arg-type]
    cpu_rows = [e for e in lost.evidence if "cpu-load" in e.command]
    assert cpu_rows and cpu_rows[0].status == Status.FAIL
    assert cpu_rows[0].observed.endswith("% during a transfer")
    rails = {v.fault: v for v in perf_rails.CHECK.run(obs, ctx)}  # type: ignore[arg-type]
    assert rails["switch.offload-lost"].status == Status.FAIL
    # never straight to an AC drain, and never a pass: the CX7s' own rate does not show
    # through a CPU-forwarding switch; each rail is there with its number and what masks it
    measured = sorted(m.target for m in obs.measurements if m.valid)
    for fault in ("host.cx7-degraded", "host.cx7-throttled"):
        assert rails[fault].status == Status.UNKNOWN
        assert "masked by switch.offload-lost" in rails[fault].summary
        rows = rails[fault].evidence
        assert sorted(e.target for e in rows) == measured
        assert all(e.status == Status.UNKNOWN and " Gb/s" in e.observed for e in rows)
        assert all(e.expected.startswith("masked by switch.offload-lost") for e in rows)


def test_management_path_follows_session_arp_and_host_table() -> None:
    from wizard.mgmt import management_paths, management_ports

    paths = management_paths(
        ip_address=[{"address": "192.168.88.1/24", "interface": "bridge"}],
        ip_arp=[
            {"address": "192.168.88.7", "mac-address": "aa:bb:cc:00:00:01", "interface": "bridge"}
        ],
        bridge_host=[
            {"mac-address": "AA:BB:CC:00:00:01", "on-interface": "ether2", "local": "false"},
            {"mac-address": "AA:BB:CC:00:00:09", "on-interface": "bridge", "local": "true"},
        ],
        user_active=[
            {"address": "192.168.88.7", "via": "api"},
            {"address": "10.0.0.9", "via": "ssh"},
        ],
        bridges=["bridge"],
    )
    assert [(p.session_ip, p.ports, p.switch_address) for p in paths] == [
        ("192.168.88.7", ("ether2",), "192.168.88.1/24")
    ]
    # an address straight on a port (no bridge): that port
    direct = management_paths(
        ip_address=[{"address": "10.1.1.2/24", "interface": "ether1"}],
        ip_arp=[{"address": "10.1.1.9", "mac-address": "aa:00:00:00:00:02", "interface": "ether1"}],
        bridge_host=[],
        user_active=[{"address": "10.1.1.9", "via": "api"}],
        bridges=["bridge"],
    )
    assert management_ports(direct) == {"ether1"}


MGMT_ETHER2 = """
name: mgmt-ether2
topology: {nodes: 2, switches: [{model: CRS804-4DDQ}], cables_per_node: 1}
facts:
  switches:
    crs804: {management_port: ether2}
"""


@pytest.mark.lab
async def test_management_path_is_read_from_the_switch_and_cross_checks_the_inventory() -> None:
    async with Lab(load_text(MGMT_ETHER2, path="mgmt.yaml"), time_scale=1000.0) as lab:
        obs, ctx = await _sweep(lab, perf=False)
    paths = forwarding.management(obs, "crs804")
    assert paths is not None and [p.ports for p in paths] == [("ether2",)]
    assert paths[0].interface == "ether2"  # ether2 is in no bridge on a CRS804
    ev = forwarding.management_evidence(obs, "crs804", ("ether1",))
    assert ev.status == Status.WARN and "miss ether2" in ev.observed
    assert forwarding.management_evidence(obs, "crs804", ("ether2",)).status == Status.PASS
    off = switch_offload.parse(obs, ctx)  # type: ignore[arg-type]
    assert off.switches[0].management_ports[0] == "ether2"


@pytest.mark.lab
async def test_the_fix_guard_protects_the_port_the_switch_shows_not_only_the_inventory() -> None:
    from flows.checks.switch_offload import CHECK as OFFLOAD
    from wizard.fabric import InventoryFabric

    async with Lab(load_text(MGMT_ETHER2, path="mgmt.yaml"), time_scale=1000.0) as lab:
        inv = load_inventory(lab.inventory_path)
        assert tuple(inv.switch("crs804").management_ports) == ("ether1",)
        ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
        sws = {
            s.name: RouterOsTransport(RouterOsTarget.from_spec(s, resolve_password(s)))
            for s in inv.switches
        }
        fabric = InventoryFabric(inv, ssh, sws)
        assert fabric.management_ports("crs804") == ("ether1",)
        await fabric.sweep(OFFLOAD.probes)
        await ssh.close()
        for t in sws.values():
            await t.close()
    assert fabric.management_ports("crs804") == ("ether2", "ether1")


def test_switch_cpu_counts_only_rounds_that_stayed_on_one_switch_when_asked() -> None:
    """While RSTP blocks the ISL, cross-switch traffic detours through the uplinks and the
    switch CPU may carry it: a round's CPU sample is the whole round's, so a round with one
    test across switches says nothing of the fabric bridge; a round that stayed on one switch
    still does (a busy CPU there is still offload-lost's proof)."""
    from flows.checks._common import crosses

    ctx = make_context(
        Observations(),
        nodes=["n1", "n2", "n3"],
        switches=["a", "b"],
        cabling={"n1/p0": ("a", "q1"), "n2/p0": ("a", "q2"), "n3/p0": ("b", "q1")},
    )
    assert crosses(("n1", "p0"), ("n3", "p0"), ctx)
    assert not crosses(("n1", "p0"), ("n2", "p0"), ctx)
    assert not crosses(("n1", "p0"), ("nx", "p9"), ctx)  # an end not known: not "across"

    def rail(cpu: float, *tests: list[str]) -> Measurement:
        return Measurement(
            "rail", "t", 9.0, "Gb/s", extra={"switch_cpu": {"a": cpu}, "round_tests": list(tests)}
        )

    detoured = rail(100.0, ["n1", "p0", "n2", "p0"], ["n1", "p0", "n3", "p0"])
    local = rail(35.0, ["n1", "p0", "n2", "p0"])
    obs = Observations(measurements=(detoured, local))

    def same_switch(m: Measurement) -> bool:
        return switch_offload.round_on_one_switch(m, ctx)

    assert not same_switch(detoured) and same_switch(local)
    assert forwarding.cpu_during_transfer(obs, "a") == 100.0
    assert forwarding.cpu_during_transfer(obs, "a", same_switch) == 35.0
    row = forwarding.cpu_evidence(obs, "a", 10.0, same_switch)
    assert row.status == Status.FAIL and row.observed == "35 % during a transfer"
