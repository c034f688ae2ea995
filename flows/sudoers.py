"""Every command fabwiz runs with `sudo -n`, as data: the sudoers drop-in and the preflight test.

fabwiz never asks for a password: it runs `sudo -n` and a refusal is a finding
(`preflight.sudo`). `RULES` lists each command and the argument patterns it is run with; the
read-only probes come from the checks themselves (every `HostProbe(sudo=True)` of the registry),
the fix commands from the same constants the fix plans and the timed revert use. `sudoers()`
renders them as a drop-in for `/etc/sudoers.d/fabwiz` (`fabwiz setup sudoers --user NAME`), and
`SUDO_PROBES` asks each node, without running anything, whether it would allow each one
(`sudo -n -l CMD ARGS` prints the command's full path when allowed, exits 1 otherwise).
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass

from flows import plans
from wizard import fixes
from wizard.probes import HostProbe

__all__ = [
    "RULES",
    "SUDO_PROBES",
    "SudoRule",
    "covered",
    "matching_line",
    "rules_for",
    "sudo_probes",
    "sudoers",
    "sudoers_line",
]

# Where Ubuntu / DGX OS installs each command (sudo matches the full path it resolves through
# its secure_path; `command -v` on a node shows its own).
PATHS = {
    "dmesg": "/usr/bin/dmesg",
    "lspci": "/usr/bin/lspci",
    "mlnx_qos": "/usr/bin/mlnx_qos",
    "netplan": "/usr/sbin/netplan",
    "sysctl": "/usr/sbin/sysctl",
    "systemctl": "/usr/bin/systemctl",
    "systemd-run": "/usr/bin/systemd-run",
    "tee": "/usr/bin/tee",
    "cp": "/usr/bin/cp",
    "rm": "/usr/bin/rm",
    "sh": "/usr/bin/sh",
}


@dataclass(frozen=True, slots=True)
class SudoRule:
    """One command fabwiz runs as root, the argument patterns (sudoers globs) it uses, and a
    sample argument list `sudo -n -l` is asked about."""

    command: str
    args: tuple[str, ...]  # sudoers argument patterns; "" means exactly no arguments
    sample: str  # arguments for `sudo -n -l` (must match one pattern)
    why: str
    read_only: bool = False


def sudo_probes() -> list[HostProbe]:
    """The read-only probes the checks run with sudo: every `HostProbe(sudo=True)` of every
    check module's `CHECK` (and of discovery), in a stable order. Read from the modules
    themselves, not the registry: the registry imports the sudo check, which needs these."""
    import importlib
    import pkgutil

    import flows.checks
    from wizard.discovery import DISCOVERY_HOST_PROBES

    found: dict[str, HostProbe] = {}
    for p in DISCOVERY_HOST_PROBES:
        if p.sudo:
            found.setdefault(p.name, p)
    for info in sorted(pkgutil.iter_modules(flows.checks.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name == "preflight_sudo":
            continue
        mod = importlib.import_module(f"flows.checks.{info.name}")
        check = getattr(mod, "CHECK", None)
        for p in getattr(check, "probes", ()):
            if isinstance(p, HostProbe) and p.sudo:
                found.setdefault(p.name, p)
    return list(found.values())


def _probe_rules() -> list[SudoRule]:
    seen: dict[str, SudoRule] = {}
    for p in sudo_probes():
        words = p.command.split()
        name, rest = words[0], " ".join(words[1:])
        pattern = re.sub(r"\S*\{(netdev|rdma)\}\S*", "*", rest)
        sample = rest.replace("{netdev}", "enp1s0f0np0").replace("{rdma}", "rocep1s0f0")
        old = seen.get(name)
        pats = (*(old.args if old else ()), pattern or '""')
        seen[name] = SudoRule(name, tuple(dict.fromkeys(pats)), sample, f"probe {p.name}", True)
    return list(seen.values())


def _written_paths() -> tuple[str, ...]:
    return (
        plans.NETPLAN_PATH,
        plans.SYSCTL_PATH,
        plans.PFC_UNIT_PATH,
        plans.NCCL_CONF_PATH,
        plans.NCCL_PROFILE_PATH,
    )


def _fix_rules() -> list[SudoRule]:
    bak = fixes.BACKUP_SUFFIX
    paths = _written_paths()
    unit = plans.PFC_UNIT
    return [
        SudoRule(
            "mlnx_qos",
            ("-i * --pfc 0,0,0,0,0,0,0,0",),
            "-i enp1s0f0np0 --pfc 0,0,0,0,0,0,0,0",
            "turn PFC off on a rail",
        ),
        SudoRule("netplan", ("apply",), "apply", "apply the per-rail addressing"),
        SudoRule("sysctl", ("--system",), "--system", "load the ARP sysctls"),
        SudoRule(
            "systemctl",
            (
                "daemon-reload",
                f"enable --now {unit}",
                f"enable {unit}",
                f"disable {unit}",
                "stop fabwiz-revert-*",
            ),
            "daemon-reload",
            "install the PFC-off unit; disarm a timed revert",
        ),
        SudoRule(
            "systemd-run",
            ("--on-active=* --unit=fabwiz-revert-* sh -c *",),
            "--on-active=120 --unit=fabwiz-revert-x sh -c true",
            "arm the timed revert of a host fix",
        ),
        SudoRule(
            "nmcli",
            tuple(f"connection modify uuid * connection.autoconnect {v}" for v in ("no", "yes")),
            "connection modify uuid 00000000-0000-0000-0000-000000000000 connection.autoconnect no",
            "stop a NetworkManager profile that fights netplan from autoconnecting",
        ),
        SudoRule("tee", paths, paths[0], "write a fix's file"),
        SudoRule(
            "cp",
            tuple(f"-p {p} {p}{bak}" for p in paths),
            f"-p {paths[0]} {paths[0]}{bak}",
            "back up a file before a fix",
        ),
        SudoRule(
            "rm", tuple(f"-f {p}{bak}" for p in paths), f"-f {paths[0]}{bak}", "drop a stale backup"
        ),
        SudoRule(
            "sh",
            ("-c *",),
            "-c true",
            "run the revert script of a fix (restores the backups): root for that script",
        ),
    ]


RULES: tuple[SudoRule, ...] = (*_probe_rules(), *_fix_rules())


def rules_for(command: str) -> list[SudoRule]:
    return [r for r in RULES if r.command == command]


def _escape(arg: str) -> str:
    """sudoers: `,` `:` `=` `\\` `(` `)` `!` are special inside a command's arguments."""
    return re.sub(r"([,:=\\()!#])", r"\\\1", arg)


