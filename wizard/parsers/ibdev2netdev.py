"""`ibdev2netdev`: which RDMA device drives which netdev, and whether its port is up.

Sample line it matches (real/ibdev2netdev/):

    roceP2p1s0f1 port 1 ==> enP2p1s0f1np1 (Up)

Order differs between hosts (some list `roceP2...` first) and trailing spaces occur: map by
name, never by line number. The PCIe half is read from the name (`roceP2...`/`enP2...` = PCI
domain 0002 = half B) when the name follows the GB10 pattern; `mlx5_N` names leave it None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wizard.errors import ParseError
from wizard.parsers.common import lines, remembered, strip_prompt

TOOL = "ibdev2netdev"
_LINE = re.compile(r"^\s*(\S+)\s+port\s+(\d+)\s+==>\s+(\S+)\s+\((\w+)\)\s*$")


@dataclass(frozen=True, slots=True)
class IbdevMapping:
    rdma: str
    port: int
    netdev: str
    up: bool
    state: str  # as printed: Up, Down
    half: str | None = None  # "A" (PCI domain 0000) or "B" (0002) for GB10-style names


@dataclass(frozen=True, slots=True)
class Ibdev2NetdevResult:
    mappings: tuple[IbdevMapping, ...]

    def by_netdev(self, netdev: str) -> IbdevMapping | None:
        return next((m for m in self.mappings if m.netdev == netdev), None)

    def by_rdma(self, rdma: str) -> IbdevMapping | None:
        return next((m for m in self.mappings if m.rdma == rdma), None)

    @property
    def up(self) -> tuple[str, ...]:
        """RDMA devices whose port is up."""
        return tuple(m.rdma for m in self.mappings if m.up)


def _half(rdma: str, netdev: str) -> str | None:
    if re.match(r"roceP(\d+)p", rdma) or re.match(r"enP(\d+)p", netdev):
        return "B"
    if re.match(r"rocep\d+s", rdma) or re.match(r"enp\d+s", netdev):
        return "A"
    return None


@remembered  # immutable: the sweep's per-rail loop and discovery share one parse
def parse_ibdev2netdev(text: str) -> Ibdev2NetdevResult:
    """Parse every `<rdma> port <n> ==> <netdev> (Up|Down)` line; other lines are ignored."""
    found: list[IbdevMapping] = []
    for raw in lines(text):
        m = _LINE.match(strip_prompt(raw))
        if m:
            rdma, port, netdev, state = m.group(1), int(m.group(2)), m.group(3), m.group(4)
            found.append(
                IbdevMapping(rdma, port, netdev, state.lower() == "up", state, _half(rdma, netdev))
            )
    if not found:
        raise ParseError("no `<dev> port <n> ==> <netdev> (Up|Down)` line", tool=TOOL, raw=text)
    return Ibdev2NetdevResult(tuple(found))
