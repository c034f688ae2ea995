"""`fabwiz run` begins the preflight's read-only sweep before its app exists (`connect_now`):
Textual loads while the probes' round trips go on. The engine's preflight takes that sweep over
(one batch per node, not two); its probes are said in the session log after the log's start and
the preflight's step, every one with its answer; a stale probe manifest costs a second sweep,
never an unlogged probe; an app that closes first cancels it and closes the connections."""

from __future__ import annotations

import asyncio
import json
import os
import runpy
import sys
from pathlib import Path
from typing import Any

import pytest
from test_tui_early_connect import _until, closed_at_first_paint

from screens.app import FabwizApp
from screens.commands.run import WizardFactory
from wizard.drain import CARRIER_PROBE
from wizard.lab import Lab
from wizard.model import Status
from wizard.transports.ssh import SshTransport

pytestmark = pytest.mark.lab

ROOT = Path(__file__).resolve().parents[2]
# the finder that patches the app as the command imports it, shared with bench/tui.py
PATCH_APP: str = runpy.run_path(str(ROOT / "bench" / "_apphook.py"))["PATCH_APP"]


def _count_batches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The nodes each sweep batch (a framed script) went to, in order, and "<node>:login" for
    each of mpirun's logins from the launch node to a peer (a session each)."""
    sent: list[str] = []
    real = SshTransport.run

    async def run(self: SshTransport, name: str, command: str, **kw: Any) -> Any:
        if "@@FABWIZ-" in command:
            sent.append(name)
        elif command.startswith("ssh -o BatchMode=yes"):
            sent.append(f"{name}:login")
        return await real(self, name, command, **kw)

    monkeypatch.setattr(SshTransport, "run", run)
    return sent


def _events(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "events.jsonl").open()]


def _preflight_asks(app: FabwizApp) -> bool:
    return app.pending_choice is not None and app.pending_choice.step == "preflight"


async def test_the_preflight_takes_over_the_sweep_begun_before_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = _count_batches(monkeypatch)
    async with Lab("healthy-2node-direct", time_scale=100.0) as lab:
        nodes = sorted(lab.world.nodes)
        factory = WizardFactory(inventory=lab.inventory_path, session_dir=tmp_path / "s")
        factory.connect_now()  # as `fabwiz run` does before Textual loads
        early = factory.early
        assert early is not None and early.sweeper is not None
        await asyncio.wait_for(asyncio.shield(early.sweeper._early[1]), 30)  # type: ignore[index]
        # swept before any app or session log existed: a batch per node, and the launch
        # node's logins to the others (mpirun's SSH, once their addresses are known)
        one_sweep = sorted([*nodes, *[f"{nodes[0]}:login"] * (len(nodes) - 1)])
        assert sorted(sent) == one_sweep
        assert not (tmp_path / "s").exists()

        app = FabwizApp(factory)
        async with app.run_test(size=(120, 40)) as pilot:
            await _until(pilot, lambda: _preflight_asks(app))
            assert sorted(sent) == one_sweep  # taken over: not swept again
            verdicts = app.view.steps["preflight"].verdicts.values()
            assert verdicts and all(v.status is not Status.UNKNOWN for v in verdicts)
            assert early.adopted
            app.exit_session()
            await pilot.pause(0.2)
        assert not early.ssh._conns  # closed with the wizard

    events = _events(tmp_path / "s")
    types = [e["type"] for e in events]
    assert types[0] == "session_started"
    step = next(
        i
        for i, e in enumerate(events)
        if e["type"] == "step_changed" and e["step"] == "preflight" and e["phase"] == "probing"
    )
    first_probe = types.index("probe_sent")
    assert step < first_probe  # said in the preflight, though sent before it
    sent_cmds = [(e["target"], e["command"]) for e in events if e["type"] == "probe_sent"]
    answered = [
        (e["result"]["target"], e["result"]["command"])
        for e in events
        if e["type"] == "probe_answered"
    ]
    assert sorted(sent_cmds) == sorted(answered)  # every probe sent, with its answer
    assert {t for t, _ in sent_cmds} >= set(nodes)
    assert all(e["step"] == "preflight" for e in events if e["type"] == "probe_sent")
    judged = [e for e in events if e["type"] == "verdict_reached" and e["step"] == "preflight"]
    assert judged and types.index("verdict_reached") > max(
        i for i, t in enumerate(types) if t == "probe_answered"
    )


