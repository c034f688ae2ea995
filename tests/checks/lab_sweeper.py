"""A `Sweeper` on a lab scenario over the real transports (SSH, the RouterOS API), its rails
discovered, closed after: what the traffic tests measure with."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from flows.expectations import DEFAULT
from wizard.inventory import load_inventory, resolve_password
from wizard.lab.lab import Lab
from wizard.lab.scenarios import Scenario
from wizard.sweep import Sweeper
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport
from wizard.transports.ssh import SshTarget, SshTransport


@contextlib.asynccontextmanager
async def lab_sweeper(
    scenario: str | Scenario, time_scale: float = 1000.0
) -> AsyncIterator[Sweeper]:
    """The sweeper on `scenario`'s lab at `time_scale`, its clock read at that rate."""
    async with Lab(scenario, time_scale=time_scale) as lab:
        inv = load_inventory(lab.inventory_path)
        ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
        sws = {
            s.name: RouterOsTransport(RouterOsTarget.from_spec(s, resolve_password(s)))
            for s in inv.switches
        }
        sweeper = Sweeper(ssh=ssh, nodes=[n.name for n in inv.nodes], switches=sws, limits=DEFAULT)
        sweeper.clock_rate = lab.time_scale
        try:
            await sweeper.sweep([])
            yield sweeper
        finally:
            await ssh.close()
            for t in sws.values():
                await t.close()
