"""Kernel log lines (`dmesg`, `journalctl -k`) that matter for a GB10 fabric.

Sample lines it matches (real/dmesg/):

    [    1.150104] mlx5_core 0000:01:00.0: 126.028 Gb/s available PCIe bandwidth (32.0 GT/s PCIe x4 link)
    [    1.533198] mlx5_core 0000:01:00.0: mlx5_pcie_event:326:(pid 12): Detected insufficient power on the PCIe slot (27W).
    cx7-pcie-hotplug MTKP0001:00: Cable plugin
    mlx5_core 0000:01:00.0 enp1s0f0np0: Link up

The 27W line appears on every boot of healthy units (`benign.pcie-27w`). Cable plug events and
link up/down are link transitions (`process.undrained-measurement`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wizard.errors import ParseError
from wizard.parsers.common import is_prompt_line, lines

TOOL = "kernel-log"
_TS = re.compile(r"^\s*\[\s*(\d+\.\d+)\]\s*")
_PCIE_BW = re.compile(
    r"^(?:mlx5_core|pci) (\S+?): ([\d.]+) Gb/s available PCIe bandwidth"
    r"(?:, limited by (.*?) link at \S+)?\s*\(?(?:capable of [\d.]+ Gb/s with )?"
    r"([\d.]+) GT/s PCIe x(\d+) link"
)
_LINK = re.compile(r"^mlx5_core (\S+) (\S+): Link (up|down)")
_LINK2 = re.compile(r"^(\S+): Link (?:is )?(up|down|Up|Down)\b")
_MODULE = re.compile(
    r"^mlx5_core (\S+?): Port module event: module (\d+), Cable (plugged|unplugged)"
)
_FW = re.compile(r"^mlx5_core (\S+?): firmware version: (\S+)")
_PROBE_FAIL = re.compile(r"probe of (\S+) failed with error (-?\d+)")


@dataclass(frozen=True, slots=True)
class KernelEvent:
    kind: str  # pcie-27w, pcie-bandwidth, link, cable, hotplug, firmware, probe-failed, oops, error
    text: str
    time: float | None = None
    device: str | None = None  # PCI address
    netdev: str | None = None
    value: str | None = None  # up/down, plugged/unplugged, firmware version, Gb/s...


@dataclass(frozen=True, slots=True)
class KernelLogResult:
    events: tuple[KernelEvent, ...]
    lines: int

    def of(self, kind: str) -> tuple[KernelEvent, ...]:
        return tuple(e for e in self.events if e.kind == kind)

    @property
    def insufficient_power_27w(self) -> bool:
        return bool(self.of("pcie-27w"))


def parse_kernel_log(text: str) -> KernelLogResult:
    events: list[KernelEvent] = []
    count = 0
    for raw in lines(text):
        if is_prompt_line(raw) or not raw.strip():
            continue
        count += 1
        ts_m = _TS.match(raw)
        ts = float(ts_m.group(1)) if ts_m else None
        line = raw[ts_m.end() :] if ts_m else raw.strip()
        pci = re.match(r"^(?:mlx5_core|pci) ([0-9a-fA-F:.]+?):\s", line)
        dev = pci.group(1) if pci else None
        if "insufficient power on the PCIe slot" in line:
            w = re.search(r"\((\d+W)\)", line)
            events.append(KernelEvent("pcie-27w", line, ts, dev, None, w.group(1) if w else None))
        elif m := _PCIE_BW.match(line):
            events.append(
                KernelEvent(
                    "pcie-bandwidth",
                    line,
                    ts,
                    m.group(1),
                    None,
                    f"{m.group(2)} Gb/s {m.group(4)} GT/s x{m.group(5)}",
                )
            )
        elif m := _LINK.match(line):
            events.append(KernelEvent("link", line, ts, m.group(1), m.group(2), m.group(3)))
        elif m := _MODULE.match(line):
            events.append(KernelEvent("cable", line, ts, m.group(1), None, m.group(3)))
        elif "cx7-pcie-hotplug" in line:
            events.append(
                KernelEvent(
                    "hotplug",
                    line,
                    ts,
                    None,
                    None,
                    line.split(": ", 1)[1] if ": " in line else None,
                )
            )
        elif m := _FW.match(line):
            events.append(KernelEvent("firmware", line, ts, m.group(1), None, m.group(2)))
        elif m := _PROBE_FAIL.search(line):
            events.append(KernelEvent("probe-failed", line, ts, m.group(1), None, m.group(2)))
        elif line.startswith(("Internal error: Oops", "Unable to handle kernel", "BUG:")):
            events.append(KernelEvent("oops", line, ts))
        elif re.search(r"\bfailed\b", line) and dev:
            events.append(KernelEvent("error", line, ts, dev))
        elif m := _LINK2.match(line):
            events.append(KernelEvent("link", line, ts, None, m.group(1), m.group(2).lower()))
    if not events and not re.search(r"^\s*\[\s*\d+\.\d+\]", text, re.MULTILINE):
        raise ParseError(
            "no kernel log line (timestamp, mlx5_core, cx7-pcie-hotplug)", tool=TOOL, raw=text
        )
    return KernelLogResult(tuple(events), count)
