"""A lab node's shell for the shell tests: one node of a built-in scenario, and a script run on
it with its output, errors and exit status."""

from __future__ import annotations

from wizard.lab import scenarios
from wizard.lab.hostcmds import Host
from wizard.lab.perftest import Registry


def lab_host(time_scale: float = 1000.0) -> Host:
    """spark1 of `healthy-2node-direct` (`sleep 1` takes a millisecond at the default scale)."""
    w = scenarios.build_world(scenarios.load("healthy-2node-direct"), time_scale=time_scale)
    return Host(w, w.nodes["spark1"], Registry())


async def run_on(host: Host, script: str, stdin: str = "") -> tuple[str, str, int]:
    """(stdout, stderr, exit status) of `script` on `host`."""
    out: list[str] = []
    err: list[str] = []
    rc = await host.run(script, out.append, err.append, stdin=stdin)
    return "".join(out), "".join(err), rc
