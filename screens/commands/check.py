"""`fabwiz check (-i INVENTORY | --lab NAME|FILE) [--json] [--perf] [--accept-new-host-keys]`.

The first verdict a technician gets: every read-only check run across all nodes and switches at
once, with evidence. `--perf` adds single-QP ib_write_bw per rail and one NCCL run. `--lab`
starts the simulated lab in-process with that scenario, checks it and stops it.
Exit codes: 0 healthy, 1 findings, 2 nothing could be checked (bad inventory, all unreachable).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from wizard.errors import FabwizError, InventoryError
from wizard.model import Evidence, Measurement, Status, Verdict
from wizard.pipeline import run_checks

if TYPE_CHECKING:
    from screens.progress import HeadlessProgress
    from wizard.events import Event
    from wizard.inventory import Inventory
    from wizard.probes import Observations

# The sweep's modules (the checks, the inventory models, the transports) are imported when the
# command runs, not when `fabwiz --help` or `fabwiz check --help` lists it.

UNREACHABLE = "preflight.unreachable"  # not a FAULTS.md id: a target the sweep could not reach


@dataclass
class CheckReport:
    """Everything `fabwiz check` prints, as data (the JSON shape of DESIGN.md plus extras)."""

    verdicts: list[Verdict]
    nodes: list[dict[str, Any]]
    switches: list[dict[str, Any]]
    measurements: list[Measurement] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    checked: bool = True
    seconds: float = 0.0
    measured: bool = False  # bandwidth was measured (--perf)

    @property
    def findings(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.status != Status.PASS]

    @property
    def healthy(self) -> bool:
        return self.checked and not any(v.is_finding for v in self.verdicts)

    @property
    def exit_code(self) -> int:
        if not self.checked:
            return 2
        return 0 if self.healthy else 1

    def to_json(self) -> dict[str, Any]:
        return {
            "healthy": self.healthy,
            "findings": [
                {
                    "fault": v.fault,
                    "status": str(v.status),
                    "targets": list(v.targets),
                    "summary": v.summary,
                    "evidence": [e.to_json() for e in v.evidence],
                }
                for v in self.findings
            ],
            "nodes": self.nodes,
            "switches": self.switches,
            "measurements": [
                {
                    "kind": m.kind,
                    "target": m.target,
                    "value": m.value,
                    "unit": m.unit,
                    "valid": m.valid,
                    "reason": m.reason,
                }
                for m in self.measurements
            ],
            "warnings": self.warnings,
            "measured": self.measured,
        }


def merge(verdicts: list[Verdict]) -> list[Verdict]:
    """One verdict per fault id: the worst status, all targets, all evidence (a config check and
    a traffic check may both speak about the same id)."""
    by: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by.setdefault(v.fault, []).append(v)
    out: list[Verdict] = []
    for fault, vs in by.items():
        worst = max(vs, key=lambda v: v.status.severity)
        if len(vs) == 1:
            out.append(worst)
            continue
        targets = tuple(dict.fromkeys(t for v in vs if v.status != Status.PASS for t in v.targets))
        evidence = tuple(
            e for v in sorted(vs, key=lambda v: -v.status.severity) for e in v.evidence
        )
        out.append(dataclasses.replace(worst, fault=fault, targets=targets, evidence=evidence))
    return out


async def run_check(
    inv: Inventory,
    *,
    perf: bool = False,
    quick: bool = False,
    accept_new_host_keys: bool = False,
    prompt: Callable[[str], str] | None = None,
    sink: Callable[[Event], None] | None = None,
    ssh_config: str | Path | None = "~/.ssh/config",
    clock_rate: float = 1.0,
) -> CheckReport:
    """Sweep the fabric of `inv`, judge every check, return the report (no printing).
    `clock_rate`: the targets' seconds per wall second (a lab's time scale; 1 on a rack)."""
    import time

    from wizard.transports.ssh import SshTarget, SshTransport
    from wizard.transports.sshlib import load_asyncssh

    t0 = time.monotonic()
    passwords, password_errors = _switch_passwords(inv, prompt)
    ssh = SshTransport(
        [SshTarget.from_spec(n) for n in inv.nodes],
        accept_new_host_keys=accept_new_host_keys,
        ssh_config=ssh_config,
    )
    # the handshakes first, as soon as asyncssh is loaded: everything else `check` loads
    # (the API client, the sweep, the checks) loads while their round trips are in flight
    load_asyncssh()
    ssh.start(n.name for n in inv.nodes)
    switches: dict[str, Any] = {}
    try:
        await asyncio.sleep(0)  # the connections are opening: the nodes answer meanwhile
        expectations = _expectations(inv)
        probes_for, sweeper_class = await _loading_sweep()
        switches = _switch_transports(inv, passwords)
        for api in switches.values():
            api.start()
        sweeper = sweeper_class(
            ssh=ssh,
            nodes=[n.name for n in inv.nodes],
            switches=switches,
            sink=sink,
            tool_paths={n.name: n.tools for n in inv.nodes if n.tools},
            limits=expectations,
        )
        sweeper.clock_rate = clock_rate  # when a rail test's data ends, and CPU sampling
        sweeper.open()  # takes over the handshakes and logins under way
        listed = probes_for(traffic=perf)
        sweeping = asyncio.ensure_future(sweeper.sweep(listed))
        # the checks load once the handshakes are through (each holds the loop while it loads):
        # the nodes are then running their scripts, which takes them longer than the loading
        await sweeper.opened()
        try:
            loaded = await asyncio.to_thread(_load_checks, perf)
        finally:
            obs = await sweeping
        from screens.cli import startup_done

        startup_done()  # everything `check` needs is loaded
        if loaded.probes != listed:  # a stale list: the checks' own probes, all of them
            obs = await sweeper.sweep(loaded.probes)
        if password_errors:
            obs = dataclasses.replace(obs, unreachable={**obs.unreachable, **password_errors})
        warnings = list(inv.warnings)
        if perf:
            obs = await _measure(sweeper, obs, quick=quick, warnings=warnings)
    finally:
        await ssh.close()
        for t in switches.values():
            await t.close()
    verdicts, rails = _judge(inv, loaded, obs, sweeper.rails, expectations)
    return CheckReport(
        verdicts=merge(verdicts),
        nodes=_nodes_json(inv, obs, rails),
        switches=_switches_json(inv, obs),
        measurements=list(obs.measurements),
        warnings=warnings,
        checked=len(obs.unreachable) < len(inv.nodes) + len(inv.switches),
        seconds=time.monotonic() - t0,
        measured=any(m.valid for m in obs.measurements),
    )


def _expectations(inv: Inventory) -> Any:
    from flows.expectations import DEFAULT

    try:
        return DEFAULT.with_overrides(inv.expectations)
    except KeyError as exc:
        raise InventoryError(
            f"unknown expectation {exc}", path=str(inv.path), field="expectations"
        ) from None


def _switch_passwords(
    inv: Inventory, prompt: Callable[[str], str] | None
) -> tuple[dict[str, str | None], dict[str, str]]:
    """Each switch's password (asked before any connection), and the switches without one."""
    from wizard.inventory import resolve_password

    passwords: dict[str, str | None] = {}
    errors: dict[str, str] = {}
    for s in inv.switches:
        try:
            passwords[s.name] = resolve_password(s, prompt=prompt)
        except InventoryError as exc:
            errors[s.name] = str(exc)
    return passwords, errors


