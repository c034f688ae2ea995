"""The commands of an emulated GB10 node (Ubuntu + NVIDIA networking stack), in the real formats.

Each command is an async function `(ctx, args) -> exit status` writing to `ctx.out`/`ctx.err`.
Output layouts follow `fixtures/real/` (ibdev2netdev, iproute2 JSON, ethtool, mlnx_qos,
sysctl, lspci, dmesg, ping, perftest, nccl-tests). `Host.run(script)` runs a script through
the tiny sh of `shell.py`; an unknown command answers like bash (`command not found`, 127).
"""

from __future__ import annotations

import asyncio
import fnmatch
import functools
import json
import re
import shlex
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from wizard.lab import gids, hostnet, nodetools, perftest, procs
from wizard.lab import nccl as nccl_mod
from wizard.lab.boots import list_boots
from wizard.lab.docker import run as docker_cli
from wizard.lab.renderer import applied as renderer_applied
from wizard.lab.shell import (
    STATUS,
    Command,
    Loop,
    Pipeline,
    ShellSyntaxError,
    parse,
    split_loops,
    tokenize,
)
from wizard.lab.world import (
    HW_COUNTERS,
    PHY_COUNTERS,
    PORT_COUNTERS,
    NodeState,
    RailState,
    World,
    parse_pfc,
)

Write = Callable[[str], None]
MGMT_IF = "enP7s7"
MGMT_MAC = "4c:bb:47:2c:{:02x}:10"
KERNEL = "6.11.0-1016-nvidia"


@dataclass
class Ctx:
    host: Host
    out: Write
    err: Write
    stdin: str = ""
    root: bool = False
    login: bool = False

    @property
    def world(self) -> World:
        return self.host.world

    @property
    def node(self) -> NodeState:
        return self.host.node


Handler = Callable[[Ctx, list[str]], Awaitable[int]]
COMMANDS: dict[str, Handler] = {}


def command(*names: str) -> Callable[[Handler], Handler]:
    def deco(f: Handler) -> Handler:
        for n in names:
            COMMANDS[n] = f
        return f

    return deco


@dataclass
class Host:
    """One node's command interpreter (shared by all SSH sessions to that node)."""

    world: World
    node: NodeState
    perf: perftest.Registry
    user: str = "fabwiz"
    on_reboot: Callable[[str, str], None] | None = None  # (node, "reboot"|"poweroff")
    last_status: int = 0
    _env: dict[str, str] = field(default_factory=dict)
    # transient timers armed with systemd-run (unit -> task); lost when the node powers off
    timers: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    def base_env(self, login: bool) -> dict[str, str]:
        env = {
            "USER": self.user,
            "LOGNAME": self.user,
            "HOME": f"/home/{self.user}",
            "SHELL": "/bin/bash",
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG": "C.UTF-8",
            "HOSTNAME": self.node.name,
        }
        env.update(_assignments(self.node.files.get("/etc/environment", "")))
        if login:
            for path in sorted(p for p in self.node.files if p.startswith("/etc/profile.d/")):
                env.update(_assignments(self.node.files[path]))
            env.update(_assignments(self.node.files.get(f"/home/{self.user}/.profile", "")))
        return env

    def login_env(self) -> dict[str, str]:
        return self.base_env(True)

    async def run(
        self,
        script: str,
        out: Write,
        err: Write,
        *,
        stdin: str = "",
        login: bool = False,
        root: bool = False,
    ) -> int:
        env = self.base_env(login)
        try:
            parts = split_loops(tokenize(script, env))
            pipelines = [parse(p) if isinstance(p, list) else p for p in parts]
        except ShellSyntaxError as exc:
            err(f"bash: -c: line 1: {exc}\n")
            self.last_status = 2
            return 2
        status = 0
        for part in pipelines:
            if isinstance(part, Loop):
                status = await self._loop(part, out, err, stdin=stdin, login=login, root=root)
            else:
                status = await self._pipelines(part, out, err, stdin=stdin, login=login, root=root)
        return status

    async def _loop(
        self, loop: Loop, out: Write, err: Write, *, stdin: str, login: bool, root: bool
    ) -> int:
        """`while COND; do BODY; done`, for as long as COND exits 0 (or until the session that
        runs it goes away, which cancels it). Output streams as the body writes it."""
        status = 0
        try:
            cond = [parse(p) if isinstance(p, list) else p for p in split_loops(loop.cond)]
            body = [parse(p) if isinstance(p, list) else p for p in split_loops(loop.body)]
        except ShellSyntaxError as exc:
            err(f"bash: -c: line 1: {exc}\n")
            return 2
        while True:
            ok = 0
            for part in cond:
                ok = await self._part(part, out, err, stdin=stdin, login=login, root=root)
            if ok != 0:
                self.last_status = status  # `$?` after a loop: its last body's status
                return status
            for part in body:
                status = await self._part(part, out, err, stdin=stdin, login=login, root=root)
            await asyncio.sleep(0)  # a loop without `sleep` must not starve the other nodes

    async def _part(
        self,
        part: list[Pipeline] | Loop,
        out: Write,
        err: Write,
        *,
        stdin: str,
        login: bool,
        root: bool,
    ) -> int:
        if isinstance(part, Loop):
            return await self._loop(part, out, err, stdin=stdin, login=login, root=root)
        return await self._pipelines(part, out, err, stdin=stdin, login=login, root=root)

    async def _pipelines(
        self,
        pipelines: list[Pipeline],
        out: Write,
        err: Write,
        *,
        stdin: str,
        login: bool,
        root: bool,
    ) -> int:
        status = 0
        skip = False
        for pl in pipelines:
            if not skip:
                status = await self._pipeline(
                    pl.commands, out, err, stdin=stdin, login=login, root=root
                )
                self.last_status = status
            if pl.connector == "&&":
                skip = skip or status != 0
            elif pl.connector == "||":
                skip = skip or status == 0
            else:
                skip = False
        return status

    async def _pipeline(
        self,
        commands: list[Command],
        out: Write,
        err: Write,
        *,
        stdin: str,
        login: bool,
        root: bool,
    ) -> int:
        data = stdin
        status = 0
        for k, cmd in enumerate(commands):
            last = k == len(commands) - 1
            buf: list[str] = []
            sink: Write = out if last else buf.append
            status = await self._simple(cmd, sink, err, stdin=data, login=login, root=root)
            data = "".join(buf)
        return status

    async def _simple(
        self, cmd: Command, out: Write, err: Write, *, stdin: str, login: bool, root: bool
    ) -> int:
        argv: list[str] = []
        for w in cmd.words:
            text = w.text.replace(STATUS, str(self.last_status))
            if w.tilde and (text == "~" or text.startswith("~/")):
                text = f"/home/{self.user}" + text[1:]
            if w.globbable:
                matches = _glob(vfs_paths(self, text), text)
                argv.extend(matches or [text])
            else:
                argv.append(text)
        o, e = out, err
        captured: dict[str, list[str]] = {}
        for r in cmd.redirects:
            target: Write
            if r.fd == 0:
                content = read_file(self, r.target, root)
                if content is None:
                    err(f"bash: {r.target}: No such file or directory\n")
                    return 1
                stdin = content
                continue
            if r.target == "&1":
                target = o
            elif r.target == "&2":
                target = e
            elif r.target == "/dev/null":
                target = _null
            else:
                buf = captured.setdefault(r.target, [])
                if r.append:
                    buf.append(self.node.files.get(r.target, ""))
                target = buf.append
            if r.fd == 1:
                o = target
            else:
                e = target
        if not argv:
            return 0
        status = await self.exec(argv, o, e, stdin, login=login, root=root)
        for path, parts in captured.items():
            if path.startswith("/etc/") and not root:
                err(f"bash: {path}: Permission denied\n")
                return 1
            self.node.files[path] = "".join(parts)
        return status

    async def exec(
        self,
        argv: list[str],
        out: Write,
        err: Write,
        stdin: str,
        *,
        login: bool = False,
        root: bool = False,
    ) -> int:
        name = argv[0]
        handler = COMMANDS.get(name.rsplit("/", 1)[-1] if "/" in name else name)
        absent = nodetools.resolve(self, name) if handler is not None else None
        if absent is not None:
            err(absent)
            return 127
        if handler is None:
            err(f"bash: {name}: command not found\n")
            self.refuse(argv)
            return 127
        ctx = Ctx(self, out, err, stdin, root=root, login=login)
        try:
            return await handler(ctx, argv[1:])
        except (ValueError, IndexError) as exc:
            err(f"{name}: invalid argument: {exc}\n")
            self.refuse(argv)
            return 1

    def refuse(self, argv: list[str]) -> None:
        """Note a command line this node's tools refused (see `World.refused`)."""
        self.world.refused.append((self.node.name, shlex.join(argv)))


