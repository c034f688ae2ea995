"""The composition root: wires the engine, the flows, the transports, the lab and the session log.

Every way of running the wizard goes through `open_wizard`: `fabwiz fix` (headless), `fabwiz run`
and `fabwiz demo` (the TUI), and `fabwiz resume`. It loads and validates the inventory (or starts
an in-process lab and uses the inventory the lab writes), opens the session log, builds the
`InventoryFabric`, and gives the engine the flow, the checks and a context factory from `flows/`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, Unpack

from rich.console import Console
from rich.markup import escape

from flows.bisection import FLOW
from flows.expectations import DEFAULT, Expectations, validate_overrides
from flows.registry import CHECKS, make_context
from screens.connections import EarlyConnections, transports, trust_notes
from wizard.drain import DrainGuard
from wizard.engine import Engine, Operator, Resume, RunResult
from wizard.engine.resume import resume_from as resume_along
from wizard.errors import FabwizError, SessionLogError
from wizard.events import (
    Event,
    ExportTaken,
    FixApplied,
    FixRolledBack,
    FixVerified,
    NodeDrained,
    PhysicalActionDone,
    RollbackArmed,
    RollbackDisarmed,
    SessionEnded,
    SessionStarted,
)
from wizard.fabric import InventoryFabric
from wizard.inventory import Inventory, load_inventory
from wizard.model import node_order
from wizard.probes import Observations
from wizard.safetext import clean
from wizard.session import LoadedSession, SessionLog, SessionState, load_session
from wizard.sweep import Sweeper
from wizard.transports.routeros import RouterOsTransport
from wizard.transports.ssh import SshTransport

# Lab time runs this many times faster than life by default (a 5 s ib_write_bw in 0.2 s).
LAB_TIME_SCALE = 25.0
DEMO_TIME_SCALE = 10.0


@dataclass
class Wiring:
    engine: Engine
    fabric: InventoryFabric
    log: SessionLog
    inventory: Inventory
    lab: Any = None  # wizard.lab.Lab when in-process
    owns_lab: bool = False
    sinks: list[Callable[[Event], None]] = field(default_factory=list)

    async def close(self) -> None:
        await self.fabric.close()
        if self.lab is not None and self.owns_lab:
            await self.lab.stop()
        self.log.close()


def _expectations(inv: Inventory) -> Expectations:
    if not inv.expectations:
        return DEFAULT
    try:
        return DEFAULT.with_overrides(inv.expectations)
    except KeyError as exc:
        raise FabwizError(
            f"{inv.path}: expectations: unknown key(s) {exc.args[0]}",
            hint="use the field names of flows/expectations.py",
        ) from None


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def context_factory(inv: Inventory) -> Callable[[Observations, DrainGuard], Any]:
    exp = _expectations(inv)
    management = {s.name: tuple(s.management_ports) for s in inv.switches}
    jobs = {n.name: n.job_container for n in inv.nodes if n.job_container}
    procs = {n.name: n.job_process for n in inv.nodes if n.job_process}

    def build(obs: Observations, guard: DrainGuard) -> Any:
        ctx = make_context(
            obs,
            nodes=[n.name for n in inv.nodes],
            switches=[s.name for s in inv.switches],
            expectations=exp,
            cabling=inv.cabling,
            management=management,
            addressing={
                "pattern": inv.addressing_pattern,
                "hosts": dict(inv.addressing_hosts),
                "netplan": _netplan_files(obs, [n.name for n in inv.nodes]),
            },
            known_good_firmware=inv.known_good_firmware,
            nccl_devices=inv.nccl_devices,
        )
        from flows.base import Transition

        transitions = tuple(
            Transition(node=n, at=at, cause=cause)
            for n, items in guard.transitions.items()
            for at, cause in items
        )
        return dataclasses.replace(
            ctx,
            transitions=transitions,
            drained_at=dict(guard.drains),
            jobs=jobs,
            job_processes=procs,
            changed_at=dict(guard.changed_at),
        )

    return build


def _netplan_files(obs: Observations, nodes: list[str]) -> dict[str, dict[str, str]]:
    """node -> netplan file -> content, where the sweep read them (the fix edits them)."""
    from flows import netplan

    out: dict[str, dict[str, str]] = {}
    for node in nodes:
        res = obs.node(node, netplan.PROBE.name)
        if res is not None and res.stdout:
            out[node] = netplan.parse_files(res.stdout)
    return out


async def _start_lab(scenario: str, time_scale: float, state: dict[str, Any] | None) -> Any:
    """Start an in-process lab: from the scenario, or from a session's saved world (resume)."""
    from wizard.lab import Lab

    world = None
    if state is not None:
        from wizard.lab import state as lab_state

        world = lab_state.world_from_state(state, time_scale=time_scale)
    lab = Lab(scenario, time_scale=time_scale, world=world)
    await lab.start()
    return lab


