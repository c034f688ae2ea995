"""iproute2 as fabwiz reads it: `ip [-j] [-p] [-br] [-s] addr|link [show] [dev DEV]` in the
real text and JSON layouts, `ip route` (see `wizard.lab.nodecmds`), the changes `ip` makes
(see `wizard.lab.hostnet`), and `ibdev2netdev`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from wizard.lab import hostnet, nodecmds
from wizard.lab.hostcmds.registry import MGMT_IF, MGMT_MAC, Ctx, command


@command("ibdev2netdev")
async def _ibdev2netdev(ctx: Ctx, args: list[str]) -> int:
    order = sorted(ctx.node.rails, key=lambda r: (r.half, r.port))
    for r in order:
        state = "Up" if ctx.world.rail_up(ctx.node.name, r) else "Down"
        ctx.out(f"{r.rdma} port 1 ==> {r.netdev} ({state})\n")
    return 0


def _interfaces(ctx: Ctx) -> list[dict[str, object]]:
    node, world = ctx.node, ctx.world
    ifs: list[dict[str, object]] = [
        {
            "ifindex": 1,
            "ifname": "lo",
            "flags": ["LOOPBACK", "UP", "LOWER_UP"],
            "mtu": 65536,
            "qdisc": "noqueue",
            "operstate": "UNKNOWN",
            "group": "default",
            "txqlen": 1000,
            "link_type": "loopback",
            "address": "00:00:00:00:00:00",
            "broadcast": "00:00:00:00:00:00",
            "_v4": [("127.0.0.1", 8, "host")],
            "_v6": [("::1", 128, "host")],
        },
        {
            "ifindex": 2,
            "ifname": MGMT_IF,
            "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
            "mtu": 1500,
            "qdisc": "mq",
            "operstate": "UP",
            "group": "default",
            "txqlen": 1000,
            "link_type": "ether",
            "address": MGMT_MAC.format(node.index),
            "broadcast": "ff:ff:ff:ff:ff:ff",
            "_v4": [(f"192.168.1.{100 + node.index}", 24, "global")],
            "_v6": [],
        },
    ]
    for k, r in enumerate(node.rails):
        up = world.rail_up(node.name, r)
        flags = (
            ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"]
            if up
            else ["NO-CARRIER", "BROADCAST", "MULTICAST", "UP"]
        )
        ifs.append(
            {
                "ifindex": 3 + k,
                "ifname": r.netdev,
                "flags": flags,
                "mtu": r.mtu,
                "qdisc": "mq",
                "operstate": "UP" if up else "DOWN",
                "group": "default",
                "txqlen": 1000,
                "link_type": "ether",
                "address": r.mac,
                "broadcast": "ff:ff:ff:ff:ff:ff",
                "_v4": [(a.split("/")[0], int(a.split("/")[1]), "global") for a in r.addresses],
                "_v6": [
                    (
                        a.split("/")[0],
                        int(a.split("/")[1]),
                        "link" if a.startswith("fe80") else "global",
                    )
                    for a in r.ipv6
                ],
            }
        )
    return ifs


def _addr_json(i: dict[str, object]) -> dict[str, object]:
    d = {k: v for k, v in i.items() if not k.startswith("_")}
    info: list[dict[str, object]] = []
    for ip, plen, scope in i["_v4"]:  # type: ignore[attr-defined]
        e: dict[str, object] = {"family": "inet", "local": ip, "prefixlen": plen}
        if scope == "global" and ip != "127.0.0.1":
            b = ip.split(".")
            e["broadcast"] = ".".join([*b[:3], "255"]) if plen == 24 else ip
        e.update(
            {
                "scope": scope,
                "label": d["ifname"],
                "valid_life_time": 4294967295,
                "preferred_life_time": 4294967295,
            }
        )
        info.append(e)
    for ip, plen, scope in i["_v6"]:  # type: ignore[attr-defined]
        info.append(
            {
                "family": "inet6",
                "local": ip,
                "prefixlen": plen,
                "scope": scope,
                "valid_life_time": 4294967295,
                "preferred_life_time": 4294967295,
            }
        )
    d["addr_info"] = info
    return d


@dataclass
class _IpOptions:
    json: bool = False
    pretty: bool = False
    brief: bool = False
    stats: bool = False


def _ip_options(args: list[str]) -> tuple[_IpOptions, list[str], str | None]:
    """ip's global options, the words from the object on, and the first unknown option."""
    opts = _IpOptions()
    rest: list[str] = []
    for a in args:
        if rest:
            rest.append(a)
        elif a in ("-j", "-json", "--json"):
            opts.json = True
        elif a in ("-p", "-pretty"):
            opts.pretty = True
        elif a in ("-br", "-brief"):
            opts.brief = True
        elif a in ("-s", "-stats", "-statistics"):
            opts.stats = True
        elif a in ("-4", "-6", "-d", "-details", "-c", "-color=never", "-o", "-oneline"):
            continue
        elif a.startswith("-"):
            return opts, rest, a
        else:
            rest.append(a)
    return opts, rest, None


