"""`ping [-c N] [-s SIZE] [-I IFACE] [-M do] TARGET` over the lab's fabric: a reply needs a path
and, with `-M do`, a frame that fits every MTU on it.
"""

from __future__ import annotations

import asyncio

from wizard.lab.hostcmds.registry import MGMT_IF, Ctx, command
from wizard.lab.world import (
    RailState,
)


@command("ping")
async def _ping(ctx: Ctx, args: list[str]) -> int:
    count, size, iface, pmtu_do = 3, 56, None, False
    target = None
    it = iter(args)
    for a in it:
        if a == "-c":
            count = int(next(it, "3"))
        elif a == "-s":
            size = int(next(it, "56"))
        elif a == "-I":
            iface = next(it, None)
        elif a == "-M":
            pmtu_do = next(it, "") == "do"
        elif a in ("-W", "-w", "-i", "-t"):
            next(it, None)
        elif not a.startswith("-"):
            target = a
    if target is None:
        ctx.err("ping: usage error: Destination address required\n")
        return 2
    node, world = ctx.node, ctx.world
    src: RailState | None = None
    if iface:
        src = node.rail(iface)
        if src is None:
            for r in node.rails:
                if iface in r.ipv4:
                    src = r
        if src is None and iface != MGMT_IF:
            ctx.err(f"ping: SO_BINDTODEVICE {iface}: No such device\n")
            return 2
    else:
        for r in node.rails:
            for a in r.addresses:
                if _same_subnet(a, target):
                    src = r
    src_ip = src.ipv4[0] if src and src.ipv4 else f"192.168.1.{100 + node.index}"
    dev = src.netdev if src else MGMT_IF
    ctx.out(f"PING {target} ({target}) from {src_ip} {dev}: {size}({size + 28}) bytes of data.\n")
    local_mtu = src.mtu if src else 1500
    errors = received = 0
    lines: list[str] = []
    owners = world.owners(target)
    reach = False
    if src is not None and owners:
        for owner, rail in owners:
            if owner is node:
                reach = True
                break
            p = world.path(node.name, src.port, owner.name, rail.port)
            if not p.ok:
                continue
            big = size + 28
            sw_ok = all(h.offloaded for h in p.hops) or big <= p.mtu
            if big <= rail.mtu and big <= p.l2mtu and sw_ok:
                reach = True
                break
            if not pmtu_do:
                reach = True  # fragments get through
                break
    for seq in range(1, count + 1):
        if pmtu_do and size + 28 > local_mtu:
            lines.append(f"ping: local error: message too long, mtu={local_mtu}\n")
            errors += 1
        elif reach:
            rtt = 0.05 + world.rng.uniform(0, 0.03)
            lines.append(
                f"{size + 8} bytes from {target}: icmp_seq={seq} ttl=64 time={rtt:.3f} ms\n"
            )
            received += 1
    for line in lines:
        ctx.out(line)
    await asyncio.sleep(world.wall_seconds(max(0, count - 1) * 1.0))
    ms = int((count - 1) * 1000 + world.rng.uniform(20, 60))
    loss = 100 - received * 100 // count
    err_part = f", +{errors} errors" if errors else ""
    ctx.out(
        f"\n--- {target} ping statistics ---\n"
        f"{count} packets transmitted, {received} received{err_part}, {loss}% packet loss, "
        f"time {ms}ms\n"
    )
    if received:
        ctx.out("rtt min/avg/max/mdev = 0.054/0.060/0.069/0.006 ms\n")
    return 0 if received else 1


def _same_subnet(cidr: str, ip: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(ip) in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False
