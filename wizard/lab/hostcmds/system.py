"""System management: `netplan` (generate, apply, try, get), `systemctl`, `systemd-run` timers
(on the lab clock), `reboot`/`poweroff`/`shutdown`, and the `docker` and `nmcli` front ends
(see `wizard.lab.docker`, `wizard.lab.nmprofiles`).
"""

from __future__ import annotations

import asyncio
import json

from wizard.lab.docker import run as docker_cli
from wizard.lab.hostcmds.interp import null
from wizard.lab.hostcmds.registry import Ctx, command
from wizard.lab.renderer import applied as renderer_applied
from wizard.lab.world import (
    NodeState,
    World,
)


@command("netplan")
async def _netplan(ctx: Ctx, args: list[str]) -> int:
    if not args:
        ctx.err("You need to specify a command\n")
        return 1
    if not ctx.root and args[0] in ("apply", "try", "generate"):
        ctx.err("Permission denied\n")
        return 1
    world, node = ctx.world, ctx.node
    if args[0] == "generate":
        _cfg, e = world.netplan_config(node)
        if e:
            ctx.err(e + "\n")
            return 1
        return 0
    if args[0] == "apply":
        e = world.apply_netplan(node)
        if e:
            ctx.err(e + "\n")
            return 1
        renderer_applied(world, node)
        return 0
    if args[0] == "try":
        return await _netplan_try(ctx, args)
    if args[0] == "get":
        cfg, _e = world.netplan_config(node)
        ctx.out(json.dumps({"network": {"ethernets": cfg}}, indent=2) + "\n")
        return 0
    ctx.err(f"netplan: invalid choice: '{args[0]}'\n")
    return 2


async def _netplan_try(ctx: Ctx, args: list[str]) -> int:
    """`netplan try [--timeout S]`: applied, then reverted unless ENTER comes before the timeout."""
    world, node = ctx.world, ctx.node
    timeout = 120.0
    if "--timeout" in args:
        timeout = float(args[args.index("--timeout") + 1])
    before = _netplan_snapshot(node)
    e = world.apply_netplan(node)
    if e:
        ctx.err(e + "\n")
        return 1
    ctx.out(
        "Do you want to keep these settings?\n\n\nPress ENTER before the timeout to "
        f"accept the new configuration\n\n\nChanges will revert in {int(timeout)} "
        "seconds\n"
    )
    if "\n" in ctx.stdin:
        ctx.out("Configuration accepted.\n")
        return 0
    await world.sleep(timeout)
    _netplan_restore(world, node, before)
    ctx.out("Reverting.\n")
    return 78


def _unit_verb(ctx: Ctx, verb: str, given: str, *, now: bool) -> int | None:
    """`systemctl VERB UNIT` for one unit: its exit status, or None when the verb leaves
    systemctl's status as the units before made it."""
    node, world = ctx.node, ctx.world
    unit = given if "." in given else given + ".service"
    path = f"/etc/systemd/system/{unit}"
    exists = path in node.files
    if verb in ("enable", "start", "restart") and not exists:
        ctx.err(f"Failed to {verb} unit: Unit file {unit} does not exist.\n")
        return 1
    if verb == "enable":
        node.enabled_units.add(unit)
        ctx.err(f"Created symlink /etc/systemd/system/multi-user.target.wants/{unit} → {path}.\n")
        if now:
            world.run_unit(node, unit)
    elif verb in ("start", "restart"):
        world.run_unit(node, unit)
    elif verb == "disable":
        node.enabled_units.discard(unit)
    elif verb == "is-enabled":
        enabled = unit in node.enabled_units
        ctx.out("enabled\n" if enabled else ("disabled\n" if exists else "not-found\n"))
        return 0 if enabled else 1
    elif verb in ("status", "is-active"):
        # a transient timer of systemd-run is active until it fires or is stopped
        timer = unit.endswith(".timer") and unit.removesuffix(".timer") in ctx.host.timers
        active = unit in node.enabled_units or timer
        ctx.out("active\n" if active else "inactive\n")
        return 0 if active else 3
    return None


def _netplan_snapshot(node: NodeState) -> list[tuple[list[str], list[str], int]]:
    return [(list(r.addresses), list(r.ipv6), r.mtu) for r in node.rails]


def _netplan_restore(
    world: World, node: NodeState, snap: list[tuple[list[str], list[str], int]]
) -> None:
    for r, (a, v6, mtu) in zip(node.rails, snap, strict=True):
        r.addresses, r.ipv6, r.mtu = a, v6, mtu
    if world.traffic is not None:
        world.traffic.recompute()


