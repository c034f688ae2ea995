"""Bench: the concurrent sweep vs. a technician's `ssh host command`, one after another.

    .venv/bin/python bench/sweep.py [--sizes 4,8,16,32] [--quick]

For labs of 4, 8, 16 and 32 nodes (CRS804-4DDQ switches, one cable per node), it times:
  sweep     every read-only probe of `fabwiz check` through wizard.sweep.Sweeper: one persistent
            SSH connection per node, the node's probes batched into two round trips, all nodes
            and switches at once (handshakes bounded at 8);
  by hand   the same commands, each as its own `ssh host command` (a new connection per command),
            one after another, and one API login per switch print;
  1 node    the sweep of the slowest single node alone (the floor the sweep should approach);
and prints both times and their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flows.registry import checks_for, probes_of  # noqa: E402
from wizard.discovery import DISCOVERY_HOST_PROBES  # noqa: E402
from wizard.inventory import Inventory, load_inventory, resolve_password  # noqa: E402
from wizard.lab import scenarios  # noqa: E402
from wizard.lab.lab import Lab  # noqa: E402
from wizard.probes import HostProbe, SwitchProbe  # noqa: E402
from wizard.sweep import Sweeper  # noqa: E402
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport  # noqa: E402
from wizard.transports.ssh import SshTarget, SshTransport  # noqa: E402

RAILS = [
    ("enp1s0f0np0", "rocep1s0f0"),
    ("enP2p1s0f0np0", "roceP2p1s0f0"),
    ("enp1s0f1np1", "rocep1s0f1"),
    ("enP2p1s0f1np1", "roceP2p1s0f1"),
]


def scenario(nodes: int) -> scenarios.Scenario:
    # one CRS804 holds 8 legs alone, 7 when it also carries an inter-switch link
    switches = 1 if nodes <= 8 else (nodes + 6) // 7
    topo = scenarios.Topology.model_construct(
        nodes=nodes,
        switches=[scenarios.SwitchSpec(model="CRS804-4DDQ") for _ in range(switches)],
        cables_per_node=1,
        isl=False,
    )
    return scenarios.Scenario.model_construct(
        name=f"bench-{nodes}", description="", source=None, seed=0, topology=topo, faults=[]
    )


def _switches(inv: Inventory) -> dict[str, RouterOsTransport]:
    return {
        s.name: RouterOsTransport(RouterOsTarget.from_spec(s, resolve_password(s)))
        for s in inv.switches
    }


async def time_sweep(inv: Inventory, nodes: list[str], with_switches: bool = True) -> float:
    probes = probes_of(checks_for(traffic=False))
    ssh = SshTransport([SshTarget.from_spec(inv.node(n)) for n in nodes], ssh_config=None)
    sws = _switches(inv) if with_switches else {}
    t0 = time.monotonic()
    sweeper = Sweeper(ssh=ssh, nodes=nodes, switches=sws)
    obs = await sweeper.sweep(probes)
    took = time.monotonic() - t0
    assert not obs.unreachable, obs.unreachable
    await ssh.close()
    for t in sws.values():
        await t.close()
    return took


async def time_by_hand(inv: Inventory, *, rails_per_node: int) -> tuple[float, int]:
    probes = probes_of(checks_for(traffic=False))
    host = [p for p in probes if isinstance(p, HostProbe)]
    names = {p.name for p in host}
    host += [p for p in DISCOVERY_HOST_PROBES if p.name not in names]
    switch = [p for p in probes if isinstance(p, SwitchProbe)]
    count = 0
    t0 = time.monotonic()
    for n in inv.nodes:
        rails = RAILS[:rails_per_node]
        for p in host:
            cmds = (
                [p.command.replace("{netdev}", d).replace("{rdma}", r) for d, r in rails]
                if p.per_rail
                else [p.command]
            )
            for cmd in cmds:
                # a new connection per command, as `ssh host cmd` does
                one = SshTransport([SshTarget.from_spec(n)], ssh_config=None)
                res = await one.run(n.name, f"sudo -n {cmd}" if p.sudo else cmd)
                assert res.error is None or "sudo" in (res.error or ""), res.error
                await one.close()
                count += 1
    for s in inv.switches:
        for p in switch:
            t = RouterOsTransport(RouterOsTarget.from_spec(s, resolve_password(s)))
            if p.verb == "monitor":
                await t.monitor_once(["qsfp56-dd-1-1", "qsfp56-dd-1-5"])
            else:
                await t.call(p.path, p.verb)
            await t.close()
            count += 1
    return time.monotonic() - t0, count


async def serve(n: int) -> None:
    """Child mode: run the lab in this process, print the inventory path, wait for stdin EOF."""
    async with Lab(scenario(n), time_scale=1000.0) as lab:
        print(lab.inventory_path, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


async def bench(sizes: list[int]) -> None:
    print("lab in a child process (its servers use their own CPU, as real nodes do)")
    print(
        f"{'nodes':>5} {'switches':>8} {'sweep s':>8} {'1 node s':>8} {'by hand s':>9} {'cmds':>5} {'ratio':>6}"
    )
    for n in sizes:
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--serve",
            str(n),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert child.stdout is not None and child.stdin is not None
        path = (await child.stdout.readline()).decode().strip()
        try:
            inv = load_inventory(path)
            nodes = [x.name for x in inv.nodes]
            await time_sweep(inv, nodes)  # warm-up (imports, key loading)
            sweep_s = await time_sweep(inv, nodes)
            single = max([await time_sweep(inv, [x], with_switches=False) for x in nodes[:4]])
            hand_s, count = await time_by_hand(inv, rails_per_node=4)
        finally:
            child.stdin.close()
            await child.wait()
        print(
            f"{n:>5} {len(inv.switches):>8} {sweep_s:>8.2f} {single:>8.2f} {hand_s:>9.2f} "
            f"{count:>5} {hand_s / sweep_s:>5.1f}x"
        )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="4,8,16,32", help="comma-separated node counts")
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve))
    else:
        asyncio.run(bench([int(x) for x in args.sizes.split(",")]))


if __name__ == "__main__":
    main()
