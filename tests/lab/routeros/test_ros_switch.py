"""SwitchState: the switch-port interface, derived hw-offload, links, logs, ids, persistence."""

from __future__ import annotations

import json

import pytest
from ros_helpers import FakeClock

from wizard.lab.routeros.menus import BridgeMenu, BridgePortMenu, EthernetMenu, QosPortMenu
from wizard.lab.routeros.switch import SwitchState


def messages(sw: SwitchState) -> list[str]:
    return [f"{i['topics']} {i['message']}" for i in sw.tables["log"]]


def test_factory_config_is_healthy(crs804: SwitchState) -> None:
    assert crs804.fabric_ports() == [
        f"qsfp56-dd-{c}-{lane}" for c in range(1, 5) for lane in (1, 5)
    ]
    assert crs804.hw_offloaded_bridge() == "bridge"
    link = crs804.link("qsfp56-dd-2-5")
    assert (link.up, link.rate_gbps, link.fec) == (True, 200.0, "fec91")
    fwd = crs804.forwarding("qsfp56-dd-1-1", "qsfp56-dd-4-5")
    assert fwd.same_bridge and fwd.offloaded and not fwd.lossless and not fwd.blocked
    assert (fwd.min_l2mtu, fwd.min_mtu) == (9216, 9000)
    assert crs804.port_role("qsfp56-dd-1-1") == "designated-port"
    assert crs804.path_cost("qsfp56-dd-1-1") == 100  # long mode, 200G
    assert not crs804.hw_offload("ether1")  # CPU port, same bridge
    assert crs804.tables["identity"][0]["name"] == "crs804"
    assert any(
        m.startswith(
            'bridge,info hardware offloading activated on bridge "bridge" ports: '
            "qsfp56-dd-1-1,qsfp56-dd-1-2"
        )
        for m in messages(crs804)
    )
    assert "interface,info qsfp56-dd-1-1 link up (speed 200G, full duplex)" in messages(crs804)


def test_crs812_ports(clock: FakeClock) -> None:
    sw = SwitchState.new("crs812-a", "CRS812-8DS-2DQ-2DDQ", clock=clock)
    assert sw.fabric_ports()[:4] == [
        "qsfp56-dd-1-1",
        "qsfp56-dd-1-5",
        "qsfp56-dd-2-1",
        "qsfp56-dd-2-5",
    ]
    assert "qsfp56-1-1" in sw.fabric_ports() and "sfp56-8" in sw.fabric_ports()
    sw.set_cable("qsfp56-1", "crs812-b:qsfp56-1")  # the short name
    assert sw.link("qsfp56-1-1").rate_gbps == 200.0
    sw.set_cable("sfp56-3", "spark5:port0")
    assert sw.link("sfp56-3").rate_gbps == 50.0
    with pytest.raises(ValueError, match="unknown switch model"):
        SwitchState.new("x", "CRS326", clock=clock)


def test_split_cage_refuses_offload_and_fix_restores(crs804: SwitchState) -> None:
    BridgeMenu().add(crs804, {"name": "roce-br"})
    for port in crs804.fabric_ports():
        BridgePortMenu().set(crs804, port, {"bridge": "roce-br"})
    # the management bridge, holding the unused legs, keeps the chip (seed 000's log)
    assert crs804.hw_offloaded_bridge() == "bridge"
    fwd = crs804.forwarding("qsfp56-dd-1-1", "qsfp56-dd-2-1")
    assert fwd.same_bridge and not fwd.offloaded
    assert "splits QSFP56-DD cage(s) 1,2,3,4" in fwd.reason
    assert not any("deactivated" in m for m in messages(crs804))
    last = messages(crs804)[-1]
    assert last.startswith('bridge,info hardware offloading activated on bridge "bridge" ports: ')
    assert "qsfp56-dd-1-2" in last and "qsfp56-dd-1-1," not in last
    # the seed's fix: remove the DD sub-ports from the management bridge
    refs = [
        p[".id"]
        for p in crs804.tables["bridge-port"]
        if p["bridge"] == "bridge" and "qsfp56-dd" in p["interface"]
    ]
    BridgePortMenu().remove(crs804, ",".join(refs))
    assert crs804.hw_offloaded_bridge() == "roce-br"
    assert crs804.forwarding("qsfp56-dd-1-1", "qsfp56-dd-2-1").offloaded
    assert messages(crs804)[-1] == (
        'bridge,info hardware offloading activated on bridge "roce-br" ports: '
        + ",".join(crs804.fabric_ports())
    )


def test_one_bridge_per_chip(clock: FakeClock) -> None:
    sw = SwitchState.new("crs812", "CRS812-8DS-2DQ-2DDQ", clock=clock)
    BridgeMenu().add(sw, {"name": "fabric"})
    for p in [f"qsfp56-dd-{c}-{lane}" for c in (1, 2) for lane in range(1, 9)]:
        BridgePortMenu().set(sw, p, {"bridge": "fabric"})
    assert sw.hw_offloaded_bridge() == "bridge"  # still has sfp56/qsfp56 chip ports
    assert not sw.hw_offload("qsfp56-dd-1-1")
    assert (
        sw.offload_refusal("fabric")
        == "switch chip already offloads bridge bridge (one bridge per chip)"
    )


