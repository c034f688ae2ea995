"""Which rail tests run at once: every node pair over round-robin rounds of disjoint pairs, rail
tests packed into rounds that share no bottleneck (a NIC's direction, a PCIe half, an ISL
direction), and rounds split so that at most one flow crosses an ISL in one direction. Pure
functions over names and rails; the sweep (`wizard.sweep`) runs the rounds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from wizard.model import Rail
from wizard.sweep_traffic import rail_at

__all__ = ["flow_uses", "isl_safe", "pack_rounds", "rail_pairs", "round_robin"]


def isl_safe(
    schedule: list[list[tuple[str, str]]], by_node: Mapping[str, Sequence[Rail]], idx: int
) -> list[list[tuple[str, str]]]:
    """Split rounds so that at most one flow crosses an ISL in one direction at once: a single
    flow measures the rail (~109 Gb/s, seed 003); two sharing one direction (~81.9 each) is
    its own test (`isl_shared_test`)."""
    out: list[list[tuple[str, str]]] = []
    for pairs in schedule:
        subs: list[tuple[list[tuple[str, str]], dict[tuple[str, str], int]]] = []
        for a, b in pairs:
            ra, rb = rail_at(by_node.get(a, ()), idx), rail_at(by_node.get(b, ()), idx)
            way = (ra.switch or "", rb.switch or "") if ra and rb else ("", "")
            crossing = bool(way[0] and way[1] and way[0] != way[1])
            for sub, used in subs:
                if not crossing or used.get(way, 0) < 1:
                    sub.append((a, b))
                    if crossing:
                        used[way] = used.get(way, 0) + 1
                    break
            else:
                subs.append(([(a, b)], {way: 1} if crossing else {}))
        out.extend(sub for sub, _ in subs)
    return out


def flow_uses(client: Rail, server: Rail) -> frozenset[tuple[str, ...]]:
    """What one single-QP rail test needs to itself to measure the rail: its client's send
    side and its server's receive side (the NIC's ~196 Gb/s a direction is less than two rails),
    both nodes' PCIe halves (both directions on one half cost each ~8%), and the ISL direction
    it crosses (two flows on one direction is `isl_shared_test`)."""
    uses = {
        ("tx", client.node),
        ("rx", server.node),
        ("half", client.node, client.half),
        ("half", server.node, server.half),
    }
    if client.switch and server.switch and client.switch != server.switch:
        uses.add(("isl", client.switch, server.switch))
    return frozenset(uses)


def pack_rounds(flows: Sequence[tuple[Rail, Rail]]) -> list[list[tuple[Rail, Rail]]]:
    """(client, server) rail tests packed into as few rounds as run without sharing a
    bottleneck (`flow_uses`): each goes into the first round it fits, in order. A node may
    send on one PCIe half while it receives on the other, so a plane's test joins another
    plane's round where its nodes play the other parts on the other half."""
    rounds: list[tuple[list[tuple[Rail, Rail]], set[tuple[str, ...]]]] = []
    for client, server in flows:
        need = flow_uses(client, server)
        for planned, used in rounds:
            if not need & used:
                planned.append((client, server))
                used.update(need)
                break
        else:
            rounds.append(([(client, server)], set(need)))
    return [planned for planned, _ in rounds]


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


def rail_pairs(nodes: list[str]) -> list[list[tuple[str, str]]]:
    """Rounds of disjoint (client, server) pairs covering every node: (1,2),(3,4)...; an odd
    node out is paired with the first node in a second round."""
    first = [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes) - 1, 2)]
    rounds = [first] if first else []
    if len(nodes) % 2 == 1 and len(nodes) > 1:
        rounds.append([(nodes[-1], nodes[0])])
    return rounds
