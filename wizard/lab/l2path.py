"""Layer 2 across the lab's switches: the inter-switch links and campus uplinks, the RSTP roles
they settle into (the campus LAN holds the root bridge), and the path of a frame from one node
rail to another (direct cable, one switch, an ISL, a chain of ISLs, or the campus detour).
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING

from wizard.lab.elements import End, Hop, L2Path

if TYPE_CHECKING:
    from wizard.lab.world import World


def isl(world: World, a: str, b: str) -> tuple[str, str] | None:
    """The ports of the inter-switch link between switches a and b, if cabled."""
    for c in world.cables:
        if c.a.kind == c.b.kind == "switch" and {c.a.name, c.b.name} == {a, b} and c.seated:
            mine, theirs = (c.a, c.b) if c.a.name == a else (c.b, c.a)
            return mine.port, theirs.port
    return None


def uplink(world: World, switch: str) -> str | None:
    for c in world.cables:
        for me, other in ((c.a, c.b), (c.b, c.a)):
            if me.kind == "switch" and me.name == switch and other.kind == "campus":
                return me.port
    return None


def compute_rstp(world: World) -> None:
    """Roles of ISL and campus uplink ports. The campus LAN holds the root bridge."""
    names = sorted(world.switches)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            ports = world.isl(a, b)
            if ports is None:
                continue
            up_a, up_b = world.uplink(a), world.uplink(b)
            sa, sb = world.switches[a], world.switches[b]
            if up_a is None or up_b is None:
                # one way out (or none): the ISL is a plain tree edge
                root_a = up_a is not None or (up_b is None and a < b)
                sa.set_port_role(ports[0], "designated-port" if root_a else "root-port")
                sb.set_port_role(ports[1], "root-port" if root_a else "designated-port")
                continue
            cost_a, cost_b = sa.path_cost(up_a), sb.path_cost(up_b)
            via_isl_a = sa.path_cost(ports[0]) + cost_b
            via_isl_b = sb.path_cost(ports[1]) + cost_a
            if via_isl_b < cost_b:  # b re-roots through the ISL
                sa.set_port_role(up_a, "root-port")
                sa.set_port_role(ports[0], "designated-port")
                sb.set_port_role(ports[1], "root-port")
                sb.set_port_role(up_b, "alternate-port")
            elif via_isl_a < cost_a:
                sb.set_port_role(up_b, "root-port")
                sb.set_port_role(ports[1], "designated-port")
                sa.set_port_role(ports[0], "root-port")
                sa.set_port_role(up_a, "alternate-port")
            else:  # both root through campus: the ISL closes a loop and one end blocks
                sa.set_port_role(up_a, "root-port")
                sb.set_port_role(up_b, "root-port")
                sa.set_port_role(ports[0], "designated-port")
                sb.set_port_role(ports[1], "alternate-port")


def path(world: World, src: str, src_port: int, dst: str, dst_port: int) -> L2Path:
    """The path of a frame from node `src`'s QSFP port to node `dst`'s."""
    if not (world.port_link(src, src_port) and world.port_link(dst, dst_port)):
        return L2Path(False, "no carrier")
    a = world.peer(End("node", src, f"port{src_port}"))
    b = world.peer(End("node", dst, f"port{dst_port}"))
    if a is None or b is None:
        return L2Path(False, "no cable")
    if a.kind == "node":
        if a == End("node", dst, f"port{dst_port}"):
            return L2Path(True)
        return L2Path(False, "direct cable goes elsewhere")
    if a.kind != "switch" or b.kind != "switch":
        return L2Path(False, "not cabled to the fabric")
    if a.name == b.name:
        return _one_switch(world, a, b)
    return _across_switches(world, a, b)


def _one_switch(world: World, a: End, b: End) -> L2Path:
    """Both legs on one switch: the bridge between its two ports."""
    fwd = world.switches[a.name].forwarding(a.port, b.port)
    if fwd.blocked or not fwd.same_bridge:
        return L2Path(False, fwd.reason or "not bridged")
    return L2Path(
        True,
        hops=(Hop(a.name, a.port, b.port, fwd.offloaded, fwd.lossless),),
        lossless=fwd.lossless,
        l2mtu=fwd.min_l2mtu,
        mtu=fwd.min_mtu,
    )


def _across_switches(world: World, a: End, b: End) -> L2Path:
    """Legs on two switches: their forwarding ISL, else a chain of ISLs, else the campus LAN."""
    isl = world.isl(a.name, b.name)
    sa, sb = world.switches[a.name], world.switches[b.name]
    blocked_roles = ("alternate-port", "backup-port", "disabled-port")
    if isl is not None and not (
        sa.port_role(isl[0]) in blocked_roles or sb.port_role(isl[1]) in blocked_roles
    ):
        return _over_isl(world, a, b, isl)
    route = _isl_route(world, a.name, b.name) if isl is None else None
    if route is not None:
        return _chain_path(world, route, a.port, b.port)
    up_a, up_b = world.uplink(a.name), world.uplink(b.name)
    if up_a is None or up_b is None:
        return L2Path(False, "no path between switches")
    f1 = sa.forwarding(a.port, up_a)
    f2 = sb.forwarding(up_b, b.port)
    return L2Path(
        True,
        hops=(
            Hop(a.name, a.port, up_a, f1.offloaded, f1.lossless),
            Hop(b.name, up_b, b.port, f2.offloaded, f2.lossless),
        ),
        lossless=f1.lossless or f2.lossless,
        l2mtu=1500,
        mtu=1500,
        detour=True,
    )


def _over_isl(world: World, a: End, b: End, isl: tuple[str, str]) -> L2Path:
    """Legs on two switches joined by a forwarding ISL (`isl`: its port on each)."""
    sa, sb = world.switches[a.name], world.switches[b.name]
    f1 = sa.forwarding(a.port, isl[0])
    f2 = sb.forwarding(isl[1], b.port)
    for f in (f1, f2):
        if f.blocked or not f.same_bridge:
            return L2Path(False, f.reason or "not bridged")
    return L2Path(
        True,
        hops=(
            Hop(a.name, a.port, isl[0], f1.offloaded, f1.lossless),
            Hop(b.name, isl[1], b.port, f2.offloaded, f2.lossless),
        ),
        lossless=f1.lossless or f2.lossless,
        l2mtu=min(f1.min_l2mtu, f2.min_l2mtu),
        mtu=min(f1.min_mtu, f2.min_mtu),
        isl=((a.name, b.name),),
    )


def arrival_ports(world: World, home: str) -> list[tuple[str, str]]:
    """(switch, port) where a frame flooded from a leg of switch `home` reaches each other
    switch: the port of the last forwarding ISL of the way from `home`, else (the ISLs do not
    join them) the campus uplink when both switches have one; a switch it cannot reach is
    left out."""
    out: list[tuple[str, str]] = []
    up_home = world.uplink(home)
    for name in sorted(world.switches):
        if name == home:
            continue
        route = _isl_route(world, home, name)
        if route is not None:
            ports = world.isl(route[-2], name)
            if ports is not None and world.switches[name].link(ports[1]).up:
                out.append((name, ports[1]))
            continue
        up = world.uplink(name)
        if up_home is not None and up is not None and world.switches[name].link(up).up:
            out.append((name, up))
    return out


def _isl_route(world: World, a: str, b: str) -> list[str] | None:
    """The switches from a to b across forwarding ISLs (a chain of more than two switches),
    shortest first; None when the ISLs do not join them."""
    blocked = ("alternate-port", "backup-port", "disabled-port")
    prev: dict[str, str] = {a: a}
    todo = [a]
    while todo:
        here = todo.pop(0)
        for there in sorted(world.switches):
            if there in prev:
                continue
            ports = world.isl(here, there)
            if ports is None or (
                world.switches[here].port_role(ports[0]) in blocked
                or world.switches[there].port_role(ports[1]) in blocked
            ):
                continue
            prev[there] = here
            todo.append(there)
    if b not in prev:
        return None
    route = [b]
    while route[-1] != a:
        route.append(prev[route[-1]])
    return route[::-1]


def _chain_path(world: World, route: list[str], first_port: str, last_port: str) -> L2Path:
    """A frame's path through every switch of `route`, entering at first_port."""
    hops: list[Hop] = []
    fwds = []
    ingress = first_port
    for i, name in enumerate(route):
        if i + 1 < len(route):
            ports = world.isl(name, route[i + 1])
            assert ports is not None
            egress, next_in = ports
        else:
            egress, next_in = last_port, ""
        f = world.switches[name].forwarding(ingress, egress)
        if f.blocked or not f.same_bridge:
            return L2Path(False, f.reason or "not bridged")
        hops.append(Hop(name, ingress, egress, f.offloaded))
        fwds.append(f)
        ingress = next_in
    return L2Path(
        True,
        hops=tuple(hops),
        lossless=any(f.lossless for f in fwds),
        l2mtu=min(f.min_l2mtu for f in fwds),
        mtu=min(f.min_mtu for f in fwds),
        isl=tuple(pairwise(route)),
    )
