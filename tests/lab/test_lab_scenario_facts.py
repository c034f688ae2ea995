"""Scenario facts the lab honours: firmware, a port whose offload was lost, IPv6 added first."""

from __future__ import annotations

from wizard.lab.physics import FlowSpec, flow
from wizard.lab.scenarios import build_world, load_text

BASE = """
name: facts-lab
topology: {nodes: 2, switches: [{model: CRS804-4DDQ}], cables_per_node: 1}
facts:
"""


def world(facts: str):  # type: ignore[no-untyped-def]
    return build_world(load_text(BASE + facts, path="facts.yaml"))


def test_firmware_is_what_the_node_reports_and_moves_no_number() -> None:
    w = world("  nodes: {spark2: {firmware: 28.47.1088}}\n")
    assert w.nodes["spark2"].firmware == "28.47.1088"
    assert any("firmware version: 28.47.1088" in m for _t, m in w.nodes["spark2"].dmesg)
    r = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"))
    assert not r.stalled and abs(r.gbps - 109.2) < 0.5


def test_a_port_whose_offload_was_lost_is_cpu_forwarded() -> None:
    w = world("  ports: {crs804/qsfp56-dd-1-5: {hw-offload: false}}\n")
    sw = w.switches["crs804"]
    assert not sw.hw_offload("qsfp56-dd-1-5")  # type: ignore[attr-defined]
    assert sw.hw_offload("qsfp56-dd-1-1")  # type: ignore[attr-defined]
    r = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"))
    assert r.software == ("crs804",) and abs(r.gbps - 9.5) < 0.1
    hosts = {h["on-interface"]: h["external"] for h in sw.tables["bridge-host"]}  # type: ignore[attr-defined]
    assert hosts["qsfp56-dd-1-5"] == "false" and hosts["qsfp56-dd-1-1"] == "true"
    # it survives a save and restore of the lab state
    from wizard.lab.switchport import switch_from_state

    again = switch_from_state(sw.to_state(), clock=w.now)
    assert not again.forwarding("qsfp56-dd-1-1", "qsfp56-dd-1-5").offloaded


def test_ipv6_first_and_switch_facts() -> None:
    w = world(
        "  nodes: {spark2: {ipv6_first: true}}\n"
        "  switches: {crs804: {routeros_version: 7.21.1, link_up_delay_s: 8}}\n"
    )
    assert all(r.v6_first for r in w.nodes["spark2"].rails)
    sw = w.switches["crs804"]
    assert sw.routeros_version == "7.21.1" and sw.link_up_delay_s == 8  # type: ignore[attr-defined]