def sudoers_line(user: str, rules: tuple[SudoRule, ...] = RULES, *, read_only: bool = False) -> str:
    specs = []
    for r in rules:
        if read_only and not r.read_only:
            continue
        path = PATHS.get(r.command, f"/usr/bin/{r.command}")
        for a in r.args:
            specs.append(f"{path} {a}" if a == '""' else f"{path} {_escape(a)}".rstrip())
    return f"{user} ALL=(root) NOPASSWD: " + ", \\\n    ".join(specs)


_USER = re.compile(r"^[a-z_][a-z0-9_-]*[$]?$")


def sudoers(user: str, *, read_only: bool = False) -> str:
    """The drop-in text for /etc/sudoers.d/fabwiz."""
    if not _USER.match(user):
        raise ValueError(
            f"{user!r} is not a valid user name (lowercase letters, digits, '_' and '-')"
        )
    lines = [
        "# /etc/sudoers.d/fabwiz: the commands fabwiz runs with `sudo -n`, and nothing else.",
        "# Install: sudo visudo -c -f fabwiz.sudoers && "
        "sudo install -m 0440 fabwiz.sudoers /etc/sudoers.d/fabwiz",
    ]
    for r in RULES:
        if read_only and not r.read_only:
            continue
        lines.append(f"#   {r.command}: {r.why}")
    if not read_only:
        lines.append(
            "# `sh -c` runs the revert script of a host fix (restore backups, re-apply): it is "
            "root for that script; use --read-only to allow only the read-only probes."
        )
    lines.append(sudoers_line(user, read_only=read_only))
    return "\n".join(lines) + "\n"


@functools.cache
def _glob(pattern: str) -> re.Pattern[str]:
    """A sudoers argument glob as a regex, compiled once per pattern (the rules are fixed)."""
    out = "".join(".*" if c == "*" else ("." if c == "?" else re.escape(c)) for c in pattern)
    return re.compile(rf"^{out}$")


@functools.lru_cache(maxsize=512)
def matching_line(user: str, command_line: str) -> str:
    """The one sudoers line that allows `command_line` (`sudo -n [-l] CMD ARGS`). Remembered:
    every node of a sweep asks it for the same few probe commands."""
    words = shlex.split(command_line)
    while words and words[0] in ("sudo", "-n", "-l"):
        words = words[1:]
    name, args = words[0].rsplit("/", 1)[-1], " ".join(words[1:])
    for r in rules_for(name):
        for a in r.args:
            if (a == '""' and not args) or (a != '""' and _glob(a).match(args)):
                path = PATHS.get(name, f"/usr/bin/{name}")
                spec = f"{path} {a}" if a == '""' else f"{path} {_escape(a)}"
                return f"{user} ALL=(root) NOPASSWD: {spec}"
    return f"{user} ALL=(root) NOPASSWD: {PATHS.get(name, name)} {_escape(args)}"


def covered(command_line: str) -> bool:
    """Whether a `sudo -n CMD ARGS` line fabwiz sent is allowed by `RULES` (sudoers glob rules:
    `*` matches anything, spaces too; `""` means no arguments)."""
    words = shlex.split(command_line)
    if words[:2] == ["sudo", "-n"]:
        words = words[2:]
    if not words:
        return False
    args = " ".join(words[1:])
    return any(
        (a == '""' and not args) or (a != '""' and _glob(a).match(args))
        for r in rules_for(words[0].rsplit("/", 1)[-1])
        for a in r.args
    )


SUDO_PROBES: tuple[HostProbe, ...] = tuple(
    HostProbe(f"sudo_{r.command}", f"sudo -n -l {r.command} {r.sample}".rstrip())
    for r in {r.command: r for r in reversed(RULES)}.values()
)