async def test_a_stale_probe_manifest_costs_a_second_sweep_never_an_unlogged_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows import probe_manifest

    real = probe_manifest.probes_for
    dropped: list[str] = []

    def stale(*, traffic: bool) -> list[Any]:
        probes = real(traffic=traffic)
        dropped.append(probes[-1].name)
        return probes[:-1]

    monkeypatch.setattr(probe_manifest, "probes_for", stale)
    sent = _count_batches(monkeypatch)
    async with Lab("healthy-2node-direct", time_scale=100.0) as lab:
        nodes = sorted(lab.world.nodes)
        factory = WizardFactory(inventory=lab.inventory_path, session_dir=tmp_path / "s")
        factory.connect_now()
        app = FabwizApp(factory)
        async with app.run_test(size=(120, 40)) as pilot:
            await _until(pilot, lambda: _preflight_asks(app))
            # the engine swept again, with its probes
            one_sweep = [*nodes, *[f"{nodes[0]}:login"] * (len(nodes) - 1)]
            assert sorted(sent) == sorted(one_sweep * 2)
            assert app.view.steps["preflight"].verdicts
            app.exit_session()
            await pilot.pause(0.2)

    events = _events(tmp_path / "s")
    sent_cmds = [(e["target"], e["command"]) for e in events if e["type"] == "probe_sent"]
    answered = [
        (e["result"]["target"], e["result"]["command"])
        for e in events
        if e["type"] == "probe_answered"
    ]
    assert sorted(sent_cmds) == sorted(answered)
    assert len(sent_cmds) == len(set(sent_cmds)) * 2 - _only_in_second(events, dropped[0])


def _only_in_second(events: list[dict[str, Any]], probe: str) -> int:
    """How many probes only the engine's own sweep sent (the one the manifest left out)."""
    return sum(
        1 for e in events if e["type"] == "probe_answered" and e["probe"].split(":")[0] == probe
    )


async def test_an_app_closed_before_its_engine_cancels_the_begun_sweep(tmp_path: Path) -> None:
    async with Lab("healthy-2node-direct", time_scale=100.0) as lab:
        factory = WizardFactory(inventory=lab.inventory_path, session_dir=tmp_path / "s")
        factory.connect_now()
        early = factory.early
        assert early is not None and early.sweeper is not None
        task = early.sweeper._early[1]  # type: ignore[index]
        built = await closed_at_first_paint(factory)
        assert built == [] and not early.adopted and early.released
        assert task.done() and early.sweeper._early is None
        assert early.ssh._starting == {} and early.ssh._conns == {}
        assert not (tmp_path / "s").exists()  # no session was started


# `fabwiz run -i INVENTORY` as a process: the command's own start (the loop the sweep begins on,
# Textual loaded in a thread, the app on that loop), headless, leaving through the app once the
# preflight's verdicts are on screen.
RUN = (
    """
import sys

def patch(module):
    app = module.FabwizApp
    offer, run = app.offer_choice, app.run
    def offer_choice(self, choice):
        offer(self, choice)
        if choice is not None and choice.step == "preflight":
            print("verdicts", len(self.view.steps["preflight"].verdicts), flush=True)
            self.call_after_refresh(self.exit_session)
    app.offer_choice = offer_choice
    app.run = lambda self, **kw: run(self, **{**kw, "headless": True, "size": (120, 40)})
"""
    + PATCH_APP
    + """
sys.argv = ["fabwiz", "run", "-i", sys.argv[1], "--session-dir", sys.argv[2]]
import screens.cli
screens.cli.main()
"""
)


