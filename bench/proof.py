"""Bench: the proof run against its floor.

    .venv/bin/python bench/proof.py [--sizes 4,8,16] [--duration 5] [--time-scale 20]

For labs of each size (CRS804s in a chain, one cable per node; the lab in a child process, as
bench/sweep.py runs it), it runs the proof run of "Evidence, not configuration" the way
`fabwiz check --perf` does: the single-QP rail matrix over every node pair on every plane, the
jumbo ping matrix, NCCL all-reduce. It prints the rounds the rail matrix was packed into (the
pairs of a round share no bottleneck: a node sends once and receives once, on different PCIe
halves, one flow per ISL direction), the fewest rounds any schedule could take, the slowest rail
test (a test that shared a bottleneck reads low), the floor (rounds x test duration, plus NCCL)
and the measured time, in wall seconds of the lab's clock (`--time-scale` node seconds per wall
second), and their ratio: at most 1.2 is the target. perftest sleeps a second once its client
and server are connected, before it moves data (write_bw.c; the lab does too): a round's
clients connect while the round before still moves data, so that second overlaps it
(wizard/sweep_rounds.py). `window` is the shortest span of a test's transfer its counters were
read over (node seconds of the `--duration`): the counters prove causes only if they are read
inside the data phase, with nothing of the next round's handshakes in them.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


async def proof(inventory: Path, duration_s: int, time_scale: float) -> dict[str, float]:
    from flows.expectations import DEFAULT
    from wizard.events import Event, TrafficPlanned
    from wizard.inventory import load_inventory, resolve_password
    from wizard.schedule import rounds_bound
    from wizard.sweep import Sweeper
    from wizard.transports.routeros import RouterOsTarget, RouterOsTransport
    from wizard.transports.ssh import SshTarget, SshTransport

    inv = load_inventory(inventory)
    ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
    sws = {
        s.name: RouterOsTransport(RouterOsTarget.from_spec(s, resolve_password(s)))
        for s in inv.switches
    }
    seen: list[Event] = []
    sweeper = Sweeper(
        ssh=ssh, nodes=[n.name for n in inv.nodes], switches=sws, sink=seen.append, limits=DEFAULT
    )
    sweeper.clock_rate = time_scale  # the lab's seconds per wall second, as `fabwiz` sets it
    try:
        await sweeper.sweep([])
        t0 = time.perf_counter()
        rails = await sweeper.rail_tests(duration_s=duration_s, bidirectional=False)
        t1 = time.perf_counter()
        pings = await sweeper.ping_matrix()
        t2 = time.perf_counter()
        nccl, _res = await sweeper.nccl_test()
        t3 = time.perf_counter()
    finally:
        await ssh.close()
        for t in sws.values():
            await t.close()
    [plan] = [e for e in seen if isinstance(e, TrafficPlanned)]
    assert all(m.valid for m in rails) and nccl.valid and all(p["ok"] for p in pings)
    rounds = len(plan.rounds)
    by_key = {r.key: r for rs in sweeper.rails.items() for r in rs[1]}
    flows = [(by_key[c], by_key[s]) for r in plan.rounds for c, s in (f.split("->") for f in r)]
    # every test measured its rail: none shared a bottleneck with another of its round
    slowest = min(m.value for m in rails)
    floor = rounds * duration_s / time_scale
    windows = [float(m.extra.get("counter_window_s", 0.0)) for m in rails]
    return {
        "tests": len(rails),
        "rounds": rounds,
        "bound": rounds_bound(flows, sweeper.switch_map),
        "slowest": slowest,
        "floor": floor,
        "window": min(windows),
        "rails": t1 - t0,
        "pings": t2 - t1,
        "nccl": t3 - t2,
        "ratio": (t3 - t0) / (floor + (t3 - t2)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="4,8,16", help="comma-separated node counts")
    ap.add_argument("--duration", type=int, default=5, help="seconds per rail test (node time)")
    ap.add_argument("--time-scale", type=float, default=20.0, help="node seconds a wall second")
    args = ap.parse_args()
    from _bytecode import compile_fabwiz

    compile_fabwiz()
    print(
        f"rail tests of {args.duration} s (node time) at {args.time_scale:g}x: "
        f"{args.duration / args.time_scale:.2f} s of wall time each"
    )
    print(
        f"{'nodes':>5} {'tests':>5} {'rounds':>6} {'bound':>5} {'slowest':>7} {'floor s':>7} "
        f"{'rails s':>7} {'pings s':>7} {'nccl s':>6} {'ratio':>5} {'window':>6}"
    )
    for n in [int(x) for x in args.sizes.split(",")]:
        child = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "bench/sweep.py"),
                "--serve",
                str(n),
                "--serve-time-scale",
                str(args.time_scale),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None and child.stdin is not None
        try:
            inventory = Path(child.stdout.readline().strip())
            r = asyncio.run(proof(inventory, args.duration, args.time_scale))
        finally:
            child.stdin.close()
            child.wait()
        print(
            f"{n:>5} {r['tests']:>5.0f} {r['rounds']:>6.0f} {r['bound']:>5.0f} "
            f"{r['slowest']:>7.1f} {r['floor']:>7.2f} {r['rails']:>7.2f} "
            f"{r['pings']:>7.2f} {r['nccl']:>6.2f} {r['ratio']:>5.2f} {r['window']:>6.2f}",
            flush=True,
        )
    print(
        "bound: the fewest rounds any schedule takes (the tests needing one bottleneck: a node's"
        " send or receive side, a PCIe half, an ISL direction); slowest: the lowest rail test,"
        " Gb/s (~109 when no test shared a bottleneck)"
    )
    print("ratio: (rails + pings + NCCL) / (rounds x duration + NCCL); the target is <= 1.2")
    print(
        "window: the shortest span of a test's data its counters were read over (node seconds"
        f" of {args.duration}); nothing else moved on its rails in it"
    )


if __name__ == "__main__":
    main()