def _null(_s: str) -> None:
    return None


def _assignments(text: str) -> dict[str, str]:
    env: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$", line)
        if m:
            env[m.group(1)] = m.group(2).strip().strip("'\"")
    return env


# --- the virtual filesystem --------------------------------------------------------------------


def _const(text: str) -> Callable[[], str]:
    def read() -> str:
        return text

    return read


def _counter(world: World, rail: RailState, name: str) -> Callable[[], str]:
    def read() -> str:
        if world.traffic is not None:
            world.traffic.settle()
        return f"{rail.counters.get(name, 0)}\n"

    return read


def _glob(paths: list[str], pattern: str) -> list[str]:
    """The paths a shell glob matches, sorted as bash sorts them (in the C locale)."""
    literal = re.split(r"[*?\[]", pattern, maxsplit=1)[0]
    rx = re.compile(fnmatch.translate(pattern))
    return sorted(p for p in paths if p.startswith(literal) and rx.match(p))


def _rail_sysfs(world: World, rail: RailState, node: NodeState) -> dict[str, Callable[[], str]]:
    """One rail's sysfs attributes. Each is read when opened, like the kernel's: the link state
    and rate are worked out once per read of this rail, not for every rail of the node."""
    from wizard.lab.hostrdma import link_rate

    @functools.cache
    def link() -> tuple[bool, int]:
        up = world.rail_up(node.name, rail)
        mbps, _fec = link_rate(world, node, rail.port)
        return up, mbps

    def rate() -> str:
        up, mbps = link()
        ib = {200000: "200 Gb/sec (4X HDR)", 100000: "100 Gb/sec (4X EDR)"}
        return (ib.get(mbps, f"{mbps // 1000} Gb/sec (4X)") if up else "40 Gb/sec (4X QDR)") + "\n"

    def carrier_up() -> str:
        downs = rail.counters.get("link_down_events_phy", 0)
        return f"{(downs if link()[0] else max(0, downs - 1)) + 1}\n"

    def carrier_changes() -> str:
        downs = rail.counters.get("link_down_events_phy", 0)
        ups = downs if link()[0] else max(0, downs - 1)
        return f"{downs + ups + 1}\n"

    out: dict[str, Callable[[], str]] = {}
    base = f"/sys/class/infiniband/{rail.rdma}/ports/1"
    out[f"{base}/rate"] = rate
    out[f"{base}/state"] = lambda: "4: ACTIVE\n" if link()[0] else "1: DOWN\n"
    out[f"{base}/phys_state"] = lambda: "5: LinkUp\n" if link()[0] else "3: Disabled\n"
    for name in HW_COUNTERS:
        out[f"{base}/hw_counters/{name}"] = _counter(world, rail, name)
    for name in PORT_COUNTERS:
        out[f"{base}/counters/{name}"] = _counter(world, rail, name)
    net = f"/sys/class/net/{rail.netdev}"
    out[f"{net}/mtu"] = lambda: f"{rail.mtu}\n"
    out[f"{net}/address"] = lambda: f"{rail.mac}\n"
    out[f"{net}/operstate"] = lambda: "up\n" if link()[0] else "down\n"
    out[f"{net}/carrier"] = lambda: "1\n" if link()[0] else "0\n"
    out[f"{net}/speed"] = lambda: f"{link()[1]}\n" if link()[0] else "-1\n"
    # link-down events since boot: what the drain guard reads to see a link transition
    out[f"{net}/carrier_down_count"] = _counter(world, rail, "link_down_events_phy")
    out[f"{net}/carrier_up_count"] = carrier_up
    out[f"{net}/carrier_changes"] = carrier_changes
    for stat, src in (
        ("rx_bytes", "rx_bytes_phy"),
        ("tx_bytes", "tx_bytes_phy"),
        ("rx_packets", "rx_packets_phy"),
        ("tx_packets", "tx_packets_phy"),
    ):
        out[f"{net}/statistics/{stat}"] = _counter(world, rail, src)
    return out


def _node_sysfs(world: World, node: NodeState) -> dict[str, Callable[[], str]]:
    out: dict[str, Callable[[], str]] = {}
    out["/proc/sys/kernel/random/boot_id"] = lambda: node.boot_id + "\n"
    out["/proc/uptime"] = lambda: _uptime(world, node)
    for path, text in procs.files(world, node).items():
        out[path] = _const(text)
    for key, value in node.sysctls.items():
        out["/proc/sys/" + key.replace(".", "/")] = _const(value + "\n")
    out["/proc/version"] = _const(f"Linux version {KERNEL} (buildd@ubuntu) #16-Ubuntu SMP\n")
    return out


def _sysfs(host: Host) -> dict[str, Callable[[], str]]:
    world, node = host.world, host.node
    out: dict[str, Callable[[], str]] = {}
    for rail in node.rails:
        out.update(_rail_sysfs(world, rail, node))
    out.update(_node_sysfs(world, node))
    return out


def _sysfs_entry(host: Host, path: str) -> Callable[[], str] | None:
    """The attribute at `path`, building only the entries of the rail it belongs to."""
    world, node = host.world, host.node
    for rail in node.rails:
        if path.startswith(
            (f"/sys/class/infiniband/{rail.rdma}/", f"/sys/class/net/{rail.netdev}/")
        ):
            return _rail_sysfs(world, rail, node).get(path)
    return _node_sysfs(world, node).get(path)


def _uptime(world: World, node: NodeState) -> str:
    up = max(0.0, world.now() - node.boot_time)
    return f"{up:.2f} {up * 19.6:.2f}\n"


def vfs_paths(host: Host, pattern: str | None = None) -> list[str]:
    """Every path of the node's file system, or, given a glob `pattern`, a superset of the
    paths it can match: a generated sysfs directory whose own path the pattern's leading
    segments cannot match is left out without being listed (a glob's `*` never crosses `/`)."""
    if pattern is None:
        return [
            *host.node.files,
            *_sysfs(host),
            *gids.sysfs_paths(host.node),
            *nodetools.files(host),
        ]
    segments = pattern.split("/")
    out = [*host.node.files, *nodetools.files(host)]
    for rail in host.node.rails:
        ib = f"/sys/class/infiniband/{rail.rdma}/ports/1"
        if _may_match(segments, ib):
            out += _rail_ib_paths(rail.rdma)
            if _may_match(segments, f"{ib}/gids") or _may_match(segments, f"{ib}/gid_attrs"):
                out += gids.rail_paths(rail.rdma)
        if _may_match(segments, f"/sys/class/net/{rail.netdev}"):
            out += _rail_net_paths(rail.netdev)
    if _may_match(segments, "/proc"):
        out += _node_sysfs(host.world, host.node)
    return out


def _may_match(segments: list[str], directory: str) -> bool:
    """Whether a glob split into `segments` can match a path under `directory`."""
    parts = directory.split("/")
    if len(segments) <= len(parts):
        return False
    return all(fnmatch.fnmatchcase(part, seg) for part, seg in zip(parts, segments, strict=False))


@functools.cache
def _rail_ib_paths(rdma: str) -> tuple[str, ...]:
    """A rail's generated attributes under its RDMA device (the keys `_rail_sysfs` serves)."""
    base = f"/sys/class/infiniband/{rdma}/ports/1"
    return (
        f"{base}/rate",
        f"{base}/state",
        f"{base}/phys_state",
        *(f"{base}/hw_counters/{name}" for name in HW_COUNTERS),
        *(f"{base}/counters/{name}" for name in PORT_COUNTERS),
    )


@functools.cache
def _rail_net_paths(netdev: str) -> tuple[str, ...]:
    """A rail's generated attributes under its netdev (the keys `_rail_sysfs` serves)."""
    net = f"/sys/class/net/{netdev}"
    names = ("mtu", "address", "operstate", "carrier", "speed", "carrier_down_count")
    more = ("carrier_up_count", "carrier_changes")
    stats = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets")
    return (
        *(f"{net}/{n}" for n in (*names, *more)),
        *(f"{net}/statistics/{n}" for n in stats),
    )