class WizardOptions(TypedDict, total=False):
    """How `open_wizard` finds its cluster and keeps its log (every key optional)."""

    sinks: Sequence[Callable[[Event], None]]
    inventory: Path | None
    lab: str | None
    session_dir: Path | None
    accept_new_host_keys: bool
    time_scale: float | None
    command: str
    resume: LoadedSession | None
    prompt: Callable[[str], str] | None
    lab_object: Any
    fsync: bool
    connections: EarlyConnections | None


async def open_wizard(*, operator: Operator, **options: Unpack[WizardOptions]) -> Wiring:
    """Open everything a wizard session needs. Raises FabwizError (InventoryError, ...) with a
    message for the operator when something is wrong; nothing is left running then.

    `lab` is a built-in scenario name or a scenario file: the lab starts in-process. On resume,
    an in-process lab starts from the session's saved lab state. `lab_object` passes an already
    running `wizard.lab.Lab` (tests, the TUI's demo), which the caller stops. `fsync=False`
    (tests only) skips the fsync of each log line. `connections` hands over the inventory's
    transports with their handshakes begun (`screens.connections.begin`, the TUI): they are the
    wizard's from then on.
    """
    _window_from_env(300.0)  # a bad FABWIZ_ROLLBACK_WINDOW_S is said before anything starts
    resume = options.get("resume")
    sinks = list(options.get("sinks", ()))
    the_lab, owns_lab, scenario, inventory = await _lab_for(options)
    try:
        inv, ssh, switches, log = _open_cluster(the_lab, inventory, options)
    except BaseException:
        if owns_lab and the_lab is not None:
            await the_lab.stop()
        raise
    fanout: list[Callable[[Event], object]] = [log.write, *sinks]

    def emit(event: Event) -> None:
        # An in-process lab's world is saved before the log records the change, as a real
        # switch holds a change before fabwiz writes it down: a kill in between leaves a change
        # the log does not know (which resume looks for), never a log ahead of the fabric.
        if the_lab is not None and isinstance(event, _LAB_CHANGES):
            _save_lab(log, the_lab)
        for sink in fanout:
            sink(event)

    fabric = InventoryFabric(
        inv,
        ssh,
        switches,
        hands=_hands_for(the_lab, inv),
        sink=emit,
        sweeper=_early_sweeper(the_lab, options),
    )
    exp = _expectations(inv)
    fabric.sweeper.limits = exp  # the re-run and bidirectional limits of the rail tests
    state_resume: Resume | None = None
    if resume is not None:
        state_resume = resume_from(resume)
        first: list[Event] = [resume.started, log.resumed(resume, state_resume.step)]
    else:
        command = options.get("command", "fix")
        first = [_start_log(log, inv, fabric, command, inventory, scenario, the_lab)]
    for event in first:  # written by the log itself; the sinks see the session they are in
        for sink in sinks:
            sink(event)
    if the_lab is not None:
        _save_lab(log, the_lab)
    early = options.get("connections")
    trust_notes(emit, ssh, switches, early.said if early is not None else None)
    engine = Engine(
        fabric=fabric,
        operator=operator,
        emit=emit,
        flow=FLOW,
        checks=CHECKS,
        make_context=context_factory(inv),
        thresholds=exp,
        session_id=log.session_id[-8:],
        poll_interval_s=0.2 if the_lab is not None else 2.0,
        rollback_window_s=_rollback_window(the_lab),
        resume=state_resume,
    )
    engine.target_clock_rate = float(getattr(the_lab, "time_scale", 1.0) or 1.0)
    fabric.sweeper.clock_rate = engine.target_clock_rate
    fabric.sweeper.open()  # the handshakes run while the engine and the screen get going
    if early is not None:
        early.adopted = True  # closed with the fabric from now on
    return Wiring(engine, fabric, log, inv, the_lab, owns_lab, sinks)


