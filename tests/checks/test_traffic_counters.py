"""Counters around every bandwidth test: read on both ends (sysfs, ethtool -S) and on the
switch ports, shown as deltas and used to tell causes apart (seed 000's bisection, 003's
rounds). Each FAULTS.md counter signature is fed to the rail judge and its verdict asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.base import Context
from flows.checks import perf_rails, traffic_counters
from flows.checks.perf_rails import RailRuns
from flows.expectations import DEFAULT
from tests.checks.lab_sweeper import lab_sweeper
from wizard.counters import (
    NODE_CLOCK,
    deltas,
    node_seconds,
    parse_rail,
    parse_rails,
    rails_command,
    switch_deltas,
    switch_ports,
)
from wizard.model import Measurement, Rail, Status

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "fixtures" / "real"


@pytest.mark.skipif(not REAL.is_dir(), reason="shared real fixtures absent")
def test_parse_rail_reads_real_show_counters_and_ethtool_s() -> None:
    sysfs = (
        REAL / "sysfs-infiniband/show_counters-mlx5_bond_0-roce-cnp-ecn-nonzero.txt"
    ).read_text()
    eth = (
        REAL / "ethtool-S/mlx5-kernel5.15-xdp-nonzero-only-rx_discards_phy-tx_pause.txt"
    ).read_text()
    got = parse_rail(sysfs + "\n@@FABWIZ-ETHTOOL@@\n" + eth)
    assert got["np_cnp_sent"] == 1052612505
    assert got["out_of_sequence"] == 1811101
    assert got["rx_packets"] == 333854100 and got["tx_packets"] == 25


def test_deltas_and_a_reset_counter() -> None:
    before = {"tx_packets_phy": 100, "local_ack_timeout_err": 5, "packet_seq_err": 9}
    after = {"tx_packets_phy": 160, "local_ack_timeout_err": 7, "packet_seq_err": 2}
    assert deltas(before, after) == {
        "tx_packets_phy": 60,
        "local_ack_timeout_err": 2,
        "packet_seq_err": 2,
    }
    ports0 = switch_ports([{"name": "qsfp56-dd-1-1", "rx-packet": "10", "tx-packet": "4"}])
    ports1 = switch_ports([{"name": "qsfp56-dd-1-1", "rx-packet": "10", "tx-packet": "9"}])
    assert switch_deltas(ports0, ports1) == {"qsfp56-dd-1-1": {"tx-packet": 5}}


def test_each_rail_is_read_between_two_readings_of_the_node_clock() -> None:
    """The window of a test's deltas is the sender's own clock between its two reads: each
    rail's counters come between two `cat /proc/uptime`, timed at their midpoint; a clock that
    went back (a reboot between the reads) or was not read gives no window."""
    rails = [
        Rail("a", "enp1s0f0np0", "rocep1s0f0", 0, "A"),
        Rail("a", "enP2p1s0f0np0", "r2", 0, "B"),
    ]
    command = rails_command(rails)
    assert command.count("cat /proc/uptime") == 4
    sysfs = "/sys/class/infiniband/rocep1s0f0/ports/1/hw_counters/local_ack_timeout_err:3\n"
    eth = "NIC statistics:\n     tx_packets_phy: 100\n"

    def part(t0: str, t1: str, packets: int) -> str:
        body = sysfs + "@@FABWIZ-ETHTOOL@@\n" + eth.replace("100", str(packets))
        return f"@@FABWIZ-RAIL@@\n{t0} 1000.00\n{body}{t1} 1001.00\n"

    before = parse_rails(part("100.00", "100.04", 100) + part("100.05", "100.07", 7), 2)
    after = parse_rails(part("108.00", "108.02", 900) + part("99.00", "99.02", 9), 2)
    assert before[0] is not None and before[0][NODE_CLOCK] == 10002  # the midpoint, in 1/100 s
    assert after[0] is not None and after[0]["tx_packets_phy"] == 900
    assert node_seconds(before[0], after[0]) == 7.99
    assert node_seconds(before[1], after[1]) is None  # the clock went back: a reboot
    assert deltas(before[0], after[0]) == {"tx_packets_phy": 800, "local_ack_timeout_err": 0}
    # an older node's output (no clock lines) still reads, without a window of its own
    [plain] = parse_rails("@@FABWIZ-RAIL@@\n" + sysfs + "@@FABWIZ-ETHTOOL@@\n" + eth, 1)
    assert plain is not None and NODE_CLOCK not in plain and plain["tx_packets_phy"] == 100
    assert node_seconds(plain, after[0]) is None


CTX = Context(
    expectations=DEFAULT,
    nodes=("a", "b"),
    switches=("sw",),
    cabling={"a/p0": ("sw", "qsfp56-dd-1-1"), "b/p0": ("sw", "qsfp56-dd-1-5")},
)


def _m(
    gbps: float, cli: dict[str, int], srv: dict[str, int], leg: int = 0, reason: str = ""
) -> Measurement:
    return Measurement(
        "rail",
        "a/p0->b/p0",
        gbps,
        "Gb/s",
        reason=reason,
        extra={
            "client": "a",
            "server": "b",
            "client_netdev": "p0",
            "server_netdev": "p0",
            "counters": {"client": cli, "server": srv},
            "switch_ports": {"sw": {"qsfp56-dd-1-1": {"rx-packet": leg}} if leg else {}},
        },
    )


def _runs(m: Measurement, **kw: object) -> RailRuns:
    base: dict[str, object] = {
        "runs": (m,),
        "offload_faults": (),
        "rstp_blocked": False,
        "lossless": False,
        "duplicate_nodes": frozenset(),
        "old_firmware": frozenset(),
        "stall_causes": {},
        "narrow_pcie": frozenset(),
    }
    base.update(kw)
    return RailRuns(**base)  # type: ignore[arg-type]


def _verdicts(r: RailRuns) -> dict[str, Status]:
    return {v.fault: v.status for v in perf_rails.judge(r, CTX)}


STALL = "Completion with error"


def test_qos_stall_signature_tx_and_ack_timeouts_climb_receiver_flat() -> None:
    # one QP through a stall: 8 windows of 2048 frames, 7 timeouts it retried after
    m = _m(
        0.0,
        {"tx_packets_phy": 16384, "local_ack_timeout_err": 7},
        {"rx_packets_phy": 0},
        reason=STALL,
    )
    # the counters say the data path stalls; with neither cause in the config, both may hide
    got = _verdicts(_runs(m))
    assert got["switch.qos-pfc-stall"] == Status.WARN
    assert got["host.duplicate-ip"] == Status.WARN
    confirmed = _verdicts(_runs(m, lossless=True))
    assert confirmed["switch.qos-pfc-stall"] == Status.FAIL
    assert "host.duplicate-ip" not in confirmed
    v = next(
        v
        for v in perf_rails.judge(_runs(m, lossless=True), CTX)
        if v.fault == "switch.qos-pfc-stall"
    )
    row = next(e for e in v.evidence if e.command == traffic_counters.COMMAND)
    assert "local_ack_timeout_err +7" in row.observed
    assert "the data path stalls (lossless QoS or ARP flux)" in row.observed


def test_a_stall_where_qos_and_duplicates_are_both_configured_names_both() -> None:
    # ARP flux sends the frames to a wrong MAC: no ACK comes back, so the sender times out just
    # as in a QoS stall; the counters cannot tell the two apart
    m = _m(
        0.0,
        {"tx_packets_phy": 16384, "local_ack_timeout_err": 7},
        {"rx_packets_phy": 0},
        reason=STALL,
    )
    both = _verdicts(_runs(m, lossless=True, duplicate_nodes=frozenset({"a"})))
    assert both["host.duplicate-ip"] == Status.FAIL
    assert both["switch.qos-pfc-stall"] == Status.FAIL
    dup = _verdicts(_runs(m, duplicate_nodes=frozenset({"b"})))
    assert dup["host.duplicate-ip"] == Status.FAIL
    assert "switch.qos-pfc-stall" not in dup
    # a switch leg that counted the frames the receiver never saw: the switch held them
    held = _m(
        0.0,
        {"tx_packets_phy": 16384, "local_ack_timeout_err": 7},
        {"rx_packets_phy": 0},
        leg=16384,
        reason=STALL,
    )
    got = _verdicts(_runs(held))
    assert got["switch.qos-pfc-stall"] == Status.WARN
    assert "host.duplicate-ip" not in got


def test_a_test_that_ran_out_of_retries_is_a_stall_even_without_its_counters() -> None:
    # the counters were not read (a stall at high time compression ends before its round is
    # read): the test's own end still says it connected and no ACK came back
    m = _m(0.0, {}, {}, reason=STALL)
    bare = Measurement(
        m.kind,
        m.target,
        0.0,
        "Gb/s",
        reason=STALL,
        extra={
            **{k: v for k, v in m.extra.items() if k != "counters"},
            "error_kind": "retry-exceeded",
        },
    )
    got = _verdicts(_runs(bare, offload_faults=()))
    assert got["switch.qos-pfc-stall"] == Status.WARN
    assert got["host.duplicate-ip"] == Status.WARN
    # never the switch CPU's ~10 Gb/s signature, whatever the number
    assert not any(k.startswith("switch.offload") for k in got)
    # without the error kind a 0 Gb/s test with no counters says nothing of a stall
    plain = Measurement(m.kind, m.target, 0.0, "Gb/s", reason=STALL, extra=dict(bare.extra))
    del plain.extra["error_kind"]
    assert "switch.qos-pfc-stall" not in _verdicts(_runs(plain))


def test_seq_err_near_line_rate_is_congestion_control_working() -> None:
    m = _m(
        81.9,
        {"tx_packets_phy": 10**7, "packet_seq_err": 5500},
        {"rx_packets_phy": 10**7},
        leg=10**7,
    )
    got = _verdicts(_runs(m))
    assert got["host.cx7-degraded"] == Status.PASS
    sig = traffic_counters.signature(m, CTX)
    assert sig is not None and sig.switch_rx == 10**7
    assert (
        traffic_counters.reading(sig, m.value, CTX)
        == "sequence errors near line rate: congestion control working"
    )


def test_seq_err_at_single_digits_is_a_broken_path() -> None:
    m = _m(
        4.85, {"tx_packets_phy": 10**5, "packet_seq_err": 900}, {"rx_packets_phy": 10**5}, leg=10**5
    )
    sig = traffic_counters.signature(m, CTX)
    assert sig is not None
    assert traffic_counters.reading(sig, m.value, CTX).startswith("sequence errors at single-digit")
    got = _verdicts(_runs(m, offload_faults=("switch.offload-second-bridge",)))
    assert got["switch.offload-second-bridge"] == Status.FAIL


def test_a_link_bounce_during_the_test_is_not_evidence() -> None:
    m = _m(12.7, {"tx_packets_phy": 10**5, "link_down_events_phy": 1}, {"rx_packets_phy": 10**5})
    got = _verdicts(_runs(m))
    assert got["host.cx7-degraded"] == Status.UNKNOWN  # never an AC-drain verdict from it


@pytest.mark.lab
@pytest.mark.parametrize("scenario", ["fault-switch-qos-pfc-stall", "fault-host-duplicate-ip"])
async def test_lab_counters_move_with_the_simulated_traffic(scenario: str) -> None:
    # 5x: a 5 s test is a second, and a stalled one gives up after its 8 ACK timeouts of
    # 67 ms (0.54 s: 107 ms), room for its counters to be read while it retries even on a
    # loaded machine
    async with lab_sweeper(scenario, time_scale=5.0) as sweeper:
        ms = await sweeper.rail_tests(duration_s=5)
    healthy = [m for m in ms if m.value > 100]
    stalled = [m for m in ms if m.value == 0.0 and m.valid]
    assert stalled, "the scenario stalls some rail"
    # a stalled test gives up 107 ms of wall time after its header: on a loaded machine one
    # can end before its round's counters are read, and then it has none ("not read"), not
    # zeros; most are read
    read = [m for m in stalled if m.extra["counters"]]
    assert len(read) * 2 >= len(stalled)
    assert all("counter_window_s" not in m.extra for m in stalled if m not in read)
    for m in read:
        c = m.extra["counters"]
        assert c["client"]["tx_packets_phy"] > 0 and c["server"]["rx_packets_phy"] == 0
        # no ACK comes back, whether a lossless queue or ARP flux swallowed the frames
        assert c["client"]["local_ack_timeout_err"] > 0
        # a QP counts the timeouts it retries after: 7 (-q 1; the eighth is its error); it
        # sends its window once a timeout, 128 writes of 64 KiB in 4 KiB frames
        assert c["client"]["local_ack_timeout_err"] <= 7
        assert c["client"]["tx_packets_phy"] <= 8 * 2048 + 100
    for m in healthy:
        c = m.extra["counters"]
        # read while the data moves, the two nodes a few ms apart (at 5x under 1% of the
        # span; on a machine loaded to a standstill ~120 ms apart, 12%): the receiver counted
        # the sender's data, where a stalled or vanished test's counts nothing
        assert c["server"]["rx_packets_phy"] == pytest.approx(
            c["client"]["tx_packets_phy"], rel=0.25
        )
        assert c["client"]["local_ack_timeout_err"] == 0
        assert any(p.get("rx-packet", 0) > 0 for p in m.extra["switch_ports"]["crs804"].values())
