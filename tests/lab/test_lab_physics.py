"""The lab's physics lands on FAULTS.md's numbers (within 5%), computed from the world."""

from __future__ import annotations

import pytest

from wizard.lab import scenarios
from wizard.lab.physics import FlowSpec, flow, hca_matches, nccl_plan, solve
from wizard.lab.scenarios import Scenario
from wizard.lab.world import World


def near(value: float, expected: float, tol: float = 0.05) -> bool:
    return abs(value - expected) <= tol * expected


def world(name: str) -> World:
    return scenarios.build_world(scenarios.load(name))


def two_crs812(uplinks: bool = False) -> World:
    sw = {"model": "CRS812-8DS-2DQ-2DDQ", "uplink": uplinks}
    s = Scenario.model_validate(
        {"name": "x", "topology": {"nodes": 6, "switches": [sw, sw], "cables_per_node": 1}}
    )
    return scenarios.build_world(s)


def test_single_half_direct_cable_is_111_86() -> None:
    w = world("healthy-2node-direct")
    r = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"))
    assert not r.stalled
    assert near(r.gbps, 111.86, 0.01)
    assert r.mtu == 4096


def test_single_half_through_one_switch_is_109_2() -> None:
    w = world("healthy-4node-crs804")
    r = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark3", "rocep1s0f0"))
    assert near(r.gbps, 109.2, 0.01)
    assert r.path is not None and len(r.path.hops) == 1 and r.path.hops[0].offloaded


def test_both_halves_concurrently_98_04_each() -> None:
    w = world("healthy-4node-crs804")
    a, b = solve(
        w,
        [
            FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"),
            FlowSpec("spark1", "roceP2p1s0f0", "spark2", "roceP2p1s0f0"),
        ],
    )
    assert near(a.gbps, 98.04, 0.01) and near(b.gbps, 98.04, 0.01)
    assert near(a.gbps + b.gbps, 196.08, 0.01)


def test_bidirectional_one_rail_about_206_aggregate() -> None:
    w = world("healthy-2node-direct")
    fwd, back = solve(
        w,
        [
            FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"),
            FlowSpec("spark2", "rocep1s0f0", "spark1", "rocep1s0f0"),
        ],
    )
    assert near(fwd.gbps + back.gbps, 206.0)


def test_cross_switch_single_flow_and_two_flows_sharing_the_isl() -> None:
    w = two_crs812()
    # spark1-4 on the first switch, spark5-6 on the second (003's 4 + 2)
    one = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark5", "rocep1s0f0"))
    assert one.path is not None and one.path.isl
    assert near(one.gbps, 109.08, 0.01)
    a, b = solve(
        w,
        [
            FlowSpec("spark1", "rocep1s0f0", "spark5", "rocep1s0f0"),
            FlowSpec("spark2", "rocep1s0f0", "spark6", "rocep1s0f0"),
        ],
    )
    assert near(a.gbps, 81.92, 0.02) and near(b.gbps, 81.90, 0.02)


def test_nccl_busbw_two_and_four_nodes() -> None:
    w2 = world("healthy-2node-direct")
    p2 = nccl_plan(w2, ["spark1", "spark2"], {})
    assert p2.transport == "IB" and set(p2.hcas) == {"rocep1s0f0", "roceP2p1s0f0"}
    assert near(p2.busbw, 26.58)
    w4 = world("healthy-4node-crs804")
    p4 = nccl_plan(w4, list(w4.nodes), {})
    assert near(p4.busbw, 23.33)
    assert len(p4.hcas) == 4


def test_nccl_ib_hca_prefix_filter_selects_one_half() -> None:
    w = world("healthy-2node-direct")
    full = nccl_plan(w, ["spark1", "spark2"], {}).busbw
    half = nccl_plan(w, ["spark1", "spark2"], {"NCCL_IB_HCA": "rocep1s0f"})
    assert half.hcas == ("rocep1s0f0",)
    assert near(half.busbw, full / 2)
    exact = nccl_plan(w, ["spark1", "spark2"], {"NCCL_IB_HCA": "=rocep1s0f0,roceP2p1s0f0"})
    assert near(exact.busbw, full)


def test_hca_matching_rules() -> None:
    devs = ["rocep1s0f0", "rocep1s0f1", "roceP2p1s0f0", "roceP2p1s0f1"]
    assert hca_matches("rocep1s0f", devs) == ["rocep1s0f0", "rocep1s0f1"]
    assert hca_matches("=rocep1s0f", devs) == []
    assert hca_matches("=rocep1s0f0:1,roceP2p1s0f0", devs) == ["rocep1s0f0", "roceP2p1s0f0"]
    assert hca_matches("^roceP2", devs) == ["rocep1s0f0", "rocep1s0f1"]
    assert hca_matches(None, devs) == devs


@pytest.mark.parametrize("nccl_env", [{"NCCL_NET": "Socket"}, {"NCCL_IB_DISABLE": "1"}])
def test_nccl_socket_fallback_band(nccl_env: dict[str, str]) -> None:
    w = world("healthy-2node-direct")
    p = nccl_plan(w, ["spark1", "spark2"], nccl_env)
    assert p.transport == "Socket"
    assert 2.0 <= p.busbw <= 3.0