def read_file(host: Host, path: str, root: bool) -> str | None:
    if path in host.node.files:
        return host.node.files[path]
    gid = gids.sysfs_read(host.world, host.node, path)
    if gid is not None:
        return gid or None  # an empty slot's attribute: EINVAL (see `cat`)
    dyn = _sysfs_entry(host, path)
    return dyn() if dyn is not None else nodetools.files(host).get(path)


_ROOT_ONLY = re.compile(r"^/proc/\d+/environ$|^/etc/shadow$|^/etc/sudoers$")


def denied(host: Host, path: str, root: bool) -> bool:
    """True when a non-root reader gets EACCES: another user's `/proc/<pid>/environ` (mode 0400,
    owned by the process's user; the lab's processes are init's and the job's, never the login
    user's), `/etc/shadow`, `/etc/sudoers`."""
    return (
        not root and _ROOT_ONLY.match(path) is not None and read_file(host, path, True) is not None
    )


def _is_dir(host: Host, path: str) -> bool:
    prefix = path.rstrip("/") + "/"
    return path.rstrip("/") in host.node.dirs or any(p.startswith(prefix) for p in vfs_paths(host))


# --- shell builtins and coreutils --------------------------------------------------------------


@command("true", ":")
async def _true(ctx: Ctx, args: list[str]) -> int:
    return 0


@command("false")
async def _false(ctx: Ctx, args: list[str]) -> int:
    return 1


@command("exit")
async def _exit(ctx: Ctx, args: list[str]) -> int:
    return int(args[0]) if args else ctx.host.last_status


@command("echo")
async def _echo(ctx: Ctx, args: list[str]) -> int:
    newline = True
    while args and args[0] in ("-n", "-e", "-E", "-ne", "-en"):
        if "n" in args[0]:
            newline = False
        args = args[1:]
    ctx.out(" ".join(args) + ("\n" if newline else ""))
    return 0


def _unescape(s: str) -> str:
    return s.replace("\\\\", "\x01").replace("\\n", "\n").replace("\\t", "\t").replace("\x01", "\\")


@command("printf")
async def _printf(ctx: Ctx, args: list[str]) -> int:
    if not args:
        ctx.err("printf: usage: printf [-v var] format [arguments]\n")
        return 2
    fmt, rest = _unescape(args[0]), args[1:]
    specs = re.findall(r"%[-0-9.]*[sdbf%]", fmt)
    n = len([s for s in specs if s != "%%"])
    first = True
    while first or rest:
        first = False
        chunk, rest = rest[:n], rest[n:]
        it = iter(chunk)

        def sub(m: re.Match[str], it: object = it) -> str:
            spec = m.group(0)
            if spec == "%%":
                return "%"
            v = str(next(it, ""))  # type: ignore[call-overload]
            if spec.endswith("d"):
                return (spec[:-1] + "d") % int(v or 0)
            if spec.endswith("f"):
                return spec % float(v or 0)
            if spec.endswith("b"):
                return _unescape(str(v))
            return (spec[:-1] + "s") % v

        ctx.out(re.sub(r"%[-0-9.]*[sdbf%]", sub, fmt))
        if n == 0:
            break
    return 0


@command("cat")
async def _cat(ctx: Ctx, args: list[str]) -> int:
    if not args or args == ["-"]:
        ctx.out(ctx.stdin)
        return 0
    status = 0
    for path in args:
        if path.startswith("-"):
            continue
        if denied(ctx.host, path, ctx.root):
            ctx.err(f"cat: {path}: Permission denied\n")
            status = 1
            continue
        content = read_file(ctx.host, path, ctx.root)
        if content is None and gids.sysfs_read(ctx.world, ctx.node, path) == "":
            ctx.err(f"cat: {path}: Invalid argument\n")
            status = 1
            continue
        if content is None:
            if _is_dir(ctx.host, path):
                ctx.err(f"cat: {path}: Is a directory\n")
            else:
                ctx.err(f"cat: {path}: No such file or directory\n")
            status = 1
            continue
        ctx.out(content)
    return status


@command("grep", "egrep")
async def _grep(ctx: Ctx, args: list[str]) -> int:
    flags: set[str] = set()
    pattern: str | None = None
    files: list[str] = []
    it = iter(args)
    for a in it:
        if a == "-e":
            pattern = next(it, "")
        elif a.startswith("--"):
            flags.add(a)
        elif a.startswith("-") and len(a) > 1 and pattern is None:
            flags.update(a[1:])
        elif pattern is None:
            pattern = a
        else:
            files.append(a)
    if pattern is None:
        ctx.err("Usage: grep [OPTION]... PATTERNS [FILE]...\n")
        return 2
    if "F" in flags:
        rx = re.compile(re.escape(pattern), re.I if "i" in flags else 0)
    else:
        pat = pattern if "E" in flags else pattern.replace(r"\|", "|").replace(r"\(", "(")
        pat = pat.replace(r"\)", ")")
        try:
            rx = re.compile(pat, re.I if "i" in flags else 0)
        except re.error:
            ctx.err("grep: Unmatched ( or \\(\n")
            return 2
    sources: list[tuple[str, str]] = []
    status_err = False
    if not files:
        sources.append(("(standard input)", ctx.stdin))
    for f in files:
        if denied(ctx.host, f, ctx.root):
            if "s" not in flags:
                ctx.err(f"grep: {f}: Permission denied\n")
            status_err = True
            continue
        content = read_file(ctx.host, f, ctx.root)
        if content is None:
            if "s" not in flags:
                msg = "Is a directory" if _is_dir(ctx.host, f) else "No such file or directory"
                ctx.err(f"grep: {f}: {msg}\n")
            status_err = True
            continue
        sources.append((f, content))
    prefix = ("H" in flags or len(files) > 1) and "h" not in flags
    end = "\0" if "z" in flags else "\n"  # -z: NUL-terminated records in and out
    found = 0
    for name, content in sources:
        count = 0
        records = [r for r in content.split("\0") if r] if "z" in flags else content.splitlines()
        for line in records:
            hit = bool(rx.search(line))
            if hit != ("v" in flags):
                count += 1
                if "q" in flags or "c" in flags or "l" in flags:
                    continue
                ctx.out(f"{name}:{line}{end}" if prefix else line + end)
        if "c" in flags:
            ctx.out(f"{name}:{count}\n" if prefix else f"{count}\n")
        if "l" in flags and count:
            ctx.out(name + "\n")
        found += count
    if status_err and not found:
        return 2
    return 0 if found else 1


def _lines_arg(args: list[str]) -> tuple[int, list[str], bool]:
    n, files, chars = 10, [], False
    it = iter(args)
    for a in it:
        if a in ("-n", "-c"):
            chars = a == "-c"
            n = int(next(it, "10"))
        elif re.fullmatch(r"-\d+", a):
            n = int(a[1:])
        else:
            files.append(a)
    return n, files, chars


@command("head")
async def _head(ctx: Ctx, args: list[str]) -> int:
    n, files, chars = _lines_arg(args)
    text = ctx.stdin if not files else (read_file(ctx.host, files[0], ctx.root) or "")
    ctx.out(text[:n] if chars else "".join(text.splitlines(keepends=True)[:n]))
    return 0


@command("tail")
async def _tail(ctx: Ctx, args: list[str]) -> int:
    n, files, chars = _lines_arg(args)
    text = ctx.stdin if not files else (read_file(ctx.host, files[0], ctx.root) or "")
    if n == 0:
        return 0
    ctx.out(text[-n:] if chars else "".join(text.splitlines(keepends=True)[-n:]))
    return 0


@command("wc")
async def _wc(ctx: Ctx, args: list[str]) -> int:
    ctx.out(f"{len(ctx.stdin.splitlines())}\n")
    return 0


@command("sleep")
async def _sleep(ctx: Ctx, args: list[str]) -> int:
    await asyncio.sleep(ctx.world.wall_seconds(float(args[0]) if args else 0.0))
    return 0


@command("timeout")
async def _timeout(ctx: Ctx, args: list[str]) -> int:
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        if opt in ("-s", "-k", "--signal", "--kill-after") and args:
            args.pop(0)
    if len(args) < 2:
        ctx.err("timeout: missing operand\n")
        return 125
    seconds = float(args[0].rstrip("s"))
    run = ctx.host.exec(args[1:], ctx.out, ctx.err, ctx.stdin, login=ctx.login, root=ctx.root)
    try:
        return await asyncio.wait_for(run, ctx.world.wall_seconds(seconds))
    except TimeoutError:
        return 124


