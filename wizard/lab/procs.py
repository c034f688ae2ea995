"""`/proc/<pid>/comm` and `/proc/<pid>/environ` in the lab: init, and the job process a scenario
runs (`facts.processes.<node>: {name, env}`), whose environment is NUL-separated `KEY=value`
entries as the kernel gives it."""

from __future__ import annotations

from wizard.lab.world import NodeState, World

INIT_ENV = ("HOME=/", "TERM=linux")
JOB_ENV = ("PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/ops")


def job_pid(node: NodeState) -> int:
    return node.pid + 11


def files(world: World, node: NodeState) -> dict[str, str]:
    """The /proc files of `node`'s processes (none while it is off)."""
    if not node.powered:
        return {}
    out = {"/proc/1/comm": "systemd\n", "/proc/1/environ": "\0".join(INIT_ENV) + "\0"}
    out["/proc/stat"] = stat(world, node)
    fact = world.facts.processes.get(node.name)
    if fact is not None:
        pid = job_pid(node)
        env = [*JOB_ENV, *(f"{k}={v}" for k, v in fact.env.items())]
        out[f"/proc/{pid}/comm"] = fact.name[:15] + "\n"
        out[f"/proc/{pid}/environ"] = "\0".join(env) + "\0"
    return out


CPUS = 20  # a GB10: 10 Cortex-X925 + 10 Cortex-A725


def stat(world: World, node: NodeState) -> str:
    """/proc/stat as the kernel prints it: CPU time in USER_HZ ticks since boot (the node's
    uptime spread over its CPUs, mostly idle), and `btime`, the boot time in epoch seconds on
    the node's clock, which dmesg's seconds-since-boot stamps are counted from."""
    up = max(0.0, world.now() - node.boot_time)
    ticks = int(up * 100)
    user, system, idle = ticks // 50, ticks // 200, ticks - ticks // 50 - ticks // 200
    cpu = [f"cpu  {user * CPUS} 0 {system * CPUS} {idle * CPUS} 0 0 0 0 0 0"]
    cpu += [f"cpu{i} {user} 0 {system} {idle} 0 0 0 0 0 0" for i in range(CPUS)]
    rest = [
        f"intr {ticks * 7} 0",
        f"ctxt {ticks * 31}",
        f"btime {int(node.boot_time)}",
        f"processes {node.pid}",
        "procs_running 1",
        "procs_blocked 0",
        f"softirq {ticks * 3} 0 {ticks} 0 0 0 0 {ticks} {ticks} 0 0",
    ]
    return "\n".join(cpu + rest) + "\n"
