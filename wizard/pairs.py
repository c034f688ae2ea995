"""Reading an all-pairs rail matrix the way an engineer does: who is the common node?

`ib_write_bw` between two nodes cannot say which end is slow. Measured between every pair, it
can: a node whose every pair is low while its partners reach line rate with other nodes is the
culprit (a degraded CX7 drags down every pair it is in and only those). A low pair whose two ends
each reach line rate with someone else is not a node at all: the path between them (switch
ports, cables, the ISL). A low pair whose two ends never reached line rate with anyone cannot be
split: both ends stay suspects. Judged per plane (rail index), since each plane is its own
network of cables and switch ports.

Pure functions over measurements: `flows/checks/perf_rails.py` names the culprit in its verdict,
`wizard/bisect.py` drains only it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from wizard.model import Measurement


def ends(m: Measurement) -> tuple[str, str] | None:
    """The (client, server) nodes of a rail measurement, None when it names fewer than two."""
    a, b = str(m.extra.get("client", "")), str(m.extra.get("server", ""))
    if not a or not b or a == b:
        return None
    return a, b


def plane(m: Measurement) -> str:
    """The plane (rail index) a measurement ran on: the client rail's port and half, else its
    netdev (every node names its rails alike)."""
    port, half = m.extra.get("port"), m.extra.get("half")
    if port is not None and half:
        return f"port{port}{half}"
    return str(m.extra.get("client_netdev", ""))


@dataclass(frozen=True, slots=True)
class Culprit:
    """A node low with every partner on a plane, while those partners reach line rate
    elsewhere on it."""

    node: str
    low: tuple[Measurement, ...]  # its low pairs
    clear: tuple[Measurement, ...]  # one line-rate pair of each partner without it


@dataclass(frozen=True, slots=True)
class Reading:
    culprits: tuple[Culprit, ...]  # by node name; one entry per node (planes merged)
    path: tuple[Measurement, ...]  # low pairs whose two ends each reach line rate elsewhere
    unsplit: tuple[Measurement, ...]  # low pairs no other pair can split: both ends suspect

    @property
    def nodes(self) -> tuple[str, ...]:
        """The nodes to suspect (and drain): the culprits, then both ends of an unsplit pair."""
        out = [c.node for c in self.culprits]
        for m in self.unsplit:
            for n in ends(m) or ():
                if n not in out:
                    out.append(n)
        return tuple(out)


def read(low: Sequence[Measurement], good: Iterable[Measurement]) -> Reading:
    """Read the matrix: `low` are the pairs below the gate (in the band being judged), `good`
    the pairs at line rate. A node is clear on a plane when it has a line-rate pair there."""
    clear: dict[str, dict[str, Measurement]] = {}  # plane -> node -> one line-rate pair
    for m in good:
        e = ends(m)
        if e is not None:
            for n in e:
                clear.setdefault(plane(m), {}).setdefault(n, m)
    found: dict[str, tuple[list[Measurement], list[Measurement]]] = {}
    path: list[Measurement] = []
    pending: list[Measurement] = []
    for m in low:
        e = ends(m)
        if e is None:
            continue
        ok = clear.get(plane(m), {})
        a, b = (n in ok for n in e)
        if a and b:
            path.append(m)
        elif a or b:
            node, mate = (e[1], e[0]) if a else e
            lows, clears = found.setdefault(node, ([], []))
            lows.append(m)
            if ok[mate] not in clears:
                clears.append(ok[mate])
        else:
            pending.append(m)
    unsplit = []
    for m in pending:
        e = ends(m) or ("", "")
        if e[0] in found or e[1] in found:
            # a pair of culprits, or a culprit and a node that never met anyone else on this
            # plane: the culprit explains it
            for n in e:
                if n in found:
                    found[n][0].append(m)
        else:
            unsplit.append(m)
    culprits = tuple(
        Culprit(n, tuple(lows), tuple(clears)) for n, (lows, clears) in sorted(found.items())
    )
    return Reading(culprits, tuple(path), tuple(unsplit))


def pair_names(ms: Iterable[Measurement]) -> str:
    """`spark1-spark2, spark2-spark3` for the evidence text, each pair once."""
    seen: list[str] = []
    for m in ms:
        e = ends(m)
        if e is not None:
            name = "-".join(sorted(e))
            if name not in seen:
                seen.append(name)
    return ", ".join(sorted(seen))
