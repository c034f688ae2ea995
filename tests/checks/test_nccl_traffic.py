"""The NCCL run is bracketed like every ib_write_bw: per-rail counters on the nodes, the switch
ports and the switch CPU. Its verdicts cite which rails moved bytes and the switch CPU during
the run; a low busbw with a busy switch CPU is `switch.offload-lost`, rails that carried
nothing are NCCL leaving devices idle, and a run cut short with the CPU busy is no pass."""

from __future__ import annotations

from dataclasses import replace

import pytest

from flows.base import Context
from flows.checks import nccl_traffic, perf_nccl
from flows.checks.perf_nccl import NcclRun
from flows.expectations import DEFAULT
from flows.registry import checks_for, make_context, probes_of
from wizard.inventory import load_inventory, resolve_password
from wizard.lab.lab import Lab
from wizard.lab.scenarios import load_text
from wizard.model import Measurement, Status
from wizard.parsers.nccl import parse_nccl
from wizard.sweep import Sweeper
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport
from wizard.transports.ssh import SshTarget, SshTransport

CTX = Context(expectations=DEFAULT, nodes=("a", "b", "c", "d"), switches=("sw",))
LOG = "x NCCL INFO Using network IB\nx NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n"
RAILS = ("a/p0", "a/p1", "b/p0", "b/p1")


