"""Bench: the TUI's speed. Prints medians of alternating runs:

  .venv/bin/python bench/tui.py [--runs 5] [--nodes 32] [--quick]

first screen   a fresh `python` process running `fabwiz demo` (the console script's entry) to
               the first painted frame of the wizard (imports included; Textual's headless
               driver, which composes and renders every frame); also the app alone;
preflight      with the lab (in a child process) of --nodes nodes, two ways: whole commands
               (a fresh `fabwiz run -i INVENTORY`, process start to the preflight verdicts on
               screen and the engine asking, and to its first painted frame, against a fresh
               `fabwiz check -i INVENTORY --json`, process start to exit: what the operator
               waits for), and the app alone (both in this process after a warm-up, imports
               done: the TUI's own cost);
gauges         the TUI process's CPU while 16, 64 and 128 gauges (4, 16 and 32 nodes x 4
               rails) are fed by the real sampler (one streaming channel per node), and the
               rate each gauge got;
key latency    from a key press to its action having run, while the gauges stream and
               ib_write_bw rail tests run back to back;
stalls         the longest the TUI's event loop went without running (what a key press would
               wait) during a 64-node preflight and during its rerun (`r`).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _apphook import PATCH_APP  # noqa: E402  # beside this file (bench/ is on sys.path as run)

# `fabwiz demo` as a user starts it (the console script's `screens.boot.main`: the import cache,
# the start-up code cache, the collector's start-up pause, click, the demo command), with
# Textual's headless driver; the process leaves at the first painted frame, before the engine and
# the lab start. sys.path as the console script has it (its folder first, not the current one).
FIRST_SCREEN = (
    """
import time
t0 = time.perf_counter()
import os, sys
sys.path[0] = os.path.dirname(sys.executable)

def painted():
    print(time.perf_counter() - t0, flush=True)
    from screens.cli import save_startup_caches
    save_startup_caches()  # what `fabwiz` keeps for its next start
    os._exit(0)

def patch(module):
    app = module.FabwizApp
    mount, run = app.on_mount, app.run
    def on_mount(self):
        self.call_after_refresh(painted)  # queued before the engine's start, same refresh
        mount(self)
    app.on_mount = on_mount
    app.run = lambda self, **kw: run(self, **{**kw, "headless": True, "size": (120, 40)})
"""
    + PATCH_APP
    + """
sys.argv = ["fabwiz", "demo"]
import screens.boot
screens.boot.main()
"""
)

# `fabwiz run -i INVENTORY` as a user starts it, headless, to the preflight's verdicts on screen
# with the engine asking what to do about them (the session folder is a fresh one under argv[2]).
PREFLIGHT_RUN = (
    """
import time
t0 = time.perf_counter()
import os, sys
sys.path[0] = os.path.dirname(sys.executable)

first = []

def patch(module):
    app = module.FabwizApp
    offer, run, mount = app.offer_choice, app.run, app.on_mount
    def on_mount(self):
        self.call_after_refresh(lambda: first.append(time.perf_counter() - t0))
        mount(self)
    def offer_choice(self, choice):
        offer(self, choice)
        if choice is not None and choice.step == "preflight" and self.view.steps["preflight"].verdicts:
            self.call_after_refresh(done)  # on screen: the repaint that shows it has run
    app.on_mount = on_mount
    app.offer_choice = offer_choice
    app.run = lambda self, **kw: run(self, **{**kw, "headless": True, "size": (120, 40)})

def done():
    print(first[0], time.perf_counter() - t0, flush=True)  # the first paint, the verdicts
    from screens.cli import save_startup_caches
    save_startup_caches()  # as `fabwiz run` does two seconds in (the collector's pause ends)
    os._exit(0)
"""
    + PATCH_APP
    + """
