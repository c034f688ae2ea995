"""Consistent redaction of host names, IP addresses and MACs, for reports sent outside.

A session report attached to a vendor ticket must not reveal the cluster's names and addresses,
yet stay readable: the same value always gets the same placeholder (`spark2` is `node-2` in
every table, `10.9.1.2` is `ip-3` in the evidence and in the export), so a duplicate address
still shows as a duplicate. Host names are the ones the session knows (its nodes, switches and
probe targets), matched as whole words; addresses and MACs are found by pattern and checked with
`ipaddress` (so `0000:01:00.0` PCI addresses and version strings are left alone).

    >>> r = Redactor(nodes=["spark1"])
    >>> r.redact("spark1 10.9.1.1/24 4c:bb:47:00:00:01")
    'node-1 ip-1/24 mac-1'
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Any

# Six, eight or twenty colon/dash separated octets: Ethernet MACs, EUI-64 GUIDs, IPoIB hwaddrs.
_MAC = re.compile(
    r"(?<![0-9A-Fa-f:.-])"
    r"(?:[0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}(?:(?:[:-][0-9A-Fa-f]{2}){2}|(?:[:-][0-9A-Fa-f]{2}){14})?"
    r"(?![0-9A-Fa-f:-])"
)
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
# Candidates only: anything with two colons made of hex groups; `ipaddress` decides.
_IPV6 = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?(?:%\w+)?"
    r"(?![\w:])"
)


# perftest prints a GID as 16 decimal bytes: `GID: 00:00:...:255:255:10:09:01:01`.
_GID_DEC = re.compile(r"(?<![\d:])(?:\d{2,3}:){15}\d{2,3}(?![\d:])")
# Reverse DNS names: the address is in them, backwards.
_RDNS = re.compile(
    r"(?<![\w.])(?:\d{1,3}\.){4}in-addr\.arpa\b|(?<![\w.])(?:[0-9a-f]\.){32}ip6\.arpa\b"
)
# RouterOS identifiers: `serial-number: HGX09...`, `# serial number = ...`, `software-id: ...`,
# `# software id = ...`, and the license key block.
_SERIAL = re.compile(r"(?i)(serial[- _]?number\W{1,4})([A-Za-z0-9-]{4,})")
_SOFTWARE_ID = re.compile(r"(?i)(software[- _]?id\W{1,4})([A-Za-z0-9-]{4,})")
_LICENSE = re.compile(
    r"-----BEGIN MIKROTIK SOFTWARE KEY-----.*?-----END MIKROTIK SOFTWARE KEY-----", re.S
)
# User names where the tools print them: `user 'fabwiz'`, `user=fabwiz`, `name=fabwiz group=`.
_USER = re.compile(r"(?i)(\buser(?:name)?\s*[=:]?\s*['\"]?)([A-Za-z_][\w.-]{0,31})(?=['\"]?)")


class Redactor:
    """Maps sensitive values to stable placeholders. One instance per report, so every format
    rendered from it (Markdown, HTML, JSON) uses the same placeholders."""

    def __init__(
        self,
        *,
        nodes: Iterable[str] = (),
        switches: Iterable[str] = (),
        hosts: Iterable[str] = (),
    ) -> None:
        self.mapping: dict[str, str] = {}
        self._counters: dict[str, int] = {}
        self._names: dict[str, str] = {}
        self._name_re: re.Pattern[str] | None = None
        for n in nodes:
            self.add_name(n, "node")
        for s in switches:
            self.add_name(s, "switch")
        for h in hosts:
            self.add_name(h, "host")

    def _placeholder(self, kind: str, value: str) -> str:
        known = self.mapping.get(value)
        if known is not None:
            return known
        n = self._counters.get(kind, 0) + 1
        self._counters[kind] = n
        self.mapping[value] = f"{kind}-{n}"
        return self.mapping[value]

    def add_name(self, name: str, kind: str = "host") -> str:
        """Register a host name (node, switch, other host); returns its placeholder."""
        name = name.strip()
        if not name or name in self._names:
            return self._names.get(name, "")
        placeholder = self._placeholder(kind, name)
        self._names[name] = placeholder
        alternatives = "|".join(re.escape(n) for n in sorted(self._names, key=len, reverse=True))
        # Whole words: `spark1` must not eat `spark10`; case-sensitive so that a switch named
        # `crs804` leaves the model name `CRS804-4DDQ` alone.
        self._name_re = re.compile(rf"(?<![\w.])(?:{alternatives})(?![\w])")
        return placeholder

    def _mac(self, m: re.Match[str]) -> str:
        return self._placeholder("mac", m.group(0).lower().replace("-", ":"))

    def _ipv4(self, m: re.Match[str]) -> str:
        text = m.group(0)
        try:
            addr = ipaddress.IPv4Address(text)
        except ValueError:
            return text
        return self._placeholder("ip", str(addr))

    def _ipv6(self, m: re.Match[str]) -> str:
        text = m.group(0)
        bare, _, zone = text.partition("%")
        if bare.count(":") < 2 or not any(c.isalnum() for c in bare):
            return text
        try:
            addr = ipaddress.IPv6Address(bare)
        except ValueError:
            return text
        placeholder = self._placeholder("ip6", str(addr))
        return f"{placeholder}%{zone}" if zone else placeholder

    def _keep_label(self, kind: str) -> Any:
        def sub(m: re.Match[str]) -> str:
            return m.group(1) + self._placeholder(kind, m.group(2))

        return sub

    def _user(self, m: re.Match[str]) -> str:
        name = m.group(2)
        if name.lower() in ("name", "names", "group", "the", "for", "at", "or"):
            return m.group(0)
        return m.group(1) + self._placeholder("user", name)

    def redact(self, text: str) -> str:
        """The text with every known host name, IPv4/IPv6 address (also inside GIDs and
        reverse DNS names), MAC, serial number, software id, license key and user name
        replaced."""
        if not text:
            return text
        out = _LICENSE.sub(lambda m: self._placeholder("license", m.group(0)), text)
        out = _SERIAL.sub(self._keep_label("serial"), out)
        out = _SOFTWARE_ID.sub(self._keep_label("software-id"), out)
        out = _USER.sub(self._user, out)
        out = _RDNS.sub(lambda m: self._placeholder("rdns", m.group(0)), out)
        out = _GID_DEC.sub(lambda m: self._placeholder("gid", m.group(0)), out)
        out = _MAC.sub(self._mac, out)
        out = _IPV6.sub(self._ipv6, out)
        out = _IPV4.sub(self._ipv4, out)
        if self._name_re is not None:
            out = self._name_re.sub(lambda m: self._names[m.group(0)], out)
        return out

    def redact_json(self, value: Any) -> Any:
        """The same, applied to every string (keys included) of JSON-like data."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {
                (self.redact(k) if isinstance(k, str) else k): self.redact_json(v)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.redact_json(v) for v in value]
        return value


__all__ = ["Redactor"]
