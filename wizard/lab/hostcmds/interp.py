"""One node's command interpreter: `Host.run(script)` runs a script through the tiny sh of
`wizard.lab.shell` (lists, pipelines, `while` loops, redirections, globs over the node's file
system) and dispatches each simple command to its handler in `registry.COMMANDS`; an unknown
command answers like bash (`command not found`, 127).
"""

from __future__ import annotations

import asyncio
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from wizard.lab import nodetools, perftest
from wizard.lab.hostcmds.registry import COMMANDS, Ctx, Write
from wizard.lab.hostcmds.vfs import glob_match, read_file, vfs_paths
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
    NodeState,
    World,
)


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
        # An and-or list is read left to right (POSIX): a pipeline after `&&` runs when the last
        # one that ran succeeded, after `||` when it failed, so `a && b || c` runs c when a fails.
        status = 0
        run = True
        for pl in pipelines:
            if run:
                status = await self._pipeline(
                    pl.commands, out, err, stdin=stdin, login=login, root=root
                )
                self.last_status = status
            if pl.connector == "&&":
                run = status == 0
            elif pl.connector == "||":
                run = status != 0
            else:
                run = True
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

    def _expand(self, cmd: Command) -> list[str]:
        """The words of a simple command after `$?`, `~` and glob expansion."""
        argv: list[str] = []
        for w in cmd.words:
            text = w.text.replace(STATUS, str(self.last_status))
            if w.tilde and (text == "~" or text.startswith("~/")):
                text = f"/home/{self.user}" + text[1:]
            if w.globbable:
                matches = glob_match(vfs_paths(self, text), text)
                argv.extend(matches or [text])
            else:
                argv.append(text)
        return argv

    async def _simple(
        self, cmd: Command, out: Write, err: Write, *, stdin: str, login: bool, root: bool
    ) -> int:
        argv = self._expand(cmd)
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
                target = null
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


def null(_s: str) -> None:
    return None


def _assignments(text: str) -> dict[str, str]:
    env: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$", line)
        if m:
            env[m.group(1)] = m.group(2).strip().strip("'\"")
    return env
