"""RDMA tools: `ib_write_bw` (perftest, see `wizard.lab.perftest`), `ibv_devinfo`, `show_gids`
and `rdma link|dev`.
"""

from __future__ import annotations

from wizard.lab import gids, perftest
from wizard.lab.hostcmds.registry import Ctx, command


@command("ib_write_bw")
async def _ib_write_bw(ctx: Ctx, args: list[str]) -> int:
    parsed = perftest.parse_args(args)
    if not parsed.ok:
        if parsed.stderr:
            ctx.host.refuse(["ib_write_bw", *args])
        ctx.out(parsed.stdout)
        ctx.err(parsed.stderr)
        return parsed.status or 1
    o = parsed.options
    if not o.device:
        o.device = ctx.node.rails[0].rdma
    out = perftest.StdioOut(ctx.out, ctx.stdout_mode)  # stderr is unbuffered
    run = perftest.run_server if o.server_ip is None else perftest.run_client
    status = await run(ctx.world, ctx.host.perf, ctx.node, o, out=out, err=ctx.err)
    out.flush()  # at exit (a run killed before it is cut short of what it buffered)
    return status


@command("ibv_devinfo")
async def _ibv_devinfo(ctx: Ctx, args: list[str]) -> int:
    from wizard.lab import hostrdma

    rc = hostrdma.ibv_devinfo(ctx.world, ctx.node, args, ctx.out, ctx.err)
    if rc == 255 and any(a.startswith("-") for a in args):
        ctx.host.refuse(["ibv_devinfo", *args])
    return rc


@command("show_gids")
async def _show_gids(ctx: Ctx, args: list[str]) -> int:
    ctx.out("DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n")
    ctx.out("---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n")
    n = 0
    for r in sorted(ctx.node.rails, key=lambda r: (r.half, r.port)):
        if args and r.rdma not in args:
            continue
        for g in gids.table(ctx.world, ctx.node, r):
            ctx.out(f"{r.rdma}\t1\t{g.index}\t{g.sysfs()}\t{g.ipv4:<14}\t{g.version}\t{r.netdev}\n")
            n += 1
    ctx.out(f"n_gids_found={n}\n")
    return 0


@command("rdma")
async def _rdma(ctx: Ctx, args: list[str]) -> int:
    words = [a for a in args if not a.startswith("-")]
    if not words or words[0] not in ("link", "dev"):
        ctx.err(f'Object "{words[0] if words else ""}" is unknown, try "rdma help".\n')
        return 1
    for r in sorted(ctx.node.rails, key=lambda r: (r.half, r.port)):
        up = ctx.world.rail_up(ctx.node.name, r)
        if words[0] == "dev":
            ctx.out(
                f"{3 + ctx.node.rails.index(r)}: {r.rdma}: node_type ca fw {ctx.node.firmware} "
                f"node_guid {r.mac.replace(':', '')[:4]}:0000:0000:0000 sys_image_guid "
                "0000:0000:0000:0000\n"
            )
            continue
        state = "ACTIVE physical_state LINK_UP" if up else "DOWN physical_state DISABLED"
        ctx.out(f"link {r.rdma + '/1':<16} state {state} netdev {r.netdev}\n")
    return 0
