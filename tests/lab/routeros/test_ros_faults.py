"""Every switch.* fault of FAULTS.md can be injected, shows its evidence, and the fix undoes it."""

from __future__ import annotations

import pytest
from ros_helpers import FakeClock

from wizard.lab import catalog
from wizard.lab.routeros import script
from wizard.lab.routeros.faults import SWITCH_FAULTS, UnknownSwitchFault, apply_switch_fault
from wizard.lab.routeros.menus import EthernetMenu, QosPortMenu, monitor_row
from wizard.lab.routeros.switch import SwitchState

# the switch faults the lab's catalog names (FAULTS.md's switch ids): the RouterOS model must
# implement each of them, and no other
FAULT_IDS = set(catalog.SWITCH_FAULTS)


def fix(sw: SwitchState, text: str, clock: FakeClock) -> None:
    before = len(sw.tables["log"])
    script.run(sw, text, owner="fix", now=clock.now)
    assert not [e for e in sw.tables["log"][before:] if e["topics"] == "script,error"]


def test_catalogue_complete() -> None:
    assert set(SWITCH_FAULTS) == FAULT_IDS
    with pytest.raises(UnknownSwitchFault):
        apply_switch_fault(SwitchState.new("x", "CRS804-4DDQ"), "switch.nope")


def test_breakout_autoneg(crs804: SwitchState, clock: FakeClock) -> None:
    apply_switch_fault(crs804, "switch.breakout-autoneg")
    mon = monitor_row(crs804, EthernetMenu().resolve(crs804, "qsfp56-dd-1-5")[0])
    assert (mon["status"], mon["auto-negotiation"]) == ("no-link", "failed")
    fix(
        crs804,
        '/interface ethernet set [find default-name~"qsfp56-dd-.-[15]\\$"] '
        "auto-negotiation=no speed=200G-baseCR4",
        clock,
    )
    mon = monitor_row(crs804, EthernetMenu().resolve(crs804, "qsfp56-dd-1-5")[0])
    assert (mon["status"], mon["rate"], mon["fec"]) == ("link-ok", "200Gbps", "fec91")


def test_link_degraded(crs804: SwitchState, clock: FakeClock) -> None:
    apply_switch_fault(crs804, "switch.link-degraded", ports=["qsfp56-dd-2-1"], fec_mode="off")
    mon = monitor_row(crs804, EthernetMenu().resolve(crs804, "qsfp56-dd-2-1")[0])
    assert (mon["rate"], mon["fec"]) == ("100Gbps", "off")
    fix(crs804, "/interface ethernet set qsfp56-dd-2-1 speed=200G-baseCR4 fec-mode=fec91", clock)
    assert crs804.link("qsfp56-dd-2-1").rate_gbps == 200.0


@pytest.mark.parametrize("fault", ["switch.offload-split-cage", "switch.offload-second-bridge"])
def test_offload_faults_and_seed_fix(crs804: SwitchState, clock: FakeClock, fault: str) -> None:
    apply_switch_fault(crs804, fault)
    fwd = crs804.forwarding("qsfp56-dd-1-1", "qsfp56-dd-2-5")
    assert fwd.same_bridge and not fwd.offloaded and not fwd.blocked
    fix(crs804, '/interface bridge port remove [find bridge=bridge interface~"qsfp56-dd"]', clock)
    assert crs804.forwarding("qsfp56-dd-1-1", "qsfp56-dd-2-5").offloaded
    assert crs804.bridge_port("ether1")["bridge"] == "bridge"  # the API's own port untouched


def test_second_bridge_crs812_pure(clock: FakeClock) -> None:
    sw = SwitchState.new("crs812", "CRS812-8DS-2DQ-2DDQ", clock=clock)
    apply_switch_fault(sw, "switch.offload-second-bridge")
    assert sw.hw_offloaded_bridge() == "bridge"
    assert sw.bridge_port("qsfp56-dd-1-2")["bridge"] == "fabric"
    fix(
        sw,
        "/interface bridge port set [find bridge=fabric] bridge=bridge\n"
        "/interface bridge remove [find name=fabric]",
        clock,
    )
    assert sw.hw_offload("qsfp56-dd-1-1") and len(sw.bridges()) == 1


def test_offload_disabled(crs804: SwitchState, clock: FakeClock) -> None:
    apply_switch_fault(crs804, "switch.offload-disabled")
    assert crs804.bridge_port("qsfp56-dd-1-1")["hw"] == "false"
    fix(crs804, "/interface bridge port set [find interface=qsfp56-dd-1-1] hw=yes", clock)
    assert crs804.hw_offload("qsfp56-dd-1-1")


def test_qos_pfc_stall(crs804: SwitchState, clock: FakeClock) -> None:
    apply_switch_fault(crs804, "switch.qos-pfc-stall")
    rows = {r["name"]: r for r in QosPortMenu().rows(crs804)}
    assert (rows["qsfp56-dd-3-5"]["trust-l3"], rows["qsfp56-dd-3-5"]["pfc"]) == ("keep", "pfc-tc3")
    assert crs804.forwarding("qsfp56-dd-1-1", "qsfp56-dd-3-5").lossless
    fix(
        crs804,
        '/interface ethernet switch qos port set [find name~"qsfp56-dd"] '
        "trust-l3=ignore pfc=disabled",
        clock,
    )
    assert not crs804.forwarding("qsfp56-dd-1-1", "qsfp56-dd-3-5").lossless


def test_mtu(crs804: SwitchState, clock: FakeClock) -> None:
    apply_switch_fault(crs804, "switch.mtu", ports=["qsfp56-dd-4-5"])
    assert crs804.forwarding("qsfp56-dd-1-1", "qsfp56-dd-4-5").min_l2mtu == 1584
    fix(crs804, "/interface ethernet set qsfp56-dd-4-5 l2mtu=9216 mtu=9000", clock)
    fwd = crs804.forwarding("qsfp56-dd-1-1", "qsfp56-dd-4-5")
    assert (fwd.min_l2mtu, fwd.min_mtu) == (9216, 9000)


def test_rstp_isl_blocked(clock: FakeClock) -> None:
    sw = SwitchState.new("crs812-b", "CRS812-8DS-2DQ-2DDQ", clock=clock)
    sw.set_cable("qsfp56-1-1", "crs812-a:qsfp56-1-1")
    sw.set_cable("qsfp56-dd-1-1", "spark5:port0")
    apply_switch_fault(sw, "switch.rstp-isl-blocked")
    assert sw.port_role("qsfp56-1-1") == "alternate-port"
    assert "ether1" in sw.cables
    assert sw.forwarding("qsfp56-dd-1-1", "qsfp56-1-1").blocked
    fix(sw, "/interface bridge port set [find interface=ether1] path-cost=200000000", clock)
    assert sw.path_cost("ether1") == 200000000
