"""Device naming variants: discovery alone finds the PCIe half (the PCI domain decides).

The lab names RDMA devices `rocep1s0f0` style or `mlx5_N`, and netdevs predictably or `ethN`
(`facts.nodes.<node>.rdma_naming / netdev_naming`); a mixed rack still runs NCCL on every
device of every node, each rank on its own names.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from screens.commands.check import check
from wizard.lab.scenarios import build_world, load

pytestmark = pytest.mark.lab


def test_the_lab_names_devices_as_the_facts_say() -> None:
    w = build_world(load("naming-mixed-vendors"))
    names = {
        n: sorted((r.pci, r.rdma, r.netdev) for r in node.rails) for n, node in w.nodes.items()
    }
    assert [x[1] for x in names["spark1"]] == [
        "rocep1s0f0",
        "rocep1s0f1",
        "roceP2p1s0f0",
        "roceP2p1s0f1",
    ]
    assert [x[1] for x in names["spark3"]] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert names["spark4"] == [
        ("0000:01:00.0", "mlx5_0", "eth0"),
        ("0000:01:00.1", "mlx5_1", "eth1"),
        ("0002:01:00.0", "mlx5_2", "eth2"),
        ("0002:01:00.1", "mlx5_3", "eth3"),
    ]
    # the netplan file follows the renamed netdevs, so the addresses come back on eth0..eth3
    assert w.nodes["spark4"].rail("eth2") is not None
    assert w.nodes["spark4"].rail("eth2").addresses == ["10.9.2.4/24"]  # type: ignore[union-attr]


@pytest.mark.parametrize("scenario", ["naming-mlx5", "naming-mixed-vendors"])
def test_discovery_finds_both_halves_whatever_the_names(scenario: str) -> None:
    res = CliRunner().invoke(
        check,
        ["--lab", scenario, "--json", "--perf", "--time-scale", "1000"],
        catch_exceptions=False,
    )
    report = json.loads(res.stdout)
    assert res.exit_code == 0 and report["healthy"] is True
    for node in report["nodes"]:
        halves = {(r["pci"][:4], r["half"]) for r in node["rails"]}
        assert halves == {("0000", "A"), ("0002", "B")}, node["name"]
        assert all(r["addresses"] and r["up"] for r in node["rails"])
    rails = [m for m in report["measurements"] if m["kind"] == "rail"]
    assert rails and all(m["valid"] and m["value"] > 100 for m in rails)
    cluster = next(m for m in report["measurements"] if m["target"] == "cluster")
    assert cluster["value"] > 22  # every device of every node carries NCCL


def test_eth_named_node_keeps_half_b_on_domain_0002() -> None:
    res = CliRunner().invoke(
        check,
        ["--lab", "naming-mixed-vendors", "--json", "--time-scale", "1000"],
        catch_exceptions=False,
    )
    spark4 = next(n for n in json.loads(res.stdout)["nodes"] if n["name"] == "spark4")
    by_netdev = {r["netdev"]: (r["rdma"], r["half"], r["port"]) for r in spark4["rails"]}
    assert by_netdev == {
        "eth0": ("mlx5_0", "A", 0),
        "eth1": ("mlx5_1", "A", 1),
        "eth2": ("mlx5_2", "B", 0),
        "eth3": ("mlx5_3", "B", 1),
    }
