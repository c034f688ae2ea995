"""GB10 vendors: the lab answers each vendor's DMI identity, discovery works from the PCI
domain alone whatever the vendor and names, and the versions are one structured record.

Scenarios `gb10-vendors-rocep` (DGX Spark, ASUS Ascent GX10, MSI EdgeXpert, Dell Pro Max GB10
with rocep names) and `gb10-vendors-mlx5` (Gigabyte AI TOP ATOM, Dell and MSI with mlx5_N,
ethN netdevs on two of them).
"""

from __future__ import annotations

import asyncio
import json

import pytest
from click.testing import CliRunner

from flows.checks import preflight_tools, switch_release
from flows.registry import probes_of
from screens.commands.check import check
from wizard.events import Event, VersionsRecorded, event_from_json
from wizard.inventory import load_inventory, resolve_password
from wizard.lab.lab import Lab
from wizard.lab.nodetools import PLATFORMS
from wizard.lab.scenarios import load
from wizard.sweep import Sweeper
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport
from wizard.transports.ssh import SshTarget, SshTransport
from wizard.versions import latest

pytestmark = pytest.mark.lab


async def _record(scenario: str) -> list[Event]:
    events: list[Event] = []
    async with Lab(scenario, time_scale=1000.0) as lab:
        inv = load_inventory(lab.inventory_path)
        ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
        sws = {
            s.name: RouterOsTransport(RouterOsTarget.from_spec(s, resolve_password(s)))
            for s in inv.switches
        }
        sweeper = Sweeper(
            ssh=ssh, nodes=[n.name for n in inv.nodes], switches=sws, sink=events.append
        )
        try:
            await sweeper.sweep(probes_of([preflight_tools.CHECK, switch_release.CHECK]))
            await sweeper.sweep(probes_of([preflight_tools.CHECK]))  # nothing new: no event
            await sweeper.nccl_test()
        finally:
            await ssh.close()
            for t in sws.values():
                await t.close()
    return events


def test_each_vendor_is_recorded_with_every_version() -> None:
    events = asyncio.run(_record("gb10-vendors-rocep"))
    records = [e for e in events if isinstance(e, VersionsRecorded)]
    assert len(records) == 2  # preflight's record, then the NCCL run's versions added
    first, last = records
    assert first.step == "preflight"
    want = {
        "spark1": "NVIDIA DGX Spark",
        "spark2": "ASUSTeK COMPUTER INC. GX10",
        "spark3": "Micro-Star International Co., Ltd. EdgeXpert MS-C931",
        "spark4": "Dell Inc. Dell Pro Max with GB10",
    }
    assert {n: v["platform"] for n, v in first.nodes.items()} == want
    spark2 = last.nodes["spark2"]
    assert spark2["dgx_os"] == "7.2.3" and spark2["os"].startswith("Ubuntu 24.04")
    assert spark2["kernel"] == "6.11.0-1016-nvidia"
    assert spark2["driver"] == "inbox mlx5_core (kernel 6.11.0-1016-nvidia)"
    assert spark2["cx7_firmware"] == "28.45.1020"  # the lab CX7s, as ethtool -i says
    assert spark2["perftest"].startswith("24.10.0-0.66")
    assert spark2["openmpi"].startswith("4.1.")
    assert "nccl_tests" not in first.nodes["spark2"]  # known only once a run printed it
    assert spark2["nccl_tests"] == "2.18.3" and spark2["nccl"] == "2.28.9+cuda13.0"
    [ident] = last.switches.values()
    assert ident["model"] == "CRS804-4DDQ" and ident["routeros"].startswith("7.")
    assert ident["serial"] and ident["firmware"]
    # the session log keeps it as it is: the report reads the latest record
    back = event_from_json(json.loads(json.dumps(last.to_json())))
    assert back == last and latest(events) == last


@pytest.mark.parametrize("scenario", ["gb10-vendors-rocep", "gb10-vendors-mlx5"])
def test_discovery_alone_whatever_the_vendor_and_names(scenario: str) -> None:
    res = CliRunner().invoke(check, ["--lab", scenario, "--json", "--perf", "--time-scale", "1000"])
    report = json.loads(res.stdout)
    assert res.exit_code == 0 and report["healthy"] is True
    facts = load(scenario).facts.nodes
    for node in report["nodes"]:
        halves = {(r["pci"][:4], r["half"]) for r in node["rails"]}
        assert halves == {("0000", "A"), ("0002", "B")}, node["name"]
        f = facts[node["name"]]
        if f.rdma_naming == "mlx5":
            assert {r["rdma"] for r in node["rails"]} == {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}
        if f.netdev_naming == "eth":
            assert {r["netdev"] for r in node["rails"]} == {"eth0", "eth1", "eth2", "eth3"}
    rails = [m for m in report["measurements"] if m["kind"] == "rail"]
    assert rails and all(m["valid"] and m["value"] > 100 for m in rails)
    cluster = next(m for m in report["measurements"] if m["target"] == "cluster")
    assert cluster["value"] > 22


def test_every_vendor_has_a_scenario() -> None:
    used = {
        f.platform
        for name in ("gb10-vendors-rocep", "gb10-vendors-mlx5")
        for f in load(name).facts.nodes.values()
    }
    assert used == set(PLATFORMS)
