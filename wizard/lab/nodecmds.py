"""Node commands about the node itself: `command -v`, `ssh PEER CMD` (what mpirun does to start
its daemons), `dpkg-query -W`, `modinfo -F version`, and what `mpirun` checks before it starts a
job: its options exactly as Open MPI 4.1 parses them, the hostfile, the program on every host,
and its SSH to every other host. Layout and facts: `wizard.lab.nodetools`.
"""

from __future__ import annotations

import json

from wizard.lab import nodetools
from wizard.lab.hostcmds.interp import Host
from wizard.lab.hostcmds.registry import COMMANDS, MGMT_IF, Ctx, command
from wizard.lab.nccl import MpiArgs
from wizard.lab.world import NodeState, World

_BUILTINS = {
    *("echo", "printf", "true", "false", ":", "test", "[", "exit", "command", "read"),
    *("break", "continue"),
}


@command("command")
async def _command(ctx: Ctx, args: list[str]) -> int:
    """bash's `command -v NAME...` (the path of each found, exit 1 when any is missing), or
    `command CMD ARGS` (runs CMD)."""
    if args and args[0] in ("-v", "-V"):
        status = 0
        for name in args[1:]:
            base = name.rsplit("/", 1)[-1]
            if base in _BUILTINS and "/" not in name:
                ctx.out(name + "\n")
            elif base in COMMANDS and nodetools.resolve(ctx.host, name) is None:
                if "/" in name:
                    ctx.out(name + "\n")
                elif base in nodetools.LAYOUT:
                    ctx.out(nodetools.path_of(base, ctx.host.user) + "\n")
                else:
                    ctx.out(f"/usr/bin/{base}\n")
            else:
                status = 1
        return status
    if not args:
        return 0
    return await ctx.host.exec(
        args, ctx.out, ctx.err, ctx.stream, login=ctx.login, root=ctx.root, shell=ctx.shell
    )


def mgmt_ip(node: NodeState) -> str:
    return f"192.168.1.{100 + node.index}"


def find_host(world: World, name: str) -> NodeState | None:
    node = world.nodes.get(name)
    if node is not None:
        return node
    for n in world.nodes.values():
        if mgmt_ip(n) == name:
            return n
    owners = world.owners(name)
    return owners[0][0] if owners else None


def ssh_refusal(world: World, name: str, user: str) -> str | None:
    """What `ssh -o BatchMode=yes NAME` says when it cannot log in, or None."""
    node = find_host(world, name)
    if node is None:
        return f"ssh: Could not resolve hostname {name}: Name or service not known\n"
    if not node.powered:
        return f"ssh: connect to host {name} port 22: No route to host\n"
    how = nodetools.facts(world, node).peer_ssh
    if how == "no-key":
        return f"{user}@{name}: Permission denied (publickey,password).\n"
    if how == "host-key":
        return "Host key verification failed.\n"
    return None


_SSH_ARG = set("bcDEeFIiJLlmOoPpQRSWw")
# What a login to a peer costs on the management LAN: TCP, key exchange, the key's signature,
# the session and the command's exit (OpenSSH between two DGX OS nodes, ed25519). A refusal
# (an unknown host key, a key not authorized) comes after the same exchanges.
LOGIN_SECONDS = 0.08
# A peer that is down does not answer ARP: the kernel gives up after 3 probes a second apart
# (net.ipv4.neigh.*.mcast_solicit 3, retrans_time_ms 1000) and connect() fails "No route to
# host"; ssh's ConnectTimeout, when shorter, ends the wait first ("Connection timed out").
ARP_GIVE_UP_SECONDS = 3.0


def _connect_timeout(options: list[str]) -> float | None:
    """`-o ConnectTimeout=N` (the last one given), in seconds."""
    found = None
    for o in options:
        key, _, value = o.partition("=")
        if key.strip().lower() == "connecttimeout":
            try:
                found = float(value)
            except ValueError:
                found = None
    return found


