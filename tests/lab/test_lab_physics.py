"""The lab's physics lands on FAULTS.md's numbers (within 5%), computed from the world."""

from __future__ import annotations

import pytest

from wizard.lab import scenarios
from wizard.lab.physics import FlowSpec, flow, hca_matches, nccl_plan, solve
from wizard.lab.scenarios import Scenario
from wizard.lab.world import World, healthy_netplan


def near(value: float, expected: float, tol: float = 0.05) -> bool:
    return abs(value - expected) <= tol * expected


def world(name: str) -> World:
    return scenarios.build_world(scenarios.load(name))


def two_crs812(uplinks: bool = False) -> World:
    sw = {"model": "CRS812-8DS-2DQ-2DDQ", "uplink": uplinks}
    s = Scenario.from_data(
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


def chain(nodes: int, switches: int) -> World:
    sw = {"model": "CRS804-4DDQ"}
    s = Scenario.from_data(
        {
            "name": "x",
            "topology": {"nodes": nodes, "switches": [sw] * switches, "cables_per_node": 1},
        }
    )
    return scenarios.build_world(s)


def test_nccl_busbw_does_not_fall_with_the_ring_length() -> None:
    """A ring's busbw is its slowest hop's, whatever its length (the longer ring's 2(n-1)
    steps of latency are in each collective's time): 8 nodes on one CRS804 read the 4-node
    23.33; 16 on three in a chain read the ISL's share of it (two channels per ISL direction,
    ~81.9 Gb/s each of a ~98 Gb/s half), above the cross-switch gate."""
    from flows.expectations import DEFAULT

    w8 = chain(8, 1)
    p8 = nccl_plan(w8, list(w8.nodes), {})
    assert near(p8.busbw, 23.33, 0.01)
    w16 = chain(16, 3)
    p16 = nccl_plan(w16, list(w16.nodes), {})
    share = 163.82 / 196.08
    assert near(p16.busbw, 23.33 * share, 0.02)
    assert p16.busbw >= DEFAULT.nccl_gate(16, 3)


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
    ("name", "per_flow", "total"),
    [
        ("fault-switch-offload-split-cage", 9.5, 15.5),
        ("fault-switch-offload-second-bridge", 4.9, 4.9),
    ],
)
def test_software_forwarding_caps_whatever_the_qps(
    name: str, per_flow: float, total: float
) -> None:
    w = world(name)
    one = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0", qps=1))
    four = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0", qps=4))
    assert near(one.gbps, per_flow, 0.01) and near(four.gbps, per_flow, 0.01)
    assert one.software == tuple(w.switches)  # the one switch of the scenario
    # every software-forwarded flow of the switch shares its CPU
    a, b = solve(
        w,
        [
            FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"),
            FlowSpec("spark3", "rocep1s0f0", "spark4", "rocep1s0f0"),
        ],
    )
    assert near(a.gbps + b.gbps, min(total, 2 * per_flow), 0.01)
    assert near(a.gbps, b.gbps, 0.01)


