"""Regenerate tests/fixtures/checks/<check id>/<scenario>/ from lab runs (not a test).

    .venv/bin/python tests/checks/record_check_fixtures.py [SCENARIO...]

Each case folder holds `observations.json` (the recorded probe results the check reads, plus the
context the sweep derived: nodes, switches, cabling, management) and `expected.json` (the
verdicts the check gave: fault id -> status and targets). Review the diff before committing:
the expected verdicts are what the checks said when recorded, so a wrong check records wrong
expectations.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from flows.expectations import DEFAULT

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from flows.registry import CHECKS, by_fault, checks_for, make_context, probes_of  # noqa: E402
from wizard.discovery import DISCOVERY_HOST_PROBES  # noqa: E402
from wizard.inventory import load_inventory, resolve_password  # noqa: E402
from wizard.lab import scenarios  # noqa: E402
from wizard.lab.lab import Lab  # noqa: E402
from wizard.probes import HostProbe, Observations  # noqa: E402
from wizard.sweep import Sweeper  # noqa: E402
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport  # noqa: E402
from wizard.transports.ssh import SshTarget, SshTransport  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "checks"
TRAFFIC_FAULTS = {"host.cx7-degraded", "process.undrained-measurement"}


async def record(name: str) -> None:
    sc = scenarios.load(name)
    faults = [f.id for f in sc.faults]
    perf = bool(TRAFFIC_FAULTS & set(faults))
    async with Lab(name, time_scale=1000.0) as lab:
        inv = load_inventory(lab.inventory_path)
        ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
        sws = {
            s.name: RouterOsTransport(RouterOsTarget.from_spec(s, resolve_password(s)))
            for s in inv.switches
        }
        nodes = [n.name for n in inv.nodes]
        sweeper = Sweeper(ssh=ssh, nodes=nodes, switches=sws, limits=DEFAULT)
        checks = checks_for(traffic=perf)
        obs = await sweeper.sweep(probes_of(checks))
        if perf:
            ms = await sweeper.rail_tests()
            nccl, _ = await sweeper.nccl_test()
            obs = Observations(obs.nodes, obs.switches, obs.unreachable, (*ms, nccl))
        await ssh.close()
        for t in sws.values():
            await t.close()
    settings = {
        "nodes": nodes,
        "switches": [s.name for s in inv.switches],
        "cabling": {k: list(v) for k, v in inv.cabling.items()},
        "management": {s.name: list(s.management_ports) for s in inv.switches},
    }
    ctx = make_context(
        obs,
        nodes=nodes,
        switches=settings["switches"],
        cabling=inv.cabling,
        management={s.name: tuple(s.management_ports) for s in inv.switches},
    )
    wanted = {by_fault(f).id for f in [*faults, *_fact_faults(sc)]}
    if name == "healthy-4node-crs804":
        wanted = {c.id for c in CHECKS if not c.needs_traffic}
    if perf:
        wanted |= {c.id for c in CHECKS if c.needs_traffic}
    for check in CHECKS:
        if check.id not in wanted:
            continue
        names = {p.name for p in check.probes}
        # the nodes' MACs too where the check reads the switch's host table
        if (
            any(isinstance(p, HostProbe) for p in check.probes)
            or check.needs_traffic
            or "bridge_host" in names
        ):
            names |= {p.name for p in DISCOVERY_HOST_PROBES if p.name != "ethtool"}
        keep = _slice(obs, names)
        verdicts = check.run(keep, ctx)
        folder = OUT / check.id / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "observations.json").write_text(
            json.dumps({"settings": settings, **_obs_json(keep)}, sort_keys=True) + "\n"
        )
        expected = {
            v.fault: {"status": str(v.status), "targets": list(v.targets)} for v in verdicts
        }
        (folder / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
        print(folder.relative_to(ROOT), {k: v["status"] for k, v in expected.items()})


def _fact_faults(sc: Any) -> list[str]:
    """Faults a scenario sets through its `facts:` rather than `faults:` (a port that lost
    hardware offload with no modelled cause)."""
    out = []
    if any(p.hw_offload is False for p in sc.facts.ports.values()):
        out.append("switch.offload-lost")
    return out


def _slice(obs: Observations, names: set[str]) -> Observations:
    def keep(results: Any) -> dict[str, Any]:
        return {k: v for k, v in results.items() if k.split(":")[0] in names}

    return Observations(
        nodes={n: keep(r) for n, r in obs.nodes.items()},
        switches={s: keep(r) for s, r in obs.switches.items()},
        unreachable=dict(obs.unreachable),
        measurements=obs.measurements,
    )


def _obs_json(obs: Observations) -> dict[str, Any]:
    import dataclasses

    return {
        "nodes": {n: {k: r.to_json() for k, r in rs.items()} for n, rs in obs.nodes.items()},
        "switches": {s: {k: r.to_json() for k, r in rs.items()} for s, rs in obs.switches.items()},
        "unreachable": dict(obs.unreachable),
        "measurements": [dataclasses.asdict(m) for m in obs.measurements],
    }


async def main(names: list[str]) -> None:
    for name in names or scenarios.builtin_names():
        await record(name)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
