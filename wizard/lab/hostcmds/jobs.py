"""The traffic jobs a technician launches across nodes: `iperf3` (see `wizard.lab.iperf`) and
`mpirun` of nccl-tests (see `wizard.lab.nccl` and the checks of `wizard.lab.nodecmds`).
"""

from __future__ import annotations

from wizard.lab import nccl as nccl_mod
from wizard.lab import nodecmds
from wizard.lab.hostcmds.interp import Host
from wizard.lab.hostcmds.registry import Ctx, command
from wizard.lab.world import (
    NodeState,
)


@command("iperf3")
async def _iperf3(ctx: Ctx, args: list[str]) -> int:
    from wizard.lab import iperf

    return await iperf.run(ctx.world, ctx.host.perf.iperf, ctx.node, args, out=ctx.out, err=ctx.err)


@command("mpirun", "mpiexec")
async def _mpirun(ctx: Ctx, args: list[str]) -> int:
    mpi = nccl_mod.parse_mpirun(args)
    hosts = ctx.host
    if mpi.error or nodecmds.check_mpirun(args) is not None:
        hosts.refuse(["mpirun", *args])  # a command line Open MPI rejects
    refused = nodecmds.prepare(ctx, args, mpi)
    if refused is not None:
        message, status = refused
        ctx.err(message)
        return status

    def login_env(node: NodeState) -> dict[str, str]:
        # The rank on the launch node inherits mpirun's environment; the others are started by
        # mpirun's own ssh (`orted`): a non-login, non-interactive shell, which reads
        # /etc/environment (pam_env) but neither /etc/profile.d nor ~/.profile.
        other = Host(hosts.world, node, hosts.perf, hosts.user)
        return other.base_env(ctx.login if node is ctx.node else False)

    return await nccl_mod.run(
        ctx.world, ctx.node, mpi=mpi, login_env=login_env, out=ctx.out, err=ctx.err
    )