def _early_sweeper(the_lab: Any, options: WizardOptions) -> Sweeper | None:
    """The sweeper the early connections began the preflight with, if any."""
    early = options.get("connections")
    return early.sweeper if early is not None and the_lab is None else None


async def _lab_for(options: WizardOptions) -> tuple[Any, bool, str | None, Path | None]:
    """The lab to run against (started here when a scenario is named: then this call owns it),
    the scenario and the inventory path, a resumed session's own when it names them."""
    the_lab = options.get("lab_object")
    scenario = options.get("lab")
    inventory = options.get("inventory")
    resume = options.get("resume")
    if resume is not None:
        started = resume.started
        scenario = started.scenario
        if inventory is None and started.inventory_path and scenario is None:
            inventory = Path(started.inventory_path)
    if the_lab is not None or scenario is None:
        return the_lab, False, scenario, inventory
    scale = options.get("time_scale") or LAB_TIME_SCALE
    saved = resume.lab_state() if resume is not None else None
    return await _start_lab(scenario, scale, saved), True, scenario, inventory


def _open_cluster(
    the_lab: Any, inventory: Path | None, options: WizardOptions
) -> tuple[Inventory, SshTransport, dict[str, RouterOsTransport], SessionLog]:
    """The validated inventory, its transports and the session log (new, or reopened on resume)."""
    if the_lab is not None:
        inventory = Path(the_lab.inventory_path)
    if inventory is None:
        raise FabwizError(
            "no cluster given", hint="give -i INVENTORY, or --lab SCENARIO for the lab"
        )
    early = options.get("connections")
    if early is not None and the_lab is None:
        inv, ssh, switches, secrets = early.inventory, early.ssh, early.switches, early.secrets
    else:
        inv = load_inventory(inventory, expectations=validate_overrides)
        from wizard.inventory_files import require_identity_files

        require_identity_files(inv)  # about to connect: a missing key is an inventory error
        ssh, switches, secrets = transports(
            inv, options.get("accept_new_host_keys", False), options.get("prompt")
        )
    resume = options.get("resume")
    fsync = options.get("fsync", True)
    if resume is not None:
        log, _loaded = SessionLog.reopen(resume.path, secrets=secrets, fsync=fsync)
    else:
        log = SessionLog.create(options.get("session_dir"), secrets=secrets, fsync=fsync)
    return inv, ssh, switches, log


def _hands_for(the_lab: Any, inv: Inventory) -> Any:
    """Who does the physical actions: the in-process lab's hands, a remote `fabwiz lab`'s over
    its control channel, or nobody (a real inventory has no `lab:` section)."""
    if the_lab is not None:
        return the_lab.hands
    if inv.lab is None:
        return None
    from wizard.lab.control import RemoteHands

    try:
        token = inv.lab_token
    except OSError as exc:
        raise FabwizError(
            f"{inv.path}: lab.token_file: cannot read the lab's control token: {exc}",
            hint="is the `fabwiz lab` that wrote this inventory still running?",
        ) from None
    return RemoteHands(inv.lab.control, token) if token else None


