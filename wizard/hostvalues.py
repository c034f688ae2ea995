"""Values from a node that fabwiz writes into host files and shell lines, checked first.

Interface and RDMA device names read from a node's output end up in /etc/profile.d (a shell
script every login runs), /etc/nccl.conf, netplan YAML and systemd units. A name with `$(...)`,
a quote, a newline or a `%` would run or mean something there. So names must be what the kernel
gives a device, within the plain subset that needs no quoting anywhere (letters, digits, `_`,
`.`, `-`; interfaces at most 15 characters, never `.` or `..`; the kernel itself forbids `/`,
`:` and white space), and shell lines quote every value anyway. Anything else raises
`HostValueError`: the fix is not planned, and the message says which name and where.
"""

from __future__ import annotations

import re
import shlex

from wizard.errors import FixRefused

__all__ = ["HostValueError", "conf_line", "export_line", "netdev", "rdma_device"]

_NETDEV = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}")
_RDMA = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
_VAR = re.compile(r"[A-Z_][A-Z0-9_]*")


class HostValueError(FixRefused):
    """A value from a node that cannot be written safely into a host file."""


def _shown(value: str) -> str:
    return repr(value[:40] + ("…" if len(value) > 40 else ""))


def netdev(name: str, *, node: str = "", where: str = "a host file") -> str:
    """`name` if it is a plain kernel interface name, else HostValueError."""
    if _NETDEV.fullmatch(name) and name not in (".", ".."):
        return name
    raise HostValueError(
        f"{node + ': ' if node else ''}interface name {_shown(name)} is not a plain kernel "
        f"interface name: not written into {where}",
        hint="check `ip -br link` on the node; rename the interface or fix it by hand",
    )


def rdma_device(name: str, *, node: str = "", where: str = "a host file") -> str:
    if _RDMA.fullmatch(name):
        return name
    raise HostValueError(
        f"{node + ': ' if node else ''}RDMA device name {_shown(name)} is not a plain device "
        f"name: not written into {where}",
        hint="check `rdma link` / `ibdev2netdev` on the node",
    )


def export_line(var: str, value: str) -> str:
    """`export VAR='value'` for a profile.d script: the value is one shell word, never code."""
    if not _VAR.fullmatch(var):
        raise HostValueError(f"{var!r} is not an environment variable name")
    if "\x00" in value:
        raise HostValueError(f"{var}: a NUL byte cannot be written into a shell script")
    return f"export {var}={shlex.quote(value)}"


def conf_line(key: str, value: str) -> str:
    """`KEY=value` for /etc/nccl.conf (one line each; NCCL reads it without a shell)."""
    if not _VAR.fullmatch(key):
        raise HostValueError(f"{key!r} is not an NCCL variable name")
    if any(c in value for c in "\n\r\x00"):
        raise HostValueError(f"{key}: value {_shown(value)} would break /etc/nccl.conf lines")
    return f"{key}={value}"