def _switch_transports(inv: Inventory, passwords: dict[str, str | None]) -> dict[str, Any]:
    from wizard.transports.routeros import RouterOsTarget, RouterOsTransport

    return {
        s.name: RouterOsTransport(RouterOsTarget.from_spec(s, passwords[s.name]))
        for s in inv.switches
        if s.name in passwords
    }


async def _measure(
    sweeper: Any, obs: Observations, *, quick: bool, warnings: list[str]
) -> Observations:
    """--perf: rail tests (and the fabric's ping matrix), then NCCL, as observations."""
    expectations = sweeper.limits
    reachable = [n for n in sweeper.nodes if n not in obs.unreachable]
    sweeper.nodes = reachable
    measurements: list[Measurement] = []
    if len(reachable) < 2:
        return dataclasses.replace(obs, measurements=())
    measurements.extend(await sweeper.rail_tests(quick=quick))
    if not quick:
        measurements.extend(await sweeper.fabric_tests())
        obs = dataclasses.replace(obs, traffic={"ping": list(sweeper.pings)})
    nccl, _res = await sweeper.nccl_test()
    measurements.append(nccl)
    pair, _res = await sweeper.nccl_test(op="sendrecv_perf", nodes=reachable[:2])
    job, _res = await sweeper.nccl_test(mode="job")
    measurements += [pair, job]
    gap = _job_gap(nccl, job, expectations)
    if gap:
        warnings.append(gap)
    return dataclasses.replace(obs, measurements=tuple(measurements))


