"""NetworkManager in the lab: its connection profiles, `nmcli`, and who wins a rail at boot.

Two kinds of profile, as on DGX OS:
- the ones netplan generates for the interfaces it renders with NetworkManager
  (`/run/NetworkManager/system-connections/netplan-<netdev>.nmconnection`, `ipv4.method manual`
  with netplan's addresses), listed while the node's fabric netdevs are NetworkManager-rendered;
- keyfiles of the node's own under `/etc/NetworkManager/system-connections/` (real files in the
  node's filesystem). `facts.nodes.<n>.nm_profile: <netdev>` writes one that autoconnects on that
  netdev with DHCP (a profile left from before netplan took the rails over).

At boot a keyfile profile that autoconnects on a rail wins over netplan's (NetworkManager prefers
the higher `autoconnect-priority`, then the most recently used): the rail gets that profile's
addresses, none for DHCP, since nothing answers DHCP on the fabric. `netplan apply` activates
netplan's profiles again, so the fight shows only after a reboot.

`nmcli -t -f FIELDS connection show [ID...]` prints the real tool's terse forms (one `:`-separated
line per profile; `property:value` lines with a blank line between profiles for IDs), and
`nmcli connection modify [uuid|id] ID connection.autoconnect yes|no` rewrites the keyfile.
"""

from __future__ import annotations

import configparser
import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass

from wizard.errors import ScenarioError
from wizard.lab.world import NodeState, World

KEYFILE_DIR = "/etc/NetworkManager/system-connections/"
NETPLAN_DIR = "/run/NetworkManager/system-connections/netplan-"


@dataclass(frozen=True, slots=True)
class LabProfile:
    id: str
    uuid: str
    interface: str
    autoconnect: bool
    priority: int
    method: str
    addresses: tuple[str, ...]
    filename: str


def _keyfile(path: str, text: str) -> LabProfile | None:
    cp = configparser.ConfigParser(interpolation=None)
    try:
        cp.read_string(text)
    except configparser.Error:
        return None
    if not cp.has_section("connection"):
        return None
    c = cp["connection"]
    ipv4 = cp["ipv4"] if cp.has_section("ipv4") else {}
    addrs = tuple(
        str(v).split(",")[0] for k, v in sorted(dict(ipv4).items()) if k.startswith("address")
    )
    return LabProfile(
        id=c.get("id", ""),
        uuid=c.get("uuid", ""),
        interface=c.get("interface-name", ""),
        autoconnect=c.get("autoconnect", "true").lower() not in ("false", "no", "0"),
        priority=int(c.get("autoconnect-priority", "0") or 0),
        method=str(dict(ipv4).get("method", "auto")),
        addresses=addrs,
        filename=path,
    )


def profiles(world: World, node: NodeState) -> list[LabProfile]:
    """Every profile NetworkManager has on `node`: netplan's first, then the node's keyfiles."""
    out: list[LabProfile] = []
    if node.renderer == "NetworkManager":
        cfg, _ = world.netplan_config(node)
        for rail in node.rails:
            c = cfg.get(rail.netdev)
            if c is None:
                continue
            addrs = tuple(str(a) for a in c.get("addresses") or [] if ":" not in str(a))
            out.append(
                LabProfile(
                    id=f"netplan-{rail.netdev}",
                    uuid=str(
                        uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"netplan:{node.name}/{rail.netdev}")
                    ),
                    interface=rail.netdev,
                    autoconnect=True,
                    priority=0,
                    method="manual" if addrs else "disabled",
                    addresses=addrs,
                    filename=f"{NETPLAN_DIR}{rail.netdev}.nmconnection",
                )
            )
    for path in sorted(p for p in node.files if p.startswith(KEYFILE_DIR)):
        p = _keyfile(path, node.files[path])
        if p is not None:
            out.append(p)
    return out


def keyfile_text(name: str, uid: str, netdev: str, *, autoconnect: bool = True) -> str:
    return (
        "[connection]\n"
        f"id={name}\n"
        f"uuid={uid}\n"
        "type=ethernet\n"
        f"interface-name={netdev}\n"
        + ("" if autoconnect else "autoconnect=false\n")
        + "autoconnect-priority=10\n\n"
        "[ethernet]\n\n"
        "[ipv4]\n"
        "method=auto\n\n"
        "[ipv6]\n"
        "method=auto\n"
    )


def apply_facts(world: World) -> None:
    """Write the keyfile of every `nm_profile` fact."""
    for name, facts in world.facts.nodes.items():
        netdev = facts.nm_profile
        node = world.nodes.get(name)
        if netdev is None or node is None:
            continue
        if node.rail(netdev) is None:
            raise ScenarioError(
                f"{name} has no fabric netdev {netdev!r} "
                f"(its rails are {', '.join(r.netdev for r in node.rails)})",
                path=f"scenario {world.name}",
                field=f"facts.nodes.{name}.nm_profile",
            )
        uid = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"keyfile:{name}/{netdev}"))
        path = f"{KEYFILE_DIR}Wired connection 1.nmconnection"
        node.files[path] = keyfile_text("Wired connection 1", uid, netdev)


def apply_at_boot(world: World, node: NodeState) -> None:
    """A keyfile profile that autoconnects on a rail takes it over at boot."""
    for p in profiles(world, node):
        if not p.filename.startswith(KEYFILE_DIR) or not p.autoconnect:
            continue
        rail = node.rail(p.interface)
        if rail is not None:
            rail.addresses = list(p.addresses) if p.method == "manual" else []
    if world.traffic is not None:
        world.traffic.recompute()


