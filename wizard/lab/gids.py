"""RoCE GID tables per RDMA device, built the way mlx5 and the RDMA core build them.

Index 0 and 1 are the default GID (fe80:: plus the EUI-64 of the netdev MAC) as RoCE v1 and v2,
present whatever IPv6 setting the netdev has. Every address then adds a v1 and a v2 entry in the
order it was added: netplan adds a netdev's addresses in the order it lists them, so with IPv4
listed first the IPv4-mapped entries sit at 2 and 3 and global IPv6 after them; an IPv6 address
listed first, or a node whose scenario says its IPv6 addresses were added first
(`facts.nodes.<node>.ipv6_first`), shifts the IPv4 entries up. The table is what
`/sys/class/infiniband/<dev>/ports/1/gids/<n>`, `gid_attrs/types/<n>`, `gid_attrs/ndevs/<n>`,
`show_gids` and perftest read.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass

from wizard.lab.world import NodeState, RailState, World

TABLE_LEN = 255  # gid_tbl_len of a ConnectX-7 RoCE port
V1 = "IB/RoCE v1"
V2 = "RoCE v2"
ZERO = bytes(16)
_PATH = re.compile(
    r"^/sys/class/infiniband/([^/]+)/ports/1/(gids|gid_attrs/types|gid_attrs/ndevs)/(\d+)$"
)


@dataclass(frozen=True, slots=True)
class Gid:
    index: int
    raw: bytes
    type: str  # V1 or V2
    netdev: str

    @property
    def version(self) -> str:
        return "v2" if self.type == V2 else "v1"

    @property
    def ipv4(self) -> str:
        """The IPv4 address of an IPv4-mapped GID ("" otherwise)."""
        if self.raw[:12] == bytes(10) + b"\xff\xff":
            return str(ipaddress.IPv4Address(self.raw[12:]))
        return ""

    @property
    def link_local(self) -> bool:
        return self.raw[:2] == b"\xfe\x80"

    def sysfs(self) -> str:
        """`fe80:0000:0000:0000:...`: eight groups of four hex digits."""
        return ":".join(self.raw[i : i + 2].hex() for i in range(0, 16, 2))

    def perftest(self) -> str:
        """perftest's `GID:` line: sixteen bytes in decimal, at least two digits each."""
        return ":".join(f"{b:02d}" for b in self.raw)


def default_gid(mac: str) -> bytes:
    b = [int(x, 16) for x in mac.split(":")]
    b[0] ^= 0x02
    eui = bytes([b[0], b[1], b[2], 0xFF, 0xFE, b[3], b[4], b[5]])
    return b"\xfe\x80" + bytes(6) + eui


def table(world: World, node: NodeState, rail: RailState) -> list[Gid]:
    """The populated GID entries of `rail`'s RDMA device, index order."""
    default = default_gid(rail.mac)
    raws: list[bytes] = [default]
    v4 = [ipaddress.IPv4Address(a.split("/")[0]).packed for a in rail.addresses]
    mapped = [bytes(10) + b"\xff\xff" + p for p in v4]
    v6: list[bytes] = []
    for cidr in rail.ipv6:
        raw = ipaddress.IPv6Address(cidr.split("/")[0]).packed
        if raw != default:
            v6.append(raw)
    facts = world.facts.nodes.get(node.name)
    ipv6_first = rail.v6_first or bool(facts and facts.ipv6_first)
    raws += [*v6, *mapped] if ipv6_first else [*mapped, *v6]
    out: list[Gid] = []
    for raw in raws:
        for kind in (V1, V2):
            out.append(Gid(len(out), raw, kind, rail.netdev))
    return out


def entry(world: World, node: NodeState, rail: RailState, index: int) -> Gid | None:
    gids = table(world, node, rail)
    return gids[index] if 0 <= index < len(gids) else None


def best_index(world: World, node: NodeState, rail: RailState) -> int:
    """perftest's choice without `-x`: IPv4 first, then global scope, then RoCE v2."""
    best, score = -1, -1
    for g in table(world, node, rail):
        s = (4 if g.ipv4 else 0) + (2 if not g.link_local else 0) + (2 if g.type == V2 else 1)
        if s > score:
            best, score = g.index, s
    return best


def sysfs_read(world: World, node: NodeState, path: str) -> str | None:
    """A GID file's content, "" for an empty slot's attribute (EINVAL), None if no such file."""
    m = _PATH.match(path)
    if m is None:
        return None
    rail = next((r for r in node.rails if r.rdma == m.group(1)), None)
    index = int(m.group(3))
    if rail is None or index >= TABLE_LEN:
        return None
    g = entry(world, node, rail, index)
    what = m.group(2)
    if what == "gids":
        return (g.sysfs() if g else ":".join(["0000"] * 8)) + "\n"
    if g is None:
        return ""
    return (g.type if what == "gid_attrs/types" else g.netdev) + "\n"


def sysfs_paths(node: NodeState) -> list[str]:
    return [p for rail in node.rails for p in rail_paths(rail.rdma)]


@functools.cache
def rail_paths(rdma: str) -> tuple[str, ...]:
    """One RDMA device's GID table attributes (every slot, as sysfs lists them)."""
    base = f"/sys/class/infiniband/{rdma}/ports/1"
    return tuple(
        f"{base}/{what}/{i}"
        for what in ("gids", "gid_attrs/types", "gid_attrs/ndevs")
        for i in range(TABLE_LEN)
    )
