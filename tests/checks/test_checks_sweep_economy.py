"""The sweep's economy against the lab: handshakes started early and reused, rails worked out
once per node, an unreachable node tried once, `check` judging from the sweep's own rails."""

from __future__ import annotations

import pytest

from flows.registry import checks_for, probes_of
from screens.commands.check import run_check
from wizard import discovery
from wizard.events import Event, ProbeSent
from wizard.inventory import load_inventory, resolve_password
from wizard.lab.lab import Lab
from wizard.model import Rail
from wizard.parsers.ibdev2netdev import Ibdev2NetdevResult
from wizard.sweep import Sweeper
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport
from wizard.transports.ssh import SshTarget, SshTransport


def _count_discovery(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = discovery.discover_rails

    def counting(node: str, *a: object, **kw: object) -> tuple[Rail, ...]:
        calls.append(node)
        return real(node, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(discovery, "discover_rails", counting)
    return calls


@pytest.mark.lab
async def test_open_starts_every_handshake_and_the_sweep_reuses_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _count_discovery(monkeypatch)
    async with Lab("healthy-4node-crs804", time_scale=1000.0) as lab:
        await lab.ssh["spark4"].stop()
        inv = load_inventory(lab.inventory_path)
        ssh = SshTransport(
            [SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None, connect_timeout=2.0
        )
        sws = {
            s.name: RouterOsTransport(RouterOsTarget.from_spec(s, resolve_password(s)))
            for s in inv.switches
        }
        sweeper = Sweeper(ssh=ssh, nodes=[n.name for n in inv.nodes], switches=sws)
        sweeper.open()
        obs = await sweeper.sweep(probes_of(checks_for(traffic=False)))
        await ssh.close()
        for t in sws.values():
            await t.close()
    # one handshake per node, the dead one tried once (not again by the sweep)
    assert ssh.handshakes == 4
    assert list(obs.unreachable) == ["spark4"]
    assert obs.unreachable["spark4"].startswith("spark4: cannot reach 127.0.0.1:")
    assert sorted(obs.nodes) == ["spark1", "spark2", "spark3"]
    assert "crs804" in obs.switches and "bridge_host" in obs.switches["crs804"]
    # the rails of each reachable node were worked out once, from the one script's outputs
    assert sorted(calls) == ["spark1", "spark2", "spark3"]
    spark1 = sweeper.rails["spark1"]
    assert [r.netdev for r in spark1] == [
        "enp1s0f0np0",
        "enP2p1s0f0np0",
        "enp1s0f1np1",
        "enP2p1s0f1np1",
    ]
    assert [(r.port, r.half) for r in spark1] == [(0, "A"), (0, "B"), (1, "A"), (1, "B")]
    assert spark1[0].speed_mbps == 200000  # from the per-rail loop's ethtool
    assert spark1[0].addresses == ("10.9.1.1/24",)


@pytest.mark.lab
async def test_check_judges_from_the_sweeps_rails(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_discovery(monkeypatch)
    async with Lab("fault-host-mtu", time_scale=1000.0) as lab:
        inv = load_inventory(lab.inventory_path)
        report = await run_check(inv, ssh_config=None)
    assert sorted(calls) == ["spark1", "spark2", "spark3", "spark4"]  # once each, in total
    faults = {v.fault for v in report.findings if v.is_finding}
    assert "host.mtu" in faults
    spark2 = next(n for n in report.nodes if n["name"] == "spark2")
    assert {r["mtu"] for r in spark2["rails"]} == {1500}
    assert all(r["switch"] == "crs804" for r in spark2["rails"])


@pytest.mark.lab
async def test_the_walk_discovers_once_per_node_per_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's Fabric port sweeps; its context factory (judging, then planning fixes)
    judges from the sweep's rails: ibdev2netdev runs once per node per sweep and the rails are
    worked out once per node, however often a context is built from those observations."""
    from screens.compose import context_factory
    from wizard.drain import DrainGuard
    from wizard.fabric import InventoryFabric

    calls = _count_discovery(monkeypatch)
    parsed: list[str] = []
    real_parse = discovery.parse_ibdev2netdev

    def counting_parse(text: str) -> Ibdev2NetdevResult:
        parsed.append(text)
        return real_parse(text)

    monkeypatch.setattr(discovery, "parse_ibdev2netdev", counting_parse)
    events: list[Event] = []
    async with Lab("fault-host-mtu", time_scale=1000.0) as lab:
        inv = load_inventory(lab.inventory_path)
        ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
        sws = {
            s.name: RouterOsTransport(RouterOsTarget.from_spec(s, resolve_password(s)))
            for s in inv.switches
        }
        fabric = InventoryFabric(inv, ssh, sws, sink=events.append)
        try:
            obs = await fabric.sweep(probes_of(checks_for(traffic=False)))
        finally:
            await fabric.close()
    build = context_factory(inv)
    judged, planned = build(obs, DrainGuard()), build(obs, DrainGuard())
    nodes = ["spark1", "spark2", "spark3", "spark4"]
    sent = [e for e in events if isinstance(e, ProbeSent)]
    assert sorted(e.target for e in sent if e.command == discovery.IBDEV.command) == nodes
    assert sorted(calls) == nodes  # and the rails worked out once each, by the sweep
    assert len(parsed) == len(nodes)  # from one parse of each node's ibdev2netdev
    assert judged.rails == planned.rails == dict(obs.rails)
    spark2 = judged.rails["spark2"]
    assert [(r.port, r.half, r.mtu) for r in spark2] == [
        (0, "A", 1500),
        (0, "B", 1500),
        (1, "A", 1500),
        (1, "B", 1500),
    ]
    assert {r.switch for r in spark2} == {"crs804"}  # cabled from the inventory's map


@pytest.mark.lab
async def test_check_loads_its_checks_once_every_handshake_has_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An import holds the event loop: made during the handshakes, it would hold up every
    node's round trips. `check` loads its checks once no handshake is under way, while the
    nodes run their scripts, and still judges every check."""
    import screens.commands.check as check_command

    in_flight: list[int] = [0]
    seen_when_loading: list[int] = []
    real_open = SshTransport._open
    real_load = check_command._load_checks

    async def counting_open(self: SshTransport, target: SshTarget) -> object:
        in_flight[0] += 1
        try:
            return await real_open(self, target)
        finally:
            in_flight[0] -= 1

    def noting_load(perf: bool) -> object:
        seen_when_loading.append(in_flight[0])
        return real_load(perf)

    monkeypatch.setattr(SshTransport, "_open", counting_open)
    monkeypatch.setattr(check_command, "_load_checks", noting_load)
    async with Lab("fault-host-mtu", time_scale=1000.0) as lab:
        report = await run_check(load_inventory(lab.inventory_path), ssh_config=None)
    assert seen_when_loading == [0]  # loaded once, with no handshake under way
    assert "host.mtu" in {v.fault for v in report.findings}
    assert all(n["reachable"] and n["rails"] for n in report.nodes)