@command("hostname")
async def _hostname(ctx: Ctx, args: list[str]) -> int:
    ctx.out(ctx.node.name + "\n")
    return 0


@command("whoami")
async def _whoami(ctx: Ctx, args: list[str]) -> int:
    ctx.out(("root" if ctx.root else ctx.host.user) + "\n")
    return 0


@command("uname")
async def _uname(ctx: Ctx, args: list[str]) -> int:
    if "-r" in args:
        ctx.out(KERNEL + "\n")
    elif "-a" in args:
        ctx.out(f"Linux {ctx.node.name} {KERNEL} #16-Ubuntu SMP aarch64 GNU/Linux\n")
    else:
        ctx.out("Linux\n")
    return 0


@command("date")
async def _date(ctx: Ctx, args: list[str]) -> int:
    if "+%s" in args:
        ctx.out(f"{int(ctx.world.now())}\n")
    else:
        ctx.out(time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(ctx.world.now())) + "\n")
    return 0


@command("env", "printenv")
async def _env(ctx: Ctx, args: list[str]) -> int:
    env = ctx.host.base_env(ctx.login)
    ctx.out("".join(f"{k}={v}\n" for k, v in env.items()))
    return 0


@command("sudo")
async def _sudo(ctx: Ctx, args: list[str]) -> int:
    opts: list[str] = []
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        opts.append(opt)
        if opt in ("-u", "-g"):
            args = args[1:]
    if not args:
        ctx.err("usage: sudo -h | -K | -k | -V\n")
        return 1
    refused = nodetools.sudo_refusal(ctx, opts, args)
    if refused is not None:
        ctx.err(refused[0])
        return refused[1]
    if "-l" in opts:
        return await nodetools.sudo_list(ctx, args)
    return await ctx.host.exec(args, ctx.out, ctx.err, ctx.stdin, login=ctx.login, root=True)


@command("bash", "sh")
async def _bash(ctx: Ctx, args: list[str]) -> int:
    login = ctx.login
    script: str | None = None
    it = iter(args)
    for a in it:
        if a.startswith("-") and not a.startswith("--"):
            if "l" in a:
                login = True
            if "c" in a:
                script = next(it, "")
                break
        elif a == "--login":
            login = True
        else:
            content = read_file(ctx.host, a, ctx.root)
            if content is None:
                ctx.err(f"bash: {a}: No such file or directory\n")
                return 127
            script = content
            break
    if script is None:
        script = ctx.stdin
    return await ctx.host.run(script, ctx.out, ctx.err, login=login, root=ctx.root)


def _need_root(ctx: Ctx, what: str) -> bool:
    if ctx.root:
        return False
    ctx.err(f"{what}: Permission denied\n")
    return True


@command("tee")
async def _tee(ctx: Ctx, args: list[str]) -> int:
    append = "-a" in args
    paths = [a for a in args if not a.startswith("-")]
    for p in paths:
        if p.startswith(("/etc/", "/usr/", "/lib/")) and not ctx.root:
            ctx.err(f"tee: {p}: Permission denied\n")
            return 1
        ctx.node.files[p] = (ctx.node.files.get(p, "") if append else "") + ctx.stdin
    ctx.out(ctx.stdin)
    ctx.world.changed(f"file:{ctx.node.name}")
    return 0


@command("cp")
async def _cp(ctx: Ctx, args: list[str]) -> int:
    paths = [a for a in args if not a.startswith("-")]
    if len(paths) != 2:
        ctx.err("cp: missing destination file operand\n")
        return 1
    src, dst = paths
    content = read_file(ctx.host, src, ctx.root)
    if content is None:
        ctx.err(f"cp: cannot stat '{src}': No such file or directory\n")
        return 1
    if dst.startswith("/etc/") and _need_root(ctx, f"cp: cannot create regular file '{dst}'"):
        return 1
    ctx.node.files[dst] = content
    ctx.world.changed(f"file:{ctx.node.name}")
    return 0


@command("mv")
async def _mv(ctx: Ctx, args: list[str]) -> int:
    status = await _cp(ctx, args)
    if status == 0:
        ctx.node.files.pop(next(a for a in args if not a.startswith("-")), None)
    return status


@command("rm")
async def _rm(ctx: Ctx, args: list[str]) -> int:
    flags = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
    force, recursive = "f" in flags, "r" in flags or "R" in flags or "--recursive" in args
    status = 0
    for arg in (a for a in args if not a.startswith("-")):
        p = arg.rstrip("/") or "/"
        if p not in ctx.node.files and _is_dir(ctx.host, p):
            if not recursive:
                ctx.err(f"rm: cannot remove '{p}': Is a directory\n")
                status = 1
                continue
            if _protected(p) and _need_root(ctx, f"rm: cannot remove '{p}'"):
                return 1
            _remove_tree(ctx, p)
            continue
        if p not in ctx.node.files:
            if not force:
                ctx.err(f"rm: cannot remove '{p}': No such file or directory\n")
                status = 1
            continue
        if p.startswith("/etc/") and _need_root(ctx, f"rm: cannot remove '{p}'"):
            return 1
        del ctx.node.files[p]
    ctx.world.changed(f"file:{ctx.node.name}")
    return status


def _protected(path: str) -> bool:
    """Where only root may create or remove (the sticky, world-writable /run/lock is not)."""
    if path.startswith("/run/"):
        return not path.startswith("/run/lock/")
    return path.startswith(("/etc/", "/usr/", "/lib/", "/opt/", "/var/lib/"))


def _remove_tree(ctx: Ctx, path: str) -> None:
    prefix = path + "/"
    for f in [f for f in ctx.node.files if f.startswith(prefix)]:
        del ctx.node.files[f]
    ctx.node.dirs -= {d for d in ctx.node.dirs if d == path or d.startswith(prefix)}


@command("mkdir")
async def _mkdir(ctx: Ctx, args: list[str]) -> int:
    """Exclusive like coreutils: an existing path fails (`File exists`, exit 1) unless `-p`,
    so `mkdir` of a lock directory is an atomic test-and-set."""
    parents, paths, it = False, [], iter(args)
    for a in it:
        if a in ("-m", "--mode"):
            next(it, None)
        elif a in ("-p", "--parents"):
            parents = True
        elif a.startswith("-") and len(a) > 1:
            parents = parents or "p" in a.lstrip("-").split("m", 1)[0]
        else:
            paths.append(a)
    if not paths:
        ctx.err("mkdir: missing operand\nTry 'mkdir --help' for more information.\n")
        return 1
    status = 0
    for p in paths:
        path = p.rstrip("/") or "/"
        exists = path in ctx.node.files or _is_dir(ctx.host, path)
        if exists and (not parents or path in ctx.node.files):
            ctx.err(f"mkdir: cannot create directory '{p}': File exists\n")
            status = 1
            continue
        if exists:
            continue
        if _protected(path) and not ctx.root:
            ctx.err(f"mkdir: cannot create directory '{p}': Permission denied\n")
            status = 1
            continue
        ctx.node.dirs.add(path)
    ctx.world.changed(f"file:{ctx.node.name}")
    return status


@command("rmdir")
async def _rmdir(ctx: Ctx, args: list[str]) -> int:
    status = 0
    for p in (a for a in args if not a.startswith("-")):
        path = p.rstrip("/") or "/"
        if not _is_dir(ctx.host, path):
            ctx.err(f"rmdir: failed to remove '{p}': No such file or directory\n")
            status = 1
        elif any(q.startswith(path + "/") for q in [*vfs_paths(ctx.host), *ctx.node.dirs]):
            ctx.err(f"rmdir: failed to remove '{p}': Directory not empty\n")
            status = 1
        elif _protected(path) and _need_root(ctx, f"rmdir: failed to remove '{p}'"):
            return 1
        else:
            ctx.node.dirs.discard(path)
    ctx.world.changed(f"file:{ctx.node.name}")
    return status


@command("chmod", "chown", "sync", "modprobe")
async def _noop(ctx: Ctx, args: list[str]) -> int:
    return 0


@command("ls")
async def _ls(ctx: Ctx, args: list[str]) -> int:
    paths = [a for a in args if not a.startswith("-")] or [f"/home/{ctx.host.user}"]
    status = 0
    for p in paths:
        if p in ctx.node.files or read_file(ctx.host, p, True) is not None:
            ctx.out(p + "\n")
            continue
        prefix = p.rstrip("/") + "/"
        names = sorted(
            {q[len(prefix) :].split("/")[0] for q in vfs_paths(ctx.host) if q.startswith(prefix)}
        )
        if not names:
            ctx.err(f"ls: cannot access '{p}': No such file or directory\n")
            status = 2
            continue
        ctx.out("".join(n + "\n" for n in names))
    return status


