"""The commands of an emulated GB10 node (Ubuntu + NVIDIA networking stack), in the real formats.

Output layouts follow `fixtures/real/` (ibdev2netdev, iproute2 JSON, ethtool, mlnx_qos, sysctl,
lspci, dmesg, ping, perftest, nccl-tests). The interpreter is `interp.Host`; `registry` maps a
command name to its handler; each tool family is one module:

- `shell_builtins`: true/false/exit/read/break/continue/test, sleep/timeout,
  hostname/whoami/uname/date/env, sudo, bash -c, xargs
- `textutils`: echo, printf, cat, grep, head, tail, wc
- `fileutils`: tee, cp, mv, rm, mkdir, rmdir, ls
- `vfs`: the file system those read (files, sysfs and procfs attributes)
- `iproute`: ip, ibdev2netdev; `ping`: ping
- `nictools`: ethtool, mlnx_qos, lspci, mlxfwmanager
- `kernel`: sysctl, dmesg, journalctl
- `rdma`: ib_write_bw, ibv_devinfo, show_gids, rdma
- `jobs`: iperf3, mpirun
- `system`: netplan, systemctl, systemd-run, reboot/poweroff/shutdown, docker, nmcli
- `wizard.lab.nodecmds`: command -v, ssh, dpkg-query, modinfo, ip route
"""

from __future__ import annotations

from wizard.lab import nodecmds
from wizard.lab.hostcmds import (  # each family fills `COMMANDS` with its commands
    fileutils,
    iproute,
    jobs,
    kernel,
    nictools,
    ping,
    rdma,
    shell_builtins,
    system,
    textutils,
)
from wizard.lab.hostcmds.interp import Host
from wizard.lab.hostcmds.registry import COMMANDS, KERNEL, MGMT_IF, MGMT_MAC, Ctx, Handler, command
from wizard.lab.hostcmds.vfs import denied, read_file, vfs_paths

__all__ = [
    "COMMANDS",
    "KERNEL",
    "MGMT_IF",
    "MGMT_MAC",
    "Ctx",
    "Handler",
    "Host",
    "command",
    "denied",
    "fileutils",
    "iproute",
    "jobs",
    "kernel",
    "nictools",
    "nodecmds",
    "ping",
    "rdma",
    "read_file",
    "shell_builtins",
    "system",
    "textutils",
    "vfs_paths",
]
