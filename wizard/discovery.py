"""Discovery: which rails each node has, and which switch sub-port each rail's cable lands on.

Rails come from `ibdev2netdev` (RDMA device <-> netdev, Up/Down), completed by `ip -j addr` /
`ip -j link` (addresses, MTU, MAC, carrier), `ethtool -i` (PCI bus-info: the PCI *domain* decides
the half, 0000 = A and 0002 = B; the PCI *function* is the physical QSFP port) and `ethtool`
(speed). Names differ by vendor (`mlx5_N`), so the PCI address wins over the name; the name is
the fallback when `ethtool -i` could not be read.

Cabling comes from the inventory's map when given, else from the switches' bridge host tables:
a rail's MAC learned on a sub-port means its cable is there.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TypeVar

from wizard.errors import ParseError
from wizard.model import Half, Hop, ProbeResult, Rail, SwitchMap
from wizard.parsers.ethtool import parse_ethtool, parse_ethtool_driver
from wizard.parsers.ibdev2netdev import Ibdev2NetdevResult, IbdevMapping, parse_ibdev2netdev
from wizard.parsers.iproute2 import IpInterface, IpResult, parse_ip_json
from wizard.probes import HostProbe, Observations, SwitchProbe

T = TypeVar("T")

__all__ = [
    "DISCOVERY_HOST_PROBES",
    "ETHTOOL",
    "ETHTOOL_I",
    "IBDEV",
    "IP_ADDR",
    "IP_LINK",
    "SW_BRIDGE_HOST",
    "apply_cabling",
    "cabling_from_host_tables",
    "discover_rails",
    "node_rails",
    "pci_half_port",
    "rails_from_observations",
    "read_ibdev2netdev",
    "switch_map",
    "switch_map_from_observations",
]

# The probes discovery reads (the sweep always runs them; the checks share these objects).
IBDEV = HostProbe("ibdev2netdev", "ibdev2netdev")
IP_ADDR = HostProbe("ip_addr", "ip -j addr show")
IP_LINK = HostProbe("ip_link", "ip -j link show")
ETHTOOL = HostProbe("ethtool", "ethtool {netdev}", per_rail=True)
ETHTOOL_I = HostProbe("ethtool_i", "ethtool -i {netdev}", per_rail=True)
SW_BRIDGE_HOST = SwitchProbe("bridge_host", "/interface/bridge/host")
DISCOVERY_HOST_PROBES: tuple[HostProbe, ...] = (IBDEV, IP_ADDR, IP_LINK, ETHTOOL, ETHTOOL_I)

_PCI = re.compile(r"^([0-9a-fA-F]{4}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$")


def pci_half_port(bus_info: str) -> tuple[Half, int] | None:
    """`0002:01:00.1` -> ("B", 1): domain 0 is half A, any other domain half B."""
    m = _PCI.match(bus_info.strip())
    if not m:
        return None
    domain = int(m.group(1), 16)
    return ("A" if domain == 0 else "B"), int(m.group(4))


def _from_name(netdev: str, rdma: str) -> tuple[Half, int, str] | None:
    # enp1s0f1np1 / enP2p1s0f0np0 ; rocep1s0f1 / roceP2p1s0f0
    m = re.match(r"^(?:en|roce)(?:P(\d+))?p(\d+)s(\d+)f(\d+)", netdev) or re.match(
        r"^(?:en|roce)(?:P(\d+))?p(\d+)s(\d+)f(\d+)", rdma
    )
    if not m:
        return None
    domain = int(m.group(1) or 0)
    bus, slot, func = int(m.group(2)), int(m.group(3)), int(m.group(4))
    return (
        ("A" if domain == 0 else "B"),
        func,
        f"{domain:04x}:{bus:02x}:{slot:02x}.{func}",
    )


def discover_rails(
    node: str,
    ibdev2netdev: str | Ibdev2NetdevResult,
    *,
    ip_addr: str | None = None,
    ip_link: str | None = None,
    ethtool_i: Mapping[str, str] | None = None,
    ethtool: Mapping[str, str] | None = None,
) -> tuple[Rail, ...]:
    """The rails of one node from raw probe outputs (`ibdev2netdev` raw, or already parsed).
    Raises ParseError if ibdev2netdev is not readable (nothing can be discovered then); the
    other inputs are best effort."""
    mapping = parse_ibdev2netdev(ibdev2netdev) if isinstance(ibdev2netdev, str) else ibdev2netdev
    addrs = _ip(ip_addr)
    links = _ip(ip_link)
    rails: list[Rail] = []
    for m in mapping.mappings:
        half, port, pci = _half_port(m, (ethtool_i or {}).get(m.netdev))
        iface = addrs.get(m.netdev) if addrs else None
        link = links.get(m.netdev) if links else None
        mtu = 0
        mac = ""
        for source in (iface, link):
            if source is None:
                continue
            mtu = mtu or (source.mtu or 0)
            mac = mac or (source.mac or "")
        inet = iface.addresses if iface else ()
        rails.append(
            Rail(
                node=node,
                netdev=m.netdev,
                rdma=m.rdma,
                port=port,
                half=half,
                pci=pci,
                mac=mac.lower(),
                addresses=tuple(f"{a.address}/{a.prefixlen}" for a in inet if a.family == "inet"),
                ipv6=tuple(f"{a.address}/{a.prefixlen}" for a in inet if a.family == "inet6"),
                mtu=mtu,
                up=m.up and (link is None or link.carrier),
                speed_mbps=_speed((ethtool or {}).get(m.netdev)),
            )
        )
    rails.sort(key=lambda r: (r.port, r.half, r.netdev))
    return tuple(rails)


def _half_port(m: IbdevMapping, ethtool_i: str | None) -> tuple[Half, int, str]:
    """(half, port, PCI address) of one rail: from `ethtool -i`'s bus-info, else its name."""
    hp = _remembered(_bus_half_port, ethtool_i) if ethtool_i else None
    if hp is not None:
        return hp
    guess = _from_name(m.netdev, m.rdma)
    if guess is not None:
        return guess
    return ("A" if m.half != "B" else "B"), 0, ""