# --- the NIC ---------------------------------------------------------------------------------


@command("ibdev2netdev")
async def _ibdev2netdev(ctx: Ctx, args: list[str]) -> int:
    order = sorted(ctx.node.rails, key=lambda r: (r.half, r.port))
    for r in order:
        state = "Up" if ctx.world.rail_up(ctx.node.name, r) else "Down"
        ctx.out(f"{r.rdma} port 1 ==> {r.netdev} ({state})\n")
    return 0


def _interfaces(ctx: Ctx) -> list[dict[str, object]]:
    node, world = ctx.node, ctx.world
    ifs: list[dict[str, object]] = [
        {
            "ifindex": 1,
            "ifname": "lo",
            "flags": ["LOOPBACK", "UP", "LOWER_UP"],
            "mtu": 65536,
            "qdisc": "noqueue",
            "operstate": "UNKNOWN",
            "group": "default",
            "txqlen": 1000,
            "link_type": "loopback",
            "address": "00:00:00:00:00:00",
            "broadcast": "00:00:00:00:00:00",
            "_v4": [("127.0.0.1", 8, "host")],
            "_v6": [("::1", 128, "host")],
        },
        {
            "ifindex": 2,
            "ifname": MGMT_IF,
            "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
            "mtu": 1500,
            "qdisc": "mq",
            "operstate": "UP",
            "group": "default",
            "txqlen": 1000,
            "link_type": "ether",
            "address": MGMT_MAC.format(node.index),
            "broadcast": "ff:ff:ff:ff:ff:ff",
            "_v4": [(f"192.168.1.{100 + node.index}", 24, "global")],
            "_v6": [],
        },
    ]
    for k, r in enumerate(node.rails):
        up = world.rail_up(node.name, r)
        flags = (
            ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"]
            if up
            else ["NO-CARRIER", "BROADCAST", "MULTICAST", "UP"]
        )
        ifs.append(
            {
                "ifindex": 3 + k,
                "ifname": r.netdev,
                "flags": flags,
                "mtu": r.mtu,
                "qdisc": "mq",
                "operstate": "UP" if up else "DOWN",
                "group": "default",
                "txqlen": 1000,
                "link_type": "ether",
                "address": r.mac,
                "broadcast": "ff:ff:ff:ff:ff:ff",
                "_v4": [(a.split("/")[0], int(a.split("/")[1]), "global") for a in r.addresses],
                "_v6": [
                    (
                        a.split("/")[0],
                        int(a.split("/")[1]),
                        "link" if a.startswith("fe80") else "global",
                    )
                    for a in r.ipv6
                ],
            }
        )
    return ifs


def _addr_json(i: dict[str, object]) -> dict[str, object]:
    d = {k: v for k, v in i.items() if not k.startswith("_")}
    info: list[dict[str, object]] = []
    for ip, plen, scope in i["_v4"]:  # type: ignore[attr-defined]
        e: dict[str, object] = {"family": "inet", "local": ip, "prefixlen": plen}
        if scope == "global" and ip != "127.0.0.1":
            b = ip.split(".")
            e["broadcast"] = ".".join([*b[:3], "255"]) if plen == 24 else ip
        e.update(
            {
                "scope": scope,
                "label": d["ifname"],
                "valid_life_time": 4294967295,
                "preferred_life_time": 4294967295,
            }
        )
        info.append(e)
    for ip, plen, scope in i["_v6"]:  # type: ignore[attr-defined]
        info.append(
            {
                "family": "inet6",
                "local": ip,
                "prefixlen": plen,
                "scope": scope,
                "valid_life_time": 4294967295,
                "preferred_life_time": 4294967295,
            }
        )
    d["addr_info"] = info
    return d


@command("ip")
async def _ip(ctx: Ctx, args: list[str]) -> int:
    js = pretty = brief = stats = False
    rest: list[str] = []
    for a in args:
        if rest:
            rest.append(a)
        elif a in ("-j", "-json", "--json"):
            js = True
        elif a in ("-p", "-pretty"):
            pretty = True
        elif a in ("-br", "-brief"):
            brief = True
        elif a in ("-s", "-stats", "-statistics"):
            stats = True
        elif a in ("-4", "-6", "-d", "-details", "-c", "-color=never", "-o", "-oneline"):
            continue
        elif a.startswith("-"):
            ctx.err(f'Option "{a}" is unknown, try "ip -help".\n')
            ctx.host.refuse(["ip", *args])
            return 255
        else:
            rest.append(a)
    if not rest:
        ctx.err("Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }\n")
        return 255
    changed = hostnet.change(ctx.world, ctx.node, rest, ctx.root, ctx.err)
    if changed is not None:
        return changed
    if (
        len(rest) >= 2
        and rest[1] not in ("show", "list", "lst", "sh", "ls", "l", "dev")
        and rest[0] in ("a", "addr", "address", "l", "link")
        and not rest[1].startswith("-")
    ):
        sub = "address" if rest[0].startswith("a") else "link"
        ctx.err(f'Command "{rest[1]}" is unknown, try "ip {sub} help".\n')
        ctx.host.refuse(["ip", *args])
        return 255
    obj = rest[0]
    if obj in ("r", "ro", "route"):
        return nodecmds.ip_route(ctx, rest[1:], js)
    dev = None
    if "dev" in rest:
        dev = rest[rest.index("dev") + 1]
    elif len(rest) >= 3 and rest[1] == "show":
        dev = rest[2]
    ifs = _interfaces(ctx)
    if dev is not None:
        ifs = [i for i in ifs if i["ifname"] == dev]
        if not ifs:
            ctx.err(f'Device "{dev}" does not exist.\n')
            return 1
    if obj in ("a", "addr", "address"):
        rows = [_addr_json(i) for i in ifs]
    elif obj in ("l", "link"):
        rows = [{k: v for k, v in i.items() if not k.startswith("_")} for i in ifs]
    else:
        ctx.err(f'Object "{obj}" is unknown, try "ip help".\n')
        return 1
    if js:
        if pretty:
            ctx.out(json.dumps(rows, indent=4) + "\n")
        else:
            ctx.out(json.dumps(rows, separators=(",", ":")) + "\n")
        return 0
    for i in ifs:
        name = str(i["ifname"])
        state = str(i["operstate"])
        if brief:
            if obj.startswith("l"):
                flags = ",".join(i["flags"])  # type: ignore[arg-type]
                ctx.out(f"{name:<16} {state:<14} {i['address']} <{flags}> \n")
            else:
                addrs = [f"{a}/{p}" for a, p, _s in i["_v4"]]  # type: ignore[attr-defined]
                addrs += [f"{a}/{p}" for a, p, _s in i["_v6"]]  # type: ignore[attr-defined]
                ctx.out(f"{name:<16} {state:<14} {' '.join(addrs)} \n")
            continue
        flags = ",".join(i["flags"])  # type: ignore[arg-type]
        mode = "mode DEFAULT " if obj.startswith("l") else ""
        ctx.out(
            f"{i['ifindex']}: {name}: <{flags}> mtu {i['mtu']} qdisc {i['qdisc']} state {state} "
            f"{mode}group default qlen 1000\n"
            f"    link/{i['link_type']} {i['address']} brd {i['broadcast']}\n"
        )
        if stats and obj.startswith("l"):
            ctx.out(hostnet.stats_lines(ctx.node.rail(name)))
        if obj.startswith("a"):
            for a, p, s in i["_v4"]:  # type: ignore[attr-defined]
                ctx.out(
                    f"    inet {a}/{p} scope {s} {name}\n"
                    "       valid_lft forever preferred_lft forever\n"
                )
            for a, p, s in i["_v6"]:  # type: ignore[attr-defined]
                ctx.out(
                    f"    inet6 {a}/{p} scope {s} \n"
                    "       valid_lft forever preferred_lft forever\n"
                )
    return 0


_LINK_MODES = (
    "1000baseKX/Full",
    "10000baseKR/Full",
    "25000baseCR/Full",
    "50000baseCR2/Full",
    "100000baseCR4/Full",
    "200000baseCR4/Full",
)