def _start_log(
    log: SessionLog,
    inv: Inventory,
    fabric: InventoryFabric,
    command: str,
    inventory: Path | None,
    scenario: str | None,
    the_lab: Any,
) -> SessionStarted:
    """The session's first event: what was run, on which cluster, with which settings."""
    assert inventory is not None or the_lab is not None
    path = Path(the_lab.inventory_path) if the_lab is not None else inventory
    assert path is not None
    return log.start(
        command,
        inventory_digest=_digest(path),
        inventory_path=str(path) if the_lab is None else "",
        scenario=scenario if the_lab is not None else None,
        nodes=fabric.nodes,
        switches=fabric.switches,
        options={
            "context": {
                "expectations": dict(inv.expectations),
                "cabling": {k: list(v) for k, v in inv.cabling.items()},
                "management": {s.name: list(s.management_ports) for s in inv.switches},
                "addressing": {"pattern": inv.addressing_pattern},
                "known_good_firmware": inv.known_good_firmware,
                # where the real job runs, as the engine's checks read it (replay judges alike)
                "jobs": {n.name: n.job_container for n in inv.nodes if n.job_container},
                "job_processes": {n.name: n.job_process for n in inv.nodes if n.job_process},
                "nccl_devices": inv.nccl_devices,
            },
            "lab": the_lab is not None,
        },
    )


# Events after which an in-process lab's world is saved beside the log (resume restarts it so).
_LAB_CHANGES = (
    ExportTaken,
    RollbackArmed,
    RollbackDisarmed,
    FixApplied,
    FixVerified,
    FixRolledBack,
    PhysicalActionDone,
    NodeDrained,
    SessionEnded,
)


def _rollback_window(lab: Any) -> float:
    """The dead-man window in switch-clock seconds: 5 minutes on a real switch. A lab's clock
    runs `time_scale` times faster than life; the window is stretched so that it still leaves
    the wizard at least 30 wall-clock seconds to verify before the switch rolls back."""
    wall = _window_from_env(300.0 if lab is None else 30.0)
    if lab is None:
        return wall
    scale = float(getattr(lab, "time_scale", 1.0) or 1.0)
    return max(300.0, wall * scale)


def _window_from_env(default: float) -> float:
    """`FABWIZ_ROLLBACK_WINDOW_S`: the wall-clock seconds a dead-man window leaves to verify
    and disarm (a slow management path, a long verification)."""
    raw = os.environ.get("FABWIZ_ROLLBACK_WINDOW_S", "").strip()
    if not raw:
        return default
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 30.0 <= seconds <= 86400.0:
        raise FabwizError(
            f"FABWIZ_ROLLBACK_WINDOW_S={raw!r} is not a number of seconds between 30 and 86400",
            hint="unset it for the default (300 s on a switch), or give e.g. 600",
        )
    return seconds


def _save_lab(log: SessionLog, lab: Any) -> None:
    try:
        from wizard.lab import state as lab_state

        log.save_lab_state(lab_state.world_to_state(lab.world))
    except (ImportError, AttributeError):
        return
    except OSError as exc:  # disk full, folder gone: as for the log itself
        raise SessionLogError(
            f"cannot write the lab state beside the session log in {log.folder}: "
            f"{exc.strerror or exc}",
            hint="free some disk space or pass another --session-dir",
        ) from exc


def resume_from(loaded: LoadedSession) -> Resume:
    """What the engine needs to continue `loaded` along this build's flow (`wizard.engine.resume`)."""
    return resume_along(loaded, [s.id for s in FLOW])


# --- the headless runners ---------------------------------------------------------------------


async def _walk(wiring: Wiring) -> RunResult | None:
    """The walk; None when the session log could not be written (already said)."""
    try:
        return await wiring.engine.run()
    except SessionLogError:
        return None
    finally:
        await wiring.close()


def _finish(
    result: RunResult, console: Console, as_json: bool, session: Path, not_proven: list[str]
) -> int:
    """The walk's outcome on stdout (`--json`: the result, the session folder and the proofs
    offered and not done); its exit code."""
    if as_json:
        data = result.to_json()
        data["session"] = str(session)
        data["not_proven"] = not_proven
        print(json.dumps(data, indent=2))
    else:
        console.rule("[bold]result")
        r = result
        if r.rails_gbps:
            worst = min(r.rails_gbps.values())
            console.print(f"rails: {len(r.rails_gbps)} measured, lowest {worst:.2f} Gb/s")
        for node, v in sorted(r.halves_gbps.items(), key=lambda kv: node_order(kv[0])):
            isl = " (alone on its switch: across an ISL)" if node in r.halves_across_isl else ""
            console.print(f"both halves {escape(node)}: {v:.2f} Gb/s{isl}")
        if r.nccl_busbw is not None:
            console.print(f"NCCL all_reduce busbw: {r.nccl_busbw:.2f} GB/s")
        for f in r.fixes:
            state = (
                "verified"
                if f.verified
                else "rolled back"
                if f.rolled_back
                else "refused"
                if f.refused
                else "applied"
                if f.applied
                else "not applied"
            )
            console.print(
                f"fix {f.fault} on {f.target}: {state}"
                + (f" (export {f.export})" if f.export else "")
            )
        for what in not_proven:
            console.print(f"[yellow]not proven:[/] {escape(clean(what))}")
        verdict = "[green]healthy[/]" if r.healthy_after else "[red]not healthy[/]"
        console.print(f"cluster {verdict}; session log: {escape(str(session))}")
    if result.aborted:
        return 2
    return 0 if result.healthy_after else 1


