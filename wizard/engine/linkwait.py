"""Waiting for the links a fix bounced: read them before the change, poll until they are back.

`links` reads what a plan may bounce ("switch/port" -> link-ok from `/interface/ethernet/monitor
once`, "node/netdev" -> carrier at line rate); `settle` polls until every link up before the
change (and every cabled port the change touched) is up again, or the settle timeout, with a
countdown the operator sees (wizard/settle.py holds the pure rules).
"""

from __future__ import annotations

from wizard import settle as rules
from wizard.drain import CARRIER_PROBE
from wizard.engine.ports import Fabric
from wizard.engine.session import TxnSession
from wizard.model import FixPlan


def nodes_of(plan: FixPlan, fabric: Fabric) -> tuple[str, ...]:
    """The nodes whose links `plan` may bounce: its host changes, its physical action, and
    every node when it changes a switch alone."""
    nodes = {h.node for h in plan.host_changes}
    if plan.physical is not None:
        nodes.update(plan.physical.nodes)
    if plan.switch_changes and not nodes:
        nodes.update(fabric.nodes)
    return tuple(sorted(nodes))


async def _switch_links(session: TxnSession, switch: str) -> dict[str, bool]:
    try:
        api = session.fabric.api(switch)
        eth = await api.call("/interface/ethernet", "print")
        ports = [r["name"] for r in eth if r.get("name") and not r["name"].startswith("ether")]
        rows = await api.call("/interface/ethernet", "monitor", numbers=",".join(ports), once="")
    except Exception as exc:  # a switch that does not answer is not settled
        session.note(f"{switch}: link state unreadable while settling: {exc}", "warn")
        return {}
    out: dict[str, bool] = {}
    for port, (up, cabled) in rules.switch_links(rows).items():
        out[f"{switch}/{port}"] = up
        if cabled:
            out.setdefault(f"{switch}/{port}#cabled", True)
    return out


async def links(session: TxnSession, plan: FixPlan) -> dict[str, bool]:
    """Link state of what `plan` may bounce."""
    out: dict[str, bool] = {}
    for sw in sorted({c.switch for c in plan.switch_changes}):
        out.update(await _switch_links(session, sw))
    for node in nodes_of(plan, session.fabric):
        res = await session.fabric.run(node, CARRIER_PROBE.command, timeout=5.0)
        if res.ok:
            for netdev, up in rules.host_links(res.stdout).items():
                out[f"{node}/{netdev}"] = up
    return out


def _listed(names: list[str], shown: int, more: str) -> str:
    return ", ".join(names[:shown]) + (
        more.format(len(names) - shown) if len(names) > shown else ""
    )


async def settle(session: TxnSession, plan: FixPlan, before: dict[str, bool]) -> bool:
    """Poll until the links are back (True) or the settle timeout (False); then verify."""
    must = [
        f"{sw}/{port}"
        for sw, ports in rules.touched_ports(plan.switch_changes).items()
        for port in ports
        if before.get(f"{sw}/{port}#cabled")
    ]
    timeout = float(getattr(session.thresholds, "link_settle_timeout_s", session.settle_timeout_s))
    start = session.clock()
    deadline = start + timeout
    shown: tuple[list[str], float] | None = None
    while True:
        now = await links(session, plan)
        waiting = rules.pending({k: v for k, v in before.items() if "#" not in k}, now, must)
        left = deadline - session.clock()
        if not waiting:
            session.note(f"links settled {session.clock() - start:.0f} s after the change")
            return True
        if left <= 0:
            session.note(
                f"links not settled {timeout:.0f} s after the change: "
                + _listed(waiting, 6, "...")
                + "; verifying as they are",
                "warn",
            )
            return False
        # the countdown: when the set of links waited for changes, and every 5 s
        if shown is None or shown[0] != waiting or shown[1] - left >= 5.0:
            shown = (waiting, left)
            session.note(
                f"settling: {left:.0f} s left, waiting for " + _listed(waiting, 4, " and {} more")
            )
        await session.sleep(session.poll_interval_s)
