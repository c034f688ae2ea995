"""Fix plans as data: exact RouterOS CLI, items selected by stable keys, inverse rollbacks,
host files (netplan, sysctl.d, the PFC oneshot, nccl.conf) and physical actions."""

from __future__ import annotations

import yaml
from tests_checks_support import load_case  # type: ignore[import-not-found]

from flows.registry import by_fault, make_context
from wizard.model import FixPlan, Status


def plan_for(check_id: str, scenario: str, fault: str) -> FixPlan:
    obs, s = load_case(check_id, scenario)
    ctx = make_context(
        obs,
        nodes=s["nodes"],
        switches=s["switches"],
        cabling={k: tuple(v) for k, v in s["cabling"].items()},
        management={k: tuple(v) for k, v in s["management"].items()},
    )
    check = by_fault(fault)
    parsed = check.parse(obs, ctx)
    verdict = next(v for v in check.judge(parsed, ctx) if v.fault == fault)
    assert verdict.status == Status.FAIL
    assert check.fix is not None
    plan = check.fix(parsed, verdict, ctx)
    assert plan is not None
    return plan


def test_split_cage_removes_the_other_bridges_sub_ports_never_the_management_port() -> None:
    plan = plan_for(
        "switch.offload-split-cage", "fault-switch-offload-split-cage", "switch.offload-split-cage"
    )
    (change,) = plan.switch_changes
    assert change.switch == "crs804"
    assert len(change.commands) == 24
    first = change.commands[0]
    assert (first.path, first.verb, first.select) == (
        "/interface/bridge/port",
        "remove",
        ("interface", "qsfp56-dd-1-2"),
    )
    assert first.cli == "/interface/bridge/port remove [find interface=qsfp56-dd-1-2]"
    assert (
        change.rollback[0].cli
        == "/interface/bridge/port add bridge=bridge interface=qsfp56-dd-1-2 hw=yes comment=defconf"
    )
    assert all("ether1" not in c.cli for c in change.commands)
    assert "/interface/bridge/port remove [find interface=qsfp56-dd-4-8]" in plan.preview
    assert plan.verify_checks == ("switch.offload-split-cage",)


def test_second_bridge_moves_the_fabric_ports_into_the_offloaded_bridge() -> None:
    # seed 003: one hardware-offloaded bridge per switch, the emptied second bridge deleted
    plan = plan_for("switch.offload-split-cage", "crs812-six-node", "switch.offload-second-bridge")
    (change,) = plan.switch_changes
    assert change.switch == "crs812-a"
    assert (
        change.commands[0].cli
        == "/interface/bridge/port set [find interface=qsfp56-dd-1-1] bridge=bridge"
    )
    back = "/interface/bridge/port set [find interface=qsfp56-dd-1-1] bridge=fabric"
    assert back in [c.cli for c in change.rollback]
    assert change.commands[-1].cli == "/interface/bridge remove [find name=fabric]"
    assert change.rollback[0].cli == "/interface/bridge add name=fabric"  # re-created first
    assert all("ether1" not in c.cli for c in change.commands)  # management untouched
    assert "delete the emptied bridge" in plan.summary


def test_qos_plan_restores_lossy_and_rolls_back_to_the_profile() -> None:
    plan = plan_for("switch.qos-pfc-stall", "fault-switch-qos-pfc-stall", "switch.qos-pfc-stall")
    (change,) = plan.switch_changes
    assert change.commands[0].cli == (
        "/interface/ethernet/switch/qos/port set [find name=qsfp56-dd-1-1] trust-l3=ignore pfc=disabled"
    )
    assert change.rollback[0].args == (("trust-l3", "keep"), ("pfc", "pfc-tc3"))
    assert len(change.commands) == 8


def test_breakout_forces_both_lane_masters() -> None:
    plan = plan_for(
        "switch.breakout-autoneg", "fault-switch-breakout-autoneg", "switch.breakout-autoneg"
    )
    (change,) = plan.switch_changes
    clis = [c.cli for c in change.commands]
    assert clis[:2] == [
        "/interface/ethernet set [find default-name=qsfp56-dd-1-1] auto-negotiation=no speed=200G-baseCR4 fec-mode=fec91",
        "/interface/ethernet set [find default-name=qsfp56-dd-1-5] auto-negotiation=no speed=200G-baseCR4 fec-mode=fec91",
    ]
    assert plan.bounces_links