@command("ethtool")
async def _ethtool(ctx: Ctx, args: list[str]) -> int:
    opts = [a for a in args if a.startswith("-")]
    names = [a for a in args if not a.startswith("-")]
    if not names:
        ctx.err("ethtool: bad command line argument(s)\nFor more information run ethtool -h\n")
        return 1
    dev = names[0]
    rail = ctx.node.rail(dev)
    if rail is None or dev != rail.netdev:
        if dev == MGMT_IF and not opts:
            ctx.out(
                f"Settings for {dev}:\n\tSpeed: 10000Mb/s\n\tDuplex: Full\n\tLink detected: yes\n"
            )
            return 0
        ctx.err(
            "netlink error: no device matches name (offset 24)\nnetlink error: No such device\n"
        )
        return 1
    from wizard.lab import hostrdma

    bad = [o for o in opts if o not in hostrdma.ETHTOOL_OPTS]
    if bad:
        ctx.err("ethtool: bad command line argument(s)\nFor more information run ethtool -h\n")
        ctx.host.refuse(["ethtool", *args])
        return 1
    up = ctx.world.rail_up(ctx.node.name, rail)
    mbps, fec = hostrdma.link_rate(ctx.world, ctx.node, rail.port)
    if "-m" in opts or "--dump-module-eeprom" in opts or "--module-info" in opts:
        return hostrdma.module_eeprom(ctx.world, ctx.node, rail.port, ctx.out, ctx.err)
    if "-i" in opts or "--driver" in opts:
        ctx.out(
            "driver: mlx5_core\n"
            f"version: {KERNEL}\n"
            f"firmware-version: {ctx.node.firmware} (NVD0000000087)\n"
            "expansion-rom-version: \n"
            f"bus-info: {rail.pci}\n"
            "supports-statistics: yes\n"
            "supports-test: yes\n"
            "supports-eeprom-access: no\n"
            "supports-register-dump: no\n"
            "supports-priv-flags: yes\n"
        )
        return 0
    if "-S" in opts or "--statistics" in opts:
        if ctx.world.traffic is not None:
            ctx.world.traffic.settle()
        c = rail.counters
        lines = ["NIC statistics:"]
        for name in PHY_COUNTERS:
            lines.append(f"     {name}: {c.get(name, 0)}")
        for p in range(8):
            if p != 3:
                lines.append(f"     rx_prio{p}_packets: 0")
        lines.append(f"     rx_prio0_discards: {c.get('rx_discards_phy', 0)}")
        lines.append("     tx_global_pause: 0")
        lines.append("     rx_global_pause: 0")
        ctx.out("\n".join(lines) + "\n")
        return 0
    if "--show-fec" in opts:
        ctx.out(
            f"FEC parameters for {dev}:\nSupported/Configured FEC encodings: Auto\n"
            f"Active FEC encoding: {fec}\n"
        )
        return 0
    modes = ("\n" + " " * 32).join(_LINK_MODES)
    ctx.out(
        f"Settings for {dev}:\n"
        "\tSupported ports: [ Backplane ]\n"
        f"\tSupported link modes:   {modes}\n"
        "\tSupported pause frame use: Symmetric\n"
        "\tSupports auto-negotiation: Yes\n"
        "\tSupported FEC modes: None\t RS\t BASER\n"
        f"\tAdvertised link modes:  {modes}\n"
        "\tAdvertised pause frame use: Symmetric\n"
        "\tAdvertised auto-negotiation: Yes\n"
        "\tAdvertised FEC modes: RS\n"
        + (
            f"\tSpeed: {mbps}Mb/s\n\tLanes: 4\n\tDuplex: Full\n"
            if up
            else "\tSpeed: Unknown!\n\tDuplex: Unknown! (255)\n"
        )
        + "\tAuto-negotiation: on\n"
        f"\tPort: {'Direct Attach Copper' if up else 'Other'}\n"
        "\tPHYAD: 0\n"
        "\tTranceiver: internal\n"
        "\tSupports Wake-on: d\n"
        "\tWake-on: d\n"
        "\tCurrent message level: 0x00000004 (4)\n"
        "\t\t\t       link\n"
        f"\tLink detected: {'yes' if up else 'no'}\n"
    )
    return 0


@command("mlnx_qos")
async def _mlnx_qos(ctx: Ctx, args: list[str]) -> int:
    if "-i" not in args:
        ctx.err("Usage: mlnx_qos -i <interface> [options]\n")
        return 1
    dev = args[args.index("-i") + 1]
    rail = ctx.node.rail(dev)
    if rail is None:
        ctx.err(f"Netlink error: Bad value. see dmesg.\nInterface {dev} doesn't exist\n")
        return 1
    if not ctx.root:
        ctx.err("Netlink error: Operation not permitted\n")
        return 1
    if "--pfc" in args:
        pfc = parse_pfc(args[args.index("--pfc") + 1])
        if pfc != rail.pfc and ctx.world.port_link(ctx.node.name, rail.port):
            # mlx5 reconfigures the port buffers: the link goes down and comes back
            ctx.world.link_transition(ctx.node.name, rail.port, up=False)
            ctx.world.link_transition(ctx.node.name, rail.port, up=True)
        rail.pfc = pfc
        if ctx.world.traffic is not None:
            ctx.world.traffic.recompute()
        ctx.world.changed(f"pfc:{ctx.node.name}")
    enabled = "".join(f"{v:<4d}" for v in rail.pfc)
    out = [
        "DCBX mode: OS controlled",
        "Priority trust state: dscp",
        "dscp2prio mapping:",
    ]
    for p in range(8):
        dscps = ",".join(f"{d:02d}" for d in range(8 * p + 7, 8 * p - 1, -1))
        out.append(f"\tprio:{p} dscp:{dscps},")
    out += [
        "Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=262016",
        "Cable len: 7",
        "PFC configuration:",
        "\tpriority    0   1   2   3   4   5   6   7",
        f"\tenabled     {enabled}",
        f"\tbuffer      {''.join(f'{min(v, 1):<4d}' for v in rail.pfc)}",
    ]
    for tc in range(8):
        out.append(f"tc: {tc} ratelimit: unlimited, tsa: vendor")
        out.append(f"\t priority:  {1 if tc == 0 else 0 if tc == 1 else tc}")
    ctx.out("\n".join(out) + "\n")
    return 0


@command("sysctl")
async def _sysctl(ctx: Ctx, args: list[str]) -> int:
    node = ctx.node
    bad = hostnet.sysctl_bad_option(args)
    if bad:
        ctx.err(bad)
        ctx.out(hostnet.SYSCTL_USAGE)
        ctx.host.refuse(["sysctl", *args])
        return 0  # procps-ng 4.0 prints its usage and exits 0 on a bad option
    if "--system" in args:
        if not ctx.root:
            ctx.err("sysctl: permission denied on key 'net.ipv4.conf.all.arp_ignore'\n")
            return 1
        for path in sorted(p for p in node.files if p.startswith("/etc/sysctl.d/")):
            ctx.out(f"* Applying {path} ...\n")
        ctx.world.apply_sysctl_files(node)
        for path in sorted(p for p in node.files if p.startswith("/etc/sysctl.d/")):
            for line in node.files[path].splitlines():
                if "=" in line and not line.lstrip().startswith("#"):
                    k, _, v = line.partition("=")
                    ctx.out(f"{k.strip()} = {v.strip()}\n")
        ctx.world.changed(f"sysctl:{node.name}")
        return 0
    quiet = "-n" in args
    write = "-w" in args
    status = 0
    for a in (x for x in args if not x.startswith("-")):
        if "=" in a:
            if not ctx.root:
                ctx.err(f'sysctl: permission denied on key "{a.split("=")[0]}"\n')
                return 1
            k, _, v = a.partition("=")
            k = k.replace("/", ".")
            if not hostnet.sysctl_known(k):
                ctx.err(
                    f"sysctl: cannot stat /proc/sys/{k.replace('.', '/')}: No such file or directory\n"
                )
                status = 1
                continue
            node.sysctls[k] = v
            ctx.out(f"{k} = {v}\n")
            ctx.world.changed(f"sysctl:{node.name}")
            continue
        if write:
            ctx.err(f'sysctl: "{a}" must be of the form name=value\n')
            return 1
        key = a.replace("/", ".")
        if key not in node.sysctls:
            ctx.err(
                f"sysctl: cannot stat /proc/sys/{key.replace('.', '/')}: No such file or "
                "directory\n"
            )
            status = 255
            continue
        ctx.out(f"{node.sysctls[key]}\n" if quiet else f"{key} = {node.sysctls[key]}\n")
    return status


