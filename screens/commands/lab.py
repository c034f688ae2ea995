"""`fabwiz lab`: run the simulated GB10 + MikroTik lab in the foreground, for training.

`fabwiz lab [--scenario NAME|FILE] [--inventory-out PATH] [--time-scale X] [--state FILE]` starts
the SSH and RouterOS API servers on 127.0.0.1, writes the inventory (plus key, known_hosts,
switch password files and the control token) and then reads instructor commands on stdin
(`help` lists them: drain, reboot, recable, inject...). Ctrl-C stops it cleanly.
`fabwiz lab scenarios` lists the built-in scenarios; `fabwiz lab hands ACTION ...` performs an
action in a lab running in another terminal, through its control channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

import click
import platformdirs
import yaml

from wizard.errors import FabwizError


def _default_dir(scenario: str) -> Path:
    name = Path(scenario).stem if scenario.endswith((".yaml", ".yml")) else scenario
    return Path(platformdirs.user_state_dir("fabwiz")) / "lab" / name


def _show(result: Any) -> str:
    if isinstance(result, str):
        return result
    if isinstance(result, list):
        return "\n".join(str(x) for x in result)
    return yaml.safe_dump(result, sort_keys=False).rstrip()


async def _run_lab(
    scenario: str, inventory_out: Path | None, time_scale: float, state: Path | None
) -> int:
    from wizard.lab.lab import Lab

    if inventory_out is not None:
        directory, inv_name = inventory_out.parent, inventory_out.name
    else:
        directory, inv_name = _default_dir(scenario), "inventory.yaml"
    lab = Lab(
        scenario,
        directory=directory,
        time_scale=time_scale,
        state_file=state,
        inventory_name=inv_name,
    )
    await lab.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        click.echo(f"fabwiz lab: scenario {lab.scenario.name} ({lab.scenario.description})")
        if lab.resumed and state is not None:
            click.echo(f"  world restored from {state}")
        for name in lab.world.nodes:
            click.echo(f"  node   {name:<10} ssh  127.0.0.1:{lab.node_port(name)}")
        for name in lab.api:
            click.echo(f"  switch {name:<10} api  127.0.0.1:{lab.switch_port(name)}")
        click.echo(f"  control channel     {lab.control_address}")
        click.echo(f"inventory:   {lab.inventory_path}")
        click.echo(f"key:         {lab.key_path}")
        click.echo(f"known_hosts: {lab.known_hosts_path}")
        click.echo(
            f"try: ssh -i {lab.key_path} -o UserKnownHostsFile={lab.known_hosts_path} "
            f"-p {lab.node_port(next(iter(lab.world.nodes)))} {lab.user}@127.0.0.1 ibdev2netdev"
        )
        click.echo("type `help` for the lab's hands; Ctrl-C stops the lab")
        await _prompt(lab, stop)
    finally:
        await lab.stop()
        click.echo("fabwiz lab: stopped")
    return 0


async def _prompt(lab: Any, stop: asyncio.Event) -> None:
    """Read instructor commands from stdin (when there is one) until Ctrl-C or `quit`."""
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    reader_added = False
    if sys.stdin is not None and not sys.stdin.closed:
        try:
            fd = sys.stdin.fileno()

            def readable() -> None:
                line = sys.stdin.readline()
                lines.put_nowait(line if line else None)

            loop.add_reader(fd, readable)
            reader_added = True
        except (OSError, ValueError, NotImplementedError, PermissionError):
            reader_added = False
    try:
        stdin_open = reader_added
        while not stop.is_set():
            if not stdin_open:
                await stop.wait()
                break
            if sys.stdin.isatty():
                click.echo("lab> ", nl=False)
            getter = asyncio.ensure_future(lines.get())
            stopper = asyncio.ensure_future(stop.wait())
            done, _ = await asyncio.wait({getter, stopper}, return_when=asyncio.FIRST_COMPLETED)
            for t in (getter, stopper):
                if t not in done:
                    t.cancel()
            if stopper in done:
                break
            line = getter.result()
            if line is None:  # stdin closed: keep serving until a signal
                stdin_open = False
                continue
            words = shlex.split(line)
            if not words:
                continue
            if words[0] in ("quit", "exit", "stop"):
                break
            try:
                click.echo(_show(lab.dispatch(words[0], words[1:])))
            except FabwizError as exc:
                click.echo(f"error: {exc}", err=True)
    finally:
        if reader_added:
            with contextlib.suppress(Exception):
                loop.remove_reader(sys.stdin.fileno())


class _LabGroup(click.Group):
    """`fabwiz lab` runs the lab; `fabwiz lab scenarios|hands` are subcommands."""


@click.group(name="lab", cls=_LabGroup, invoke_without_command=True)
@click.option(
    "--scenario",
    default="healthy-4node-crs804",
    show_default=True,
    metavar="NAME|FILE",
    help="A built-in scenario (`fabwiz lab scenarios`) or a scenario YAML file.",
)
@click.option(
    "--inventory-out",
    type=click.Path(path_type=Path),
    help="Where to write the inventory (key, known_hosts and password files go beside it).",
)
@click.option(
    "--time-scale",
    type=float,
    default=1.0,
    show_default=True,
    help="Simulated seconds per wall second (bandwidth tests finish faster).",
)
@click.option(
    "--state",
    type=click.Path(path_type=Path),
    help="Keep the world in FILE (written after every change; restored on the next start).",
)
@click.pass_context
def lab(
    ctx: click.Context,
    scenario: str,
    inventory_out: Path | None,
    time_scale: float,
    state: Path | None,
) -> None:
    """Run the simulated GB10 + MikroTik lab in the foreground (for training)."""
    if ctx.invoked_subcommand is not None:
        return
    try:
        sys.exit(asyncio.run(_run_lab(scenario, inventory_out, time_scale, state)))
    except FabwizError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(0)


@lab.command(name="scenarios")
def scenarios() -> None:
    """List the built-in scenarios, one line each."""
    from wizard.lab.scenarios import list_builtin

    for info in list_builtin():
        click.echo(f"{info.name:<38} {info.description}")


@lab.command(name="hands", context_settings={"ignore_unknown_options": True})
@click.option(
    "-i",
    "--inventory",
    type=click.Path(path_type=Path),
    help="The inventory the running lab wrote (default: the default lab folder's).",
)
@click.option("--scenario", default="healthy-4node-crs804", hidden=True)
@click.option("--json", "as_json", is_flag=True, help="Print the lab's answer as JSON.")
@click.argument("action")
@click.argument("args", nargs=-1)
def hands(
    inventory: Path | None, scenario: str, as_json: bool, action: str, args: tuple[str, ...]
) -> None:
    """Perform ACTION in a running lab: status, drain NODE, reboot NODE, recable NODE PORT DEST,
    unplug NODE PORT, reseat NODE PORT, power-off/power-on NODE, firmware NODE,
    reboot-switch SW, inject FAULT [TARGET...], help."""
    from wizard.lab.control import call

    path = inventory or _default_dir(scenario) / "inventory.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        click.echo(f"error: cannot read {path}: {exc.strerror}", err=True)
        sys.exit(2)
    link = data.get("lab") if isinstance(data, dict) else None
    if not isinstance(link, dict) or "control" not in link:
        click.echo(f"error: {path} is not an inventory written by a running lab", err=True)
        sys.exit(2)
    token_path = path.parent / str(link.get("token_file", "control.token"))
    try:
        token = token_path.read_text(encoding="utf-8").strip()
        result = asyncio.run(call(str(link["control"]), token, action, *args))
    except OSError as exc:
        click.echo(f"error: cannot read {token_path}: {exc.strerror}", err=True)
        sys.exit(2)
    except FabwizError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    click.echo(json.dumps(result, indent=2) if as_json else _show(result))