# what one short probe output says, remembered: nodes of one fabric print the same `ethtool`
# and `ethtool -i` for the same rail (the answers are immutable, and a text too long to be one
# of these outputs is worked out each time)
_REMEMBERED = 16384


def _remembered(fn: functools._lru_cache_wrapper[T], text: str) -> T:
    """`fn` of a short text from its cache; a long one (never a real output of these) is
    worked out each time, not kept."""
    return fn(text) if len(text) <= _REMEMBERED else fn.__wrapped__(text)


@functools.lru_cache(maxsize=1024)
def _bus_half_port(ethtool_i: str) -> tuple[Half, int, str] | None:
    """(half, port, bus-info) from `ethtool -i`, None when it names no usable bus-info."""
    try:
        drv = parse_ethtool_driver(ethtool_i)
    except ParseError:
        return None
    if drv.bus_info:
        hp = pci_half_port(drv.bus_info)
        if hp is not None:
            return hp[0], hp[1], drv.bus_info
    return None


def _speed(ethtool: str | None) -> int | None:
    """The link speed `ethtool` reports (Mb/s), None when it was not read or says none."""
    if not ethtool:
        return None
    return _remembered(_link_speed, ethtool)


@functools.lru_cache(maxsize=1024)
def _link_speed(ethtool: str) -> int | None:
    try:
        res = parse_ethtool(ethtool)
    except ParseError:
        return None
    return res.links[0].speed_mbps if res.links else None


def _ip(text: str | None) -> Mapping[str, IpInterface] | None:
    if not text:
        return None
    try:
        res: IpResult = parse_ip_json(text)
    except ParseError:
        return None
    return {i.name: i for i in res.interfaces}


def _learned(
    rails: Iterable[Rail], host_tables: Mapping[str, Iterable[Mapping[str, str]]]
) -> tuple[dict[str, Rail], dict[str, dict[str, str]]]:
    """The rails by MAC, and for each rail MAC the port every switch learned it on."""
    by_mac = {r.mac.lower(): r for r in rails if r.mac}
    seen: dict[str, dict[str, str]] = {}
    for switch, table in host_tables.items():
        for row in table:
            mac = row.get("mac-address", "").lower()
            port = row.get("on-interface") or row.get("interface") or ""
            if not mac or row.get("local") == "true" or port.startswith("bridge"):
                continue
            if mac in by_mac:
                seen.setdefault(mac, {}).setdefault(switch, port)
    return by_mac, seen


def cabling_from_host_tables(
    rails: Iterable[Rail], host_tables: Mapping[str, Iterable[Mapping[str, str]]]
) -> dict[str, tuple[str, str]]:
    """rail key -> (switch, sub-port) its cable lands on, from the MACs each switch learned.

    In a bridged fabric every switch learns every node's MAC (its broadcasts flood): on the
    leg the cable lands on at the node's own switch, and at every other switch on the port
    toward that one (an ISL, a campus uplink). A leg carries one node port (the two halves'
    MACs); a port toward other switches carries every node port beyond it. Where a single
    node port lies beyond such a port too, the place that disagrees with where the other
    switches learned that switch's own nodes is not the leg. A MAC still placed on two legs
    (two switches of one node port each) is left out: no table says which is its cable."""
    by_mac, seen = _learned(rails, host_tables)
    carries: dict[tuple[str, str], set[tuple[str, int]]] = {}
    for mac, where in seen.items():
        r = by_mac[mac]
        for switch, port in where.items():
            carries.setdefault((switch, port), set()).add((r.node, r.port))
    home: dict[str, str] = {}  # mac -> its switch
    unsure: dict[str, list[str]] = {}
    for mac, where in seen.items():
        legs = [sw for sw, port in where.items() if len(carries[(sw, port)]) == 1]
        if len(where) == 1:
            home[mac] = next(iter(where))
        elif len(legs) == 1:
            home[mac] = legs[0]
        elif legs:
            unsure[mac] = legs
    toward = _toward(seen, home)
    for mac, legs in unsure.items():
        where = seen[mac]
        fits = [
            t
            for t in legs
            if all(toward.get((s, t), port) == port for s, port in where.items() if s != t)
        ]
        if len(fits) == 1:
            home[mac] = fits[0]
    return {by_mac[mac].key: (sw, seen[mac][sw]) for mac, sw in home.items()}


