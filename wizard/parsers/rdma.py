"""RDMA device state: `rdma link`, `show_gids`, `ibstat`.

Sample lines they match (real/rdma-link/, real/show_gids/, real/ibstat/):

    link roceP2p1s0f0/1  state ACTIVE physical_state LINK_UP netdev enP2p1s0f0np0
    rocep1s0f0      1       3       0000:0000:0000:0000:0000:ffff:c0a8:640a 192.168.100.10          v2      enp1s0f0np0
    CA 'roceP2p1s0f0'
                Rate: 200

show_gids lists IPv4 GIDs (indexes 2/3 on GB10) only once the netdev has an IPv4 address, so
"index 3" is a convention, not a constant: a rail with link-local GIDs only is unaddressed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wizard.errors import ParseError
from wizard.parsers.common import is_prompt_line, lines

_LINK = re.compile(
    r"^(?:link\s+|\d+/\d+:\s+)(\S+?)/(\d+):?\s+state\s+(\S+)"
    r"(?:\s+physical_state\s+(\S+))?(?:\s+netdev\s+(\S+))?"
)


@dataclass(frozen=True, slots=True)
class RdmaLink:
    device: str
    port: int
    state: str  # ACTIVE, DOWN
    physical_state: str | None  # LINK_UP, DISABLED
    netdev: str | None

    @property
    def active(self) -> bool:
        return self.state.upper() == "ACTIVE"


@dataclass(frozen=True, slots=True)
class RdmaLinkResult:
    links: tuple[RdmaLink, ...]


def parse_rdma_link(text: str) -> RdmaLinkResult:
    """`rdma link` (padded or not; old iproute2 `0/1: dev/1: state ...` too)."""
    found = []
    for raw in lines(text):
        if is_prompt_line(raw):
            continue
        m = _LINK.match(raw.strip())
        if m:
            found.append(RdmaLink(m.group(1), int(m.group(2)), m.group(3), m.group(4), m.group(5)))
    if not found:
        raise ParseError("no `link <dev>/<port> state ...` line", tool="rdma", raw=text)
    return RdmaLinkResult(tuple(found))


@dataclass(frozen=True, slots=True)
class Gid:
    device: str
    port: int
    index: int
    gid: str
    ipv4: str | None
    version: str  # v1 | v2
    netdev: str | None


@dataclass(frozen=True, slots=True)
class ShowGidsResult:
    gids: tuple[Gid, ...]
    n_gids_found: int | None = None

    def roce_v2_ipv4(self, device: str) -> tuple[Gid, ...]:
        """The RoCE v2 GIDs with an IPv4 address of one device (what NCCL/perftest should use)."""
        return tuple(g for g in self.gids if g.device == device and g.version == "v2" and g.ipv4)


def parse_show_gids(text: str) -> ShowGidsResult:
    """`show_gids`: TAB-separated, an empty IPv4 column is consecutive TABs."""
    gids = []
    total: int | None = None
    for raw in lines(text):
        if m := re.match(r"^n_gids_found=(\d+)", raw.strip()):
            total = int(m.group(1))
            continue
        f = raw.split()
        if len(f) < 5 or not (f[1].isdigit() and f[2].isdigit()) or ":" not in f[3]:
            continue
        ipv4 = f[4] if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", f[4]) else None
        rest = f[5:] if ipv4 else f[4:]
        if not rest or not re.fullmatch(r"v\d", rest[0]):
            continue
        gids.append(
            Gid(f[0], int(f[1]), int(f[2]), f[3], ipv4, rest[0], rest[1] if len(rest) > 1 else None)
        )
    if not gids:
        raise ParseError("no `DEV PORT INDEX GID ...` row of show_gids", tool="show_gids", raw=text)
    return ShowGidsResult(tuple(gids), total)


@dataclass(frozen=True, slots=True)
class IbstatCa:
    name: str
    ca_type: str | None = None
    firmware: str | None = None
    state: str | None = None
    physical_state: str | None = None
    rate: int | None = None  # the total only (a DOWN GB10 port shows 40)
    link_layer: str | None = None


@dataclass(frozen=True, slots=True)
class IbstatResult:
    cas: tuple[IbstatCa, ...]


def parse_ibstat(text: str) -> IbstatResult:
    """`ibstat`: `CA '<dev>'` blocks with TAB-indented `Key: value` lines."""
    cas: list[dict[str, str]] = []
    for raw in lines(text):
        if m := re.match(r"^CA '([^']+)'", raw.strip()):
            cas.append({"name": m.group(1)})
        elif cas and (m := re.match(r"^\s+([A-Za-z][A-Za-z ]*?):\s*(.*?)\s*$", raw)):
            cas[-1].setdefault(m.group(1), m.group(2))
    if not cas:
        raise ParseError("no `CA '<dev>'` block", tool="ibstat", raw=text)
    out = []
    for c in cas:
        rate = c.get("Rate", "")
        out.append(
            IbstatCa(
                c["name"],
                c.get("CA type"),
                c.get("Firmware version"),
                c.get("State"),
                c.get("Physical state"),
                int(rate) if rate.isdigit() else None,
                c.get("Link layer"),
            )
        )
    return IbstatResult(tuple(out))
