"""`/export` of the emulated switch: the current configuration as a RouterOS v7 `.rsc` script.

Compact form like the real v7 export (see fixtures/real/routeros-export): the header
`# <date> <time> by RouterOS <ver>`, `# software id`, `# model`, `# serial number`, then one
group per menu with only non-default values, arguments sorted by name, booleans as yes/no,
values quoted and escaped when needed. The text is valid input for `script.py`, so an export
can be imported back (`/import file-name=`), which is what a rollback from an export does.
"""

from __future__ import annotations

import re

from wizard.lab.routeros.switch import (
    Item,
    SwitchState,
    clock_text,
    is_cpu_port,
)

__all__ = ["quote", "render_export"]

_PLAIN = re.compile(r"^[A-Za-z0-9_.:,/*+@-]+$")


_NAMED = {"\\": "\\\\", '"': '\\"', "$": "\\$", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def quote(value: str) -> str:
    """A value as the export writes it: bare when safe, else in escaped double quotes. RouterOS
    text is 7-bit: other control characters, and every byte of a non-ASCII character's UTF-8,
    are written as `\\XX` hex escapes (`\\1B` for ESC, `\\C3\\A9` for `é`)."""
    if value in ("true", "false"):
        return "yes" if value == "true" else "no"
    if value and _PLAIN.match(value):
        return value
    out: list[str] = []
    for ch in value:
        code = ord(ch)
        if ch in _NAMED:
            out.append(_NAMED[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\{code:02X}")
        elif code > 0x7F:
            out.extend(f"\\{b:02X}" for b in ch.encode("utf-8", "surrogateescape"))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _args(values: dict[str, str]) -> str:
    return " ".join(f"{k}={quote(v)}" for k, v in sorted(values.items()))


def _diff(item: Item, defaults: dict[str, str], keys: tuple[str, ...]) -> dict[str, str]:
    return {k: item[k] for k in keys if k in item and item[k] != defaults.get(k)}


_ETHER_KEYS = (
    "name",
    "mtu",
    "l2mtu",
    "auto-negotiation",
    "speed",
    "fec-mode",
    "advertise",
    "tx-flow-control",
    "rx-flow-control",
    "disabled",
    "comment",
    "arp",
)
_BRIDGE_KEYS = (
    "name",
    "admin-mac",
    "auto-mac",
    "comment",
    "protocol-mode",
    "vlan-filtering",
    "priority",
    "ageing-time",
    "igmp-snooping",
    "dhcp-snooping",
    "pvid",
    "frame-types",
    "ingress-filtering",
    "disabled",
    "mtu",
    "fast-forward",
)
_PORT_KEYS = (
    "bridge",
    "interface",
    "hw",
    "pvid",
    "priority",
    "path-cost",
    "internal-path-cost",
    "edge",
    "point-to-point",
    "learn",
    "horizon",
    "trusted",
    "bpdu-guard",
    "comment",
    "disabled",
    "frame-types",
    "ingress-filtering",
    "restricted-role",
    "restricted-tcn",
    "fast-leave",
)
_QOS_KEYS = (
    "profile",
    "map",
    "trust-l2",
    "trust-l3",
    "tx-manager",
    "pfc",
    *(f"egress-rate-queue{i}" for i in range(8)),
)
_SCHED_KEYS = (
    "name",
    "start-date",
    "start-time",
    "interval",
    "on-event",
    "policy",
    "disabled",
    "comment",
)


def _ether_defaults(item: Item) -> dict[str, str]:
    data = not is_cpu_port(item["default-name"])
    return {
        "name": item["default-name"],
        "mtu": "1500",
        "l2mtu": "1592" if not data else "1584",
        "auto-negotiation": "true",
        "fec-mode": "auto",
        "tx-flow-control": "off",
        "rx-flow-control": "off",
        "disabled": "false",
        "arp": "enabled",
    }


def _section(path: str, lines: list[str], out: list[str]) -> None:
    if lines:
        out.append(path)
        out.extend(lines)


def render_export(
    sw: SwitchState,
    *,
    path: tuple[str, ...] = (),
    hide_sensitive: bool = True,
    terse: bool = False,
) -> str:
    """The `.rsc` text; `path` limits it to one menu (e.g. `("interface", "bridge")`).

    `terse` puts the menu path on every line and never wraps; otherwise a line longer than 79
    characters is wrapped as RouterOS wraps it (78 characters and a backslash, continuations
    indented by four spaces).
    """
    del hide_sensitive  # nothing sensitive is modelled: users live outside the export
    out = [
        f"# {clock_text(sw.clock())} by RouterOS {sw.routeros_version}",
        f"# software id = {sw.serial[-8:-4]}-{sw.serial[-4:]}",
        "#",
        f"# model = {sw.model}",
        f"# serial number = {sw.serial}",
    ]
    body: list[str] = []
    bridges = [
        "add "
        + _args(
            {
                **_diff(
                    b,
                    {
                        "auto-mac": "true",
                        "protocol-mode": "rstp",
                        "vlan-filtering": "false",
                        "priority": "0x8000",
                        "ageing-time": "5m",
                        "disabled": "false",
                        "mtu": "auto",
                    },
                    _BRIDGE_KEYS,
                ),
                "name": b["name"],
            }
        )
        for b in sw.bridges()
    ]
    _section("/interface bridge", bridges, body)
    ethers = []
    for item in sw.tables["interface"]:
        if item.get("type") != "ether":
            continue
        changed = _diff(item, _ether_defaults(item), _ETHER_KEYS)
        if changed:
            ethers.append(f"set [ find default-name={item['default-name']} ] {_args(changed)}")
    _section("/interface ethernet", ethers, body)
    pfc = [
        "add "
        + _args(
            _diff(
                p,
                {"rx": "false", "tx": "false", "disabled": "false"},
                (
                    "name",
                    "traffic-class",
                    "rx",
                    "tx",
                    "pause-threshold",
                    "resume-threshold",
                    "comment",
                    "disabled",
                ),
            )
        )
        for p in sw.tables["pfc"]
        if p.get("default") != "true"
    ]
    _section("/interface ethernet switch qos priority-flow-control", pfc, body)
    qos = []
    for q in sw.tables["qos-port"]:
        changed = _diff(
            q,
            {
                "profile": "default",
                "map": "default",
                "trust-l2": "ignore",
                "trust-l3": "ignore",
                "tx-manager": "default",
                "pfc": "disabled",
            },
            _QOS_KEYS,
        )
        if changed:
            qos.append(f"set {q['name']} {_args(changed)}")
    _section("/interface ethernet switch qos port", qos, body)
    ports = [
        "add " + _args(_diff(p, {"hw": "true", "disabled": "false"}, _PORT_KEYS))
        for p in sw.tables["bridge-port"]
    ]
    _section("/interface bridge port", ports, body)
    switch = []
    for s in sw.tables["switch"]:
        changed = _diff(
            s,
            {
                "l3-hw-offloading": "false",
                "qos-hw-offloading": "true",
                "cpu-flow-control": "true",
                "mirror-source": "none",
                "mirror-target": "none",
            },
            ("l3-hw-offloading", "cpu-flow-control", "mirror-source", "mirror-target"),
        )
        if changed:
            switch.append(f"set {s['name']} {_args(changed)}")
    _section("/interface ethernet switch", switch, body)
    _section("/system identity", [f"set name={quote(sw.tables['identity'][0]['name'])}"], body)
    sched = [
        "add " + _args(_diff(s, {"disabled": "false", "interval": "0s"}, _SCHED_KEYS))
        for s in sw.tables["scheduler"]
    ]
    _section("/system scheduler", sched, body)
    if path:
        wanted = "/" + " ".join(path)
        body = _filter(body, wanted)
    body = _terse(body) if terse else [w for line in body for w in wrap(line)]
    return "\n".join(out + body) + "\n"


WRAP = 79


def wrap(line: str) -> list[str]:
    """RouterOS's export wrapping: 79 columns, a trailing backslash, four-space continuations."""
    if len(line) <= WRAP:
        return [line]

    def cut(text: str, width: int) -> int:
        # never start a continuation with a space: readers strip the indentation
        while width > 1 and text[width] == " ":
            width -= 1
        return width

    k = cut(line, WRAP - 1)
    out = [line[:k] + "\\"]
    rest = line[k:]
    while 4 + len(rest) > WRAP:
        k = cut(rest, WRAP - 5)
        out.append("    " + rest[:k] + "\\")
        rest = rest[k:]
    out.append("    " + rest)
    return out


def _terse(body: list[str]) -> list[str]:
    out: list[str] = []
    current = ""
    for line in body:
        if line.startswith("/"):
            current = line
            continue
        out.append(f"{current} {line}")
    return out


def _filter(body: list[str], wanted: str) -> list[str]:
    keep: list[str] = []
    current = ""
    for line in body:
        if line.startswith("/"):
            current = line
            if current == wanted or current.startswith(wanted + " "):
                keep.append(line)
            continue
        if current == wanted or current.startswith(wanted + " "):
            keep.append(line)
    return keep