def test_nccl_no_matching_device_falls_back_to_socket() -> None:
    w = world("healthy-2node-direct")
    p = nccl_plan(w, ["spark1", "spark2"], {"NCCL_IB_HCA": "mlx5_"})
    assert p.transport == "Socket" and p.hcas == ()


@pytest.mark.parametrize(
    "name", ["fault-switch-offload-split-cage", "fault-switch-offload-second-bridge"]
)
def test_software_forwarding_caps_near_9_5_whatever_the_qps(name: str) -> None:
    w = world(name)
    one = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0", qps=1))
    four = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0", qps=4))
    assert near(one.gbps, 9.5) and near(four.gbps, 9.5)
    assert one.software == tuple(w.switches)  # the one switch of the scenario
    # shared by every software-forwarded flow of the switch
    a, b = solve(
        w,
        [
            FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"),
            FlowSpec("spark3", "rocep1s0f0", "spark4", "rocep1s0f0"),
        ],
    )
    assert near(a.gbps + b.gbps, 9.5)


def test_software_forwarding_raises_switch_cpu_load() -> None:
    w = world("fault-switch-offload-split-cage")
    ids = w.traffic.start([FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0")])
    sw = w.switches["crs804"]
    assert near(sw.software_gbps, 9.5, 0.06)  # type: ignore[attr-defined]
    assert sw.cpu_load() >= 95  # type: ignore[attr-defined]
    w.traffic.stop(ids)
    assert sw.cpu_load() <= 5  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("fault-switch-qos-pfc-stall", "lossless"),
        ("fault-host-duplicate-ip", "duplicate IP"),
        ("fault-switch-mtu", "l2mtu"),
    ],
)
def test_stalls_connect_but_move_no_data(name: str, reason: str) -> None:
    w = world(name)
    src, dst = ("spark1", "spark2") if name != "fault-host-duplicate-ip" else ("spark1", "spark3")
    r = flow(w, FlowSpec(src, "rocep1s0f0", dst, "rocep1s0f0"))
    assert r.stalled and r.gbps == 0.0
    assert reason in r.reason


def test_host_pfc_on_a_lossy_fabric_is_hygiene_not_a_stall() -> None:
    # no lossless switch port sends a pause frame back: the rail runs at line rate
    w = world("fault-host-pfc-enabled")
    r = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"))
    assert not r.stalled and near(r.gbps, 109.2)


def test_duplicate_ip_only_hits_the_duplicated_nodes() -> None:
    w = world("fault-host-duplicate-ip")
    ok = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark4", "rocep1s0f0"))
    assert near(ok.gbps, 109.2)


@pytest.mark.parametrize("name", ["fault-host-cx7-throttled", "fault-host-cx7-degraded"])
def test_cx7_throttled_or_degraded_12_to_13(name: str) -> None:
    w = world(name)
    r = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"))
    assert 12.0 <= r.gbps <= 13.0
    healthy_pair = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark3", "rocep1s0f0"))
    assert near(healthy_pair.gbps, 109.2)


def test_rstp_detour_4_47_and_fixed_by_path_cost() -> None:
    w = world("fault-switch-rstp-isl-blocked")
    r = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark5", "rocep1s0f0"))
    assert r.path is not None and r.path.detour and r.path.l2mtu == 1500
    assert near(r.gbps, 4.47)
    sw = w.switches["crs812-b"]
    assert sw.port_role("qsfp56-1") == "alternate-port"


def test_half_unused_and_pcie_width() -> None:
    w = world("fault-host-half-unused")
    p = nccl_plan(w, list(w.nodes), {})
    healthy = nccl_plan(world("healthy-4node-crs804"), ["spark1", "spark2", "spark3", "spark4"], {})
    assert near(p.busbw, healthy.busbw / 2)
    w2 = world("fault-host-pcie-width")
    r = flow(w2, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"))
    assert near(r.gbps, 111.86 / 2)


def test_link_degraded_caps_at_the_negotiated_rate() -> None:
    w = world("fault-switch-link-degraded")
    r = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"))
    assert r.gbps < 100.0


def test_breakout_autoneg_means_no_carrier() -> None:
    w = world("fault-switch-breakout-autoneg")
    assert not w.port_link("spark1", 0)
    r = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"))
    assert r.stalled and "carrier" in r.reason


def test_three_bugs_seed_000() -> None:
    w = world("crs804-three-bugs")
    # split cage: CPU forwarding; QoS: stalls; duplicate IP on spark2+spark3
    r = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark4", "rocep1s0f0"))
    assert r.stalled and "lossless" in r.reason
    assert r.software == ("crs804",)
    assert w.nodes["spark3"].rails[0].addresses == w.nodes["spark2"].rails[0].addresses


def test_six_node_seed_003_second_bridge_and_blocked_isl() -> None:
    w = world("crs812-six-node")
    intra = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"))
    assert intra.gbps < 10.0
    cross = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark5", "rocep1s0f0"))
    assert cross.path is not None and cross.path.detour