def _counters(moved: dict[str, int | None]) -> dict[str, dict[str, int] | None]:
    return {
        k: None if b is None else {"tx_bytes_phy": b // 2, "rx_bytes_phy": b - b // 2}
        for k, b in moved.items()
    }


def _run(
    busbw: float | None, moved: dict[str, int | None], cpu: float | None, reason: str = ""
) -> NcclRun:
    extra: dict[str, object] = {"raw": LOG, "rail_counters": _counters(moved)}
    if cpu is not None:
        extra["switch_cpu"] = {"sw": cpu}
        extra["switch_ports"] = {"sw": {"qsfp56-dd-1-1": {"rx-byte": 4 * 10**9, "tx-byte": 0}}}
    m = Measurement("nccl", "cluster", busbw or 0.0, "GB/s", reason=reason, extra=extra)
    p = replace(parse_nccl(LOG), avg_busbw=busbw)
    return NcclRun(m, p, None, 2, False, False, False, traffic=nccl_traffic.read(m, CTX))


def _by_fault(run: NcclRun) -> dict[str, object]:
    return {v.fault: v for v in perf_nccl.judge(run, CTX)}


def test_read_tells_idle_and_unread_rails_from_busy_ones() -> None:
    t = nccl_traffic.read(
        _run(23.3, {"a/p0": 400 * 10**9, "a/p1": 10**6, "b/p0": 0, "b/p1": None}, 1.0).run
        or Measurement("nccl", "cluster", 0, "GB/s"),
        CTX,
    )
    assert t is not None
    assert t.moved == {"a/p0": 400 * 10**9, "a/p1": 10**6, "b/p0": 0}
    assert t.idle == ("a/p1", "b/p0")  # under 5 % of the busiest rail's bytes
    assert t.unread == ("b/p1",)
    assert t.cpu == {"sw": 1.0} and t.sampled


def test_low_busbw_with_a_busy_switch_cpu_is_offload_lost_with_the_cpu() -> None:
    got = _by_fault(_run(0.46, dict.fromkeys(RAILS, 3 * 10**9), 97.0))
    assert "nccl.busbw-low" not in got
    v = got["switch.offload-lost"]
    assert v.status == Status.FAIL  # type: ignore[attr-defined]
    assert "sw cpu-load 97 % during the run" in v.summary  # type: ignore[attr-defined]
    rows = {e.command.split(" (")[0]: e for e in v.evidence}  # type: ignore[attr-defined]
    cpu = next(e for e in v.evidence if e.target == "sw")  # type: ignore[attr-defined]
    assert cpu.status == Status.FAIL and "cpu-load 97 % during the run" in cpu.observed
    assert "qsfp56-dd-1-1 4.00 GB" in cpu.observed
    assert any("a/p0 3.00 GB" in e.observed for e in rows.values())


def test_rails_that_moved_nothing_are_nccl_leaving_devices_idle() -> None:
    moved: dict[str, int | None] = {"a/p0": 200 * 10**9, "a/p1": 0, "b/p0": 200 * 10**9, "b/p1": 0}
    got = _by_fault(_run(11.7, moved, 2.0))
    hca = got["nccl.hca-filter"]
    assert hca.status == Status.FAIL  # type: ignore[attr-defined]
    idle = {e.target for e in hca.evidence if "took no part" in e.observed}  # type: ignore[attr-defined]
    assert idle == {"a/p1", "b/p1"}
    assert "nccl.busbw-low" not in got


def test_a_run_that_moved_nothing_anywhere_names_no_rail_idle() -> None:
    """Lossless QoS stalls every rail: the NCCL run ends without a busbw and no rail moved more
    than background frames. That is no HCA filter (every rail "took no part" only because
    nothing did): no rail is singled out, and the counters say they cannot tell which devices
    NCCL used (seen: `check --perf` on the QoS-stall lab failed nccl.hca-filter)."""
    moved: dict[str, int | None] = {"a/p0": 4_200, "a/p1": 0, "b/p0": 3_900, "b/p1": 120}
    run = _run(None, moved, 1.0, reason="no result row")
    assert run.traffic is not None
    assert run.traffic.idle == () and run.traffic.nothing_moved
    got = _by_fault(run)
    assert "nccl.hca-filter" not in got
    low = got["nccl.busbw-low"]
    assert low.status == Status.UNKNOWN  # type: ignore[attr-defined]
    [row] = [e for e in low.evidence if "rail counters" in e.command]  # type: ignore[attr-defined]
    assert row.status == Status.UNKNOWN
    assert row.observed.startswith("no rail moved data during the run (the busiest 4200 B)")


def test_idle_rails_are_no_finding_when_one_device_is_the_policy() -> None:
    moved: dict[str, int | None] = {"a/p0": 400 * 10**9, "a/p1": 0, "b/p0": 400 * 10**9, "b/p1": 0}
    run = _run(23.4, moved, 1.0)
    got = {v.fault: v for v in perf_nccl.judge(run, replace(CTX, nccl_devices="one"))}
    assert "nccl.hca-filter" not in got
    assert got["nccl.busbw-low"].status == Status.PASS


def test_low_busbw_with_an_idle_cpu_and_every_rail_moving_stays_busbw_low() -> None:
    got = _by_fault(_run(18.0, dict.fromkeys(RAILS, 300 * 10**9), 1.0))
    low = got["nccl.busbw-low"]
    assert low.status == Status.FAIL  # type: ignore[attr-defined]
    cpu = next(e for e in low.evidence if e.target == "sw")  # type: ignore[attr-defined]
    assert cpu.status == Status.PASS and "cpu-load 1 % during the run" in cpu.observed
    assert "switch.offload-lost" not in got and "nccl.hca-filter" not in got


def test_healthy_busbw_cites_the_rails_and_the_cpu_it_rests_on() -> None:
    got = _by_fault(_run(23.4, dict.fromkeys(RAILS, 400 * 10**9), None))
    low = got["nccl.busbw-low"]
    assert low.status == Status.PASS  # type: ignore[attr-defined]
    rows = [e.observed for e in low.evidence]  # type: ignore[attr-defined]
    assert any(r.startswith("rails that moved bytes: a/p0 400.00 GB") for r in rows)
    assert any("not sampled during the run" in r for r in rows)  # never "idle"


def test_a_run_cut_short_is_no_pass() -> None:
    busy = _by_fault(_run(None, dict.fromkeys(RAILS, 70 * 10**9), 100.0, "run cut short"))
    assert busy["switch.offload-lost"].status == Status.FAIL  # type: ignore[attr-defined]
    quiet = _by_fault(_run(None, dict.fromkeys(RAILS, 70 * 10**9), 1.0, "run cut short"))
    assert quiet["nccl.busbw-low"].status == Status.UNKNOWN  # type: ignore[attr-defined]


TWO = """
name: {name}
topology: {{nodes: 2, switches: [{{model: CRS804-4DDQ}}], cables_per_node: 1}}
{facts}
"""
LOST_FACTS = """facts:
  ports:
    crs804/qsfp56-dd-1-1: {hw-offload: false}
    crs804/qsfp56-dd-1-5: {hw-offload: false}
"""


async def _nccl(text: str) -> tuple[Measurement, list[object]]:
    async with Lab(load_text(text, path="two.yaml"), time_scale=50.0) as lab:
        inv = load_inventory(lab.inventory_path)
        ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
        sws = {
            s.name: RouterOsTransport(RouterOsTarget.from_spec(s, resolve_password(s)))
            for s in inv.switches
        }
        nodes = [n.name for n in inv.nodes]
        sweeper = Sweeper(ssh=ssh, nodes=nodes, switches=sws)
        obs = await sweeper.sweep(probes_of(checks_for(traffic=True)))
        m, _res = await sweeper.nccl_test()
        await ssh.close()
        for t in sws.values():
            await t.close()
        obs = replace(obs, measurements=(m,))
        ctx = make_context(
            obs,
            nodes=nodes,
            switches=[s.name for s in inv.switches],
            cabling=inv.cabling,
            discovered=sweeper.rails,
        )
        return m, list(perf_nccl.judge(perf_nccl.parse(obs, ctx), ctx))


@pytest.mark.lab
async def test_lab_nccl_moves_every_rails_counters_and_the_switch_ports() -> None:
    m, verdicts = await _nccl(TWO.format(name="two-ok", facts=""))
    counters = m.extra["rail_counters"]
    assert isinstance(counters, dict) and len(counters) == 4  # 2 nodes x 2 halves of port 0
    for d in counters.values():
        assert d["tx_bytes_phy"] > 10**10 and d["rx_bytes_phy"] > 10**10
        assert d["local_ack_timeout_err"] == 0
    ports = m.extra["switch_ports"]["crs804"]  # type: ignore[index]
    assert {"qsfp56-dd-1-1", "qsfp56-dd-1-5"} <= set(ports)  # both nodes' cables
    low = next(v for v in verdicts if v.fault == "nccl.busbw-low")  # type: ignore[attr-defined]
    assert low.status == Status.PASS  # type: ignore[attr-defined]


@pytest.mark.lab
async def test_lab_nccl_over_a_cpu_forwarded_bridge_is_offload_lost() -> None:
    m, verdicts = await _nccl(TWO.format(name="two-lost", facts=LOST_FACTS))
    assert m.extra["switch_cpu"]["crs804"] >= 90.0  # type: ignore[index]
    got = {v.fault: v for v in verdicts}  # type: ignore[attr-defined]
    assert got["switch.offload-lost"].status == Status.FAIL  # type: ignore[attr-defined]
    assert "crs804 cpu-load" in got["switch.offload-lost"].summary  # type: ignore[attr-defined]


def test_a_run_cut_short_is_reported_under_the_finding_that_explains_it() -> None:
    run = replace(
        _run(None, dict.fromkeys(RAILS, 0), 1.0, "run cut short"),
        explained=("switch.qos-pfc-stall",),
    )
    got = _by_fault(run)
    assert got["switch.qos-pfc-stall"].status == Status.FAIL  # type: ignore[attr-defined]
    assert "nccl.busbw-low" not in got