def _toward(seen: Mapping[str, Mapping[str, str]], home: Mapping[str, str]) -> dict[Hop, str]:
    """(switch, other switch) -> the port of the first where it learned most of the MACs
    whose cable lands on the second."""
    votes: dict[Hop, dict[str, int]] = {}
    for mac, t in home.items():
        for s, port in seen.get(mac, {}).items():
            if s != t:
                v = votes.setdefault((s, t), {})
                v[port] = v.get(port, 0) + 1
    return {k: max(sorted(v), key=lambda p: v[p]) for k, v in votes.items()}


def switch_map(
    rails: Iterable[Rail], host_tables: Mapping[str, Iterable[Mapping[str, str]]]
) -> SwitchMap:
    """The port of each switch toward each other switch, from where it learned the MACs of
    the rails cabled to that one (`rails` with their switch filled, by `apply_cabling`)."""
    rails = [r for r in rails if r.switch]
    _by_mac, seen = _learned(rails, host_tables)
    home = {r.mac.lower(): r.switch for r in rails if r.mac and r.switch}
    return SwitchMap(_toward(seen, {m: t for m, t in home.items() if t is not None}))


def apply_cabling(
    rails: Iterable[Rail], cabling: Mapping[str, tuple[str, str]]
) -> tuple[Rail, ...]:
    """Rails with `switch`/`switch_port` filled. Both halves of a physical port share one cable,
    so a rail without its own entry takes its sibling's (same node and port)."""
    rails = tuple(rails)
    by_port: dict[tuple[str, int], tuple[str, str]] = {}
    for r in rails:
        if r.key in cabling:
            by_port.setdefault((r.node, r.port), cabling[r.key])
    out = []
    for r in rails:
        dest = cabling.get(r.key) or by_port.get((r.node, r.port))
        out.append(r if dest is None else replace(r, switch=dest[0], switch_port=dest[1]))
    return tuple(out)


def read_ibdev2netdev(results: Mapping[str, ProbeResult]) -> Ibdev2NetdevResult | None:
    """A node's ibdev2netdev output, parsed; None when it was not read or not readable."""
    ib = results.get(IBDEV.name)
    if ib is None or not ib.ok:
        return None
    try:
        return parse_ibdev2netdev(ib.stdout)
    except ParseError:
        return None


def node_rails(
    node: str,
    results: Mapping[str, ProbeResult],
    mapping: Ibdev2NetdevResult | None = None,
) -> tuple[Rail, ...] | None:
    """One node's rails from its sweep outputs (ibdev2netdev and ip, the per-rail
    ethtool); None when ibdev2netdev was not read or not readable. `mapping`: that
    ibdev2netdev already parsed (not parsed again)."""
    mapping = mapping or read_ibdev2netdev(results)
    if mapping is None:
        return None

    def text(key: str) -> str | None:
        r = results.get(key)
        return r.stdout if r is not None and r.ok else None

    names = [m.netdev for m in mapping.mappings]
    return discover_rails(
        node,
        mapping,
        ip_addr=text(IP_ADDR.name),
        ip_link=text(IP_LINK.name),
        ethtool_i={n: t for n in names if (t := text(f"{ETHTOOL_I.name}:{n}"))},
        ethtool={n: t for n in names if (t := text(f"{ETHTOOL.name}:{n}"))},
    )


def rails_from_observations(
    obs: Observations,
    cabling: Mapping[str, tuple[str, str]] | None = None,
    discovered: Mapping[str, tuple[Rail, ...]] | None = None,
) -> dict[str, tuple[Rail, ...]]:
    """Every reachable node's rails from a sweep, with cabling from the inventory's map, else
    from the switches' host tables. The rails the sweep already worked out from these same
    outputs (`discovered`, else `obs.rails`) are not worked out again."""
    known = obs.rails if discovered is None else discovered
    rails: dict[str, tuple[Rail, ...]] = {}
    for node, results in obs.nodes.items():
        found = known.get(node) or node_rails(node, results)
        if found is not None:
            rails[node] = found
    every = [r for rs in rails.values() for r in rs]
    mapping = dict(cabling_from_host_tables(every, _host_tables(obs)))
    mapping.update(cabling or {})
    return {node: apply_cabling(rs, mapping) for node, rs in rails.items()}


def _host_tables(obs: Observations) -> dict[str, tuple[dict[str, str], ...]]:
    return {
        sw: res[SW_BRIDGE_HOST.name].rows
        for sw, res in obs.switches.items()
        if SW_BRIDGE_HOST.name in res and res[SW_BRIDGE_HOST.name].error is None
    }


def switch_map_from_observations(
    obs: Observations, rails: Mapping[str, Iterable[Rail]]
) -> SwitchMap:
    """The switch map of a sweep's host tables, for `rails` (their cabling worked out)."""
    return switch_map([r for rs in rails.values() for r in rs], _host_tables(obs))