def _judge(
    inv: Inventory, loaded: _Loaded, obs: Observations, rails: Any, expectations: Any
) -> tuple[list[Verdict], Any]:
    """Every check's verdict on the observations, and one per target that could not be seen;
    and the rails they were judged on."""
    nodes = [n.name for n in inv.nodes]
    ctx = loaded.make_context(
        obs,
        nodes=nodes,  # unreachable ones included: their verdicts say `unknown` (flows.unseen)
        switches=[s.name for s in inv.switches],
        expectations=expectations,
        cabling=inv.cabling,
        management={s.name: tuple(s.management_ports) for s in inv.switches},
        addressing={"pattern": inv.addressing_pattern},
        known_good_firmware=inv.known_good_firmware,
        discovered=rails,
        nccl_devices=inv.nccl_devices,
    )
    # where the real job runs (its container or process), as the wizard's walk reads it
    ctx = dataclasses.replace(
        ctx,
        jobs={n.name: n.job_container for n in inv.nodes if n.job_container},
        job_processes={n.name: n.job_process for n in inv.nodes if n.job_process},
    )
    verdicts = run_checks(loaded.checks, obs, ctx)
    for target, error in sorted(obs.unreachable.items()):
        kind = "node" if target in nodes else "switch"
        verdicts.append(
            Verdict(
                fault=UNREACHABLE,
                status=Status.UNKNOWN,
                summary=f"the {kind} {target} could not be checked",
                targets=(target,),
                evidence=(Evidence(target, "connect", error, "reachable", Status.UNKNOWN),),
                check="sweep",
            )
        )
    return verdicts, ctx.rails


def _switches_json(inv: Inventory, obs: Observations) -> list[dict[str, Any]]:
    return [
        {
            "name": s.name,
            "host": s.host,
            "reachable": s.name not in obs.unreachable,
            "error": obs.unreachable.get(s.name),
        }
        for s in inv.switches
    ]


@dataclass
class _Loaded:
    """What `check` loads while the sweep runs: every check with its probes."""

    checks: list[Any]
    probes: list[Any]
    make_context: Callable[..., Any]


async def _loading_sweep() -> tuple[Callable[..., Any], Any]:
    """The sweep, its probe manifest and the switches' API client, imported in a thread: the
    loop drives the handshakes under way meanwhile (each import would otherwise hold them up
    until it is done)."""

    def load() -> tuple[Callable[..., Any], Any]:
        from flows.probe_manifest import probes_for
        from wizard.sweep import Sweeper
        from wizard.transports import routeros  # noqa: F401  # the switches' API client

        return probes_for, Sweeper

    return await asyncio.to_thread(load)


def _load_checks(perf: bool) -> _Loaded:
    """Every check (and their probes): the largest import of `check`."""
    from flows.registry import checks_for, make_context, probes_of

    checks = checks_for(traffic=perf)
    return _Loaded(list(checks), list(probes_of(checks)), make_context)


def _nodes_json(inv: Inventory, obs: Observations, rails: Any) -> list[dict[str, Any]]:
    out = []
    for n in inv.nodes:
        out.append(
            {
                "name": n.name,
                "host": n.address,
                "reachable": n.name not in obs.unreachable,
                "error": obs.unreachable.get(n.name),
                "rails": [
                    {
                        "netdev": r.netdev,
                        "rdma": r.rdma,
                        "port": r.port,
                        "half": r.half,
                        "pci": r.pci,
                        "mac": r.mac,
                        "addresses": list(r.addresses),
                        "mtu": r.mtu,
                        "up": r.up,
                        "speed_mbps": r.speed_mbps,
                        "switch": r.switch,
                        "switch_port": r.switch_port,
                    }
                    for r in rails.get(n.name, ())
                ],
            }
        )
    return out


async def _check_lab(scenario: str, **kw: Any) -> CheckReport:
    from wizard.inventory import load_inventory
    from wizard.lab.lab import Lab

    async with Lab(scenario, time_scale=kw.pop("time_scale")) as lab:
        inv = load_inventory(lab.inventory_path)
        return await run_check(inv, ssh_config=None, clock_rate=lab.time_scale, **kw)