def test_hw_no_and_qos_lossless(crs804: SwitchState) -> None:
    BridgePortMenu().set(crs804, "qsfp56-dd-1-1", {"hw": "no"})
    assert not crs804.hw_offload("qsfp56-dd-1-1")
    assert crs804.hw_offload("qsfp56-dd-1-5")
    fwd = crs804.forwarding("qsfp56-dd-1-1", "qsfp56-dd-2-1")
    assert not fwd.offloaded and "qsfp56-dd-1-1 has hw=no" in fwd.reason
    QosPortMenu().set(crs804, "qsfp56-dd-2-1", {"trust-l3": "keep"})
    assert crs804.forwarding("qsfp56-dd-2-1", "qsfp56-dd-3-1").lossless
    QosPortMenu().set(crs804, "qsfp56-dd-2-1", {"trust-l3": "ignore"})
    assert not crs804.forwarding("qsfp56-dd-2-1", "qsfp56-dd-3-1").lossless


def test_breakout_autoneg_no_link_and_forced_mode_bounces(crs804: SwitchState) -> None:
    events: list[tuple[str, str]] = []
    crs804.listeners.append(lambda e, p: events.append((e, p)))
    EthernetMenu().set(crs804, "qsfp56-dd-3-1", {"auto-negotiation": "yes"})
    link = crs804.link("qsfp56-dd-3-1")
    assert not link.up and "auto-negotiation failed" in link.reason
    assert (
        "interface,warning qsfp56-dd-3-1 module auto-initialization failed, try forced-mode"
        in messages(crs804)
    )
    assert "interface,info qsfp56-dd-3-1 link down" in messages(crs804)
    assert ("link-bounced", "qsfp56-dd-3-1") in events
    events.clear()
    EthernetMenu().set(crs804, "qsfp56-dd-3-1", {"auto-negotiation": "no", "speed": "200G-baseCR4"})
    assert crs804.link("qsfp56-dd-3-1").up
    assert events == [("link-bounced", "qsfp56-dd-3-1"), ("config-changed", "")]
    events.clear()
    EthernetMenu().set(crs804, "qsfp56-dd-3-1", {"mtu": "9000"})  # unchanged, no bounce
    assert events == [("config-changed", "")]
    assert crs804.counter("qsfp56-dd-3-1").link_downs == 1


def test_link_degraded_rate_and_fec(crs804: SwitchState) -> None:
    EthernetMenu().set(crs804, "qsfp56-dd-1-1", {"speed": "100G-baseCR4", "fec-mode": "off"})
    link = crs804.link("qsfp56-dd-1-1")
    assert (link.up, link.rate_gbps, link.fec) == (True, 100.0, "off")
    crs804.set_cable("qsfp56-dd-1-1", None)
    assert crs804.link("qsfp56-dd-1-1").reason == "no cable"


def test_cpu_load_learn_and_traffic(crs804: SwitchState, clock: FakeClock) -> None:
    assert crs804.cpu_load() == 1
    # the CRS804's CPU forwards 15.5 Gb/s in all: one 9.5 Gb/s flow keeps it 62% busy
    crs804.set_software_forwarded_gbps(9.5)
    assert crs804.cpu_load() == 62
    crs804.set_software_forwarded_gbps(15.5)
    assert crs804.cpu_load() == 100
    crs804.learn("aa:bb:cc:00:00:01", "qsfp56-dd-1-1")
    host = crs804.tables["bridge-host"][0]
    assert (host["mac-address"], host["external"], host["on-interface"]) == (
        "AA:BB:CC:00:00:01",
        "true",
        "qsfp56-dd-1-1",
    )
    BridgePortMenu().set(crs804, "qsfp56-dd-1-1", {"hw": "no"})
    assert crs804.tables["bridge-host"][0]["external"] == "false"
    crs804.add_port_traffic("qsfp56-dd-1-1", 1000, 2000, 10, 20)
    c = crs804.counter("qsfp56-dd-1-1")
    assert (c.tx_bytes, c.rx_bytes, c.tx_packets, c.rx_packets) == (1000, 2000, 10, 20)


def test_roles_block_forwarding(crs804: SwitchState) -> None:
    crs804.set_port_role("qsfp56-dd-4-5", "alternate-port")
    fwd = crs804.forwarding("qsfp56-dd-1-1", "qsfp56-dd-4-5")
    assert fwd.blocked and "qsfp56-dd-4-5 is alternate-port" in fwd.reason
    BridgePortMenu().set(crs804, "qsfp56-dd-4-5", {"path-cost": "200000000"})
    assert crs804.path_cost("qsfp56-dd-4-5") == 200000000


def test_reboot_changes_ids_and_bounces(crs804: SwitchState, clock: FakeClock) -> None:
    events: list[tuple[str, str]] = []
    crs804.listeners.append(lambda e, p: events.append((e, p)))
    before = [p[".id"] for p in crs804.tables["bridge-port"]]
    clock.now += 100
    crs804.reboot()
    after = [p[".id"] for p in crs804.tables["bridge-port"]]
    assert before[0] == "*1" and after[0] == "*101" and set(before).isdisjoint(after)
    assert events[0] == ("rebooted", "")
    assert ("link-bounced", "qsfp56-dd-1-1") in events
    assert crs804.uptime() == "0s"
    assert messages(crs804)[0] == "system,info router rebooted"


def test_state_roundtrip(crs804: SwitchState, clock: FakeClock) -> None:
    BridgePortMenu().set(crs804, "qsfp56-dd-1-1", {"hw": "no"})
    crs804.set_port_role("qsfp56-dd-2-1", "root-port")
    state = json.loads(json.dumps(crs804.to_state()))
    copy = SwitchState.from_state(state, clock=clock)
    assert copy.to_state() == crs804.to_state()
    assert not copy.hw_offload("qsfp56-dd-1-1")
    assert copy.port_role("qsfp56-dd-2-1") == "root-port"
    assert copy.new_id("bridge-port") == crs804.new_id("bridge-port")