@command("lspci")
async def _lspci(ctx: Ctx, args: list[str]) -> int:
    verbose = any(a.startswith("-v") for a in args)
    sel = None
    if "-s" in args:
        sel = args[args.index("-s") + 1]
    rails = sorted(ctx.node.rails, key=lambda r: r.pci)
    if sel:
        rails = [r for r in rails if r.pci.endswith(sel) or r.pci == sel]
    want_mlx = "-d" in args and args[args.index("-d") + 1].startswith("15b3")
    out: list[str] = []
    if not sel and not want_mlx:
        out.append("0000:00:00.0 PCI bridge: NVIDIA Corporation Device 22ce (rev 01)")
    w = ctx.node.pcie_width
    for r in rails:
        out.append(f"{r.pci} Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]")
        if not verbose:
            continue
        out.append("\tSubsystem: Mellanox Technologies Device 0026")
        out.append(
            "\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr+ "
            "Stepping- SERR+ FastB2B- DisINTx+"
        )
        if not ctx.root:
            out.append("\tCapabilities: <access denied>")
        else:
            down = " (downgraded)" if w < 4 else ""
            out += [
                "\tCapabilities: [60] Express (v2) Endpoint, MSI 00",
                "\t\tDevCap:\tMaxPayload 512 bytes, PhantFunc 0, Latency L0s unlimited, "
                "L1 unlimited",
                "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x4, ASPM not supported",
                "\t\t\tClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+",
                f"\t\tLnkSta:\tSpeed 32GT/s, Width x{w}{down}",
                "\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-",
            ]
        out.append("\tKernel driver in use: mlx5_core")
        out.append("\tKernel modules: mlx5_core")
        out.append("")
    if not sel and not want_mlx:
        out.append(
            "0007:01:00.0 Ethernet controller: Realtek Semiconductor Co., Ltd. Device 8127 (rev 05)"
        )
        out.append(
            "000f:01:00.0 VGA compatible controller: NVIDIA Corporation Device 2e12 (rev a1)"
        )
    ctx.out("\n".join(out) + ("\n" if out and out[-1] else ""))
    return 0


@command("dmesg")
async def _dmesg(ctx: Ctx, args: list[str]) -> int:
    if not ctx.root:
        ctx.err("dmesg: read kernel buffer failed: Operation not permitted\n")
        return 1
    for t, msg in ctx.node.dmesg:
        ctx.out(f"[{t:12.6f}] {msg}\n")
    return 0


@command("journalctl")
async def _journalctl(ctx: Ctx, args: list[str]) -> int:
    node = ctx.node
    bad = hostnet.journalctl_bad_option(args)
    if bad:
        ctx.err(bad)
        ctx.host.refuse(["journalctl", *args])
        return 1
    if "--list-boots" in args:
        ctx.out(list_boots(ctx.world, node, args))
        return 0
    for t, msg in node.dmesg:
        stamp = time.strftime("%b %d %H:%M:%S", time.gmtime(node.boot_time + t))
        ctx.out(f"{stamp} {node.name} kernel: {msg}\n")
    return 0


# --- ping ---------------------------------------------------------------------------------


@command("ping")
async def _ping(ctx: Ctx, args: list[str]) -> int:
    count, size, iface, pmtu_do = 3, 56, None, False
    target = None
    it = iter(args)
    for a in it:
        if a == "-c":
            count = int(next(it, "3"))
        elif a == "-s":
            size = int(next(it, "56"))
        elif a == "-I":
            iface = next(it, None)
        elif a == "-M":
            pmtu_do = next(it, "") == "do"
        elif a in ("-W", "-w", "-i", "-t"):
            next(it, None)
        elif not a.startswith("-"):
            target = a
    if target is None:
        ctx.err("ping: usage error: Destination address required\n")
        return 2
    node, world = ctx.node, ctx.world
    src: RailState | None = None
    if iface:
        src = node.rail(iface)
        if src is None:
            for r in node.rails:
                if iface in r.ipv4:
                    src = r
        if src is None and iface != MGMT_IF:
            ctx.err(f"ping: SO_BINDTODEVICE {iface}: No such device\n")
            return 2
    else:
        for r in node.rails:
            for a in r.addresses:
                if _same_subnet(a, target):
                    src = r
    src_ip = src.ipv4[0] if src and src.ipv4 else f"192.168.1.{100 + node.index}"
    dev = src.netdev if src else MGMT_IF
    ctx.out(f"PING {target} ({target}) from {src_ip} {dev}: {size}({size + 28}) bytes of data.\n")
    local_mtu = src.mtu if src else 1500
    errors = received = 0
    lines: list[str] = []
    owners = world.owners(target)
    reach = False
    if src is not None and owners:
        for owner, rail in owners:
            if owner is node:
                reach = True
                break
            p = world.path(node.name, src.port, owner.name, rail.port)
            if not p.ok:
                continue
            big = size + 28
            sw_ok = all(h.offloaded for h in p.hops) or big <= p.mtu
            if big <= rail.mtu and big <= p.l2mtu and sw_ok:
                reach = True
                break
            if not pmtu_do:
                reach = True  # fragments get through
                break
    for seq in range(1, count + 1):
        if pmtu_do and size + 28 > local_mtu:
            lines.append(f"ping: local error: message too long, mtu={local_mtu}\n")
            errors += 1
        elif reach:
            rtt = 0.05 + world.rng.uniform(0, 0.03)
            lines.append(
                f"{size + 8} bytes from {target}: icmp_seq={seq} ttl=64 time={rtt:.3f} ms\n"
            )
            received += 1
    for line in lines:
        ctx.out(line)
    await asyncio.sleep(world.wall_seconds(max(0, count - 1) * 1.0))
    ms = int((count - 1) * 1000 + world.rng.uniform(20, 60))
    loss = 100 - received * 100 // count
    err_part = f", +{errors} errors" if errors else ""
    ctx.out(
        f"\n--- {target} ping statistics ---\n"
        f"{count} packets transmitted, {received} received{err_part}, {loss}% packet loss, "
        f"time {ms}ms\n"
    )
    if received:
        ctx.out("rtt min/avg/max/mdev = 0.054/0.060/0.069/0.006 ms\n")
    return 0 if received else 1


