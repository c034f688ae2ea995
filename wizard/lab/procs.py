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
    fact = world.facts.processes.get(node.name)
    if fact is not None:
        pid = job_pid(node)
        env = [*JOB_ENV, *(f"{k}={v}" for k, v in fact.env.items())]
        out[f"/proc/{pid}/comm"] = fact.name[:15] + "\n"
        out[f"/proc/{pid}/environ"] = "\0".join(env) + "\0"
    return out
