"""NCCL settings judged as seeds 000, 002 and 003 did: a pinned GID index, a deliberate
single-device NCCL_IB_HCA (a warn with its trade-off, silenced by `nccl: {devices: one}`),
NCCL_SOCKET_IFNAME with prefix semantics and the management interface as the answer."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from flows import plans
from flows.base import Context
from flows.checks import nccl_config
from flows.checks.nccl_config import NcclConfig, NodeNccl
from flows.expectations import DEFAULT
from wizard.inventory import load_inventory
from wizard.model import Status, Verdict

DEVS = ("rocep1s0f0", "roceP2p1s0f0")
IFACES = ("lo", "enP7s7", "enp1s0f0np0", "enP2p1s0f0np0")


def _node(env: dict[str, str], gid: dict[str, int | None] | None = None) -> NodeNccl:
    return NodeNccl(
        "spark1",
        env,
        {},
        DEVS,
        gid if gid is not None else {"rocep1s0f0": 3, "roceP2p1s0f0": 3},
        IFACES,
        "enP7s7",
    )


def _judge(node: NodeNccl, devices: str | None = None) -> list[Verdict]:
    ctx = Context(expectations=DEFAULT, nodes=("spark1",), nccl_devices=devices)
    return [
        v for v in nccl_config.judge(NcclConfig((node,), ()), ctx) if v.fault == "nccl.hca-filter"
    ]


def _worst(vs: list[Verdict]) -> Status:
    return Status.worst([v.status for v in vs])


def test_pinned_gid_index_that_matches_today_is_a_warning() -> None:
    vs = _judge(_node({"NCCL_IB_GID_INDEX": "3"}))
    pinned = next(v for v in vs if "GID_INDEX" in v.summary)
    assert pinned.status == Status.WARN
    assert "NCCL_IB_ROCE_VERSION_NUM=2" in pinned.summary
    assert "rocep1s0f0 3, roceP2p1s0f0 3" in pinned.evidence[0].observed


def test_pinned_gid_index_that_misses_a_device_fails() -> None:
    # IPv6 on half B: its IPv4 v2 GID moved to index 5, the pinned 3 is an IPv6 GID there
    vs = _judge(_node({"NCCL_IB_GID_INDEX": "3"}, {"rocep1s0f0": 3, "roceP2p1s0f0": 5}))
    assert next(v for v in vs if "GID_INDEX" in v.summary).status == Status.FAIL


def test_deliberate_single_device_is_a_warn_with_the_trade_off() -> None:
    vs = _judge(_node({"NCCL_IB_HCA": "=rocep1s0f0"}))
    assert _worst(vs) == Status.WARN
    observed = vs[0].evidence[0].observed
    assert "latency-bound decode" in observed and "nccl: {devices: one}" in observed
    # the inventory says it is deliberate: silenced, still shown
    quiet = _judge(_node({"NCCL_IB_HCA": "=rocep1s0f0"}), "one")
    assert _worst(quiet) == Status.PASS
    assert "by the inventory" in quiet[0].evidence[0].observed
    # the inventory wants every device: a failure
    assert _worst(_judge(_node({"NCCL_IB_HCA": "rocep1s0f0"}), "all")) == Status.FAIL


def test_a_prefix_that_misses_half_b_still_fails() -> None:
    # seed 002: `rocep1s0f` is a prefix, never `roceP2p1s0f0`
    assert _worst(_judge(_node({"NCCL_IB_HCA": "rocep1s0f"}))) == Status.FAIL


def test_socket_ifname_uses_prefix_semantics_and_wants_the_management_interface() -> None:
    fabric = _judge(_node({"NCCL_SOCKET_IFNAME": "enp1s0f"}))  # seed 002's leftover
    v = next(v for v in fabric if "SOCKET_IFNAME" in v.summary)
    assert v.status == Status.WARN
    assert v.evidence[0].observed == "NCCL_SOCKET_IFNAME=enp1s0f (login env) selects enp1s0f0np0"
    assert v.evidence[0].expected == "NCCL_SOCKET_IFNAME=enP7s7"
    nothing = _judge(_node({"NCCL_SOCKET_IFNAME": "=eth0"}))
    assert next(v for v in nothing if "SOCKET_IFNAME" in v.summary).status == Status.FAIL
    assert _worst(_judge(_node({"NCCL_SOCKET_IFNAME": "enP7"}))) == Status.PASS
    assert _worst(_judge(_node({"NCCL_SOCKET_IFNAME": "^enp,enP2"}))) == Status.PASS


def test_hca_fix_sets_roce_version_and_the_management_interface() -> None:
    from wizard.model import Rail

    rails = tuple(
        Rail("spark1", n, d, 0, h, addresses=(f"10.9.{i}.1/24",), up=True)
        for i, (n, d, h) in enumerate(
            [("enp1s0f0np0", "rocep1s0f0", "A"), ("enP2p1s0f0np0", "roceP2p1s0f0", "B")]
        )
    )
    ctx = Context(expectations=DEFAULT, nodes=("spark1",), rails={"spark1": rails})
    node = replace(
        _node({"NCCL_IB_HCA": "rocep1s0f", "NCCL_IB_GID_INDEX": "3"}),
        conf={"NCCL_IB_GID_INDEX": "3"},
    )
    verdict = Verdict("nccl.hca-filter", Status.FAIL, "x", targets=("spark1",))
    plan = plans.nccl_plan(NcclConfig((node,), ()), verdict, ctx)
    assert plan is not None
    files = {f.path: f.content for c in plan.host_changes for f in c.files}
    conf = next(v for k, v in files.items() if k.endswith("nccl.conf"))
    assert "NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0\n" in conf
    assert "NCCL_IB_ROCE_VERSION_NUM=2\n" in conf and "NCCL_IB_GID_INDEX" not in conf
    assert "NCCL_SOCKET_IFNAME==enP7s7\n" in conf


def test_inventory_nccl_devices(tmp_path: Path) -> None:
    inv = tmp_path / "inv.yaml"
    inv.write_text("nodes: [{name: a, host: a}]\nnccl: {devices: one}\n")
    assert load_inventory(inv).nccl_devices == "one"
    inv.write_text("nodes: [{name: a, host: a}]\nnccl: {devices: two}\n")
    with pytest.raises(Exception, match="nccl"):
        load_inventory(inv)
