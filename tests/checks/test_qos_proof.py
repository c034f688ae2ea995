"""The QoS verdict rests on what the fabric did, not only on the QoS table (FAULTS.md, "What
counts as proof"): lossless ports with a rail test through them that connected and stalled
(sender ACK timeouts, receiver flat) is proven; tests at line rate through them say the setting
is not what slows the fabric (a warning); with no test yet it says "not yet proven by traffic".
ARP flux stalls a test the same way, so a stall proves QoS only between ends whose addresses are
unique. On the lab, the QoS step measures before it offers the fix, so its verdict carries the
stall."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from flows.base import Context
from flows.checks import switch_qos
from flows.checks.switch_qos import QosPort, SwitchQos
from flows.expectations import DEFAULT
from tests.checks.rail_run import rail_run
from tests.engine.fix_walk import fix_walk
from wizard.model import Measurement, Rail, Status
from wizard.schedule import arp_flux_netdevs

CTX = Context(
    expectations=DEFAULT,
    nodes=("a", "b", "c", "d"),
    switches=("sw",),
    cabling={
        "a/p0": ("sw", "qsfp56-dd-1-1"),
        "b/p0": ("sw", "qsfp56-dd-2-1"),
        "c/p0": ("sw", "qsfp56-dd-3-1"),
        "d/p0": ("sw", "qsfp56-dd-4-1"),
    },
)
LOSSLESS = QosPort("sw", "qsfp56-dd-1-1", "keep", "pfc-tc3")
LOSSY = [QosPort("sw", f"qsfp56-dd-{n}-1", "ignore", "disabled") for n in (2, 3, 4)]


def _run(client: str, server: str, gbps: float, *, stalled: bool) -> Measurement:
    if stalled:
        return rail_run(
            client,
            server,
            gbps,
            ({"tx_packets_phy": 16384, "local_ack_timeout_err": 7}, {"rx_packets_phy": 0}),
        )
    return rail_run(
        client, server, gbps, ({"tx_packets_phy": 25_000_000}, {"rx_packets_phy": 25_000_000})
    )


def _verdict(  # type: ignore[no-untyped-def]
    *runs: Measurement,
    ports: tuple[QosPort, ...] = (LOSSLESS, *LOSSY),
    flux: frozenset[str] = frozenset(),
    unaddressed: frozenset[str] = frozenset(),
):
    [v] = switch_qos.judge(SwitchQos(ports, (), runs, flux, unaddressed), CTX)
    return v


def test_a_stall_through_a_lossless_port_proves_it_counters_first() -> None:
    v = _verdict(_run("a", "b", 0.0, stalled=True), _run("c", "d", 109.2, stalled=False))
    assert v.status == Status.FAIL
    assert "proven: 1 rail test(s)" in v.summary
    # the runtime row comes first: the counters of the stalled test, then the QoS table
    first = v.evidence[0]
    assert first.target == "a/p0->b/p0"
    assert "local_ack_timeout_err +7" in first.observed
    assert "rx_packets_phy +0" in first.observed
    assert v.evidence[1].observed == "trust-l3=keep pfc=pfc-tc3"
    # c->d never crossed the lossless port: it is not counted either way
    assert all(e.target != "c/p0->d/p0" for e in v.evidence)


def test_a_stall_an_end_with_a_shared_address_explains_too_is_not_proof_of_qos() -> None:
    # ARP flux sends the frames to a wrong MAC: no ACK comes back, the same signature
    stalled = _run("a", "b", 0.0, stalled=True)
    v = _verdict(stalled, flux=frozenset({"b/p0"}))
    assert v.status == Status.FAIL
    assert "1 rail test(s) through them stalled (ACK timeouts, receiver flat), but an end of " in (
        v.summary
    )
    assert "not yet proven by traffic apart from ARP flux" in v.summary
    assert v.evidence[0].target == "a/p0->b/p0"  # the stall is shown all the same
    # with one node's addresses unread, any address may be shared
    v = _verdict(stalled, unaddressed=frozenset({"d"}))
    assert "but the fabric addresses of d were not read" in v.summary
    # a shared address elsewhere does not touch this test's ends
    v = _verdict(stalled, flux=frozenset({"c/p0", "d/p0"}))
    assert "(proven: 1 rail test(s)" in v.summary


def test_the_addresses_read_say_which_ends_arp_flux_may_hit() -> None:
    rails = [
        Rail("a", "p0", "rocep1s0f0", 0, "A", addresses=("10.9.0.1/24",)),
        Rail("a", "p1", "rocep1s0f1", 0, "B", addresses=("10.9.1.1/24",)),
        Rail("b", "p0", "rocep1s0f0", 0, "A", addresses=("10.9.0.2/24",)),
        Rail("b", "p1", "rocep1s0f1", 0, "B", addresses=("10.9.0.3/24",)),  # b's subnet twice
        Rail("c", "p0", "rocep1s0f0", 0, "A", addresses=("10.9.0.1/24",)),  # a's address
    ]
    assert arp_flux_netdevs(rails) == {"a/p0", "c/p0", "b/p0", "b/p1"}


def test_line_rate_through_a_lossless_port_is_a_warning_not_a_stall() -> None:
    v = _verdict(_run("a", "b", 109.2, stalled=False))
    assert v.status == Status.WARN
    assert "ran at line rate: not what slows this fabric" in v.summary
    assert v.evidence[0].observed == "109.20 Gb/s through a lossless port"
    assert v.evidence[0].status == Status.WARN


def test_without_traffic_the_setting_is_not_yet_proven() -> None:
    v = _verdict()
    assert v.status == Status.FAIL
    assert "not yet proven by traffic" in v.summary
    assert [e.observed for e in v.evidence] == ["trust-l3=keep pfc=pfc-tc3"]


def test_a_low_test_without_counters_is_no_proof() -> None:
    # the counters were not read (a lost SSH session around the test): a low number alone does
    # not prove the QoS stall, and the verdict says the tests did not show it
    bare = _run("a", "b", 0.0, stalled=True)
    bare = Measurement(
        bare.kind,
        bare.target,
        bare.value,
        bare.unit,
        reason=bare.reason,
        extra={k: v for k, v in bare.extra.items() if k != "counters"},
    )
    v = _verdict(bare)
    assert v.status == Status.FAIL
    assert "not yet proven by traffic (the 1 rail test(s) through them show neither" in v.summary
    assert [e.observed for e in v.evidence] == ["trust-l3=keep pfc=pfc-tc3"]


def test_lossy_ports_pass_whatever_the_tests_did() -> None:
    v = _verdict(_run("a", "b", 0.0, stalled=True), ports=tuple(LOSSY))
    assert v.status == Status.PASS
    assert len(v.evidence) == 3


def _step_verdicts(events: list[dict[str, Any]], step: str, fault: str) -> list[dict[str, Any]]:
    return [
        e["verdict"]
        for e in events
        if e["type"] == "verdict_reached" and e["step"] == step and e["verdict"]["fault"] == fault
    ]


@pytest.mark.lab
def test_the_lab_walk_proves_the_stall_before_the_fix(tmp_path: Path) -> None:
    # 5x: a stalled test gives up after 107 ms of wall time (8 ACK timeouts of 67 ms), room
    # for its counters to be read while it retries even on a loaded machine (at 10x with two
    # suites sharing two cores, none was read)
    events = fix_walk("fault-switch-qos-pfc-stall", tmp_path / "s", time_scale=5)
    qos = _step_verdicts(events, "qos", "switch.qos-pfc-stall")
    before, after = qos[0], qos[-1]
    # 8 tests stall; on a loaded machine a test can give up before its round is read (it then
    # has no counters, "not read", and is no proof): most are read
    proven = re.search(r"proven: (\d+) rail test\(s\)", before["summary"])
    assert before["status"] == "fail" and proven is not None and 4 <= int(proven.group(1)) <= 8
    stalled = [ev for ev in before["evidence"] if "local_ack_timeout_err +" in ev["observed"]]
    assert stalled and all("rx_packets_phy +0;" in ev["observed"] for ev in stalled)
    assert all("local_ack_timeout_err +0;" not in ev["observed"] for ev in stalled)
    # the preflight, which ran no traffic, said so
    [pre] = _step_verdicts(events, "preflight", "switch.qos-pfc-stall")
    assert "not yet proven by traffic" in pre["summary"]
    assert after["status"] == "pass"


@pytest.mark.lab
def test_the_offload_step_shows_the_switch_cpu_forwarding_before_its_fix(tmp_path: Path) -> None:
    events = fix_walk("fault-switch-offload-split-cage", tmp_path / "s")
    before = _step_verdicts(events, "offload", "switch.offload-split-cage")[0]
    [cpu] = [ev for ev in before["evidence"] if "cpu-load" in ev["command"]]
    # measured before the change: the switch CPU forwarded the rail tests
    assert cpu["status"] == "fail" and cpu["observed"].endswith("% during a transfer")
    assert float(cpu["observed"].split()[0]) > DEFAULT.switch_cpu_idle_max_pct