@command("ssh")
async def _ssh(ctx: Ctx, args: list[str]) -> int:
    rest = list(args)
    user = ctx.host.user
    target = ""
    no_stdin = False  # `-n`: stdin from /dev/null (else ssh reads all of it, for the remote)
    options: list[str] = []  # `-o` options
    while rest:
        a = rest.pop(0)
        if a.startswith("-") and len(a) >= 2:
            if a[1] not in _SSH_ARG and "n" in a:
                no_stdin = True
            if a[1] in _SSH_ARG:
                value = a[2:] or (rest.pop(0) if rest else "")
                if a[1] == "l":
                    user = value
                elif a[1] == "o":
                    options.append(value)
            continue
        target = a
        break
    if not target:
        ctx.err("usage: ssh [-46AaCfGgKkMNnqsTtVvXxYy] destination [command [argument ...]]\n")
        return 255
    if "@" in target:
        user, _, target = target.rpartition("@")
    why = ssh_refusal(ctx.world, target, user)
    node = find_host(ctx.world, target)
    if node is not None and not node.powered:
        # no ARP answer: the wait is the kernel's, or ssh's ConnectTimeout when shorter
        limit = _connect_timeout(options)
        if limit is not None and 0 < limit < ARP_GIVE_UP_SECONDS:
            await ctx.world.sleep(limit)
            ctx.err(f"ssh: connect to host {target} port 22: Connection timed out\n")
            return 255
        await ctx.world.sleep(ARP_GIVE_UP_SECONDS)
    elif node is not None:
        await ctx.world.sleep(LOGIN_SECONDS)
    if why is not None:
        ctx.err(why)
        return 255
    assert node is not None
    if not rest:
        ctx.err("Pseudo-terminal will not be allocated because stdin is not a terminal.\n")
        return 0
    peer = Host(ctx.world, node, ctx.host.perf, user)
    stdin = "" if no_stdin else ctx.stdin
    return await peer.run(" ".join(rest), ctx.out, ctx.err, stdin=stdin)


@command("dpkg-query")
async def _dpkg_query(ctx: Ctx, args: list[str]) -> int:
    fmt = "${Package}\t${Version}\n"
    names: list[str] = []
    it = iter(args)
    for a in it:
        if a in ("-f", "--showformat"):
            fmt = next(it, fmt)
        elif a.startswith("--showformat="):
            fmt = a.split("=", 1)[1]
        elif not a.startswith("-"):
            names.append(a)
    fmt = fmt.replace("\\n", "\n").replace("\\t", "\t")
    status = 0
    for name in names:
        version = nodetools.PACKAGES.get(name)
        gone = name in nodetools.facts(ctx.world, ctx.node).missing_tools
        if version is None or gone:
            ctx.err(f"dpkg-query: no packages found matching {name}\n")
            status = 1
            continue
        ctx.out(fmt.replace("${Package}", name).replace("${Version}", version))
    return status


@command("ofed_info")
async def _ofed_info(ctx: Ctx, args: list[str]) -> int:
    """DGX OS runs the inbox mlx5_core, not MLNX_OFED: bash does not find `ofed_info` (the lab
    models that absence, so the probe is no refused command)."""
    ctx.err("bash: ofed_info: command not found\n")
    return 127


@command("modinfo")
async def _modinfo(ctx: Ctx, args: list[str]) -> int:
    mods = [a for a in args if not a.startswith("-") and a != "version"]
    if not mods or mods[-1] != "mlx5_core":
        ctx.err(f"modinfo: ERROR: Module {mods[-1] if mods else ''} not found.\n")
        return 1
    if "-F" in args or "--field" in args:
        return 0  # the inbox mlx5_core has no version field
    ctx.out(
        "filename:       /lib/modules/6.11.0-1016-nvidia/kernel/drivers/net/ethernet/"
        "mellanox/mlx5/core/mlx5_core.ko.zst\nlicense:        Dual BSD/GPL\n"
    )
    return 0


def ip_route(ctx: Ctx, args: list[str], js: bool) -> int:
    """`ip [-j] route [show] [default]`: the default route leaves by the management port."""
    ip = mgmt_ip(ctx.node)
    rows: list[dict[str, object]] = [
        {
            "dst": "default",
            "gateway": "192.168.1.1",
            "dev": MGMT_IF,
            "protocol": "dhcp",
            "prefsrc": ip,
            "metric": 100,
            "flags": [],
        },
        {
            "dst": "192.168.1.0/24",
            "dev": MGMT_IF,
            "protocol": "kernel",
            "scope": "link",
            "prefsrc": ip,
            "metric": 100,
            "flags": [],
        },
    ]
    for r in ctx.node.rails:
        for a in r.addresses:
            base, _, plen = a.partition("/")
            net = ".".join(base.split(".")[:3]) + ".0/" + plen
            rows.append(
                {
                    "dst": net,
                    "dev": r.netdev,
                    "protocol": "kernel",
                    "scope": "link",
                    "prefsrc": base,
                    "flags": [],
                }
            )
    words = [a for a in args if a not in ("show", "list")]
    if words[:1] == ["default"]:
        rows = rows[:1]
    if js:
        ctx.out(json.dumps(rows, separators=(",", ":")) + "\n")
        return 0
    for row in rows:
        via = f" via {row['gateway']}" if "gateway" in row else ""
        ctx.out(
            f"{row['dst']}{via} dev {row['dev']} proto {row['protocol']} src {row['prefsrc']}\n"
        )
    return 0


# --- what mpirun checks before it starts -------------------------------------------------------

