"""RDMA port counters from sysfs: `grep -H . .../hw_counters/* .../counters/*`, `show_counters`,
a listing of the hw_counters folder, and `ports/1/{rate,state}` pastes.

Sample lines it matches (the host probes of flows/checks/_common.py; the real sysfs-infiniband fixtures):

    /sys/class/infiniband/rocep1s0f0/ports/1/hw_counters/local_ack_timeout_err:0
    np_cnp_sent: 1052612505
    rocep1s0f1       200 Gb/sec (4X HDR) 4: ACTIVE

`port_xmit_data`/`port_rcv_data` count 4-byte words on mlx5: `xmit_bytes`/`rcv_bytes` multiply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wizard.errors import ParseError
from wizard.parsers.common import is_prompt_line, lines

TOOL = "sysfs"
_GREP = re.compile(
    r"^/sys/class/infiniband/([^/]+)/ports/(\d+)/(hw_counters|counters)/([\w.-]+):(-?\d+)\s*$"
)
_SHOW = re.compile(r"^([a-z][a-z0-9_]*):\s+(-?\d+)\s*$")
_LS = re.compile(r"^[-lrwxd]{10}\.?\s+\d+\s+\S+\s+\S+\s+\d+\s+\w+\s+\d+\s+[\d:]+\s+(\S+)\s*$")
_RATE = re.compile(r"^(\S+)\s+(\d+(?:\.\d+)?) Gb/sec \(([^)]*)\)\s+(\d+): (\w+)\s*$")
_DEV = re.compile(r"/sys/class/infiniband/([^/\s]+)/")


@dataclass(frozen=True, slots=True)
class IbPortRate:
    device: str
    rate_gbps: float
    width: str  # "4X HDR" (IB-style decomposition: parse the total only)
    state: str  # ACTIVE, DOWN


@dataclass(frozen=True, slots=True)
class SysfsCounters:
    device: str | None = None
    port: int | None = None
    hw_counters: dict[str, int] | None = None
    counters: dict[str, int] | None = None
    listed: tuple[str, ...] = ()  # names only (an `ls -l` of the folder)
    rates: tuple[IbPortRate, ...] = ()

    def get(self, name: str) -> int | None:
        for group in (self.hw_counters, self.counters):
            if group and name in group:
                return group[name]
        return None

    @property
    def xmit_bytes(self) -> int | None:
        words = self.get("port_xmit_data")
        return None if words is None else words * 4

    @property
    def rcv_bytes(self) -> int | None:
        words = self.get("port_rcv_data")
        return None if words is None else words * 4


def parse_sysfs_counters(text: str) -> SysfsCounters:
    hw: dict[str, int] = {}
    plain: dict[str, int] = {}
    listed: list[str] = []
    rates: list[IbPortRate] = []
    device: str | None = None
    port: int | None = None
    section = "hw"
    for raw in lines(text):
        line = raw.strip()
        if not line:
            continue
        if is_prompt_line(raw) or line.startswith(("show_counters", "ll ", "ls ")):
            d = _DEV.search(line) or re.search(r"show_counters\s+(\S+)", line)
            device = d.group(1) if d else device
            continue
        if m := _GREP.match(line):
            device, port = m.group(1), int(m.group(2))
            (hw if m.group(3) == "hw_counters" else plain)[m.group(4)] = int(m.group(5))
            continue
        if m := re.match(r"Port (\d+) (hw )?counters:", line):
            port, section = int(m.group(1)), "hw" if m.group(2) else "plain"
            continue
        if m := _SHOW.match(line):
            (hw if section == "hw" else plain)[m.group(1)] = int(m.group(2))
            continue
        if m := _LS.match(line):
            listed.append(m.group(1))
            continue
        if m := _RATE.match(line):
            rates.append(IbPortRate(m.group(1), float(m.group(2)), m.group(3), m.group(5)))
    if not hw and not plain and not listed and not rates:
        raise ParseError("no sysfs counter, show_counters or rate line", tool=TOOL, raw=text)
    return SysfsCounters(device, port, hw or None, plain or None, tuple(listed), tuple(rates))
