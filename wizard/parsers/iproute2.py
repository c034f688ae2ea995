"""iproute2: `ip -j addr`/`ip -j link` (JSON), `ip -br addr|link`, and `ip addr`/`ip -s link` text.

Sample inputs it matches (real/iproute2/):

    [{"ifindex":2,"ifname":"enp1s0f0np0","mtu":9000,"operstate":"UP","addr_info":[{"family":"inet","local":"10.9.0.1","prefixlen":24}]}]
    enp1s0f0np0@if2  UP             10.9.0.1/24 fe80::b0fd:87ff:fe0c:ba78/64
    2: enp1s0f0np0@if2: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc noqueue state UP ...

Prefer `ip -j`. Interface names lose their `@ifN`/`@peer` suffix (veth and VLAN links show
it; GB10 netdevs do not). `duplicate_ipv4()` finds the same IPv4 on several netdevs, the
`host.duplicate-ip` evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from wizard.errors import ParseError
from wizard.parsers.common import lines, load_json, remembered, strip_prompt, to_int

TOOL = "ip"


@dataclass(frozen=True, slots=True)
class IpAddress:
    family: str  # inet | inet6
    address: str
    prefixlen: int
    scope: str | None = None

    @property
    def cidr(self) -> str:
        return f"{self.address}/{self.prefixlen}"

    @property
    def link_local(self) -> bool:
        return self.address.lower().startswith("fe80:") or self.address.startswith("169.254.")


@dataclass(frozen=True, slots=True)
class IpInterface:
    name: str
    state: str | None = None  # operstate: UP, DOWN, UNKNOWN
    mtu: int | None = None
    mac: str | None = None
    flags: tuple[str, ...] = ()
    addresses: tuple[IpAddress, ...] = ()
    rx_bytes: int | None = None
    rx_packets: int | None = None
    tx_bytes: int | None = None
    tx_packets: int | None = None

    @property
    def ipv4(self) -> tuple[str, ...]:
        return tuple(a.address for a in self.addresses if a.family == "inet")

    @property
    def ipv6(self) -> tuple[str, ...]:
        return tuple(a.address for a in self.addresses if a.family == "inet6")

    @property
    def carrier(self) -> bool:
        return "NO-CARRIER" not in self.flags and (self.state or "").upper() != "DOWN"


@dataclass(frozen=True, slots=True)
class IpResult:
    format: str  # json | brief | text
    interfaces: tuple[IpInterface, ...]

    def get(self, name: str) -> IpInterface | None:
        return next((i for i in self.interfaces if i.name == name), None)

    def duplicate_ipv4(self) -> dict[str, tuple[str, ...]]:
        """IPv4 address -> the netdevs holding it, for addresses on more than one netdev."""
        seen: dict[str, list[str]] = {}
        for iface in self.interfaces:
            for addr in iface.ipv4:
                if not addr.startswith("127."):
                    seen.setdefault(addr, []).append(iface.name)
        return {a: tuple(n) for a, n in seen.items() if len(n) > 1}


def _base(name: str) -> str:
    return name.split("@", 1)[0]


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    return value if isinstance(value, int) else None


@remembered  # the sweep's discovery and several checks read the same `ip -j` outputs
def parse_ip_json(text: str) -> IpResult:
    """`ip -j [-p] [-d] addr|link [show]`: a JSON array of interfaces."""
    data = load_json(text, tool=TOOL)
    if not isinstance(data, list) or not all(isinstance(i, dict) for i in data):
        raise ParseError("expected a JSON array of interface objects", tool=TOOL, raw=text)
    ifaces: list[IpInterface] = []
    for item in data:
        name = item.get("ifname")
        if not isinstance(name, str):
            raise ParseError("interface without `ifname`", tool=TOOL, raw=text)
        addrs: list[IpAddress] = []
        info = item.get("addr_info", [])
        for a in info if isinstance(info, list) else []:
            if isinstance(a, dict) and isinstance(a.get("local"), str):
                plen = _int(a.get("prefixlen"))
                addrs.append(
                    IpAddress(
                        str(a.get("family", "")),
                        a["local"],
                        plen if plen is not None else 0,
                        str(a["scope"]) if "scope" in a else None,
                    )
                )
        stats = item.get("stats64") or item.get("stats") or {}
        rx = stats.get("rx", {}) if isinstance(stats, dict) else {}
        tx = stats.get("tx", {}) if isinstance(stats, dict) else {}
        flags = item.get("flags", [])
        ifaces.append(
            IpInterface(
                name=_base(name),
                state=str(item["operstate"]) if "operstate" in item else None,
                mtu=_int(item.get("mtu")),
                mac=str(item["address"]) if isinstance(item.get("address"), str) else None,
                flags=tuple(str(f) for f in flags) if isinstance(flags, list) else (),
                addresses=tuple(addrs),
                rx_bytes=_int(rx.get("bytes")) if isinstance(rx, dict) else None,
                rx_packets=_int(rx.get("packets")) if isinstance(rx, dict) else None,
                tx_bytes=_int(tx.get("bytes")) if isinstance(tx, dict) else None,
                tx_packets=_int(tx.get("packets")) if isinstance(tx, dict) else None,
            )
        )
    return IpResult("json", tuple(ifaces))


_BRIEF = re.compile(
    r"^(\S+)\s+(UP|DOWN|UNKNOWN|LOWERLAYERDOWN|DORMANT|NOTPRESENT|TESTING)\b\s*(.*)$"
)
_MAC = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")


def _addr(token: str) -> IpAddress | None:
    if "/" not in token:
        return None
    addr, _, plen = token.partition("/")
    n = to_int(plen)
    if n is None:
        return None
    return IpAddress("inet6" if ":" in addr else "inet", addr, n)


def parse_ip_brief(text: str) -> IpResult:
    """`ip -br addr` (name, state, addresses) or `ip -br link` (name, state, MAC, <flags>)."""
    ifaces: list[IpInterface] = []
    for raw in lines(text):
        line = strip_prompt(raw).rstrip()
        m = _BRIEF.match(line)
        if not m:
            continue
        rest = m.group(3).split()
        mac = rest[0] if rest and _MAC.match(rest[0]) else None
        flags: tuple[str, ...] = ()
        for tok in rest:
            if tok.startswith("<") and tok.endswith(">"):
                flags = tuple(tok[1:-1].split(","))
        addrs = tuple(a for a in (_addr(t) for t in rest) if a is not None)
        ifaces.append(IpInterface(_base(m.group(1)), m.group(2), None, mac, flags, addrs))
    if not ifaces:
        raise ParseError("no `<ifname> <STATE> ...` line of `ip -br`", tool=TOOL, raw=text)
    return IpResult("brief", tuple(ifaces))


_HEAD = re.compile(r"^(\d+):\s+(\S+?):\s+<([^>]*)>(.*)$")
_INET = re.compile(r"^\s+(inet6?)\s+(\S+)(?:.*\bscope\s+(\S+))?")


def parse_ip_text(text: str) -> IpResult:
    """`ip addr` / `ip link` / `ip -s [-s] link` text: one block per `N: name: <FLAGS> ...`."""
    ifaces: list[IpInterface] = []
    cur: dict[str, Any] | None = None
    pending: str | None = None  # "rx" or "tx": the next numeric line holds its stats

    def flush() -> None:
        if cur is not None:
            ifaces.append(IpInterface(**cur))

    for raw in lines(text):
        line = strip_prompt(raw).rstrip()
        h = _HEAD.match(line)
        if h:
            flush()
            rest = h.group(4)
            mtu = re.search(r"\bmtu (\d+)", rest)
            state = re.search(r"\bstate (\S+)", rest)
            cur = {
                "name": _base(h.group(2)),
                "flags": tuple(f for f in h.group(3).split(",") if f),
                "mtu": int(mtu.group(1)) if mtu else None,
                "state": state.group(1) if state else None,
                "addresses": (),
            }
            pending = None
            continue
        if cur is not None:
            pending = _detail(cur, line, pending)
    flush()
    if not ifaces:
        raise ParseError("no `N: <ifname>: <FLAGS>` block", tool=TOOL, raw=text)
    return IpResult("text", tuple(ifaces))


def _detail(cur: dict[str, Any], line: str, pending: str | None) -> str | None:
    """One line inside an interface block (MAC, address, statistics) into `cur`; returns which
    statistics the next numeric line holds ("rx", "tx" or None)."""
    s = line.strip()
    if s.startswith("link/"):
        parts = s.split()
        if len(parts) > 1 and _MAC.match(parts[1]):
            cur["mac"] = parts[1]
        return pending
    im = _INET.match(line)
    if im:
        a = _addr(im.group(2))
        if a is not None:
            cur["addresses"] = (
                *cur["addresses"],
                IpAddress(im.group(1), a.address, a.prefixlen, im.group(3)),
            )
        return pending
    if s.startswith("RX:"):
        return "rx"
    if s.startswith("TX:"):
        return "tx"
    if s.startswith(("RX errors", "TX errors")):
        return None
    if pending:
        nums = s.split()
        if len(nums) >= 2 and nums[0].isdigit() and nums[1].isdigit():
            cur[f"{pending}_bytes"] = int(nums[0])
            cur[f"{pending}_packets"] = int(nums[1])
    return None


def parse_ip(text: str) -> IpResult:
    """Any of the three formats, chosen by shape."""
    if re.match(r"\s*\[\s*(\{|\])", text):
        return parse_ip_json(text)
    if any(_HEAD.match(strip_prompt(line)) for line in lines(text)):
        return parse_ip_text(text)
    return parse_ip_brief(text)