def test_rstp_raises_the_uplink_cost_on_the_blocked_switch() -> None:
    plan = plan_for(
        "switch.rstp-isl-blocked", "fault-switch-rstp-isl-blocked", "switch.rstp-isl-blocked"
    )
    (change,) = plan.switch_changes
    assert change.switch == "crs812-b"
    assert (
        change.commands[0].cli
        == "/interface/bridge/port set [find interface=ether1] path-cost=200000000"
    )
    assert (
        change.rollback[0].cli == "/interface/bridge/port unset [find interface=ether1] path-cost"
    )


def test_switch_mtu_plan() -> None:
    plan = plan_for("switch.mtu", "fault-switch-mtu", "switch.mtu")
    (change,) = plan.switch_changes
    assert (
        change.commands[0].cli
        == "/interface/ethernet set [find name=qsfp56-dd-1-1] l2mtu=9216 mtu=9000"
    )
    assert (
        change.rollback[0].cli
        == "/interface/ethernet set [find name=qsfp56-dd-1-1] l2mtu=1584 mtu=1500"
    )


def test_duplicate_ip_netplan_one_subnet_per_rail() -> None:
    plan = plan_for("host.duplicate-ip", "fault-host-duplicate-ip", "host.duplicate-ip")
    assert [c.node for c in plan.host_changes] == ["spark2", "spark3"]
    spark3 = plan.host_changes[1]
    (f,) = spark3.files
    assert f.path == "/etc/netplan/40-cx7.yaml" and f.mode == 0o600
    doc = yaml.safe_load(f.content)
    eths = doc["network"]["ethernets"]
    assert list(eths) == ["enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1"]
    assert eths["enP2p1s0f1np1"] == {
        "addresses": ["10.9.4.3/24"],
        "mtu": 9000,
        "dhcp4": False,
        "dhcp6": False,
        "link-local": [],
    }
    assert spark3.commands == ("sudo -n netplan apply",)


def test_host_pfc_oneshot_unit() -> None:
    plan = plan_for("host.pfc-enabled", "fault-host-pfc-enabled", "host.pfc-enabled")
    change = plan.host_changes[0]
    (unit,) = change.files
    assert unit.path == "/etc/systemd/system/fabwiz-pfc-off.service"
    assert "ExecStart=/usr/bin/mlnx_qos -i enP2p1s0f1np1 --pfc 0,0,0,0,0,0,0,0" in unit.content
    assert "Type=oneshot" in unit.content
    assert change.commands[-1] == "sudo -n systemctl enable --now fabwiz-pfc-off.service"


def test_arp_sysctl_file() -> None:
    plan = plan_for("host.arp-sysctls", "fault-host-arp-sysctls", "host.arp-sysctls")
    (f,) = plan.host_changes[0].files
    assert f.path == "/etc/sysctl.d/98-roce.conf"
    assert (
        "net.ipv4.conf.all.arp_ignore = 1\nnet.ipv4.conf.all.arp_announce = 2\nnet.ipv4.conf.all.rp_filter = 2\n"
        in f.content
    )


def test_nccl_hca_list_is_exact() -> None:
    plan = plan_for("nccl.hca-filter", "fault-nccl-hca-filter", "nccl.hca-filter")
    conf, profile = plan.host_changes[0].files
    assert conf.path == "/etc/nccl.conf"
    assert "NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0,rocep1s0f1,roceP2p1s0f1\n" in conf.content
    assert "export NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0,rocep1s0f1,roceP2p1s0f1" in profile.content


def test_rail_down_is_a_physical_reseat() -> None:
    plan = plan_for("host.rail-down", "fault-host-rail-down", "host.rail-down")
    assert plan.physical is not None and plan.physical.kind == "reseat"
    assert plan.physical.cables == (("spark1", "port1", "switch:crs804:qsfp56-dd-1-5"),)
    assert plan.bounces_links