async def test_the_run_command_sweeps_once_and_leaves_cleanly(tmp_path: Path) -> None:
    async with Lab("healthy-2node-direct", time_scale=100.0) as lab:
        env = {**os.environ, "FABWIZ_CODE_CACHE": "off", "PYTHONWARNINGS": "error::RuntimeWarning"}
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            RUN,
            str(lab.inventory_path),
            str(tmp_path / "s"),
            cwd=ROOT,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        nodes = sorted(lab.world.nodes)
    # left at the preflight's question: not proven healthy (1), the session resumable
    assert proc.returncode == 1, err.decode()[-2000:]
    assert b"fabwiz resume" in err
    assert b"was destroyed but it is pending" not in err and b"Traceback" not in err
    shown = int(out.split()[-1])
    events = _events(tmp_path / "s")
    judged = {e["verdict"]["fault"] for e in events if e["type"] == "verdict_reached"}
    assert shown == len(judged) > 0  # on screen: every verdict the log has
    carrier = [
        e["target"]
        for e in events
        if e["type"] == "probe_sent" and e["command"] == CARRIER_PROBE.command
    ]
    assert sorted(carrier) == nodes  # the carrier probe went once to each node: swept once


def test_the_import_thread_waits_for_a_busy_loop_and_only_it_waits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    from screens.commands.run import _LoopSelector, _Yielding

    monkeypatch.setattr(_Yielding, "MAX_WAIT_S", 30.0)  # only the loop going idle lets it on
    monkeypatch.setattr(_Yielding, "BUDGET_S", 60.0)
    selector = _LoopSelector()
    try:
        assert not selector.waiting  # not in select: the loop is running something
        order: list[str] = []
        hooks: list[_Yielding] = []

        def importing() -> None:
            hooks.append(_Yielding(selector))  # made in the thread that imports
            hooks[0].find_spec("some.module")
            order.append("imported")

        t = threading.Thread(target=importing)
        t.start()
        while not hooks:
            threading.Event().wait(0.001)
        # another thread's imports (the loop's own) never wait
        assert hooks[0].find_spec("other.module") is None
        order.append("loop done")
        selector.waiting = True  # the loop went back to waiting in its selector
        t.join(10)
        assert not t.is_alive() and order == ["loop done", "imported"]
    finally:
        selector.close()