# Open MPI 4.1's options and how many values each takes (`mpirun --help all`)
MPIRUN_OPTIONS: dict[str, int] = {
    **dict.fromkeys(("-np", "-n", "-c", "--np"), 1),
    **dict.fromkeys(("-H", "-host", "--host"), 1),
    **dict.fromkeys(("-hostfile", "--hostfile", "-machinefile", "--machinefile"), 1),
    **dict.fromkeys(("--default-hostfile", "-wdir", "--wdir", "-wd", "--prefix"), 1),
    **dict.fromkeys(("-npernode", "--npernode", "--map-by", "--bind-to", "--rank-by"), 1),
    **dict.fromkeys(("-x", "--timeout"), 1),
    **dict.fromkeys(("--mca", "-mca", "--gmca", "-gmca"), 2),
    **dict.fromkeys(
        (
            "--allow-run-as-root",
            "--oversubscribe",
            "--report-bindings",
            "--tag-output",
            "--timestamp-output",
            "--display-map",
            "--do-not-launch",
            "-q",
            "--quiet",
            "-v",
            "--verbose",
        ),
        0,
    ),
}


def check_mpirun(args: list[str]) -> str | None:
    """Open MPI's own complaint about its options, or None (the program and its arguments follow
    the first word that is not an option)."""
    i = 0
    while i < len(args):
        a = args[i]
        if not a.startswith("-"):
            return None
        n = MPIRUN_OPTIONS.get(a)
        if n is None:
            return f"mpirun: Error: unknown option \"{a}\"\nType 'mpirun --help' for usage.\n"
        if n and i + n > len(args) - 1:
            return (
                f'mpirun: Error: option "{a}" did not have enough parameters ({n})\n'
                "Type 'mpirun --help' for usage.\n"
            )
        if a == "-x" and not args[i + 1].split("=", 1)[0].replace("_", "").isalnum():
            return f'mpirun: Error: unknown option "{args[i + 1]}"\n'
        i += 1 + n
    return "No executable was specified on the mpirun command line.\n"


def hostfile_hosts(text: str) -> list[str]:
    """`host slots=N` lines (comments and blanks ignored), each host once per slot."""
    hosts: list[str] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        slots = 1
        for w in words[1:]:
            if w.startswith("slots="):
                slots = int(w.split("=", 1)[1])
        hosts += [words[0]] * slots
    return hosts


def prepare(ctx: Ctx, args: list[str], mpi: MpiArgs) -> tuple[str, int] | None:
    """Before mpirun starts anything: its options, the hostfile, SSH to every other host, the
    program on every host. Fills `mpi.hosts` from the hostfile. Returns what mpirun prints
    (stderr) when it cannot start and its exit status (Open MPI 4.1: 1 for its options and the
    hostfile, 255 when a daemon cannot start, 132 for a program it cannot execute), or None."""
    bad = check_mpirun(args)
    if bad is not None:
        return bad, 1
    for opt in ("-hostfile", "--hostfile", "-machinefile", "--machinefile"):
        if opt in args:
            path = args[args.index(opt) + 1]
            text = ctx.node.files.get(path)
            if text is None:
                return (
                    f"{_LINE}Open RTE was unable to open the hostfile:\n    {path}\n"
                    f"Check to make sure the path and filename are correct.\n{_LINE}"
                ), 1
            mpi.hosts = hostfile_hosts(text)
    for h in dict.fromkeys(mpi.hosts):
        node = find_host(ctx.world, h)
        if node is ctx.node:
            continue
        why = ssh_refusal(ctx.world, h, ctx.host.user)
        if why is not None:
            return why + _ORTE_DIED, 255
        if node is not None and not nodetools.installed(ctx.world, node, "mpirun"):
            return "bash: line 1: orted: command not found\n" + _ORTE_DIED, 255
    program = mpi.program
    for h in dict.fromkeys(mpi.hosts or [ctx.node.name]):
        node = find_host(ctx.world, h) or ctx.node
        peer = Host(ctx.world, node, ctx.host.perf, ctx.host.user)
        if program and nodetools.resolve(peer, program) is not None:
            procs = max(mpi.np, len(dict.fromkeys(mpi.hosts)))
            return (
                f"{_LINE}mpirun was unable to launch the specified application as it could not "
                f"access\nor execute an executable:\n\nExecutable: {program}\nNode: {node.name}\n\n"
                f"while attempting to start process rank 0.\n{_LINE}"
                + (f"{procs} total processes failed to start\n" if procs > 1 else "")
            ), 132
    return None


_LINE = "--------------------------------------------------------------------------\n"
_ORTE_DIED = (
    f"{_LINE}ORTE was unable to reliably start one or more daemons.\nThis usually is caused by:\n\n"
    "* not finding the required libraries and/or binaries on\n  one or more nodes.\n\n"
    "* lack of authority to execute on one or more specified nodes.\n"
    f"  Please verify your allocation and authorities.\n{_LINE}"
)
