"""The NCCL environment of a running job process, read from `/proc/<pid>/environ`.

A job started outside a container (an mpirun rank, a `torchrun` worker, a systemd service) keeps
the environment it was started with: /etc/nccl.conf and the login profile say what a new shell
would get, not what the running job uses. The inventory names the job's process per node
(`job_process: python3`, matched against `/proc/<pid>/comm` as `pgrep -x` does); its
`NCCL_*` variables are read from `/proc/<pid>/environ` (NUL-separated `KEY=value` entries, root
only for another user's process). Only `NCCL_*` entries are read: the rest of a job's
environment may hold secrets and is none of fabwiz's business.

Sample (`grep -a -z -H -e ^NCCL_ /proc/[0-9]*/environ`, NUL after each record):

    /proc/4242/environ:NCCL_IB_HCA=rocep1s0f\\0/proc/4242/environ:NCCL_DEBUG=INFO\\0

and (`grep -H . /proc/[0-9]*/comm`):

    /proc/1/comm:systemd
    /proc/4242/comm:python3
"""

from __future__ import annotations

import re

from wizard.probes import HostProbe

ENVIRON = HostProbe(
    name="nccl.process_env",
    command="grep -a -z -H -e ^NCCL_ /proc/[0-9]*/environ",
    sudo=True,
)
COMM = HostProbe(name="nccl.process_names", command="grep -H . /proc/[0-9]*/comm")
_ENV = re.compile(r"^/proc/(\d+)/environ:([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_COMM = re.compile(r"^/proc/(\d+)/comm:(.+)$")


def parse_environ(text: str) -> dict[int, dict[str, str]]:
    """pid -> its NCCL_* variables. Records that are not `path:KEY=value` are skipped (a
    process that exits between the glob and the read leaves nothing)."""
    out: dict[int, dict[str, str]] = {}
    for record in text.split("\0"):
        m = _ENV.match(record.strip("\n"))
        if m and m.group(2).startswith("NCCL_"):
            out.setdefault(int(m.group(1)), {})[m.group(2)] = m.group(3)
    return out


def parse_comm(text: str) -> dict[int, str]:
    """pid -> its command name (`/proc/<pid>/comm`, at most 15 characters)."""
    out: dict[int, str] = {}
    for line in text.splitlines():
        m = _COMM.match(line)
        if m:
            out[int(m.group(1))] = m.group(2).strip()
    return out


def process_change(name: str, pids: list[int], values: dict[str, str]) -> str:
    """The exact change for a running process: where it is started from, then a restart."""
    env = " ".join(f"{k}={v}" for k, v in values.items())
    started = ", ".join(str(p) for p in pids)
    return (
        f"in the environment the job {name} (pid {started}) is started with ({env}): its "
        f"launcher script or mpirun -x, or its systemd unit's Environment=, then restart {name} "
        "(a running process keeps the environment it started with)"
    )