def _same_subnet(cidr: str, ip: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(ip) in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False


# --- traffic tools ------------------------------------------------------------------------------


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
    if o.server_ip is None:
        return await perftest.run_server(
            ctx.world, ctx.host.perf, ctx.node, o, out=ctx.out, err=ctx.err
        )
    return await perftest.run_client(
        ctx.world, ctx.host.perf, ctx.node, o, out=ctx.out, err=ctx.err
    )


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


# --- system management ---------------------------------------------------------------------------


@command("netplan")
async def _netplan(ctx: Ctx, args: list[str]) -> int:
    if not args:
        ctx.err("You need to specify a command\n")
        return 1
    if not ctx.root and args[0] in ("apply", "try", "generate"):
        ctx.err("Permission denied\n")
        return 1
    world, node = ctx.world, ctx.node
    if args[0] == "generate":
        _cfg, e = world.netplan_config(node)
        if e:
            ctx.err(e + "\n")
            return 1
        return 0
    if args[0] == "apply":
        e = world.apply_netplan(node)
        if e:
            ctx.err(e + "\n")
            return 1
        renderer_applied(world, node)
        return 0
    if args[0] == "try":
        timeout = 120.0
        if "--timeout" in args:
            timeout = float(args[args.index("--timeout") + 1])
        before = _netplan_snapshot(node)
        e = world.apply_netplan(node)
        if e:
            ctx.err(e + "\n")
            return 1
        ctx.out(
            "Do you want to keep these settings?\n\n\nPress ENTER before the timeout to "
            f"accept the new configuration\n\n\nChanges will revert in {int(timeout)} "
            "seconds\n"
        )
        if "\n" in ctx.stdin:
            ctx.out("Configuration accepted.\n")
            return 0
        await asyncio.sleep(world.wall_seconds(timeout))
        _netplan_restore(world, node, before)
        ctx.out("Reverting.\n")
        return 78
    if args[0] == "get":
        cfg, _e = world.netplan_config(node)
        ctx.out(json.dumps({"network": {"ethernets": cfg}}, indent=2) + "\n")
        return 0
    ctx.err(f"netplan: invalid choice: '{args[0]}'\n")
    return 2


def _netplan_snapshot(node: NodeState) -> list[tuple[list[str], list[str], int]]:
    return [(list(r.addresses), list(r.ipv6), r.mtu) for r in node.rails]


def _netplan_restore(
    world: World, node: NodeState, snap: list[tuple[list[str], list[str], int]]
) -> None:
    for r, (a, v6, mtu) in zip(node.rails, snap, strict=True):
        r.addresses, r.ipv6, r.mtu = a, v6, mtu
    if world.traffic is not None:
        world.traffic.recompute()


@command("systemctl")
async def _systemctl(ctx: Ctx, args: list[str]) -> int:
    words = [a for a in args if not a.startswith("-")]
    now = "--now" in args
    if not words:
        ctx.err("systemctl: missing verb\n")
        return 1
    verb, units = words[0], words[1:]
    if verb in ("daemon-reload", "enable", "disable", "start", "restart", "stop") and not ctx.root:
        ctx.err("Failed to " + verb + ": Interactive authentication required.\n")
        return 1
    node, world = ctx.node, ctx.world
    if verb == "daemon-reload":
        return 0
    if verb == "stop" and units and all(u.endswith(".timer") for u in units):
        for u in units:
            task = ctx.host.timers.pop(u.removesuffix(".timer"), None)
            if task is not None:
                task.cancel()
        return 0
    status = 0
    for given in units:
        unit = given if "." in given else given + ".service"
        path = f"/etc/systemd/system/{unit}"
        exists = path in node.files
        if verb in ("enable", "start", "restart") and not exists:
            ctx.err(f"Failed to {verb} unit: Unit file {unit} does not exist.\n")
            status = 1
            continue
        if verb == "enable":
            node.enabled_units.add(unit)
            ctx.err(
                f"Created symlink /etc/systemd/system/multi-user.target.wants/{unit} → {path}.\n"
            )
            if now:
                world.run_unit(node, unit)
        elif verb in ("start", "restart"):
            world.run_unit(node, unit)
        elif verb == "disable":
            node.enabled_units.discard(unit)
        elif verb == "is-enabled":
            enabled = unit in node.enabled_units
            ctx.out("enabled\n" if enabled else ("disabled\n" if exists else "not-found\n"))
            status = 0 if enabled else 1
        elif verb in ("status", "is-active"):
            # a transient timer of systemd-run is active until it fires or is stopped
            timer = unit.endswith(".timer") and unit.removesuffix(".timer") in ctx.host.timers
            active = unit in node.enabled_units or timer
            ctx.out("active\n" if active else "inactive\n")
            status = 0 if active else 3
    if world.traffic is not None:
        world.traffic.recompute()
    world.changed(f"systemd:{node.name}")
    return status


@command("test", "[")
async def _test(ctx: Ctx, args: list[str]) -> int:
    """`test EXPR` / `[ EXPR ]`: -e/-f/-d/-s PATH, -n/-z STR, STR = STR, STR != STR, ! EXPR."""
    words = list(args)
    if words and words[-1] == "]":
        words = words[:-1]
    negate = False
    while words and words[0] == "!":
        negate = not negate
        words = words[1:]
    result = False
    if len(words) == 2 and words[0] in ("-e", "-f", "-d", "-s", "-r"):
        path = words[1]
        content = read_file(ctx.host, path, True)
        if words[0] == "-d":
            result = _is_dir(ctx.host, path)
        elif words[0] == "-s":
            result = bool(content)
        else:
            result = content is not None or (words[0] == "-e" and _is_dir(ctx.host, path))
    elif len(words) == 2 and words[0] in ("-n", "-z"):
        result = bool(words[1]) if words[0] == "-n" else not words[1]
    elif len(words) == 3 and words[1] in ("=", "==", "!="):
        result = (words[0] == words[2]) == (words[1] != "!=")
    elif len(words) == 1:
        result = bool(words[0])
    elif words:
        ctx.err(f"bash: test: {words[0]}: unary operator expected\n")
        return 2
    return 0 if result != negate else 1


@command("systemd-run")
async def _systemd_run(ctx: Ctx, args: list[str]) -> int:
    """`systemd-run --on-active=SECONDS --unit=NAME CMD...`: a transient timer that runs CMD when
    due (on the lab clock) unless `systemctl stop NAME.timer` comes first. fabwiz arms its timed
    revert of host fixes with it."""
    if not ctx.root:
        ctx.err("Failed to start transient timer unit: Interactive authentication required.\n")
        return 1
    delay: float | None = None
    unit = ""
    rest = list(args)
    while rest and rest[0].startswith("-"):
        opt = rest.pop(0)
        if opt.startswith("--on-active="):
            delay = float(opt.split("=", 1)[1].rstrip("s"))
        elif opt.startswith("--unit="):
            unit = opt.split("=", 1)[1]
        elif opt in ("--on-active", "--unit") and rest:
            value = rest.pop(0)
            if opt == "--on-active":
                delay = float(value.rstrip("s"))
            else:
                unit = value
        elif opt == "--":
            break
    if not rest:
        ctx.err("systemd-run: command line to execute required.\n")
        return 1
    unit = unit or f"run-u{len(ctx.host.timers) + 1}"
    if delay is None:
        return await ctx.host.exec(rest, ctx.out, ctx.err, "", root=True)
    host = ctx.host
    world = ctx.world
    command_line = list(rest)

    async def fire() -> None:
        await asyncio.sleep(world.wall_seconds(delay))
        host.timers.pop(unit, None)
        await host.exec(command_line, _null, _null, "", root=True)
        world.changed(f"systemd-run:{unit}")

    old = host.timers.pop(unit, None)
    if old is not None:
        old.cancel()
    host.timers[unit] = asyncio.ensure_future(fire())
    ctx.err(f"Running timer as unit: {unit}.timer\nWill run service as unit: {unit}.service\n")
    return 0


@command("reboot")
async def _reboot(ctx: Ctx, args: list[str]) -> int:
    return _power(ctx, "poweroff" if "-p" in args or "--poweroff" in args else "reboot")


@command("poweroff", "halt")
async def _poweroff(ctx: Ctx, args: list[str]) -> int:
    return _power(ctx, "reboot" if "--reboot" in args else "poweroff")


@command("shutdown")
async def _shutdown(ctx: Ctx, args: list[str]) -> int:
    return _power(ctx, "reboot" if "-r" in args or "--reboot" in args else "poweroff")


def _power(ctx: Ctx, kind: str) -> int:
    if not ctx.root:
        verb = "Reboot" if kind == "reboot" else "Power off"
        ctx.err(f"Call to {verb} failed: Interactive authentication required.\n")
        return 1
    if ctx.host.on_reboot is not None:
        ctx.host.on_reboot(ctx.node.name, kind)
    return 0


@command("mlxfwmanager")
async def _mlxfwmanager(ctx: Ctx, args: list[str]) -> int:
    node = ctx.node
    ctx.out(
        "Querying Mellanox devices firmware ...\n\n"
        "Device #1:\n----------\n\n"
        "  Device Type:      ConnectX7\n"
        "  Part Number:      MCX75343AMC-NEAC_Ax\n"
        "  PSID:             NVD0000000087\n"
        "  PCI Device Name:  0000:01:00.0\n"
        "  Versions:         Current        Available     \n"
        f"     FW             {node.firmware:<15}N/A           \n\n"
        "  Status:           No matching image found\n"
    )
    return 0


@command("docker")
async def _docker(ctx: Ctx, args: list[str]) -> int:
    return docker_cli(ctx.world, ctx.node, args, ctx.out, ctx.err)


@command("nmcli")
async def _nmcli(ctx: Ctx, args: list[str]) -> int:
    from wizard.lab import nmprofiles

    return nmprofiles.run(ctx.world, ctx.node, args, ctx.out, ctx.err, root=ctx.root)


@command("xargs")
async def _xargs(ctx: Ctx, args: list[str]) -> int:
    """`xargs [-r] COMMAND ARGS...`: COMMAND with the words of standard input appended."""
    no_run_if_empty = "-r" in args or "--no-run-if-empty" in args
    rest = [a for a in args if a not in ("-r", "--no-run-if-empty")]
    words = ctx.stdin.split()
    if not words and no_run_if_empty:
        return 0
    cmd = rest or ["echo"]
    handler = COMMANDS.get(cmd[0])
    if handler is None:
        ctx.err(f"xargs: {cmd[0]}: No such file or directory\n")
        return 127
    return await handler(ctx, [*cmd[1:], *words])


from wizard.lab import nodecmds  # noqa: E402  (registers its commands; imports this module)