@command("systemctl")
async def _systemctl(ctx: Ctx, args: list[str]) -> int:
    words = [a for a in args if not a.startswith("-")]
    now = "--now" in args
    if not words:
        ctx.err("systemctl: missing verb\n")
        return 1
    verb, units = words[0], words[1:]
    if verb in ("daemon-reload", "enable", "disable", "start", "restart", "stop") and not ctx.root:
        ctx.err("Failed to " + verb + ": Interactive authentication required.\n")
        return 1
    node, world = ctx.node, ctx.world
    if verb == "daemon-reload":
        return 0
    if verb == "stop" and units and all(u.endswith(".timer") for u in units):
        for u in units:
            task = ctx.host.timers.pop(u.removesuffix(".timer"), None)
            if task is not None:
                task.cancel()
        return 0
    status = 0
    for given in units:
        unit_status = _unit_verb(ctx, verb, given, now=now)
        status = status if unit_status is None else unit_status
    if world.traffic is not None:
        world.traffic.recompute()
    world.changed(f"systemd:{node.name}")
    return status


@command("systemd-run")
async def _systemd_run(ctx: Ctx, args: list[str]) -> int:
    """`systemd-run --on-active=SECONDS --unit=NAME CMD...`: a transient timer that runs CMD when
    due (on the lab clock) unless `systemctl stop NAME.timer` comes first. fabwiz arms its timed
    revert of host fixes with it."""
    if not ctx.root:
        ctx.err("Failed to start transient timer unit: Interactive authentication required.\n")
        return 1
    delay: float | None = None
    unit = ""
    rest = list(args)
    while rest and rest[0].startswith("-"):
        opt = rest.pop(0)
        if opt.startswith("--on-active="):
            delay = float(opt.split("=", 1)[1].rstrip("s"))
        elif opt.startswith("--unit="):
            unit = opt.split("=", 1)[1]
        elif opt in ("--on-active", "--unit") and rest:
            value = rest.pop(0)
            if opt == "--on-active":
                delay = float(value.rstrip("s"))
            else:
                unit = value
        elif opt == "--":
            break
    if not rest:
        ctx.err("systemd-run: command line to execute required.\n")
        return 1
    unit = unit or f"run-u{len(ctx.host.timers) + 1}"
    if delay is None:
        return await ctx.host.exec(rest, ctx.out, ctx.err, "", root=True)
    host = ctx.host
    world = ctx.world
    command_line = list(rest)

    async def fire() -> None:
        await world.sleep(delay)
        host.timers.pop(unit, None)
        await host.exec(command_line, null, null, "", root=True)
        world.changed(f"systemd-run:{unit}")

    old = host.timers.pop(unit, None)
    if old is not None:
        old.cancel()
    host.timers[unit] = asyncio.ensure_future(fire())
    ctx.err(f"Running timer as unit: {unit}.timer\nWill run service as unit: {unit}.service\n")
    return 0


@command("reboot")
async def _reboot(ctx: Ctx, args: list[str]) -> int:
    return _power(ctx, "poweroff" if "-p" in args or "--poweroff" in args else "reboot")


@command("poweroff", "halt")
async def _poweroff(ctx: Ctx, args: list[str]) -> int:
    return _power(ctx, "reboot" if "--reboot" in args else "poweroff")


@command("shutdown")
async def _shutdown(ctx: Ctx, args: list[str]) -> int:
    return _power(ctx, "reboot" if "-r" in args or "--reboot" in args else "poweroff")


def _power(ctx: Ctx, kind: str) -> int:
    if not ctx.root:
        verb = "Reboot" if kind == "reboot" else "Power off"
        ctx.err(f"Call to {verb} failed: Interactive authentication required.\n")
        return 1
    if ctx.host.on_reboot is not None:
        ctx.host.on_reboot(ctx.node.name, kind)
    return 0


@command("docker")
async def _docker(ctx: Ctx, args: list[str]) -> int:
    return docker_cli(ctx.world, ctx.node, args, ctx.out, ctx.err)


@command("nmcli")
async def _nmcli(ctx: Ctx, args: list[str]) -> int:
    from wizard.lab import nmprofiles

    return nmprofiles.run(ctx.world, ctx.node, args, ctx.out, ctx.err, root=ctx.root)
