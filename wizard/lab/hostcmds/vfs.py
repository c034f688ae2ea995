"""The node's file system: the files it holds, plus the attributes the kernel generates
(`/sys/class/infiniband/*`, `/sys/class/net/*`, `/proc/...`), each read when opened, and the
GID tables of `wizard.lab.gids`. Globs list only the generated directories a pattern can reach.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from wizard.lab import gids, nodetools, procs
from wizard.lab.hostcmds.registry import KERNEL
from wizard.lab.world import (
    HW_COUNTERS,
    PORT_COUNTERS,
    NodeState,
    RailState,
    World,
)

if TYPE_CHECKING:
    from wizard.lab.hostcmds.interp import Host


def _const(text: str) -> Callable[[], str]:
    def read() -> str:
        return text

    return read


READ_INSTANT_WALL_S = 0.001  # counter files read this close together share one accounting


def _counter(world: World, rail: RailState, name: str) -> Callable[[], str]:
    def read() -> str:
        if world.traffic is not None:
            # one `grep` over a rail's counter files reads them within microseconds on a node;
            # the lab takes a wall millisecond or so for them: they share one accounting
            world.traffic.settle(fresh_within_s=READ_INSTANT_WALL_S * world.time_scale)
        return f"{rail.counters.get(name, 0)}\n"

    return read


def glob_match(paths: list[str], pattern: str) -> list[str]:
    """The paths a shell glob matches, sorted as bash sorts them (in the C locale)."""
    literal, rx = _glob_rx(pattern)
    return sorted(p for p in paths if p.startswith(literal) and rx.match(p))


@functools.lru_cache(maxsize=256)
def _glob_rx(pattern: str) -> tuple[str, re.Pattern[str]]:
    """A glob's literal head and its regular expression (a node reads the same few globs)."""
    return re.split(r"[*?\[]", pattern, maxsplit=1)[0], re.compile(fnmatch.translate(pattern))


def _rail_sysfs(world: World, rail: RailState, node: NodeState) -> dict[str, Callable[[], str]]:
    """One rail's sysfs attributes. Each is read when opened, like the kernel's: the link state
    and rate are worked out once per read of this rail, not for every rail of the node."""
    from wizard.lab.hostrdma import link_rate

    @functools.cache
    def link() -> tuple[bool, int]:
        up = world.rail_up(node.name, rail)
        mbps, _fec = link_rate(world, node, rail.port)
        return up, mbps

    def rate() -> str:
        up, mbps = link()
        ib = {200000: "200 Gb/sec (4X HDR)", 100000: "100 Gb/sec (4X EDR)"}
        return (ib.get(mbps, f"{mbps // 1000} Gb/sec (4X)") if up else "40 Gb/sec (4X QDR)") + "\n"

    def carrier_up() -> str:
        downs = rail.counters.get("link_down_events_phy", 0)
        return f"{(downs if link()[0] else max(0, downs - 1)) + 1}\n"

    def carrier_changes() -> str:
        downs = rail.counters.get("link_down_events_phy", 0)
        ups = downs if link()[0] else max(0, downs - 1)
        return f"{downs + ups + 1}\n"

    out: dict[str, Callable[[], str]] = {}
    base = f"/sys/class/infiniband/{rail.rdma}/ports/1"
    out[f"{base}/rate"] = rate
    out[f"{base}/state"] = lambda: "4: ACTIVE\n" if link()[0] else "1: DOWN\n"
    out[f"{base}/phys_state"] = lambda: "5: LinkUp\n" if link()[0] else "3: Disabled\n"
    for name in HW_COUNTERS:
        out[f"{base}/hw_counters/{name}"] = _counter(world, rail, name)
    for name in PORT_COUNTERS:
        out[f"{base}/counters/{name}"] = _counter(world, rail, name)
    net = f"/sys/class/net/{rail.netdev}"
    out[f"{net}/mtu"] = lambda: f"{rail.mtu}\n"
    out[f"{net}/address"] = lambda: f"{rail.mac}\n"
    out[f"{net}/operstate"] = lambda: "up\n" if link()[0] else "down\n"
    out[f"{net}/carrier"] = lambda: "1\n" if link()[0] else "0\n"
    out[f"{net}/speed"] = lambda: f"{link()[1]}\n" if link()[0] else "-1\n"
    # link-down events since boot: what the drain guard reads to see a link transition
    out[f"{net}/carrier_down_count"] = _counter(world, rail, "link_down_events_phy")
    out[f"{net}/carrier_up_count"] = carrier_up
    out[f"{net}/carrier_changes"] = carrier_changes
    for stat, src in (
        ("rx_bytes", "rx_bytes_phy"),
        ("tx_bytes", "tx_bytes_phy"),
        ("rx_packets", "rx_packets_phy"),
        ("tx_packets", "tx_packets_phy"),
    ):
        out[f"{net}/statistics/{stat}"] = _counter(world, rail, src)
    return out


def _node_sysfs(world: World, node: NodeState) -> dict[str, Callable[[], str]]:
    out: dict[str, Callable[[], str]] = {}
    out["/proc/sys/kernel/random/boot_id"] = lambda: node.boot_id + "\n"
    out["/proc/uptime"] = lambda: _uptime(world, node)
    for path, text in procs.files(world, node).items():
        out[path] = _const(text)
    for key, value in node.sysctls.items():
        out["/proc/sys/" + key.replace(".", "/")] = _const(value + "\n")
    out["/proc/version"] = _const(f"Linux version {KERNEL} (buildd@ubuntu) #16-Ubuntu SMP\n")
    return out


