"""`nmcli -t` (terse) output: the connection list and the multiline profile details.

The list, `nmcli -t -f NAME,UUID,TYPE,AUTOCONNECT,DEVICE,FILENAME connection show`, is one line
per profile, the fields in the order asked, separated by `:`; a `:` or `\\` inside a value is
escaped with a backslash:

    netplan-enp1s0f0np0:5fcfd6d7-1e63-3332-8826-a7eda103792d:802-3-ethernet:yes:enp1s0f0np0:/run/NetworkManager/system-connections/netplan-enp1s0f0np0.nmconnection
    Wired connection 1:0c6f...:802-3-ethernet:yes::/etc/NetworkManager/system-connections/Wired connection 1.nmconnection

The details, `nmcli -t -f connection.id,connection.uuid,... connection show ID...`, are one
`property:value` line each, a blank line between profiles:

    connection.id:netplan-enp1s0f0np0
    connection.uuid:5fcfd6d7-1e63-3332-8826-a7eda103792d
    connection.interface-name:enp1s0f0np0
    ipv4.method:manual
    ipv4.addresses:10.9.1.1/24

Multiple addresses are listed with `,`. Pure functions; anything else raises `ParseError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wizard.errors import ParseError

TOOL = "nmcli"
LIST_FIELDS = ("NAME", "UUID", "TYPE", "AUTOCONNECT", "DEVICE", "FILENAME")
DETAIL_FIELDS = (
    "connection.id",
    "connection.uuid",
    "connection.interface-name",
    "connection.autoconnect",
    "ipv4.method",
    "ipv4.addresses",
)
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_PROP = re.compile(r"^[a-z0-9-]+\.[a-z0-9-]+$")


@dataclass(frozen=True, slots=True)
class Listed:
    """One row of the connection list."""

    name: str
    uuid: str
    type: str
    autoconnect: bool
    device: str  # the device it is active on ("" when not active)
    filename: str  # the file NetworkManager loaded it from


@dataclass(frozen=True, slots=True)
class Profile:
    """One profile's settings (the properties asked for)."""

    id: str
    uuid: str
    interface: str  # connection.interface-name ("" binds by MAC or to any device)
    autoconnect: bool
    method: str  # ipv4.method: manual, auto, disabled, link-local...
    addresses: tuple[str, ...]


def split_terse(line: str) -> list[str]:
    """The fields of one terse line: `:` separates, a backslash escapes the next character."""
    out: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\" and i + 1 < len(line):
            cur.append(line[i + 1])
            i += 2
            continue
        if ch == ":":
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append("".join(cur))
    return out


def _yes(value: str, text: str) -> bool:
    if value not in ("yes", "no"):
        raise ParseError(f"autoconnect is {value!r}, not yes or no", tool=TOOL, raw=text)
    return value == "yes"


def parse_list(text: str) -> list[Listed]:
    """Rows of `nmcli -t -f NAME,UUID,TYPE,AUTOCONNECT,DEVICE,FILENAME connection show`."""
    out: list[Listed] = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        fields = split_terse(raw)
        if len(fields) != len(LIST_FIELDS):
            raise ParseError(
                f"{len(fields)} fields, expected {len(LIST_FIELDS)}", tool=TOOL, raw=text
            )
        name, uuid, kind, auto, device, filename = fields
        if not _UUID.match(uuid):
            raise ParseError(f"{uuid!r} is not a connection UUID", tool=TOOL, raw=text)
        out.append(Listed(name, uuid.lower(), kind, _yes(auto, text), device, filename))
    return out


def _profile(props: dict[str, str], raw: str) -> Profile:
    uuid = props.get("connection.uuid", "")
    if not _UUID.match(uuid):
        raise ParseError(
            f"a profile without a valid connection.uuid ({uuid!r})", tool=TOOL, raw=raw
        )
    addrs = props.get("ipv4.addresses", "")
    return Profile(
        id=props.get("connection.id", ""),
        uuid=uuid.lower(),
        interface=props.get("connection.interface-name", "").strip(),
        autoconnect=_yes(props.get("connection.autoconnect", "yes"), raw),
        method=props.get("ipv4.method", ""),
        addresses=tuple(a.strip() for a in addrs.split(",") if a.strip() and a.strip() != "--"),
    )


def parse_details(text: str) -> list[Profile]:
    """Profiles of `nmcli -t -f <properties> connection show ID...` (blank line between)."""
    out: list[Profile] = []
    props: dict[str, str] = {}
    for raw in [*text.splitlines(), ""]:
        if not raw.strip():
            if props:
                out.append(_profile(props, text))
                props = {}
            continue
        key, sep, _ = raw.partition(":")
        if not sep or not _PROP.match(key):
            raise ParseError(f"not a `property:value` line: {raw[:80]!r}", tool=TOOL, raw=text)
        props[key] = re.sub(r"\\(.)", r"\1", raw[len(key) + 1 :])
    return out