inventory, sessions = sys.argv[1], sys.argv[2]
sys.argv = ["fabwiz", "run", "-i", inventory, "--session-dir", sessions]
import screens.boot
screens.boot.main()
"""
)

# The app alone (no command, no engine factory): what the figure was before it took the demo's path.
FIRST_SCREEN_APP = """
import os, sys, time
t0 = time.perf_counter()
sys.path[0] = os.path.dirname(sys.executable)
import screens.importcache
screens.importcache.install()
import screens.cli, screens.codecache
screens.codecache.install()  # as `fabwiz demo` starts
screens.cli.pause_collector_for_startup()
from pathlib import Path
import screens.app
from screens.app import FabwizApp

class Once(FabwizApp):
    CSS_PATH = str(Path(screens.app.__file__).with_name("app.tcss"))

    def on_mount(self) -> None:
        super().on_mount()
        self.call_after_refresh(self._painted)

    def _painted(self) -> None:
        print(time.perf_counter() - t0)
        screens.cli.save_startup_caches()  # what `fabwiz` keeps for its next start
        self.exit(0)

Once(None).run(headless=True, size=(120, 40))
"""


def first_screen(runs: int, script: str = FIRST_SCREEN) -> float:
    out = []
    for i in range(runs + 1):  # the first fills the start-up cache, as a first `fabwiz` run does
        r = subprocess.run(
            [str(ROOT / ".venv/bin/python"), "-c", script],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        if i:
            out.append(float(r.stdout.split()[-1]))
    return statistics.median(out)


class LabChild:
    """The lab of bench/sweep.py in a child process (its servers use their own CPU)."""

    def __init__(self, nodes: int, time_scale: float = 1000.0) -> None:
        self.nodes, self.time_scale = nodes, time_scale
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> Path:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "bench/sweep.py"),
                "--serve",
                str(self.nodes),
                "--serve-time-scale",
                str(self.time_scale),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        return Path(self.proc.stdout.readline().strip())

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


async def until(pilot: Any, predicate: Callable[[], bool], timeout: float = 120.0) -> None:
    """Wait for `predicate`, then for the screen to have painted it. The wait is a plain sleep:
    `pilot.pause` would make every widget answer a callback and the screen render on each poll
    (a hundred times a second), work the app does not do on its own."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise TimeoutError("the TUI never got there")
        await asyncio.sleep(0.01)
    await pilot.pause()  # what the predicate saw is on screen


async def tui_preflight(inventory: Path) -> float:
    from screens.app import FabwizApp
    from screens.commands.run import wizard_factory

    with tempfile.TemporaryDirectory() as tmp:
        app = FabwizApp(wizard_factory(inventory=inventory, session_dir=Path(tmp) / "s"))
        t0 = time.perf_counter()
        async with app.run_test(size=(120, 40)) as pilot:
            await until(
                pilot,
                lambda: app.pending_choice is not None and app.pending_choice.step == "preflight",
            )
            took = time.perf_counter() - t0
            assert app.view.steps["preflight"].verdicts, "preflight showed no verdict"
            app.exit_session()
            await pilot.pause(0.1)
        return took


async def check_time(inventory: Path) -> float:
    from screens.commands.check import run_check
    from wizard.inventory import load_inventory

    t0 = time.perf_counter()
    report = await run_check(load_inventory(inventory), ssh_config=None)
    took = time.perf_counter() - t0
    assert report.checked
    return took


