"""The RoCE GID index for `ib_write_bw -x`, discovered per device and address, never assumed.

A ConnectX GID table lists, per RDMA device, link-local v1/v2 first, then one v1/v2 pair per
address of the netdev, in the order the addresses were added: "index 3" is only what a device
with one IPv4 address and no other IPv6 shows. IPv6 on a fabric netdev, or addresses added in
another order, shift it (FAULTS.md `host.ipv6-on-fabric`). fabwiz picks the RoCE v2 GID whose
IPv4 is the rail's address, from `show_gids`, or from sysfs when `show_gids` is missing:

    /sys/class/infiniband/rocep1s0f0/ports/1/gids/3:0000:0000:0000:0000:0000:ffff:0a09:0001
    /sys/class/infiniband/rocep1s0f0/ports/1/gid_attrs/types/3:RoCE v2
"""

from __future__ import annotations

import ipaddress
import re
import shlex

from wizard.errors import ParseError
from wizard.parsers.rdma import Gid, parse_show_gids

SHOW_GIDS = "show_gids"
_SYSFS = re.compile(
    r"^/sys/class/infiniband/(?P<dev>[^/]+)/ports/(?P<port>\d+)/"
    r"(?P<kind>gids|gid_attrs/types|gid_attrs/ndevs)/(?P<index>\d+):(?P<value>.*)$"
)


def sysfs_command(rdma: str) -> str:
    base = f"/sys/class/infiniband/{shlex.quote(rdma)}/ports/1"
    # empty table slots make the types file fail to read: that error is not the answer
    return f"grep -H . {base}/gids/* {base}/gid_attrs/types/* {base}/gid_attrs/ndevs/* 2>/dev/null"


def _ipv4_of(gid: str) -> str | None:
    try:
        addr = ipaddress.IPv6Address(gid)
    except ValueError:
        return None
    mapped = addr.ipv4_mapped
    return str(mapped) if mapped is not None else None


def parse_sysfs_gids(text: str) -> tuple[Gid, ...]:
    """`grep -H .` over a device's `gids/N`, `gid_attrs/types/N` and `gid_attrs/ndevs/N`."""
    gids: dict[tuple[str, int, int], dict[str, str]] = {}
    for line in text.splitlines():
        m = _SYSFS.match(line.strip())
        if m is None:
            continue
        key = (m["dev"], int(m["port"]), int(m["index"]))
        gids.setdefault(key, {})[m["kind"]] = m["value"].strip()
    out = []
    for (dev, port, index), attrs in sorted(gids.items()):
        gid, kind = attrs.get("gids", ""), attrs.get("gid_attrs/types", "")
        if not gid or not kind or set(gid.replace(":", "")) == {"0"}:
            continue  # an empty slot of the table
        version = "v2" if "v2" in kind else "v1"
        out.append(Gid(dev, port, index, gid, _ipv4_of(gid), version, attrs.get("gid_attrs/ndevs")))
    if not out:
        raise ParseError("no populated gids/N with a gid_attrs/types/N", tool="sysfs", raw=text)
    return tuple(out)


def roce_v2_index(gids: tuple[Gid, ...], device: str, ipv4: str) -> int | None:
    """The index of the RoCE v2 GID of `device` whose IPv4 is `ipv4` (None: not in the table)."""
    ip = ipv4.split("/", maxsplit=1)[0]
    for g in gids:
        if g.device == device and g.version == "v2" and (g.ipv4 or _ipv4_of(g.gid)) == ip:
            return g.index
    return None


def gids_from_show_gids(text: str) -> tuple[Gid, ...]:
    return parse_show_gids(text).gids
