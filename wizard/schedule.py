"""Which rail tests run at once: every node pair over round-robin rounds of disjoint pairs, rail
tests packed into rounds that share no bottleneck (a NIC's direction, a PCIe half, an ISL
direction: at most one flow leaves a switch's port toward another switch at once). Pure
functions over names and rails; the sweep (`wizard.sweep`) runs the rounds."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence

from wizard.model import Rail, SwitchMap

__all__ = [
    "address_owners",
    "arp_flux_netdevs",
    "flow_uses",
    "flux_last",
    "halves_rounds",
    "home_switches",
    "pack_rounds",
    "rail_pairs",
    "ring_order",
    "round_robin",
    "rounds_bound",
    "subnet_members",
]


def flow_uses(
    client: Rail, server: Rail, switches: SwitchMap | None = None
) -> frozenset[tuple[str, ...]]:
    """What one single-QP rail test needs to itself to measure the rail: its client's send
    side and its server's receive side (the NIC's ~196 Gb/s a direction is less than two rails),
    both nodes' PCIe halves (both directions on one half cost each ~8%), and every ISL
    direction it crosses (two flows on one direction is `isl_shared_test`): the port each
    switch on its way sends it out of (`switches`), else, where that way is not known, the
    pair of switches."""
    uses = {
        ("tx", client.node),
        ("rx", server.node),
        ("half", client.node, client.half),
        ("half", server.node, server.half),
    }
    if client.switch and server.switch and client.switch != server.switch:
        hops = switches.egress(client.switch, server.switch) if switches is not None else ()
        if hops:
            uses.update(("isl", sw, port) for sw, port in hops)
        else:
            uses.add(("isl", client.switch, server.switch))
    return frozenset(uses)


def pack_rounds(
    flows: Sequence[tuple[Rail, Rail]], switches: SwitchMap | None = None
) -> list[list[tuple[Rail, Rail]]]:
    """(client, server) rail tests packed into as few rounds as run without sharing a
    bottleneck (`flow_uses`). A node may send on one PCIe half while it receives on the
    other, so a plane's test joins another plane's round where its nodes play the other parts
    on the other half. First fit, twice: in the order given, and the tests on the busiest
    bottleneck first (an ISL direction many tests cross needs as many rounds); the fewer
    rounds win."""
    needs = [flow_uses(c, s, switches) for c, s in flows]
    load: dict[tuple[str, ...], int] = {}
    for need in needs:
        for u in need:
            load[u] = load.get(u, 0) + 1
    given = list(range(len(flows)))
    busiest = sorted(given, key=lambda i: -max((load[u] for u in needs[i]), default=0))
    best: list[list[int]] | None = None
    for order in (given, busiest):
        packed = _first_fit(order, needs)
        if best is None or len(packed) < len(best):
            best = packed
    return [[flows[i] for i in sorted(r)] for r in best or []]


def _first_fit(
    order: Sequence[int], needs: Sequence[frozenset[tuple[str, ...]]]
) -> list[list[int]]:
    rounds: list[tuple[list[int], set[tuple[str, ...]]]] = []
    for i in order:
        need = needs[i]
        for planned, used in rounds:
            if used.isdisjoint(need):
                planned.append(i)
                used.update(need)
                break
        else:
            rounds.append(([i], set(need)))
    return [planned for planned, _ in rounds]


def rounds_bound(flows: Sequence[tuple[Rail, Rail]], switches: SwitchMap | None = None) -> int:
    """The fewest rounds any schedule of `flows` can take: the tests that need one bottleneck
    (`flow_uses`) each need a round of their own."""
    load: dict[tuple[str, ...], int] = {}
    for c, s in flows:
        for u in flow_uses(c, s, switches):
            load[u] = load.get(u, 0) + 1
    return max(load.values(), default=0)


def round_robin(nodes: list[str]) -> list[list[tuple[str, str]]]:
    """Every node pair once, as n-1 rounds of disjoint pairs (the circle method; an odd node
    count adds a bye). Pairs of one round can run at the same time."""
    ring: list[str | None] = list(nodes)
    if len(ring) % 2:
        ring.append(None)
    n = len(ring)
    rounds: list[list[tuple[str, str]]] = []
    for r in range(n - 1):
        pairs = []
        for i in range(n // 2):
            a, b = ring[i], ring[n - 1 - i]
            if a is not None and b is not None:
                pairs.append((a, b) if r % 2 == 0 or i else (b, a))
        if pairs:
            rounds.append(pairs)
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return rounds


def address_owners(rails: Iterable[Rail]) -> dict[str, list[Rail]]:
    """Each fabric IPv4 address and the rails (of any node) that hold it."""
    owners: dict[str, list[Rail]] = {}
    for r in rails:
        for cidr in r.addresses:
            owners.setdefault(cidr.split("/")[0], []).append(r)
    return owners


def arp_flux_netdevs(rails: Iterable[Rail]) -> set[str]:
    """The netdevs (`node/netdev`) whose RoCE frames ARP flux may send to a wrong MAC: one whose
    address another fabric netdev holds too (`host.duplicate-ip`), or one in a subnet another
    rail of its node is in (`host.same-subnet-rails`). A test to or from one stalls exactly as
    lossless QoS stalls it: frames leave, nothing downstream counts them, the ACKs time out."""
    rails = list(rails)
    out = {r.key for holders in address_owners(rails).values() if len(holders) > 1 for r in holders}
    for members in subnet_members(rails).values():
        keys = {r.key for r, _ip in members}
        if len(keys) > 1:
            out.update(keys)
    return out


def subnet_members(rails: Iterable[Rail]) -> dict[tuple[str, str], list[tuple[Rail, str]]]:
    """(node, IPv4 network) -> the node's rails in it, each with its address there."""
    nets: dict[tuple[str, str], list[tuple[Rail, str]]] = {}
    for r in rails:
        for cidr in r.addresses:
            try:
                net = str(ipaddress.ip_interface(cidr).network)
            except ValueError:
                continue
            nets.setdefault((r.node, net), []).append((r, cidr.split("/")[0]))
    return nets


