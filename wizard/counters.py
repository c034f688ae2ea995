"""RDMA and PHY counters read before and after a bandwidth test, on both ends and the switches.

What moved during a test tells causes apart where a bandwidth number cannot (seeds 000, 003):
frames that leave the sender (`tx_packets_phy`) but reach no switch leg and no receiver
(`rx_packets_phy` flat), while the sender retries with `local_ack_timeout_err` climbing, are a
stalled data path (lossless QoS on the path or ARP flux: the configuration tells which); `packet_seq_err`
and CNPs near line rate under deliberate oversubscription are congestion control working, the
same counter growing at single-digit Gb/s is a broken path; `link_down_events_phy` moving
means the link bounced during the test. Sources: sysfs `hw_counters/` and `counters/` of the
RDMA device and `ethtool -S` of the netdev (one command per rail), `/interface print` on the
switches (`rx-byte`, `tx-byte`, `rx-packet`, `tx-packet` per port).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence

from wizard.errors import ParseError
from wizard.model import Rail
from wizard.parsers.ethtool import parse_ethtool_stats
from wizard.parsers.sysfs import parse_sysfs_counters

# what a delta is shown for (the issue list of seed 000 and FAULTS.md "What counts as proof")
HOST_COUNTERS = (
    "tx_packets_phy",
    "rx_packets_phy",
    "tx_bytes_phy",
    "rx_bytes_phy",
    "local_ack_timeout_err",
    "packet_seq_err",
    "out_of_sequence",
    "np_cnp_sent",
    "rp_cnp_handled",
    "rx_discards_phy",
    "tx_pause_ctrl_phy",
    "rx_pause_ctrl_phy",
    "link_down_events_phy",
    "port_xmit_packets",
    "port_rcv_packets",
)
SWITCH_COUNTERS = ("rx-packet", "tx-packet", "rx-byte", "tx-byte", "rx-drop", "tx-drop")
_SPLIT = "@@FABWIZ-ETHTOOL@@"
_RAIL = "@@FABWIZ-RAIL@@"


def rail_command(rail: Rail) -> str:
    """One read-only command for a rail's RDMA and PHY counters."""
    base = f"/sys/class/infiniband/{shlex.quote(rail.rdma)}/ports/1"
    return (
        f"grep -H . {base}/hw_counters/* {base}/counters/* 2>/dev/null; "
        f"echo {_SPLIT}; ethtool -S {shlex.quote(rail.netdev)}"
    )


def rails_command(rails: Sequence[Rail]) -> str:
    """One read-only command for several rails of one node: each rail's `rail_command` in
    turn, each after a marker line and between two readings of the node's clock."""
    return "; ".join(
        f"echo {_RAIL}; cat /proc/uptime; {rail_command(r)}; cat /proc/uptime" for r in rails
    )


# The node's clock when a rail's counters were read, in hundredths of a second (/proc/uptime's
# resolution), kept beside the counters: two reads' difference is the span their deltas cover,
# on the node's own clock, whatever the SSH round trips took (a loaded client or network
# stretches those, not this).
NODE_CLOCK = "node_clock_cs"
# a line of /proc/uptime: seconds since boot (group 1), then idle seconds
UPTIME = re.compile(r"^(\d+(?:\.\d+)?) \d+(?:\.\d+)?\s*$", re.M)


def parse_rails(text: str, count: int) -> list[dict[str, int] | None]:
    """`rails_command`'s output for `count` rails: each rail's counters, in order (None: its
    part had none), each with the node's clock at its read (`NODE_CLOCK`, the midpoint of the
    two readings around it) when both were read; all None when the parts do not match the
    rails."""
    parts = text.split(_RAIL + "\n")[1:]
    if len(parts) != count:
        return [None] * count
    out: list[dict[str, int] | None] = []
    for part in parts:
        lines = part.splitlines()
        first = UPTIME.fullmatch(lines[0]) if lines else None
        last = UPTIME.fullmatch(lines[-1]) if len(lines) > 1 else None
        body = "\n".join(lines[1 if first else 0 : -1 if last else None])
        try:
            counters = parse_rail(body + "\n")
        except ParseError:
            out.append(None)
            continue
        if first and last and float(last.group(1)) >= float(first.group(1)):
            mid = (float(first.group(1)) + float(last.group(1))) / 2
            counters[NODE_CLOCK] = round(mid * 100)
        out.append(counters)
    return out


def node_seconds(before: Mapping[str, int] | None, after: Mapping[str, int] | None) -> float | None:
    """The node's seconds between two reads of one rail's counters (None: a clock not read, or
    one that went back: a reboot between them)."""
    if not before or not after or NODE_CLOCK not in before or NODE_CLOCK not in after:
        return None
    span = after[NODE_CLOCK] - before[NODE_CLOCK]
    return span / 100 if span >= 0 else None


def parse_rail(text: str) -> dict[str, int]:
    """The counters of `rail_command`'s output (sysfs names and ethtool names in one map)."""
    sysfs, _, ethtool = text.partition(_SPLIT)
    out: dict[str, int] = {}
    try:
        s = parse_sysfs_counters(sysfs)
        out.update(s.counters or {})
        out.update(s.hw_counters or {})
    except ParseError:
        pass
    try:
        out.update(parse_ethtool_stats(ethtool).counters)
    except ParseError:
        pass
    if not out:
        raise ParseError("no RDMA or PHY counter in the output", tool="counters", raw=text)
    return out


def deltas(
    before: Mapping[str, int], after: Mapping[str, int], names: Iterable[str] = HOST_COUNTERS
) -> dict[str, int]:
    """after - before for each name read both times (a counter that went backwards was reset:
    its delta is the value after)."""
    out: dict[str, int] = {}
    for n in names:
        if n in before and n in after:
            d = after[n] - before[n]
            out[n] = d if d >= 0 else after[n]
    return out


def switch_ports(rows: Iterable[Mapping[str, str]]) -> dict[str, dict[str, int]]:
    """`/interface print` rows -> port name -> the numeric SWITCH_COUNTERS."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        name = r.get("name", "")
        vals = {k: int(r[k]) for k in SWITCH_COUNTERS if str(r.get(k, "")).isdigit()}
        if name and vals:
            out[name] = vals
    return out


def switch_deltas(
    before: Mapping[str, Mapping[str, int]], after: Mapping[str, Mapping[str, int]]
) -> dict[str, dict[str, int]]:
    """Per port, the counters that moved (ports where nothing moved are left out)."""
    out: dict[str, dict[str, int]] = {}
    for port, vals in after.items():
        moved = {k: d for k, d in deltas(before.get(port, {}), vals, SWITCH_COUNTERS).items() if d}
        if moved:
            out[port] = moved
    return out