def preflight_commands(nodes: int, runs: int) -> tuple[float, float, float]:
    """Whole commands, alternating: `fabwiz run`'s preflight on screen and `fabwiz check`.
    Returns the medians of `fabwiz run`'s verdicts on screen, `fabwiz check`, and `fabwiz
    run`'s first painted frame."""
    tui: list[float] = []
    chk: list[float] = []
    paint: list[float] = []
    with LabChild(nodes) as inventory, tempfile.TemporaryDirectory() as tmp:

        def run_tui() -> float:
            sessions = tempfile.mkdtemp(dir=tmp)  # a folder of its own: one log a folder
            r = subprocess.run(
                [str(ROOT / ".venv/bin/python"), "-c", PREFLIGHT_RUN, str(inventory), sessions],
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            if r.returncode:
                raise RuntimeError(f"fabwiz run failed: {r.stderr[-500:]}")
            first, verdicts = r.stdout.split()[-2:]
            paint.append(float(first))
            return float(verdicts)

        def run_check() -> float:
            t0 = time.perf_counter()
            r = subprocess.run(
                [str(ROOT / ".venv/bin/fabwiz"), "check", "-i", str(inventory), "--json"],
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=120,
                check=False,
            )
            took = time.perf_counter() - t0
            if r.returncode not in (0, 1):  # 1: findings (none in this lab, but not an error)
                raise RuntimeError(f"fabwiz check failed: {r.stderr[-500:]!r}")
            return took

        run_check(), run_tui()  # warm-up: the code cache, the lab's first answers
        paint.clear()
        for i in range(runs):
            pair = (run_check, run_tui) if i % 2 else (run_tui, run_check)
            for fn in pair:
                (chk if fn is run_check else tui).append(fn())
    return statistics.median(tui), statistics.median(chk), statistics.median(paint)


async def preflight(nodes: int, runs: int) -> tuple[float, float]:
    tui: list[float] = []
    chk: list[float] = []
    with LabChild(nodes) as inventory:
        await check_time(inventory)  # warm-up: imports, the lab's first answers
        await tui_preflight(inventory)
        for i in range(runs):
            first, second = (check_time, tui_preflight) if i % 2 else (tui_preflight, check_time)
            a = await first(inventory)
            b = await second(inventory)
            (chk if first is check_time else tui).append(a)
            (tui if first is check_time else chk).append(b)
    return statistics.median(tui), statistics.median(chk)


async def _fabric(inventory: Path, stack: AsyncExitStack, sink: Callable[[Any], None]) -> Any:
    from flows.expectations import DEFAULT
    from wizard.fabric import InventoryFabric
    from wizard.inventory import load_inventory
    from wizard.transports.ssh import SshTarget, SshTransport

    inv = load_inventory(inventory)
    ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
    fabric = InventoryFabric(inv, ssh, {}, sink=sink, perf_duration_s=5)
    fabric.sweeper.limits = DEFAULT  # as the composition root gives it
    stack.push_async_callback(fabric.close)
    await fabric.sweeper.sweep([])
    return fabric


async def gauges(nodes: int, seconds: float) -> tuple[int, float, float]:
    """(gauges, CPU share of one core, samples per gauge per second) over `seconds`."""
    from screens.app import FabwizApp
    from wizard.events import RailSampled

    with LabChild(nodes) as inventory:
        app = FabwizApp(None)
        async with app.run_test(size=(120, 40)) as pilot, AsyncExitStack() as stack:
            got: list[int] = [0]
            errors: list[str] = []

            def sink(ev: Any) -> None:
                if isinstance(ev, RailSampled):
                    got[0] += 1
                try:
                    app.ports.emit(ev)
                except Exception as exc:
                    errors.append(repr(exc))
                    raise

            fabric = await _fabric(inventory, stack, sink)
            rails = [r for rs in fabric.rails.values() for r in rs]
            app.session.gauges.set_rails(rails)
            app.session.action_show_bottom("gauges")
            task = asyncio.ensure_future(fabric._sample_rails())
            await pilot.pause(1.5)  # streams open, clocks calibrated
            got[0] = 0
            c0, t0 = time.process_time(), time.perf_counter()
            await asyncio.sleep(seconds)
            cpu, wall = time.process_time() - c0, time.perf_counter() - t0
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if errors:
        print(f"  gauges at {nodes} nodes: the app refused samples: {errors[0]}")
    return len(rails), cpu / wall, got[0] / max(1, len(rails)) / wall


async def gauges_fed(rails_n: int, seconds: float, hz: float = 4.0) -> float:
    """The TUI process's CPU share while `rails_n` gauges get `hz` samples a second each, fed
    as the sampler feeds them (RailSampled into the app's ports): the UI's own cost, whatever
    the nodes' speed."""
    from screens.app import FabwizApp
    from wizard.events import RailSampled
    from wizard.model import Rail

    rails = [
        Rail(node=f"spark{i // 4 + 1}", netdev=nd, rdma=rd, port=p, half=h)  # type: ignore[arg-type]
        for i, (nd, rd, p, h) in enumerate(
            [
                ("enp1s0f0np0", "rocep1s0f0", 0, "A"),
                ("enP2p1s0f0np0", "roceP2p1s0f0", 0, "B"),
                ("enp1s0f1np1", "rocep1s0f1", 1, "A"),
                ("enP2p1s0f1np1", "roceP2p1s0f1", 1, "B"),
            ]
            * (rails_n // 4)
        )
    ]
    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        app.session.gauges.set_rails(rails)
        app.session.action_show_bottom("gauges")
        await pilot.pause(0.5)
        c0, t0 = time.process_time(), time.perf_counter()
        k = 0
        while time.perf_counter() - t0 < seconds:
            for r in rails:
                app.ports.emit(RailSampled(node=r.node, netdev=r.netdev, gbps=50 + k % 50))
            k += 1
            await asyncio.sleep(1 / hz)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return cpu / wall


async def key_latency(nodes: int, presses: int) -> tuple[float, float]:
    """Median and worst key-to-action time while gauges stream and rail tests run."""
    from screens.app import FabwizApp

    with LabChild(nodes, time_scale=10.0) as inventory:
        app = FabwizApp(None)
        async with app.run_test(size=(120, 40)) as pilot, AsyncExitStack() as stack:
            fabric = await _fabric(inventory, stack, app.ports.emit)
            app.session.gauges.set_rails([r for rs in fabric.rails.values() for r in rs])
            screen = app.session
            handled: list[float] = []
            seen = asyncio.Event()
            real = screen.action_show_bottom

            def timed(which: str) -> None:
                handled.append(time.perf_counter())
                seen.set()
                real(which)

            screen.action_show_bottom = timed  # type: ignore[method-assign]

            async def tests() -> None:
                while True:
                    await fabric.measure("rails")

            load = asyncio.ensure_future(tests())
            await pilot.pause(1.0)
            lat: list[float] = []
            for i in range(presses):
                seen.clear()
                t0 = time.perf_counter()
                await pilot.press("g" if i % 2 else "l")
                await asyncio.wait_for(seen.wait(), 10)
                lat.append(handled[-1] - t0)
                await asyncio.sleep(0.2)
            load.cancel()
            await asyncio.gather(load, return_exceptions=True)
    return statistics.median(lat), max(lat)


async def preflight_stalls(nodes: int, runs: int) -> tuple[list[float], list[float]]:
    """The longest time the TUI's event loop went without running (a key press waits that
    long) during each of `runs` preflights and during each one's rerun: a 5 ms sleep looping
    beside the app measures how late it wakes."""
    from screens.app import FabwizApp
    from screens.commands.run import wizard_factory

    def asked(app: Any) -> bool:
        return app.pending_choice is not None and app.pending_choice.step == "preflight"

    first: list[float] = []
    again: list[float] = []
    with LabChild(nodes) as inventory:
        await tui_preflight(inventory)  # warm-up
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as tmp:
                app = FabwizApp(wizard_factory(inventory=inventory, session_dir=Path(tmp) / "s"))
                async with app.run_test(size=(120, 40)) as pilot:
                    late: list[float] = []

                    async def watch(late: list[float] = late) -> None:
                        while True:
                            t = time.perf_counter()
                            await asyncio.sleep(0.005)
                            late.append(time.perf_counter() - t - 0.005)

                    watcher = asyncio.ensure_future(watch())
                    await until(pilot, lambda app=app: asked(app))
                    first.append(max(late))
                    late.clear()
                    await pilot.press("r")
                    await until(pilot, lambda app=app: app.pending_choice is None)
                    await until(pilot, lambda app=app: asked(app))
                    again.append(max(late))
                    watcher.cancel()
                    app.exit_session()
                    await pilot.pause(0.1)
    return first, again


async def main_async(args: argparse.Namespace) -> None:
    def part(name: str) -> bool:
        return args.only in (None, name)

    if part("first-screen"):
        await first_screen_part(args)
    if part("preflight"):
        await preflight_part(args)
    if part("keys"):
        med, worst = await key_latency(min(args.nodes, 16), 10 if args.quick else 20)
        print(
            f"key latency during rail tests: median {med * 1000:.0f} ms, "
            f"worst {worst * 1000:.0f} ms"
        )
    if part("stalls"):
        await stalls_part(args)


async def first_screen_part(args: argparse.Namespace) -> None:
    fs = first_screen(args.runs)
    alone = first_screen(args.runs, FIRST_SCREEN_APP)
    print(
        f"first screen: {fs:.3f} s (`fabwiz demo`, process start to the first painted frame, "
        f"median); the app alone: {alone:.3f} s"
    )


async def preflight_part(args: argparse.Namespace) -> None:
    tui, chk, paint = preflight_commands(args.nodes, args.runs)
    print(
        f"preflight at {args.nodes} nodes, whole commands: `fabwiz run` {tui:.2f} s to the "
        f"verdicts on screen (its first frame at {paint:.2f} s), `fabwiz check` {chk:.2f} s, "
        f"ratio {tui / chk:.2f} (medians of {args.runs} alternating runs)"
    )
    tui, chk = await preflight(args.nodes, args.runs)
    print(
        f"preflight at {args.nodes} nodes, in one process (imports done): TUI {tui:.2f} s, "
        f"check {chk:.2f} s, ratio {tui / chk:.2f}"
    )


async def stalls_part(args: argparse.Namespace) -> None:
    big = 8 if args.quick else 64
    first, again = await preflight_stalls(big, args.runs)

    def ms(xs: list[float]) -> str:
        return f"median {statistics.median(xs) * 1000:.0f} ms, worst {max(xs) * 1000:.0f} ms"

    print(
        f"longest stall of the TUI's event loop in a {big}-node preflight: {ms(first)}; in its "
        f"rerun: {ms(again)} ({args.runs} runs)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--nodes", type=int, default=32, help="lab size for the preflight timing")
    ap.add_argument("--quick", action="store_true", help="3 runs, 8 nodes, shorter samples")
    ap.add_argument(
        "--only",
        choices=("first-screen", "preflight", "keys", "stalls", "gauges"),
        help="measure this one part only",
    )
    ap.add_argument("--gauges", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--seconds", type=float, default=6.0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.gauges:
        n, share, hz = asyncio.run(gauges(args.gauges, args.seconds))
        fed = asyncio.run(gauges_fed(n, args.seconds))
        print(
            f"gauges: {n:>3} from the lab's sampling loops at {hz:.1f} Hz each, TUI process CPU "
            f"{share * 100:.0f}% of a core; fed at 4 Hz each: {fed * 100:.0f}% of a core"
        )
        return
    if args.quick:
        args.runs, args.nodes = 3, 8
    from _bytecode import compile_fabwiz
    from _machine import describe

    compile_fabwiz()
    print(describe())
    asyncio.run(main_async(args))
    if args.only in (None, "gauges"):
        gauge_runs(args.quick)


def gauge_runs(quick: bool) -> None:
    for nodes in (4, 16, 32) if not quick else (4, 16):
        # each in a fresh process: one app and one lab per measurement
        r = subprocess.run(
            [sys.executable, __file__, "--gauges", str(nodes), "--seconds", "3" if quick else "6"],
            capture_output=True,
            text=True,
            check=False,
        )
        print(r.stdout.strip() or f"gauges at {nodes} nodes failed: {r.stderr[-300:]}")


if __name__ == "__main__":
    main()