def flux_last(nodes: Sequence[str], rails: Mapping[str, Sequence[Rail]]) -> list[str]:
    """`nodes` in their order, those with a rail ARP flux may hit (`arp_flux_netdevs`) last.
    `rail_pairs` then puts nodes with unique addresses together: lossless QoS and ARP flux
    stall a test alike, and a stall between two such nodes is one that QoS alone explains,
    where the first pairs in inventory order may each hold a suspect node."""
    flux = arp_flux_netdevs(r for n in nodes for r in rails.get(n, ()))
    suspect = {key.split("/")[0] for key in flux}
    return [n for n in nodes if n not in suspect] + [n for n in nodes if n in suspect]


def rail_pairs(nodes: list[str]) -> list[list[tuple[str, str]]]:
    """Rounds of disjoint (client, server) pairs covering every node: (1,2),(3,4)...; an odd
    node out is paired with the first node in a second round."""
    first = [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes) - 1, 2)]
    rounds = [first] if first else []
    if len(nodes) % 2 == 1 and len(nodes) > 1:
        rounds.append([(nodes[-1], nodes[0])])
    return rounds


def home_switches(
    nodes: Sequence[str], rails: Mapping[str, Sequence[Rail]], port: int = 0
) -> dict[str, str | None]:
    """The switch each node's `port` is cabled to (its half-A rail's, else half B's), None
    where no rail of that port is placed on a switch."""
    out: dict[str, str | None] = {}
    for n in nodes:
        on = [r for r in rails.get(n, ()) if r.port == port and r.switch]
        out[n] = next((r.switch for r in sorted(on, key=lambda r: r.half)), None)
    return out


def halves_rounds(
    nodes: Sequence[str], switch_of: Mapping[str, str | None]
) -> list[list[tuple[str, str]]]:
    """Rounds of disjoint (client, server) pairs in which every node is a client once, for
    the both-halves test: two flows out of one node port, which one ISL direction cannot carry
    (~163.8 Gb/s of the node's ~196). A node is paired with a node of its own switch
    (`switch_of`: the switch its port 0 is cabled to, None where not known): (1,2),(3,4)...
    within each switch, a switch's odd node out with that switch's first node in a second
    round. Only a node alone on its switch is paired across an ISL (with the first node of
    another switch), each such pair in a round of its own."""
    groups: dict[str | None, list[str]] = {}
    for n in nodes:
        groups.setdefault(switch_of.get(n), []).append(n)
    first: list[tuple[str, str]] = []
    odd: list[tuple[str, str]] = []
    alone: list[str] = []
    for group in groups.values():
        first += [(group[i], group[i + 1]) for i in range(0, len(group) - 1, 2)]
        if len(group) % 2 == 1:
            if len(group) > 1:
                odd.append((group[-1], group[0]))
            else:
                alone.append(group[0])
    rounds = [r for r in (first, odd) if r]
    for n in alone:
        other = next((m for m in nodes if m != n), None)
        if other is not None:
            rounds.append([(n, other)])
    # every node a client once: pairs the other way, for the servers not yet a client
    sent = {a for r in rounds for a, _ in r}
    back: list[list[tuple[str, str]]] = []
    for r in rounds:
        again = [(b, a) for a, b in r if b not in sent]
        sent.update(b for b, _ in again)
        if again:
            back.append(again)
    return rounds + back


def ring_order(
    nodes: Sequence[str], switch_of: Mapping[str, str | None], switches: SwitchMap
) -> list[str]:
    """The rank order for NCCL, whose ring joins node k to node k+1 in rank order: the nodes
    grouped by switch, the switches in the order of a walk along the ISLs (a chain end to end,
    `switches` telling which are adjacent), so that the ring crosses each ISL direction once.
    The given order is kept within a switch, the first node stays rank 0 (a ring rotated is the
    same ring), and nodes on no known switch come last. In the order given, a ring over nodes
    interleaved across three switches crosses each ISL direction several times: a healthy lab
    of 16 nodes read 3.3 GB/s instead of 19.5."""
    order = list(nodes)
    known = [s for s in dict.fromkeys(switch_of.get(n) for n in order) if s]
    if len(known) < 2:
        return order
    adjacent = {s: [t for t in known if t != s and len(switches.egress(s, t)) == 1] for s in known}
    walk: list[str] = []

    def visit(s: str) -> None:
        walk.append(s)
        for t in adjacent[s]:
            if t not in walk:
                visit(t)

    for s in sorted(known, key=lambda s: len(adjacent[s]) > 1):  # a chain's end first
        if s not in walk:
            visit(s)
    rank = {s: i for i, s in enumerate(walk)}
    grouped = sorted(
        range(len(order)), key=lambda i: (rank.get(switch_of.get(order[i]) or "", len(rank)), i)
    )
    ring = [order[i] for i in grouped]
    first = ring.index(order[0])
    return ring[first:] + ring[:first]
