"""What only hands can do: reseat a cable, AC-drain a node, update its firmware."""

from __future__ import annotations

from flows.base import Context
from flows.fixplans.common import nodes_of, physical_plan
from wizard.model import FixPlan, PhysicalAction, Verdict

__all__ = ["firmware_plan", "reseat_plan"]


def reseat_plan(verdict: Verdict, ctx: Context) -> FixPlan | None:
    nodes = nodes_of(verdict, ctx)
    if not nodes:
        return None
    cables: list[tuple[str, str, str]] = []
    for node in nodes:
        seen: set[int] = set()
        for r in ctx.rails.get(node, ()):
            if r.up or r.port in seen:
                continue
            seen.add(r.port)
            dest = f"switch:{r.switch}:{r.switch_port}" if r.switch else "unknown"
            cables.append((node, f"port{r.port}", dest))
    where = "; ".join(f"{n} {p} -> {d.removeprefix('switch:')}" for n, p, d in cables)
    action = PhysicalAction(
        kind="reseat",
        nodes=tuple(nodes),
        instructions=f"Reseat the QSFP cable(s) without carrier ({where}): pull, check the "
        "latch and the cage, push until it clicks. Then AC-drain the node before measuring.",
        cables=tuple(cables),
    )
    return physical_plan(
        verdict, action, "reseat the cable of the rail without carrier", bounces=True
    )


def firmware_plan(verdict: Verdict, ctx: Context, reference: str | None) -> FixPlan | None:
    nodes = nodes_of(verdict, ctx)
    if not nodes:
        return None
    if verdict.fault == "host.pcie-width":
        text = (
            "Update the BIOS/firmware of the node (vendor's latest GB10 release) so the CX7 "
            "halves train at PCIe Gen5 x4, then reboot."
        )
    elif verdict.fault == "host.cx7-degraded":
        action = PhysicalAction(
            kind="ac_drain",
            nodes=tuple(nodes),
            instructions="AC-drain each node: shut it down, unplug the power cord for at least "
            "60 s, plug back and boot. A reboot is not enough.",
        )
        return physical_plan(verdict, action, "AC-drain the affected nodes", bounces=True)
    else:
        text = (
            f"Update the OS and the ConnectX-7 firmware to {reference or 'the known-good version'}"
            " (vendor's GB10 update), then reboot the node."
        )
    action = PhysicalAction(kind="firmware_update", nodes=tuple(nodes), instructions=text)
    return physical_plan(verdict, action, text.split(",")[0], bounces=True)