def test_the_loop_selector_says_when_the_loop_waits_in_it() -> None:
    import selectors

    from screens.commands.run import _LoopSelector

    inside: list[bool] = []

    class Inner(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
        def select(self, timeout: float | None = None) -> Any:
            inside.append(self.waiting)  # type: ignore[attr-defined]
            return super().select(timeout)

    class Spy(_LoopSelector, Inner):  # _LoopSelector.select, then Inner's, then epoll's
        pass

    selector = Spy()
    running: list[bool] = []
    loop = asyncio.SelectorEventLoop(selector)
    try:
        loop.call_soon(lambda: running.append(selector.waiting))
        loop.run_until_complete(asyncio.sleep(0.01))
    finally:
        loop.close()
    assert running == [False]  # running a callback: not waiting
    assert inside and all(inside)  # in the selector: waiting
    assert not selector.waiting


def test_the_import_thread_waits_no_longer_than_its_budget_in_all() -> None:
    from screens.commands.run import _LoopSelector, _Yielding

    selector = _LoopSelector()  # never waiting: a loop that is always busy
    try:
        hook = _Yielding(selector)
        hook.left = 0.01
        for i in range(100):
            hook.find_spec(f"m{i}")
        assert hook.left <= 0  # spent: every later module loads at once
        spent_at = hook.left
        hook.find_spec("late.module")
        assert hook.left == spent_at
    finally:
        selector.close()


async def test_nothing_begins_when_the_session_log_could_not_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    async with Lab("healthy-2node-direct", time_scale=100.0) as lab:
        factory = WizardFactory(inventory=lab.inventory_path, session_dir=blocker / "s")
        factory.connect_now()
        # no probe runs that no log would record: the app says why once it is up
        assert factory.early is None


def test_a_session_folder_that_cannot_be_made_is_known_before_anything_runs(
    tmp_path: Path,
) -> None:
    from wizard.session.files import LOG_NAME, cannot_create_session

    assert cannot_create_session(tmp_path / "new" / "deeper") is None
    assert cannot_create_session(root=tmp_path / "sessions") is None
    blocker = tmp_path / "a-file"
    blocker.write_text("x\n")
    err = cannot_create_session(blocker / "s")
    assert err is not None and "a-file is not a folder" in err.message
    assert err.hint == "pass a writable folder with --session-dir"
    used = tmp_path / "used"
    used.mkdir()
    (used / LOG_NAME).write_text("{}\n")
    err = cannot_create_session(used)
    assert err is not None and "already holds a session log" in err.message
    assert err.hint is not None and "fabwiz resume" in err.hint
    assert not (tmp_path / "new").exists()  # nothing was created


async def test_a_sweep_cut_short_leaves_nothing_for_asyncio_to_report(tmp_path: Path) -> None:
    import gc

    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        async with Lab("crs804-three-bugs", time_scale=100.0) as lab:
            factory = WizardFactory(inventory=lab.inventory_path, session_dir=tmp_path / "s")
            factory.connect_now()  # nodes and switches
            early = factory.early
            assert early is not None and early.sweeper is not None and early.switches
            task = early.sweeper._early[1]  # type: ignore[index]
            for _ in range(3):  # under way: the nodes' handshakes, the switches' logins
                await asyncio.sleep(0)
            assert not task.done()
            await early.release()  # as ctrl-c or an early quit does
            await asyncio.sleep(0.05)
            assert task.cancelled()
            del task  # its frames hold the sweep's futures: let them go
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    assert [c.get("message") for c in reported] == []


async def test_a_prefetched_preflight_judges_as_one_swept_by_the_engine(tmp_path: Path) -> None:
    """The same faulty lab, preflighted both ways: the same verdict for every fault."""
    judged: list[dict[str, tuple[str, tuple[str, ...]]]] = []
    for prefetch in (True, False):
        async with Lab("crs804-three-bugs", time_scale=100.0) as lab:
            factory = WizardFactory(
                inventory=lab.inventory_path, session_dir=tmp_path / f"s{int(prefetch)}"
            )
            if prefetch:
                factory.connect_now()
                assert factory.early is not None and factory.early.sweeper is not None
            app = FabwizApp(factory)
            async with app.run_test(size=(120, 40)) as pilot:
                await _until(pilot, lambda app=app: _preflight_asks(app))
                verdicts = app.view.steps["preflight"].verdicts
                judged.append(
                    {f: (v.status.value, tuple(sorted(v.targets))) for f, v in verdicts.items()}
                )
                app.exit_session()
                await pilot.pause(0.2)
    with_prefetch, without = judged
    assert with_prefetch == without
    failing = {f for f, (status, _t) in with_prefetch.items() if status == "fail"}
    # the scenario's three bugs, found either way
    assert {"switch.offload-split-cage", "switch.qos-pfc-stall", "host.duplicate-ip"} <= failing


async def test_textual_loads_once_the_handshakes_are_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each handshake is round trip after round trip, and a module loading holds each one up;
    so `fabwiz run` lets them through first, then loads Textual while the nodes run the
    sweep's scripts."""
    from screens.commands import run as run_mod

    seen: list[tuple[str, set[str]]] = []
    real = run_mod.importlib.import_module

    async with Lab("healthy-2node-direct", time_scale=100.0) as lab:
        factory = WizardFactory(inventory=lab.inventory_path, session_dir=tmp_path / "s")

        def import_module(name: str) -> Any:  # the thread's import of the app, recorded
            if name != "screens.app":
                return real(name)
            assert factory.early is not None
            seen.append((name, set(factory.early.ssh._conns)))
            return None

        monkeypatch.setattr(run_mod.importlib, "import_module", import_module)
        selector = run_mod._LoopSelector()
        try:
            await run_mod._before_the_app(factory, selector)
            assert seen == [("screens.app", set(lab.world.nodes))]  # every node connected
            assert factory.early is not None
            assert all(api._api is not None for api in factory.early.switches.values())
        finally:
            selector.close()
            if factory.early is not None:
                await factory.early.release()
