"""Making a scenario's `facts:` true of the world it built (after the faults are injected).

- `nodes.<n>.firmware`: the CX7 firmware the node runs (dmesg, `ethtool -i`, mlxfwmanager show
  it); a version alone changes no throughput, as seed 000 found;
- `nodes.<n>.ipv6_first`: read by the GID tables (`wizard.lab.gids`);
- `ports.<switch>/<port>.hw-offload: false`: the chip stopped offloading that port for a reason
  the lab does not model (no `H` flag, the CPU forwards its frames);
- `switches.<s>.link_up_delay_s` and `management_port`: read by the switch model when a leg is
  forced or bounced, and by the API server for the port its session rides.
"""

from __future__ import annotations

from typing import Any

from wizard.errors import FabwizError
from wizard.lab.world import World

LINK_UP_DELAY_S = 10.0  # a forced DD leg came up "within about ten seconds" (seed 003)


def apply(world: World) -> None:
    facts = world.facts
    for each in world.switches.values():
        # the faults were made a while ago: their legs are up; from now on a leg takes its time
        model: Any = each
        if hasattr(model, "_coming_up"):
            model._coming_up.clear()
            model.recompute(notify=False)
            model.link_up_delay_s = LINK_UP_DELAY_S
    for name, nf in facts.nodes.items():
        node = world.nodes[name]
        if nf.firmware is not None:
            node.firmware = nf.firmware
            world.boot_log(node)
        if nf.ipv6_first:
            for rail in node.rails:
                rail.v6_first = True
    for key, pf in facts.ports.items():
        switch, _, port = key.partition("/")
        sw: Any = world.switches[switch]
        if pf.hw_offload is False:
            if not hasattr(sw, "offload_lost"):
                raise FabwizError(
                    f"facts.ports.{key}: hw-offload needs the RouterOS switch model",
                    hint="this build has no wizard.lab.routeros",
                )
            sw.lose_offload(port)
    for name, sf in facts.switches.items():
        sw = world.switches[name]
        for attr in ("link_up_delay_s", "management_port", "routeros_version"):
            value = getattr(sf, attr)
            if value is not None and hasattr(sw, attr):
                setattr(sw, attr, value)
    world.learn_macs()