def _holds(node: NodeState, p: LabProfile) -> bool:
    """Whether `p` is what the rail runs now: a keyfile profile holds it when the rail has that
    profile's addresses (none for DHCP), netplan's otherwise."""
    rail = node.rail(p.interface)
    if rail is None or not node.powered or not p.autoconnect:
        return False
    want = list(p.addresses) if p.method == "manual" else []
    return rail.addresses == want


def _active_device(node: NodeState, p: LabProfile, all_: list[LabProfile]) -> str:
    if p.filename.startswith(KEYFILE_DIR):
        return p.interface if _holds(node, p) else ""
    taken = any(
        q.filename.startswith(KEYFILE_DIR) and q.interface == p.interface and _holds(node, q)
        for q in all_
    )
    return "" if taken or node.rail(p.interface) is None else p.interface


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace(":", "\\:")


_LIST: dict[str, Callable[[NodeState, LabProfile], str]] = {
    "NAME": lambda n, p: p.id,
    "UUID": lambda n, p: p.uuid,
    "TYPE": lambda n, p: "802-3-ethernet",
    "AUTOCONNECT": lambda n, p: "yes" if p.autoconnect else "no",
    "AUTOCONNECT-PRIORITY": lambda n, p: str(p.priority),
    "DEVICE": lambda n, p: "",  # filled in by `run`, which knows every profile
    "FILENAME": lambda n, p: p.filename,
}
_DETAIL: dict[str, Callable[[LabProfile], str]] = {
    "connection.id": lambda p: p.id,
    "connection.uuid": lambda p: p.uuid,
    "connection.type": lambda p: "802-3-ethernet",
    "connection.interface-name": lambda p: p.interface,
    "connection.autoconnect": lambda p: "yes" if p.autoconnect else "no",
    "connection.autoconnect-priority": lambda p: str(p.priority),
    "ipv4.method": lambda p: p.method,
    "ipv4.addresses": lambda p: ", ".join(p.addresses),
}


def _find(all_: list[LabProfile], words: list[str]) -> tuple[list[LabProfile], str | None]:
    out: list[LabProfile] = []
    it = iter(words)
    for word in it:
        kind, w = None, word
        if word in ("id", "uuid", "path", "filename"):
            kind, w = word, next(it, "")
        hit = [
            p
            for p in all_
            if (kind in (None, "uuid") and p.uuid == w)
            or (kind in (None, "id") and p.id == w)
            or (kind in (None, "filename") and p.filename == w)
        ]
        if not hit:
            return [], w
        out.extend(hit[:1])
    return out, None


def run(
    world: World,
    node: NodeState,
    args: list[str],
    out: Callable[[str], None],
    err: Callable[[str], None],
    *,
    root: bool,
) -> int:
    terse = False
    fields: list[str] | None = None
    rest: list[str] = []
    it = iter(args)
    for a in it:
        if a in ("-t", "--terse"):
            terse = True
        elif a in ("-f", "--fields"):
            fields = next(it, "").split(",")
        else:
            rest.append(a)
    if not rest or rest[0] not in ("c", "con", "connection"):
        err(f"Error: argument '{rest[0] if rest else ''}' not understood.\n")
        return 2
    verb = rest[1] if len(rest) > 1 else "show"
    words = rest[2:]
    if not node.powered:
        err("Error: NetworkManager is not running.\n")
        return 8
    all_ = profiles(world, node)
    if verb in ("s", "show") and not words:
        cols = fields or ["NAME", "UUID", "TYPE", "DEVICE"]
        if any(c not in _LIST for c in cols):
            err(f"Error: invalid field '{next(c for c in cols if c not in _LIST)}'.\n")
            return 2
        for p in all_:
            vals = [
                _active_device(node, p, all_) if c == "DEVICE" else _LIST[c](node, p) for c in cols
            ]
            out((":".join(_escape(v) for v in vals) if terse else "  ".join(vals)) + "\n")
        return 0
    if verb in ("s", "show"):
        found, missing = _find(all_, words)
        if missing is not None:
            err(f"Error: {missing} - no such connection profile.\n")
            return 10
        props = fields or list(_DETAIL)
        if any(c not in _DETAIL for c in props):
            err(f"Error: invalid field '{next(c for c in props if c not in _DETAIL)}'.\n")
            return 2
        blocks = ["".join(f"{k}:{_escape(_DETAIL[k](p))}\n" for k in props) for p in found]
        out("\n".join(blocks))
        return 0
    if verb in ("mod", "modify"):
        return _modify(node, all_, words, err, root=root)
    err(f"Error: argument '{verb}' not understood.\n")
    return 2


def _modify(
    node: NodeState,
    all_: list[LabProfile],
    words: list[str],
    err: Callable[[str], None],
    *,
    root: bool,
) -> int:
    lead = 2 if words and words[0] in ("id", "uuid", "path", "filename") else 1
    found, missing = _find(all_, words[:lead])
    if missing is not None or not found:
        err(f"Error: unknown connection '{missing or ''}'.\n")
        return 10
    p = found[0]
    if not root:
        err(f"Error: Failed to modify connection '{p.id}': Insufficient privileges\n")
        return 1
    settings = words[lead:]
    if len(settings) != 2 or settings[0] not in ("connection.autoconnect", "autoconnect"):
        err("Error: only connection.autoconnect can be changed in the lab.\n")
        return 2
    if settings[1] not in ("yes", "no", "true", "false"):
        err(f"Error: failed to modify connection.autoconnect: '{settings[1]}' is not valid\n")
        return 2
    if not p.filename.startswith(KEYFILE_DIR):
        err(f"Error: Failed to modify connection '{p.id}': the profile is generated by netplan\n")
        return 1
    on = settings[1] in ("yes", "true")
    node.files[p.filename] = keyfile_text(p.id, p.uuid, p.interface, autoconnect=on)
    return 0
