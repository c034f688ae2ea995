"""`ping [-c N] [-i INTERVAL] [-s SIZE] [-I IFACE] [-M do] TARGET` over the lab's fabric: a
reply needs a path and, with `-M do`, a frame that fits every MTU on it. The echo requests go
INTERVAL apart (1 s by default; iputils 20240117 refuses less than 2 ms to a user, and keeps
whole milliseconds).
"""

from __future__ import annotations

from dataclasses import dataclass

from wizard.lab.hostcmds.registry import MGMT_IF, Ctx, command
from wizard.lab.world import NodeState, RailState, World


@dataclass
class _PingArgs:
    target: str | None = None
    count: int = 3
    size: int = 56
    iface: str | None = None
    pmtu_do: bool = False  # -M do: never fragment
    interval: float = 1.0  # -i, seconds between echo requests


def _ping_args(args: list[str]) -> _PingArgs:
    o = _PingArgs()
    it = iter(args)
    for a in it:
        if a == "-c":
            o.count = int(next(it, "3"))
        elif a == "-s":
            o.size = int(next(it, "56"))
        elif a == "-I":
            o.iface = next(it, None)
        elif a == "-M":
            o.pmtu_do = next(it, "") == "do"
        elif a == "-i":
            o.interval = int(float(next(it, "1")) * 1000) / 1000  # whole milliseconds
        elif a in ("-W", "-w", "-t"):
            next(it, None)
        elif not a.startswith("-"):
            o.target = a
    return o


def _source(node: NodeState, iface: str | None, target: str) -> RailState | None:
    """The rail a ping leaves from: the one `-I` names (by netdev or address), else the last one
    on the target's subnet; None for the management interface."""
    src: RailState | None = None
    if iface:
        src = node.rail(iface)
        if src is None:
            for r in node.rails:
                if iface in r.ipv4:
                    src = r
        return src
    for r in node.rails:
        for a in r.addresses:
            if _same_subnet(a, target):
                src = r
    return src


def _reaches(world: World, node: NodeState, src: RailState, target: str, o: _PingArgs) -> bool:
    """Whether an echo request of the asked size from `src` gets a reply from `target`."""
    for owner, rail in world.owners(target):
        if owner is node:
            return True
        p = world.path(node.name, src.port, owner.name, rail.port)
        if not p.ok:
            continue
        big = o.size + 28
        sw_ok = all(h.offloaded for h in p.hops) or big <= p.mtu
        if big <= rail.mtu and big <= p.l2mtu and sw_ok:
            return True
        if not o.pmtu_do:
            return True  # fragments get through
    return False


@command("ping")
async def _ping(ctx: Ctx, args: list[str]) -> int:
    o = _ping_args(args)
    target = o.target
    if target is None:
        ctx.err("ping: usage error: Destination address required\n")
        return 2
    if o.interval < 0.002 and not ctx.root:
        ctx.err(
            "ping: cannot flood, minimal interval for user must be >= 2 ms, "
            "use -i 0.002 (or higher)\n"
        )
        ctx.host.refuse(["ping", *args])
        return 2
    node, world = ctx.node, ctx.world
    src = _source(node, o.iface, target)
    if o.iface and src is None and o.iface != MGMT_IF:
        ctx.err(f"ping: SO_BINDTODEVICE {o.iface}: No such device\n")
        return 2
    size, count = o.size, o.count
    src_ip = src.ipv4[0] if src and src.ipv4 else f"192.168.1.{100 + node.index}"
    dev = src.netdev if src else MGMT_IF
    ctx.out(f"PING {target} ({target}) from {src_ip} {dev}: {size}({size + 28}) bytes of data.\n")
    local_mtu = src.mtu if src else 1500
    errors = received = 0
    reach = src is not None and _reaches(world, node, src, target, o)
    for seq in range(1, count + 1):
        if o.pmtu_do and size + 28 > local_mtu:
            ctx.out(f"ping: local error: message too long, mtu={local_mtu}\n")
            errors += 1
        elif reach:
            rtt = 0.05 + world.rng.uniform(0, 0.03)
            ctx.out(f"{size + 8} bytes from {target}: icmp_seq={seq} ttl=64 time={rtt:.3f} ms\n")
            received += 1
    await world.sleep(max(0, count - 1) * o.interval)
    ms = int((count - 1) * o.interval * 1000 + world.rng.uniform(20, 60))
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
