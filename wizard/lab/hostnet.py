"""`ip` commands that change a node's runtime network state, and `ip -s` statistics.

`ip addr add|del|flush` and `ip link set ... mtu N` change what the netdev has now, as on a real
node: the change is not written anywhere, so the next boot (or `netplan apply`) brings back what
the netplan files say, which is why seed 000 says "persist via netplan, not ip commands". Error
texts and exit codes are iproute2's (6.x).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from wizard.lab.world import NodeState, RailState, World

Write = Callable[[str], None]
MAX_MTU = 9978  # mlx5's max_mtu
MIN_MTU = 68
OBJECTS_ADDR = ("a", "addr", "address")
OBJECTS_LINK = ("l", "link")


def _rail(node: NodeState, dev: str | None, err: Write) -> RailState | None:
    rail = node.rail(dev) if dev else None
    if rail is None or rail.netdev != dev:
        err(f'Cannot find device "{dev}"\n')
        return None
    return rail


def _dev(words: list[str]) -> str | None:
    if "dev" in words and words.index("dev") + 1 < len(words):
        return words[words.index("dev") + 1]
    return None


def change(world: World, node: NodeState, words: list[str], root: bool, err: Write) -> int | None:
    """Run a state-changing `ip` command (`words` after the global options); None if not one."""
    if len(words) < 2:
        return None
    obj, verb = words[0], words[1]
    if obj in OBJECTS_ADDR and verb in ("add", "del", "delete", "flush", "change", "replace"):
        return _addr(world, node, verb, words[2:], root, err)
    if obj in OBJECTS_LINK and verb == "set":
        return _link_set(world, node, words[2:], root, err)
    return None


def _addr(world: World, node: NodeState, verb: str, args: list[str], root: bool, err: Write) -> int:
    dev = _dev(args)
    if verb == "flush":
        rail = _rail(node, dev, err)
        if rail is None:
            return 1
        if not root:
            err("Failed to send flush request: Operation not permitted\n")
            return 2
        rail.addresses.clear()
        rail.ipv6 = [a for a in rail.ipv6 if a.startswith("fe80")]
        _changed(world, node)
        return 0
    cidr = next((a for a in args if a not in ("dev", dev) and not a.startswith("-")), None)
    if cidr is None or dev is None:
        err('Not enough information: "dev" argument is required.\n')
        return 2
    try:
        iface = ipaddress.ip_interface(cidr if "/" in cidr else f"{cidr}/32")
    except ValueError:
        err(f'Error: any valid prefix is expected rather than "{cidr}".\n')
        return 1
    rail = _rail(node, dev, err)
    if rail is None:
        return 1
    if not root:
        err("RTNETLINK answers: Operation not permitted\n")
        return 2
    text = f"{iface.ip}/{iface.network.prefixlen}"
    family = rail.addresses if iface.version == 4 else rail.ipv6
    present = [a for a in family if a.split("/")[0] == str(iface.ip)]
    if verb == "add":
        if present:
            err(f"Error: ipv{iface.version}: Address already assigned.\n")
            return 2
        family.append(text)
        if iface.version == 6 and not rail.addresses:
            rail.v6_first = True
    elif verb in ("change", "replace"):
        for a in present:
            family.remove(a)
        family.append(text)
    else:
        if not present:
            err("Error: ipv4: Address not found.\n" if iface.version == 4 else "")
            return 2
        family.remove(present[0])
    _changed(world, node)
    return 0


def _link_set(world: World, node: NodeState, args: list[str], root: bool, err: Write) -> int:
    dev = _dev(args) or (args[0] if args else None)
    rail = _rail(node, dev, err)
    if rail is None:
        return 1
    if "mtu" not in args or args.index("mtu") + 1 >= len(args):
        if any(a in args for a in ("up", "down")):
            if not root:
                err("RTNETLINK answers: Operation not permitted\n")
                return 2
            return 0  # admin state is not modelled beyond accepting it
        err(
            'Error: either "dev" is duplicate, or "'
            + (args[-1] if args else "")
            + '" is a garbage.\n'
        )
        return 255
    value = args[args.index("mtu") + 1]
    if not value.isdigit():
        err(f'Error: argument "{value}" is wrong: Invalid "mtu" value\n\n')
        return 255
    mtu = int(value)
    if not root:
        err("RTNETLINK answers: Operation not permitted\n")
        return 2
    if mtu > MAX_MTU:
        err("Error: mtu greater than device maximum.\n")
        return 2
    if mtu < MIN_MTU:
        err("Error: mtu less than device minimum.\n")
        return 2
    rail.mtu = mtu
    _changed(world, node)
    return 0


def _changed(world: World, node: NodeState) -> None:
    if world.traffic is not None:
        world.traffic.recompute()
    world.changed(f"ip:{node.name}")


def stats_lines(rail: RailState | None) -> str:
    """The `ip -s link` RX/TX blocks (iproute2 6.x layout) from the netdev's counters."""
    c = rail.counters if rail is not None else {}
    rx = (c.get("rx_bytes_phy", 0), c.get("rx_packets_phy", 0), 0, c.get("rx_discards_phy", 0))
    tx = (c.get("tx_bytes_phy", 0), c.get("tx_packets_phy", 0), c.get("tx_errors_phy", 0))
    tx_drop = c.get("tx_discards_phy", 0)
    return (
        "    RX:  bytes  packets errors dropped  missed   mcast           \n"
        f"{rx[0]:>14} {rx[1]:>8} {rx[2]:>6} {rx[3]:>7} {0:>7} {0:>7} \n"
        "    TX:  bytes  packets errors dropped carrier collsns           \n"
        f"{tx[0]:>14} {tx[1]:>8} {tx[2]:>6} {tx_drop:>7} {0:>7} {0:>7} \n"
    )