def _sysfs(host: Host) -> dict[str, Callable[[], str]]:
    world, node = host.world, host.node
    out: dict[str, Callable[[], str]] = {}
    for rail in node.rails:
        out.update(_rail_sysfs(world, rail, node))
    out.update(_node_sysfs(world, node))
    return out


def _sysfs_entry(host: Host, path: str) -> Callable[[], str] | None:
    """The attribute at `path`, building only the entries of the rail it belongs to."""
    world, node = host.world, host.node
    for rail in node.rails:
        ib = f"/sys/class/infiniband/{rail.rdma}/"
        port = ib + "ports/1/"
        if path.startswith(port):
            # a counter (what a counter read opens by the dozen): served without the rest
            group, _, name = path[len(port) :].partition("/")
            if (group == "hw_counters" and name in HW_COUNTERS) or (
                group == "counters" and name in PORT_COUNTERS
            ):
                return _counter(world, rail, name)
        if path.startswith((ib, f"/sys/class/net/{rail.netdev}/")):
            return _rail_sysfs(world, rail, node).get(path)
    return _node_sysfs(world, node).get(path)


def _uptime(world: World, node: NodeState) -> str:
    up = max(0.0, world.now() - node.boot_time)
    return f"{up:.2f} {up * 19.6:.2f}\n"


def vfs_paths(host: Host, pattern: str | None = None) -> list[str]:
    """Every path of the node's file system, or, given a glob `pattern`, a superset of the
    paths it can match: a generated sysfs directory whose own path the pattern's leading
    segments cannot match is left out without being listed (a glob's `*` never crosses `/`)."""
    if pattern is None:
        return [
            *host.node.files,
            *_sysfs(host),
            *gids.sysfs_paths(host.node),
            *nodetools.files(host),
        ]
    segments = pattern.split("/")
    out = [*host.node.files, *nodetools.files(host)]
    for rail in host.node.rails:
        ib = f"/sys/class/infiniband/{rail.rdma}/ports/1"
        if _may_match(segments, ib):
            out += _rail_ib_paths(rail.rdma)
            if _may_match(segments, f"{ib}/gids") or _may_match(segments, f"{ib}/gid_attrs"):
                out += gids.rail_paths(rail.rdma)
        if _may_match(segments, f"/sys/class/net/{rail.netdev}"):
            out += _rail_net_paths(rail.netdev)
    if _may_match(segments, "/proc"):
        out += _node_sysfs(host.world, host.node)
    return out


def _may_match(segments: list[str], directory: str) -> bool:
    """Whether a glob split into `segments` can match a path under `directory`."""
    parts = directory.split("/")
    if len(segments) <= len(parts):
        return False
    return all(fnmatch.fnmatchcase(part, seg) for part, seg in zip(parts, segments, strict=False))


@functools.cache
def _rail_ib_paths(rdma: str) -> tuple[str, ...]:
    """A rail's generated attributes under its RDMA device (the keys `_rail_sysfs` serves)."""
    base = f"/sys/class/infiniband/{rdma}/ports/1"
    return (
        f"{base}/rate",
        f"{base}/state",
        f"{base}/phys_state",
        *(f"{base}/hw_counters/{name}" for name in HW_COUNTERS),
        *(f"{base}/counters/{name}" for name in PORT_COUNTERS),
    )


@functools.cache
def _rail_net_paths(netdev: str) -> tuple[str, ...]:
    """A rail's generated attributes under its netdev (the keys `_rail_sysfs` serves)."""
    net = f"/sys/class/net/{netdev}"
    names = ("mtu", "address", "operstate", "carrier", "speed", "carrier_down_count")
    more = ("carrier_up_count", "carrier_changes")
    stats = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets")
    return (
        *(f"{net}/{n}" for n in (*names, *more)),
        *(f"{net}/statistics/{n}" for n in stats),
    )


def read_file(host: Host, path: str, root: bool) -> str | None:
    if path in host.node.files:
        return host.node.files[path]
    gid = gids.sysfs_read(host.world, host.node, path)
    if gid is not None:
        return gid or None  # an empty slot's attribute: EINVAL (see `cat`)
    dyn = _sysfs_entry(host, path)
    return dyn() if dyn is not None else nodetools.files(host).get(path)


_ROOT_ONLY = re.compile(r"^/proc/\d+/environ$|^/etc/shadow$|^/etc/sudoers$")


def denied(host: Host, path: str, root: bool) -> bool:
    """True when a non-root reader gets EACCES: another user's `/proc/<pid>/environ` (mode 0400,
    owned by the process's user; the lab's processes are init's and the job's, never the login
    user's), `/etc/shadow`, `/etc/sudoers`."""
    return (
        not root and _ROOT_ONLY.match(path) is not None and read_file(host, path, True) is not None
    )


def is_dir(host: Host, path: str) -> bool:
    prefix = path.rstrip("/") + "/"
    return path.rstrip("/") in host.node.dirs or any(p.startswith(prefix) for p in vfs_paths(host))
