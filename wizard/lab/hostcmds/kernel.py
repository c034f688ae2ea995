"""The kernel's knobs and logs: `sysctl` (read, `-w`, `--system`), `dmesg` and `journalctl`
(`--list-boots` included).
"""

from __future__ import annotations

import time

from wizard.lab import hostnet
from wizard.lab.boots import list_boots
from wizard.lab.hostcmds.registry import Ctx, command


@command("sysctl")
async def _sysctl(ctx: Ctx, args: list[str]) -> int:
    node = ctx.node
    bad = hostnet.sysctl_bad_option(args)
    if bad:
        ctx.err(bad)
        ctx.out(hostnet.SYSCTL_USAGE)
        ctx.host.refuse(["sysctl", *args])
        return 0  # procps-ng 4.0 prints its usage and exits 0 on a bad option
    if "--system" in args:
        if not ctx.root:
            ctx.err("sysctl: permission denied on key 'net.ipv4.conf.all.arp_ignore'\n")
            return 1
        for path in sorted(p for p in node.files if p.startswith("/etc/sysctl.d/")):
            ctx.out(f"* Applying {path} ...\n")
        ctx.world.apply_sysctl_files(node)
        for path in sorted(p for p in node.files if p.startswith("/etc/sysctl.d/")):
            for line in node.files[path].splitlines():
                if "=" in line and not line.lstrip().startswith("#"):
                    k, _, v = line.partition("=")
                    ctx.out(f"{k.strip()} = {v.strip()}\n")
        ctx.world.changed(f"sysctl:{node.name}")
        return 0
    quiet = "-n" in args
    write = "-w" in args
    status = 0
    for a in (x for x in args if not x.startswith("-")):
        if "=" in a:
            if not ctx.root:
                ctx.err(f'sysctl: permission denied on key "{a.split("=")[0]}"\n')
                return 1
            k, _, v = a.partition("=")
            k = k.replace("/", ".")
            if not hostnet.sysctl_known(k):
                ctx.err(
                    f"sysctl: cannot stat /proc/sys/{k.replace('.', '/')}: No such file or directory\n"
                )
                status = 1
                continue
            node.sysctls[k] = v
            ctx.out(f"{k} = {v}\n")
            ctx.world.changed(f"sysctl:{node.name}")
            continue
        if write:
            ctx.err(f'sysctl: "{a}" must be of the form name=value\n')
            return 1
        key = a.replace("/", ".")
        if key not in node.sysctls:
            ctx.err(
                f"sysctl: cannot stat /proc/sys/{key.replace('.', '/')}: No such file or "
                "directory\n"
            )
            status = 255
            continue
        ctx.out(f"{node.sysctls[key]}\n" if quiet else f"{key} = {node.sysctls[key]}\n")
    return status


@command("dmesg")
async def _dmesg(ctx: Ctx, args: list[str]) -> int:
    if not ctx.root:
        ctx.err("dmesg: read kernel buffer failed: Operation not permitted\n")
        return 1
    for t, msg in ctx.node.dmesg:
        ctx.out(f"[{t:12.6f}] {msg}\n")
    return 0


@command("journalctl")
async def _journalctl(ctx: Ctx, args: list[str]) -> int:
    node = ctx.node
    bad = hostnet.journalctl_bad_option(args)
    if bad:
        ctx.err(bad)
        ctx.host.refuse(["journalctl", *args])
        return 1
    if "--list-boots" in args:
        ctx.out(list_boots(ctx.world, node, args))
        return 0
    for t, msg in node.dmesg:
        stamp = time.strftime("%b %d %H:%M:%S", time.gmtime(node.boot_time + t))
        ctx.out(f"{stamp} {node.name} kernel: {msg}\n")
    return 0
