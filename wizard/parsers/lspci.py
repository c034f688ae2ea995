"""`lspci [-vv] [-d 15b3:]`: the ConnectX-7 functions and their PCIe link status.

Sample lines it matches (real/lspci/):

    0000:01:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]
            LnkCap: Port #0, Speed 32GT/s, Width x4, ASPM not supported
            LnkSta: Speed 32GT/s, Width x4

A GB10 CX7 half is healthy at `LnkSta: Speed 32GT/s, Width x4` (`host.pcie-width` otherwise).
A grepped paste without the device line takes its address from `-s <addr>` on the command line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wizard.errors import ParseError
from wizard.parsers.common import is_prompt_line, lines, strip_prompt

TOOL = "lspci"
_DEV = re.compile(r"^((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+([^:]+):\s*(.*)$")
_LNK = re.compile(r"^(LnkCap|LnkSta):.*?Speed\s+([\d.]+GT/s)[^,]*,\s*Width\s+x(\d+)")


@dataclass(frozen=True, slots=True)
class PciLink:
    speed: str  # "32GT/s"
    width: int  # 4


@dataclass(frozen=True, slots=True)
class PciDevice:
    address: str | None
    device_class: str | None = None
    description: str | None = None
    lnkcap: PciLink | None = None
    lnksta: PciLink | None = None

    @property
    def mellanox(self) -> bool:
        return "Mellanox" in (self.description or "") or "ConnectX" in (self.description or "")


@dataclass(frozen=True, slots=True)
class LspciResult:
    devices: tuple[PciDevice, ...]


def parse_lspci(text: str) -> LspciResult:
    devices: list[dict[str, object]] = []
    cmd_addr: str | None = None
    for raw in lines(text):
        if is_prompt_line(raw) or raw.lstrip().startswith(("lspci", "sudo lspci")):
            m = re.search(r"-s\s+(\S+)", strip_prompt(raw))
            cmd_addr = m.group(1) if m else None
            continue
        if m := _DEV.match(raw):
            devices.append(
                {
                    "address": m.group(1),
                    "device_class": m.group(2),
                    "description": m.group(3).strip(),
                }
            )
            continue
        if m := _LNK.match(raw.strip()):
            if not devices:
                devices.append({"address": cmd_addr})
            devices[-1][m.group(1).lower()] = PciLink(m.group(2), int(m.group(3)))
    if not devices:
        raise ParseError("no PCI device line or LnkSta/LnkCap line", tool=TOOL, raw=text)
    out = []
    for d in devices:
        addr, cls, desc = d.get("address"), d.get("device_class"), d.get("description")
        cap, sta = d.get("lnkcap"), d.get("lnksta")
        out.append(
            PciDevice(
                addr if isinstance(addr, str) else None,
                cls if isinstance(cls, str) else None,
                desc if isinstance(desc, str) else None,
                cap if isinstance(cap, PciLink) else None,
                sta if isinstance(sta, PciLink) else None,
            )
        )
    return LspciResult(tuple(out))
