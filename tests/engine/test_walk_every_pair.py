"""The walk's rail tests cover every node pair on every plane (round robin), like `check
--perf`: its rails know which switch they land on, so concurrent cross-switch pairs never share
an ISL direction and every single flow measures its rail (~109 Gb/s, seed 003), not a shared
ISL (~81.9)."""

from __future__ import annotations

from itertools import combinations

import pytest

from flows.expectations import DEFAULT
from wizard.fabric import InventoryFabric
from wizard.inventory import load_inventory, resolve_password
from wizard.lab.lab import Lab
from wizard.lab.scenarios import load_text
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport
from wizard.transports.ssh import SshTarget, SshTransport

# seed 003's six nodes on two CRS812 (4 + 2), no campus uplinks (no loop for RSTP to break)
SIX = """
name: six-healthy
topology:
  nodes: 6
  switches: [{model: CRS812-8DS-2DQ-2DDQ}, {model: CRS812-8DS-2DQ-2DDQ}]
  cables_per_node: 1
"""


@pytest.mark.lab
async def test_walk_measures_every_pair_without_sharing_an_isl() -> None:
    async with Lab(load_text(SIX, path="six.yaml"), time_scale=1000.0) as lab:
        inv = load_inventory(lab.inventory_path)
        ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
        sws = {
            s.name: RouterOsTransport(RouterOsTarget.from_spec(s, resolve_password(s)))
            for s in inv.switches
        }
        fabric = InventoryFabric(inv, ssh, sws)
        fabric.sweeper.limits = DEFAULT  # as the composition root gives it
        await fabric.sweeper.sweep([])  # the walk's rails, as its sweeps discover them
        ms = await fabric.sweeper.rail_tests(duration_s=5)
        rails = {n: list(rs) for n, rs in fabric.rails.items()}
        await fabric.close()
    # the cabled rails know their switch (the split of the rounds rests on it)
    for node, rs in rails.items():
        cabled = [r for r in rs if r.up and r.addresses]
        assert cabled and all(r.switch for r in cabled), node
    single = [m for m in ms if not m.extra.get("bidir")]
    pairs = {frozenset((str(m.extra["client"]), str(m.extra["server"]))) for m in single}
    nodes = [n.name for n in inv.nodes]
    assert pairs == {frozenset(p) for p in combinations(nodes, 2)}  # every pair, not disjoint
    assert len(single) == 15 * 2  # 15 pairs x 2 cabled planes (both halves of port 0)
    switch_of = {r.key: r.switch for rs in rails.values() for r in rs}
    crossing = [
        m
        for m in single
        if switch_of[f"{m.extra['client']}/{m.extra['client_netdev']}"]
        != switch_of[f"{m.extra['server']}/{m.extra['server_netdev']}"]
    ]
    assert len(crossing) == 4 * 2 * 2  # 4 nodes on crs812-a x 2 on crs812-b, per plane
    for m in single:
        assert m.valid and m.value >= 100.0, (m.target, m.value)  # no flow shared an ISL