@click.command(name="check")
@click.option("-i", "--inventory", type=click.Path(path_type=Path), help="The inventory YAML.")
@click.option("--lab", "lab", metavar="NAME|FILE", help="Check a built-in lab scenario (or file).")
@click.option("--json", "json_out", is_flag=True, help="Print one JSON object (DESIGN.md shape).")
@click.option("--perf", is_flag=True, help="Also run ib_write_bw per rail and one NCCL test.")
@click.option(
    "--quick",
    is_flag=True,
    help="With --perf: disjoint node pairs only (one round), not every pair of every plane.",
)
@click.option(
    "--accept-new-host-keys",
    is_flag=True,
    help="Accept and record host keys not yet in known_hosts (changed keys are still refused).",
)
@click.option(
    "--time-scale",
    type=float,
    default=25.0,  # the lab's (`screens.compose.LAB_TIME_SCALE`), as `fabwiz fix --lab` runs it
    show_default=True,
    help="With --lab: simulated seconds per wall second (higher: faster, but a stalled test "
    "gives up after 0.54 lab seconds and may end before its counters are read).",
)
def check(
    *,
    inventory: Path | None,
    lab: str | None,
    json_out: bool,
    perf: bool,
    quick: bool,
    accept_new_host_keys: bool,
    time_scale: float,
) -> None:
    """Headless read-only sweep of every check; exit 0 healthy, 1 findings, 2 nothing checked."""
    if (inventory is None) == (lab is None):
        click.echo("error: give exactly one of -i INVENTORY or --lab NAME|FILE", err=True)
        sys.exit(2)

    def prompt(question: str) -> str:
        if not sys.stdin.isatty():
            raise InventoryError("no terminal to ask the password on", path="switch")
        return str(click.prompt(question, hide_input=True, err=True))

    import contextlib

    from flows.expectations import DEFAULT
    from screens.progress_lines import PlainProgress, ProgressModel

    model = ProgressModel()
    # plain phase lines on stderr with --json (which loads no rich at all) or off a terminal
    progress: HeadlessProgress | PlainProgress = PlainProgress(sys.stderr, model)
    if not json_out:
        from screens.progress import progress_for

        progress = progress_for(as_json=False, model=model)
    try:
        if lab is not None:
            with progress:
                report = _run(
                    _check_lab(
                        lab,
                        perf=perf,
                        quick=quick,
                        accept_new_host_keys=accept_new_host_keys,
                        prompt=prompt,
                        time_scale=time_scale,
                        sink=progress,
                    )
                )
        else:
            assert inventory is not None
            from flows.expectations import validate_overrides
            from wizard.inventory import load_inventory

            inv = load_inventory(inventory, expectations=validate_overrides)
            from wizard.inventory_files import require_identity_files

            require_identity_files(inv)  # about to connect: a missing key is named here
            with contextlib.suppress(KeyError):  # run_check names an unknown key
                model.limits = DEFAULT.with_overrides(inv.expectations)
            with progress:
                report = _run(
                    run_check(
                        inv,
                        perf=perf,
                        quick=quick,
                        accept_new_host_keys=accept_new_host_keys,
                        prompt=prompt,
                        sink=progress,
                    )
                )
    except FabwizError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    if json_out:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        from screens.console import make_console, print_report  # rich: only to print

        print_report(make_console(), report)
    from screens.cli import exit_now

    exit_now(report.exit_code)


def _run(main: Coroutine[Any, Any, CheckReport]) -> CheckReport:
    """`asyncio.run(main)`, the report handed over outside the run's task. As a run ends,
    asyncio puts Python's own ctrl-c handler back, and `signal.signal` then tries the handler it
    replaced (which holds the finished task) as a `Handlers` member: the error it builds
    internally holds that task's repr, which holds the whole report's (~1 ms a node)."""
    out: list[CheckReport] = []

    async def run() -> None:
        out.append(await main)

    asyncio.run(run())
    return out[0]


def _job_gap(proved: Measurement, job: Measurement, expectations: Any) -> str | None:
    """What to say when NCCL with the job's own environment falls short of the canonical run."""
    if not (proved.valid and job.valid) or expectations.band(job.value, proved.value) == "pass":
        return None
    return (
        f"NCCL with the job's own environment reaches {job.value:.2f} GB/s busbw, against "
        f"{proved.value:.2f} GB/s with seed 000's launch: the workload does not get what the "
        "fabric can do; compare its NCCL_IB_HCA / NCCL_SOCKET_IFNAME / /etc/nccl.conf with the "
        "canonical command"
    )
