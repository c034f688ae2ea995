"""The duplicate-address verdict rests on what the fabric did, not only on `ip -j addr`
(FAULTS.md, "What counts as proof"): a rail test to or from a netdev whose address another
netdev holds, whose frames left the sender and reached neither its switch leg nor the receiver,
proves the ARP flux where no lossless QoS port can be on its path (a lossless queue stalls a
test the same way: frames vanish, the sender's ACKs time out); with no such test the verdict
says it is not yet proven by traffic. On the lab, the addressing step measures before it offers
the fix."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from flows.base import Context
from flows.checks import host_addressing
from flows.checks.host_addressing import Addressing
from flows.expectations import DEFAULT
from tests.checks.rail_run import rail_run
from tests.engine.fix_walk import fix_walk
from wizard.model import Measurement, Rail, Status, Verdict

CTX = Context(
    expectations=DEFAULT,
    nodes=("a", "b", "c"),
    switches=("sw",),
    cabling={
        "a/p0": ("sw", "qsfp56-dd-1-1"),
        "b/p0": ("sw", "qsfp56-dd-2-1"),
        "c/p0": ("sw", "qsfp56-dd-3-1"),
    },
)
# b and c both hold 10.9.1.2 (seed 000's ARP flux); a is alone on 10.9.1.1
RAILS = (
    Rail("a", "p0", "rocep1s0f0", 0, "A", addresses=("10.9.1.1/24",), up=True, mtu=9000),
    Rail("b", "p0", "rocep1s0f0", 0, "A", addresses=("10.9.1.2/24",), up=True, mtu=9000),
    Rail("c", "p0", "rocep1s0f0", 0, "A", addresses=("10.9.1.2/24",), up=True, mtu=9000),
)


def _run(client: str, server: str, *, sent: int, received: int, leg: int) -> Measurement:
    """A test whose frames the sender sent, the receiver and the client's switch leg counted
    (it moved no data: 0 Gb/s; its QP retried 7 times, no ACK came back)."""
    return rail_run(
        client,
        server,
        0.0,
        ({"tx_packets_phy": sent, "local_ack_timeout_err": 7}, {"rx_packets_phy": received}),
        counter_window_s=3.4,
        switch_ports={"sw": {"qsfp56-dd-1-1": {"rx-packet": leg}}},
    )


def _verdict(*runs: Measurement, **qos: frozenset[object]) -> Verdict:
    verdicts = host_addressing.judge(Addressing(RAILS, (), runs, **qos), CTX)  # type: ignore[arg-type]
    [v] = [v for v in verdicts if v.fault == "host.duplicate-ip"]
    return v


def test_frames_that_vanish_prove_the_duplicate_counters_first() -> None:
    # a few background frames (LLDP, ARP) on the receiver are under 1 % of what was sent: flat
    v = _verdict(_run("a", "b", sent=5423, received=3, leg=0))
    assert v.status is Status.FAIL
    assert "proven: 1 rail test(s) to or from them sent frames that no switch leg" in v.summary
    assert v.summary.endswith("on lossy switch ports)")
    first = v.evidence[0]
    assert first.target == "a/p0->b/p0"
    assert first.observed.startswith(
        "read 3.4 s apart, while the test ran: sender tx_packets_phy +5423"
    )
    assert "receiver rx_packets_phy +3; switch leg rx-packet +0" in first.observed
    assert v.evidence[1].observed == "10.9.1.2 on 2 netdevs"


def test_a_vanish_a_lossless_port_explains_too_is_not_proof_of_arp_flux() -> None:
    # a lossless queue stalls a test exactly so (frames vanish, ACKs time out): across one,
    # the traffic cannot tell ARP flux from QoS
    run = _run("a", "b", sent=16384, received=0, leg=0)
    for qos in (
        {"lossless": frozenset({("sw", "qsfp56-dd-2-1")})},  # the server's leg
        {"qos_unread": frozenset({"sw"})},  # the switch's QoS not read: any port may be
    ):
        v = _verdict(run, **qos)
        assert v.status is Status.FAIL
        assert "1 rail test(s) to or from them stalled" in v.summary
        assert "not yet proven by traffic apart from QoS" in v.summary
        assert v.evidence[0].target == "a/p0->b/p0"
    # a lossless port elsewhere does not touch this test's legs
    v = _verdict(run, lossless=frozenset({("sw", "qsfp56-dd-9-1")}))
    assert "(proven: 1 rail test(s)" in v.summary
    # a leg whose port is not known may be the lossless one
    bare = replace(CTX, cabling={"a/p0": ("sw", "qsfp56-dd-1-1")})
    verdicts = host_addressing.judge(
        Addressing(RAILS, (), (run,), lossless=frozenset({("sw", "qsfp56-dd-9-1")})), bare
    )
    [v] = [v for v in verdicts if v.fault == "host.duplicate-ip"]
    assert "not yet proven by traffic apart from QoS" in v.summary


def test_counters_read_after_the_data_ended_say_so() -> None:
    # a machine too busy to read in time reads after the data: the window is longer than the
    # data, and the evidence does not claim it was read while the data moved
    run = _run("a", "b", sent=5423, received=3, leg=0)
    late = replace(run, extra={**run.extra, "counter_window_in_data": False})
    first = _verdict(late).evidence[0]
    assert first.observed.startswith(
        "read 3.4 s apart, the second read after the test ended: sender tx_packets_phy +5423"
    )


def test_frames_a_switch_leg_counted_did_not_vanish() -> None:
    # the switch leg counted what the sender sent: the frames got out, whatever stopped them
    # later is not the ARP flux this proves
    v = _verdict(_run("a", "b", sent=5423, received=0, leg=5400))
    assert v.status is Status.FAIL
    assert (
        "not yet proven by traffic (the 1 rail test(s) to or from them show no frame" in v.summary
    )
    assert v.evidence[0].observed == "10.9.1.2 on 2 netdevs"


def test_without_traffic_the_duplicate_is_not_yet_proven() -> None:
    v = _verdict()
    assert v.status is Status.FAIL
    assert v.summary.endswith("not yet proven by traffic (no rail test to or from them yet)")
    # a test between netdevs that share nothing is no test of the duplicate
    v = _verdict(_run("a", "a", sent=5423, received=0, leg=0))
    assert v.summary.endswith("(no rail test to or from them yet)")


@pytest.mark.lab
def test_the_lab_walk_proves_the_duplicate_before_the_fix(tmp_path: Path) -> None:
    # 5x: a test whose frames vanish gives up after its QP's 8 ACK timeouts (0.54 s: 107 ms
    # of wall time), room for its counters to be read while it retries on a loaded machine
    events = fix_walk("fault-host-duplicate-ip", tmp_path / "s", time_scale=5)
    said = [
        e["verdict"]
        for e in events
        if e["type"] == "verdict_reached" and e["verdict"]["fault"] == "host.duplicate-ip"
    ]
    pre = said[0]  # the preflight's: it ran no traffic
    assert pre["summary"].endswith("not yet proven by traffic (no rail test to or from them yet)")
    step = [
        e["verdict"]
        for e in events
        if e["type"] == "verdict_reached"
        and e["step"] == "addressing"
        and e["verdict"]["fault"] == "host.duplicate-ip"
    ]
    before, after = step[0], step[-1]
    assert before["status"] == "fail" and "(proven: " in before["summary"]
    vanished = [ev for ev in before["evidence"] if "tx_packets_phy +" in ev["observed"]]
    assert before["summary"].endswith("on lossy switch ports)")
    # no ACK comes back for frames sent to a wrong MAC: the sender's QP times out and retries
    # (a window read before the first 67 ms timeout, on a loaded machine, shows none yet)
    assert vanished and any("local_ack_timeout_err +0;" not in ev["observed"] for ev in vanished)
    assert all("rx_packets_phy +0;" in ev["observed"] for ev in vanished)
    assert after["status"] == "pass"