def test_software_forwarding_raises_switch_cpu_load() -> None:
    w = world("fault-switch-offload-split-cage")
    ids = w.traffic.start([FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0")])
    sw = w.switches["crs804"]
    assert near(sw.software_gbps, 9.5, 0.01)  # type: ignore[attr-defined]
    assert sw.cpu_load() == 62  # type: ignore[attr-defined]  # 9.5 of the CPU's 15.5 Gb/s
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


def test_host_pfc_alone_does_not_stall_a_lossy_path() -> None:
    w = world("fault-host-pfc-enabled")
    assert all(r.pfc_on for n in w.nodes.values() for r in n.rails)
    r = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"))
    assert not r.stalled and near(r.gbps, 109.2, 0.01)
    direct = world("healthy-2node-direct")
    direct.nodes["spark1"].rails[0].pfc = (0, 0, 0, 1, 0, 0, 0, 0)
    d = flow(direct, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"))
    assert not d.stalled and near(d.gbps, 111.86, 0.01)


def test_lossless_qos_stalls_only_the_chip_forwarded_path() -> None:
    w = world("fault-switch-qos-pfc-stall")
    assert flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0")).stalled
    split = world("crs804-three-bugs")  # QoS lossless too, but the CPU forwards
    r = flow(split, FlowSpec("spark1", "rocep1s0f0", "spark4", "rocep1s0f0"))
    assert not r.stalled and near(r.gbps, 9.5, 0.01) and r.software == ("crs804",)


def test_arp_flux_from_rails_of_one_subnet_with_default_sysctls() -> None:
    # one subnet for all rails is only a configuration finding while arp_ignore=1 ...
    w = world("fault-host-same-subnet-rails")
    r = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"))
    assert not r.stalled and near(r.gbps, 109.2, 0.01)
    # ... and ARP flux once the node answers for every local address (arp_ignore=0)
    for n in w.nodes.values():
        n.sysctls["net.ipv4.conf.all.arp_ignore"] = "0"
    r = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"))
    assert r.stalled and "ARP flux" in r.reason
    # default sysctls with one subnet per rail: each address has one answerer
    ok = world("fault-host-arp-sysctls")
    assert not flow(ok, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0")).stalled


def test_duplicate_inside_one_node_makes_frames_vanish() -> None:
    w = world("healthy-4node-crs804")
    from wizard.lab.faults import inject

    inject(w, "host.duplicate-ip", nodes=["spark2"], params={"scope": "node"})
    assert {r.addresses[0] for r in w.nodes["spark2"].rails} == {"10.9.1.2/24"}
    for dev in ("rocep1s0f0", "roceP2p1s0f1"):
        r = flow(w, FlowSpec("spark1", dev, "spark2", dev))
        assert r.stalled and "duplicate IP 10.9.1.2" in r.reason
    assert not flow(w, FlowSpec("spark1", "rocep1s0f0", "spark3", "rocep1s0f0")).stalled


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


def test_three_bugs_seed_000_composes_in_the_seed_order() -> None:
    w = world("crs804-three-bugs")
    sw = w.switches["crs804"]
    pair = FlowSpec("spark1", "rocep1s0f0", "spark4", "rocep1s0f0")
    dup = FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0")
    # split cage: the CPU forwards every flow, QoS is not enforced, duplicates still arrive
    assert near(flow(w, pair).gbps, 9.5, 0.01) and near(flow(w, dup).gbps, 9.5, 0.01)
    assert near(nccl_plan(w, list(w.nodes), {}).busbw, 0.46, 0.02)
    # 1. the DD legs out of the management bridge: the chip offloads, the lossless QoS stalls
    for bp in [p for p in sw.tables["bridge-port"] if p["bridge"] == "bridge"]:  # type: ignore[attr-defined]
        if "qsfp56-dd" in bp["interface"]:
            sw.tables["bridge-port"].remove(bp)  # type: ignore[attr-defined]
    sw.recompute()  # type: ignore[attr-defined]
    r = flow(w, pair)
    assert r.stalled and "lossless" in r.reason and r.software == ()
    # 2. QoS off: the pair runs, the duplicated nodes' frames vanish
    for q in sw.tables["qos-port"]:  # type: ignore[attr-defined]
        if "qsfp56-dd" in q["name"]:
            q.update({"trust-l3": "ignore", "pfc": "disabled"})
    assert near(flow(w, pair).gbps, 109.2, 0.01)
    r = flow(w, dup)
    assert r.stalled and "duplicate IP" in r.reason
    assert nccl_plan(w, list(w.nodes), {}).error
    # 3. unique addresses, one subnet per rail
    for name in ("spark2", "spark3"):
        node = w.nodes[name]
        node.files["/etc/netplan/40-cx7.yaml"] = healthy_netplan(node.index)
        w.apply_netplan(node)
    assert near(flow(w, dup).gbps, 109.2, 0.01)
    assert near(nccl_plan(w, list(w.nodes), {}).busbw, 23.33, 0.01)


def test_six_node_seed_003_second_bridge_and_blocked_isl() -> None:
    w = world("crs812-six-node")
    intra = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"))
    assert intra.gbps < 10.0
    cross = flow(w, FlowSpec("spark1", "rocep1s0f0", "spark5", "rocep1s0f0"))
    assert cross.path is not None and cross.path.detour


def test_isl_direction_shared_by_any_number_of_flows() -> None:
    w = two_crs812()
    three = solve(
        w, [FlowSpec(f"spark{i}", "rocep1s0f0", "spark5", "roceP2p1s0f0") for i in (1, 2, 3)]
    )
    # spark5's half B receives all three: it is the bottleneck below the ISL
    assert near(sum(r.gbps for r in three), 111.86, 0.01)
    spread = solve(
        w,
        [
            FlowSpec("spark1", "rocep1s0f0", "spark5", "rocep1s0f0"),
            FlowSpec("spark2", "rocep1s0f0", "spark6", "rocep1s0f0"),
            FlowSpec("spark3", "rocep1s0f0", "spark5", "roceP2p1s0f0"),
        ],
    )
    assert near(sum(r.gbps for r in spread), 163.82, 0.01)
    # the other direction is a separate resource (the ISL is full duplex)
    back = solve(
        w,
        [
            FlowSpec("spark1", "rocep1s0f0", "spark5", "rocep1s0f0"),
            FlowSpec("spark6", "rocep1s0f0", "spark2", "rocep1s0f0"),
        ],
    )
    assert all(near(r.gbps, 109.08, 0.01) for r in back)


def test_wire_rate_fec_and_mtu_set_what_a_cable_carries() -> None:
    from wizard.lab.physics import pcie_half_gbps, wire_goodput

    assert near(pcie_half_gbps(4), 111.86, 0.001) and near(pcie_half_gbps(2), 55.93, 0.001)
    assert near(wire_goodput(200.0), 196.07, 0.001)
    assert near(wire_goodput(100.0), 98.04, 0.001)
    assert wire_goodput(200.0, 1024) < wire_goodput(200.0, 4096)
    assert wire_goodput(200.0, fec="off") < wire_goodput(200.0)
    # two halves of one port at MTU 1500 share the cable at the smaller RoCE MTU
    w = world("healthy-4node-crs804")
    for n in ("spark1", "spark2"):
        for r in w.nodes[n].rails:
            r.mtu = 1500
    a, b = solve(
        w,
        [
            FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0"),
            FlowSpec("spark1", "roceP2p1s0f0", "spark2", "roceP2p1s0f0"),
        ],
    )
    assert a.mtu == 1024 and near(a.gbps + b.gbps, wire_goodput(200.0, 1024), 0.01)
