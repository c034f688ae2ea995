"""`sysctl KEY...` / `sysctl -a` / `sysctl -w` output and bare `sysctl -n` values.

Sample lines it matches (real/sysctl/):

    net.ipv4.conf.all.arp_ignore = 1

A bare value (`sysctl -n`) has no key: it is kept under the key `""`. The helpers read the
three ARP/rp_filter keys that multi-rail RoCE hosts need (`host.arp-sysctls`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wizard.errors import ParseError
from wizard.parsers.common import is_prompt_line, lines

TOOL = "sysctl"
_KV = re.compile(r"^\s*([a-z0-9_][\w.\-/]*)\s*=\s*(.*?)\s*$")
ARP_KEYS = (
    "net.ipv4.conf.all.arp_ignore",
    "net.ipv4.conf.all.arp_announce",
    "net.ipv4.conf.all.rp_filter",
)


@dataclass(frozen=True, slots=True)
class SysctlResult:
    values: dict[str, str]

    def get_int(self, key: str) -> int | None:
        value = self.values.get(key)
        if value is None or not re.fullmatch(r"-?\d+", value):
            return None
        return int(value)

    @property
    def arp(self) -> dict[str, int | None]:
        """The three ARP keys that are present (short names: arp_ignore, arp_announce, ...)."""
        return {k.rsplit(".", 1)[1]: self.get_int(k) for k in ARP_KEYS if k in self.values}


def parse_sysctl(text: str) -> SysctlResult:
    values: dict[str, str] = {}
    bare: list[str] = []
    for raw in lines(text):
        if is_prompt_line(raw) or not raw.strip():
            continue
        m = _KV.match(raw)
        if m and "." in m.group(1):
            values[m.group(1)] = m.group(2)
        elif re.fullmatch(r"\s*-?\d+(\s+-?\d+)*\s*", raw):
            bare.append(raw.strip())
    if not values and len(bare) == 1:
        values[""] = bare[0]
    if not values:
        raise ParseError("no `key = value` line or single `sysctl -n` value", tool=TOOL, raw=text)
    return SysctlResult(values)