def _unknown_verb(rest: list[str]) -> bool:
    """`ip addr|link VERB` with a verb that is neither a show nor a change fabwiz knows."""
    return (
        len(rest) >= 2
        and rest[1] not in ("show", "list", "lst", "sh", "ls", "l", "dev")
        and rest[0] in ("a", "addr", "address", "l", "link")
        and not rest[1].startswith("-")
    )


@command("ip")
async def _ip(ctx: Ctx, args: list[str]) -> int:
    opts, rest, bad = _ip_options(args)
    if bad is not None:
        ctx.err(f'Option "{bad}" is unknown, try "ip -help".\n')
        ctx.host.refuse(["ip", *args])
        return 255
    if not rest:
        ctx.err("Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }\n")
        return 255
    changed = hostnet.change(ctx.world, ctx.node, rest, ctx.root, ctx.err)
    if changed is not None:
        return changed
    if _unknown_verb(rest):
        sub = "address" if rest[0].startswith("a") else "link"
        ctx.err(f'Command "{rest[1]}" is unknown, try "ip {sub} help".\n')
        ctx.host.refuse(["ip", *args])
        return 255
    if rest[0] in ("r", "ro", "route"):
        return nodecmds.ip_route(ctx, rest[1:], opts.json)
    return _ip_show(ctx, rest, opts)


def _ip_show(ctx: Ctx, rest: list[str], opts: _IpOptions) -> int:
    """`ip addr|link [show] [dev DEV]`, in JSON or text."""
    obj = rest[0]
    dev = None
    if "dev" in rest:
        dev = rest[rest.index("dev") + 1]
    elif len(rest) >= 3 and rest[1] == "show":
        dev = rest[2]
    ifs = _interfaces(ctx)
    if dev is not None:
        ifs = [i for i in ifs if i["ifname"] == dev]
        if not ifs:
            ctx.err(f'Device "{dev}" does not exist.\n')
            return 1
    if obj in ("a", "addr", "address"):
        rows = [_addr_json(i) for i in ifs]
    elif obj in ("l", "link"):
        rows = [{k: v for k, v in i.items() if not k.startswith("_")} for i in ifs]
    else:
        ctx.err(f'Object "{obj}" is unknown, try "ip help".\n')
        return 1
    if opts.json:
        if opts.pretty:
            ctx.out(json.dumps(rows, indent=4) + "\n")
        else:
            ctx.out(json.dumps(rows, separators=(",", ":")) + "\n")
        return 0
    for i in ifs:
        if opts.brief:
            ctx.out(_brief_line(obj, i))
        else:
            _ip_text(ctx, obj, i, opts.stats)
    return 0


def _brief_line(obj: str, i: dict[str, object]) -> str:
    name, state = str(i["ifname"]), str(i["operstate"])
    if obj.startswith("l"):
        flags = ",".join(i["flags"])  # type: ignore[arg-type]
        return f"{name:<16} {state:<14} {i['address']} <{flags}> \n"
    addrs = [f"{a}/{p}" for a, p, _s in i["_v4"]]  # type: ignore[attr-defined]
    addrs += [f"{a}/{p}" for a, p, _s in i["_v6"]]  # type: ignore[attr-defined]
    return f"{name:<16} {state:<14} {' '.join(addrs)} \n"


def _ip_text(ctx: Ctx, obj: str, i: dict[str, object], stats: bool) -> None:
    """One interface of `ip addr` or `ip link` in iproute2's text layout."""
    name, state = str(i["ifname"]), str(i["operstate"])
    flags = ",".join(i["flags"])  # type: ignore[arg-type]
    mode = "mode DEFAULT " if obj.startswith("l") else ""
    ctx.out(
        f"{i['ifindex']}: {name}: <{flags}> mtu {i['mtu']} qdisc {i['qdisc']} state {state} "
        f"{mode}group default qlen 1000\n"
        f"    link/{i['link_type']} {i['address']} brd {i['broadcast']}\n"
    )
    if stats and obj.startswith("l"):
        ctx.out(hostnet.stats_lines(ctx.node.rail(name)))
    if obj.startswith("a"):
        for a, p, s in i["_v4"]:  # type: ignore[attr-defined]
            ctx.out(
                f"    inet {a}/{p} scope {s} {name}\n"
                "       valid_lft forever preferred_lft forever\n"
            )
        for a, p, s in i["_v6"]:  # type: ignore[attr-defined]
            ctx.out(
                f"    inet6 {a}/{p} scope {s} \n       valid_lft forever preferred_lft forever\n"
            )