SYSCTL_USAGE = (
    "\n"
    "Usage:\n"
    " sysctl [options] [variable[=value] ...]\n"
    "\n"
    "Options:\n"
    "  -a, --all            display all variables\n"
    "  -A                   alias of -a\n"
    "  -X                   alias of -a\n"
    "      --deprecated     include deprecated parameters to listing\n"
    "      --dry-run        Print the key and values but do not write\n"
    "  -b, --binary         print value without new line\n"
    "  -e, --ignore         ignore unknown variables errors\n"
    "  -N, --names          print variable names without values\n"
    "  -n, --values         print only values of the given variable(s)\n"
    "  -p, --load[=<file>]  read values from file\n"
    "  -f                   alias of -p\n"
    "      --system         read values from all system directories\n"
    "  -r, --pattern <expression>\n"
    "                       select setting that match expression\n"
    "  -q, --quiet          do not echo variable set\n"
    "  -w, --write          enable writing a value to variable\n"
    "  -o                   does nothing\n"
    "  -x                   does nothing\n"
    "  -d                   alias of -h\n"
    "\n"
    " -h, --help     display this help and exit\n"
    " -V, --version  output version information and exit\n"
    "\n"
    "For more details see sysctl(8).\n"
)
SYSCTL_SHORT = set("aAXbeNnpfrqwoxdhV")
SYSCTL_LONG = (
    "all", "deprecated", "dry-run", "binary", "ignore", "names", "values", "load", "system",
    "pattern", "quiet", "write", "help", "version",
)  # fmt: skip
SYSCTL_ROOTS = ("abi.", "crypto.", "debug.", "dev.", "fs.", "kernel.", "net.", "user.", "vm.")


def sysctl_bad_option(args: list[str]) -> str:
    """procps-ng's getopt message for the first option `sysctl` does not know ("" if none)."""
    for a in args:
        if a == "--":
            break
        if a.startswith("--"):
            name = a[2:].partition("=")[0]
            hits = [n for n in SYSCTL_LONG if n.startswith(name)]
            if name not in SYSCTL_LONG and len(hits) != 1:
                return f"sysctl: unrecognized option '{a}'\n"
        elif a.startswith("-") and len(a) > 1:
            for letter in a[1:]:
                if letter not in SYSCTL_SHORT:
                    return f"sysctl: invalid option -- '{letter}'\n"
                if letter in "pr":
                    break
    return ""


def sysctl_known(key: str) -> bool:
    """Whether /proc/sys has `key` at all (the lab keeps only the keys it models)."""
    return key.startswith(SYSCTL_ROOTS)


JOURNALCTL_SHORT_ARG = set("bDuMtpSUIcnoFgr")  # letters that take a value (or an optional one)
JOURNALCTL_SHORT = set("hVaflqmkxerNeb") | JOURNALCTL_SHORT_ARG
JOURNALCTL_LONG = (
    "help", "version", "no-pager", "pager-end", "follow", "lines", "no-tail", "reverse",
    "output", "output-fields", "all", "full", "no-full", "quiet", "merge", "boot", "list-boots",
    "dmesg", "identifier", "unit", "user-unit", "priority", "grep", "case-sensitive", "since",
    "until", "cursor", "after-cursor", "show-cursor", "system", "user", "directory", "file",
    "root", "image", "namespace", "header", "disk-usage", "vacuum-size", "vacuum-time",
    "vacuum-files", "catalog", "utc", "no-hostname", "facility", "field", "fields", "sync",
    "flush", "rotate", "verify", "machine", "this-boot", "kernel", "lines", "exclude-identifier",
)  # fmt: skip


def journalctl_bad_option(args: list[str]) -> str:
    """systemd's getopt message for the first option `journalctl` does not know ("" if none)."""
    for a in args:
        if a.startswith("--"):
            name = a[2:].partition("=")[0]
            hits = [n for n in dict.fromkeys(JOURNALCTL_LONG) if n.startswith(name)]
            if name not in JOURNALCTL_LONG and len(hits) != 1:
                return f"journalctl: unrecognized option '{a}'\n"
        elif a.startswith("-") and len(a) > 1 and not a[1:].isdigit():
            for letter in a[1:]:
                if letter not in JOURNALCTL_SHORT:
                    return f"journalctl: invalid option -- '{letter}'\n"
                if letter in JOURNALCTL_SHORT_ARG:
                    break
    return ""