def run_fix_command(
    *,
    inventory: Path | None,
    lab: str | None,
    yes: bool,
    as_json: bool,
    session_dir: Path | None,
    accept_new_host_keys: bool,
    time_scale: float | None,
    break_stale_lock: bool = False,
) -> int:
    from screens.terminal import EventPrinter, TerminalOperator

    console = Console(stderr=as_json, highlight=False)
    if (inventory is None) == (lab is None):
        console.print("[red]fabwiz fix: give exactly one of -i INVENTORY or --lab SCENARIO[/]")
        return 2
    operator = TerminalOperator(console, yes=yes)
    from screens.progress import HeadlessProgress
    from screens.progress_lines import PlainProgress

    # live progress under the printed steps: on a terminal, without --json, and only with
    # --yes (a question typed under a live display would be redrawn over); else phase lines
    live = yes and console.is_terminal and sys.stdout.isatty() and not as_json
    progress = HeadlessProgress(console) if live else PlainProgress(sys.stderr)

    fold = SessionState()  # what the walk did, for what `_finish` says was not proven

    async def main() -> int:
        try:
            wiring = await open_wizard(
                operator=operator,
                sinks=[EventPrinter(console), progress, fold.apply],
                inventory=inventory,
                lab=lab,
                session_dir=session_dir,
                accept_new_host_keys=accept_new_host_keys,
                time_scale=time_scale,
                command="fix",
                prompt=_prompt,
            )
        except FabwizError as exc:
            console.print(f"[red]fabwiz fix: {escape(clean(str(exc)))}[/]")
            return 2
        wiring.engine.break_stale_locks = break_stale_lock
        if isinstance(wiring.engine.thresholds, Expectations):
            progress.model.limits = wiring.engine.thresholds
        progress.model.wait_s = wiring.engine.physical_timeout_s
        folder = wiring.log.folder
        result = await _walk(wiring)
        if result is None:
            return 2
        return _finish(result, console, as_json, folder, fold.proofs_not_done())

    with progress:
        return asyncio.run(main())


def resume_fix(
    session: Path | str, *, yes: bool, as_json: bool, break_stale_lock: bool = False
) -> int:
    """`fabwiz resume SESSION`: continue a cut-off session from where it stopped."""
    from screens.terminal import EventPrinter, TerminalOperator

    console = Console(stderr=as_json, highlight=False)
    operator = TerminalOperator(console, yes=yes)

    fold = SessionState()  # the session so far and what this run adds to it

    async def main() -> int:
        try:
            loaded = load_session(session)
            for w in loaded.warnings:
                console.print(f"[yellow]{escape(clean(w))}[/]")
            for ev in loaded.events:
                fold.apply(ev)
            wiring = await open_wizard(
                operator=operator,
                sinks=[EventPrinter(console), fold.apply],
                resume=loaded,
                command="resume",
                prompt=_prompt,
            )
        except FabwizError as exc:
            console.print(f"[red]fabwiz resume: {escape(clean(str(exc)))}[/]")
            return 2
        wiring.engine.break_stale_locks = break_stale_lock
        folder = wiring.log.folder
        result = await _walk(wiring)
        if result is None:
            return 2
        return _finish(result, console, as_json, folder, fold.proofs_not_done())

    return asyncio.run(main())


def _prompt(text: str) -> str:
    import click

    return str(click.prompt(text, hide_input=True, err=True))
