"""Counters move with simulated traffic; hands have real effects; scenarios validate clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from wizard.errors import ScenarioError
from wizard.lab import scenarios
from wizard.lab.clock import ManualClock
from wizard.lab.hands import Hands
from wizard.lab.physics import FlowSpec, flow
from wizard.lab.world import End, World

EXPECTED_BUILTINS = {
    "healthy-2node-direct",
    "healthy-4node-crs804",
    "crs804-three-bugs",
    "nccl-hca-prefix",
    "crs812-six-node",
    "fault-switch-offload-split-cage",
    "fault-host-cx7-degraded",
    "fault-nccl-socket-fallback",
}


def world(name: str, time_scale: float = 1000.0) -> World:
    return scenarios.build_world(scenarios.load(name), time_scale=time_scale)


def stopped_world(name: str) -> tuple[World, ManualClock]:
    """A world whose lab time moves only when the test moves it."""
    clock = ManualClock()
    return scenarios.build_world(scenarios.load(name), clock=clock), clock


# --- traffic and counters -------------------------------------------------------------------


def test_counters_advance_with_simulated_time() -> None:
    w, clock = stopped_world("healthy-2node-direct")
    tx = w.nodes["spark1"].rail("rocep1s0f0")
    rx = w.nodes["spark2"].rail("rocep1s0f0")
    assert tx is not None and rx is not None
    before_tx, before_rx = tx.counters["port_xmit_data"], rx.counters["port_rcv_data"]
    ids = w.traffic.start([FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0")])
    t0 = w.traffic.last_settled  # the simulated instant the flow started
    clock.set(clock.now() + 10.0)  # 10 s of lab time
    w.traffic.settle()
    dt = w.traffic.last_settled - t0
    assert dt == 10.0
    words = tx.counters["port_xmit_data"] - before_tx
    gbps = words * 4 * 8 / dt / 1e9
    assert 100.0 < gbps < 125.0  # ~111.86 of payload plus RoCE headers on the wire
    assert rx.counters["port_rcv_data"] - before_rx == pytest.approx(words, rel=0.01)
    w.traffic.stop(ids)
    frozen = tx.counters["port_xmit_data"]
    clock.set(clock.now() + 5.0)
    w.traffic.settle()
    assert tx.counters["port_xmit_data"] == frozen


def test_stalled_flow_counters_sender_climbs_receiver_flat() -> None:
    w, clock = stopped_world("fault-switch-qos-pfc-stall")
    tx = w.nodes["spark1"].rail("rocep1s0f0")
    rx = w.nodes["spark2"].rail("rocep1s0f0")
    assert tx is not None and rx is not None
    ids = w.traffic.start([FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0")])
    clock.set(clock.now() + 5.0)
    w.traffic.settle()
    assert tx.counters["tx_packets_phy"] > 0
    assert tx.counters["local_ack_timeout_err"] > 0
    assert rx.counters["rx_packets_phy"] == 0 and rx.counters["port_rcv_data"] == 0
    w.traffic.stop(ids)


# --- hands ------------------------------------------------------------------------------------


def test_ac_drain_clears_degraded_reboot_does_not() -> None:
    w = world("fault-host-cx7-degraded")
    hands = Hands(w)
    node = w.nodes["spark2"]
    assert node.degraded
    boot0 = node.boot_id
    hands.reboot("spark2")
    assert node.degraded and node.boot_id != boot0
    assert w.now() - node.boot_time < 300.0  # uptime restarted (was > 3600 s)
    boot1 = node.boot_id
    hands.ac_drain("spark2")
    assert not node.degraded and node.boot_id != boot1
    r = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"))
    assert r.gbps > 100.0


def test_link_transition_rearms_degraded_and_counts_carrier_changes() -> None:
    w = world("fault-host-cx7-degraded")
    hands = Hands(w)
    hands.ac_drain("spark2")
    node = w.nodes["spark2"]
    rail = node.rail("enp1s0f0np0")
    assert rail is not None and not node.degraded
    downs = rail.counters["link_down_events_phy"]
    hands.recable("spark2", 0, "switch:crs804:qsfp56-dd-4-1")  # move to a free... (spark4's)
    hands.recable("spark4", 0, "switch:crs804:qsfp56-dd-2-1")
    assert node.degraded
    assert rail.counters["link_down_events_phy"] > downs
    assert any("Link down" in m for _t, m in node.dmesg)
    from wizard.lab.hostcmds import Host, read_file
    from wizard.lab.perftest import Registry

    host = Host(w, node, Registry())
    down = read_file(host, "/sys/class/net/enp1s0f0np0/carrier_down_count", False)
    assert down is not None and int(down) == rail.counters["link_down_events_phy"] > 0
    assert any("Link up" in m for _t, m in node.dmesg)
    # a node not marked susceptible never degrades
    other = w.nodes["spark4"]
    assert not other.degraded


def test_throttled_cleared_by_firmware_update_and_reboot_only() -> None:
    w = world("fault-host-cx7-throttled")
    hands = Hands(w)
    node = w.nodes["spark2"]
    hands.ac_drain("spark2")
    assert node.throttled
    hands.firmware_update("spark2")
    assert node.throttled  # staged, not active yet
    hands.reboot("spark2")
    assert not node.throttled and node.firmware == "28.45.1020"


def test_recable_direct_and_unplug() -> None:
    w = world("healthy-4node-crs804")
    hands = Hands(w)
    hands.recable("spark1", "port0", "node:spark2:port0")
    assert w.peer(End("node", "spark1", "port0")) == End("node", "spark2", "port0")
    r = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"))
    assert r.path is not None and not r.path.switched
    assert r.gbps == pytest.approx(111.86, rel=0.01)
    hands.unplug("spark1", "port0")
    assert not w.port_link("spark1", 0) and not w.port_link("spark2", 0)
    sw = w.switches["crs804"]
    assert not sw.link("qsfp56-dd-1-1").up


def test_power_off_and_on() -> None:
    w = world("healthy-2node-direct")
    hands = Hands(w)
    hands.power_off("spark2")
    assert not w.port_link("spark1", 0)
    hands.power_on("spark2")
    assert w.port_link("spark1", 0)


def test_reseat_fixes_rail_down() -> None:
    w = world("fault-host-rail-down")
    assert not w.port_link("spark1", 1) and w.port_link("spark1", 0)
    Hands(w).reseat("spark1", 1)
    assert w.port_link("spark1", 1)


def test_switch_reboot_bounces_links_and_rearms_degraded() -> None:
    w = world("fault-host-cx7-degraded")
    hands = Hands(w)
    hands.ac_drain("spark2")
    hands.reboot_switch("crs804")
    assert w.nodes["spark2"].degraded


# --- scenarios --------------------------------------------------------------------------------


def test_builtins_include_the_required_ones() -> None:
    names = set(scenarios.builtin_names())
    assert names >= EXPECTED_BUILTINS
    from wizard.lab.faults import INJECTABLE

    for fid in INJECTABLE:
        assert "fault-" + fid.replace(".", "-") in names


def test_every_builtin_builds() -> None:
    for info in scenarios.list_builtin():
        w = scenarios.build_world(scenarios.load(info.name))
        assert len(w.nodes) == info.nodes


def test_unknown_fault_id_names_file_and_field(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text("name: bad\ntopology: {nodes: 2}\nfaults:\n  - id: host.nope\n")
    with pytest.raises(ScenarioError) as exc:
        scenarios.load(str(p))
    assert str(p) in str(exc.value)
    assert "faults[0].id" in str(exc.value)
    assert "host.nope" in str(exc.value)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("name: x\ntopology: {nodes: 3}\n", "topology.nodes"),
        ("name: x\ntopology: {nodes: 2, cables_per_node: 3}\n", "topology.cables_per_node"),
        (
            "name: x\ntopology: {nodes: 2, switches: [{model: CRS305}]}\n",
            "topology.switches[0].model",
        ),
        (
            "name: x\ntopology: {nodes: 2}\nfaults: [{id: host.mtu, nodes: [spark9]}]\n",
            "faults[0].nodes",
        ),
        ("name: x\ntopology: {nodes: 2}\nfaults: [{id: switch.mtu}]\n", "faults[0].id"),
        ("topology: {nodes: 2}\n", "name"),
        ("name: x\ntopology: {nodes: 2}\nbogus: 1\n", "bogus"),
    ],
)
def test_validation_errors_name_the_field(tmp_path: Path, text: str, field: str) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(text)
    with pytest.raises(ScenarioError) as exc:
        scenarios.load(str(p))
    assert f"{p}: {field}:" in str(exc.value)


def test_unknown_builtin_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="no built-in scenario named 'nope'"):
        scenarios.load("nope")
    p = tmp_path / "y.yaml"
    p.write_text("name: [unclosed\n")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        scenarios.load(str(p))
