"""One node's command interpreter: `Host.run(script)` runs a script through the tiny sh of
`wizard.lab.shell` and `wizard.lab.shellparse` (lists, pipelines, `while` loops, redirections,
expansions at run time, globs over the node's file system) and dispatches each simple command
to its handler in `registry.BUILTINS` / `registry.COMMANDS`; an unknown command answers like
bash (`command not found`, 127).

A run's state (its variables, `$?`) is a `registry.Shell` of its own: `Host` is shared by every
SSH session of a node. A pipeline's commands run one after the other, each given the output of
the one before as its stdin, each in a subshell; a `while` loop at the end of a pipeline reads
that output, one line per `read`.
"""

from __future__ import annotations

import asyncio
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from wizard.lab import nodetools, perftest
from wizard.lab.hostcmds import expand
from wizard.lab.hostcmds.registry import (
    BUILTINS,
    COMMANDS,
    Ctx,
    Input,
    LoopControl,
    Shell,
    ShellExit,
    Write,
)
from wizard.lab.hostcmds.vfs import read_file
from wizard.lab.shell import tokenize
from wizard.lab.shellparse import (
    CommandList,
    Parser,
    Pipeline,
    Redirect,
    ShellSyntaxError,
    Simple,
    While,
)
from wizard.lab.world import (
    NodeState,
    World,
)


@dataclass(slots=True)
class Io:
    """A command's standard streams."""

    stdin: Input
    out: Write
    err: Write


@dataclass
class Host:
    """One node's command interpreter (shared by all SSH sessions to that node)."""

    world: World
    node: NodeState
    perf: perftest.Registry
    user: str = "fabwiz"
    on_reboot: Callable[[str, str], None] | None = None  # (node, "reboot"|"poweroff")
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
        stdin: str | Input = "",
        login: bool = False,
        root: bool = False,
        params: list[str] | None = None,
        shell: Shell | None = None,
    ) -> int:
        """Run a script as `bash -c` does (`params`: its `$0`, `$1`...): one complete command
        after the other, until the end or a syntax error (exit 2). `shell`: the state of an
        interactive session, kept from one command line to the next (else a fresh one)."""
        sh = shell or Shell(self.base_env(login), params or ["bash"], login=login, root=root)
        io = Io(stdin if isinstance(stdin, Input) else Input(stdin), out, err)
        parser = Parser(tokenize(script), script)
        while True:
            try:
                items = parser.next()
            except ShellSyntaxError as exc:
                err(exc.render())
                sh.status = 2
                return 2
            if items is None:
                return sh.status
            try:
                await self._list(sh, items, io)
            except ShellExit as exc:  # `exit`, or an expansion bash refuses
                return exc.status

    async def _list(self, sh: Shell, items: CommandList, io: Io) -> int:
        for item in items:
            # an and-or list is read left to right (POSIX): a pipeline after `&&` runs when
            # the last one that ran succeeded, after `||` when it failed
            status = await self._pipeline(sh, item.first, io)
            for op, pl in item.rest:
                if (op == "&&") == (status == 0):
                    status = await self._pipeline(sh, pl, io)
        return sh.status

    async def _pipeline(self, sh: Shell, pl: Pipeline, io: Io) -> int:
        status = 0
        if len(pl.commands) == 1:
            status = await self._command(sh, pl.commands[0], io)
        else:
            stdin = io.stdin
            for k, cmd in enumerate(pl.commands):
                buf: list[str] = []
                last = k == len(pl.commands) - 1
                stage = Io(stdin, io.out if last else buf.append, io.err)
                try:
                    status = await self._command(sh.subshell(), cmd, stage)
                except ShellExit as exc:  # it stops its subshell only
                    status = exc.status
                except LoopControl:  # `break` in a subshell leaves the loops outside it be
                    status = 0
                stdin = Input("".join(buf))
        if pl.negated:
            status = int(status == 0)
        sh.status = status
        return status

    async def _command(self, sh: Shell, cmd: Simple | While, io: Io) -> int:
        if isinstance(cmd, While):
            return await self._while(sh, cmd, io)
        return await self._simple(sh, cmd, io)

    async def _while(self, sh: Shell, loop: While, io: Io) -> int:
        """`while COND; do BODY; done`, for as long as COND exits 0 (`until`: as long as it
        does not), until `break`, or until the session that runs it goes away, which cancels
        it. Output streams as the body writes it; the loop's status is its last body's (0 when
        the body never ran)."""
        sh.line = loop.line
        opened = self._open(sh, loop.redirects, io)
        if opened is None:
            return 1
        lio, files = opened
        sh.loops += 1
        try:
            status = await self._iterate(sh, loop, lio)
        finally:
            sh.loops -= 1
        sh.status = status
        return self._save(files, status)

    async def _iterate(self, sh: Shell, loop: While, io: Io) -> int:
        status = 0
        while True:
            try:
                if (await self._list(sh, loop.cond, io) != 0) != loop.until:
                    return status
                status = await self._list(sh, loop.body, io)
            except LoopControl as jump:
                status = sh.status
                if jump.count > 1:  # an outer loop's
                    jump.count -= 1
                    raise
                if jump.kind == "break":
                    return status
            await asyncio.sleep(0)  # a loop without `sleep` must not starve the other nodes

    async def _simple(self, sh: Shell, cmd: Simple, io: Io) -> int:
        sh.line = cmd.line
        try:
            argv = expand.argv(self, sh, cmd.words)
            opened = self._open(sh, cmd.redirects, io)
        except expand.ExpansionError as exc:
            io.err(f"bash: line {sh.line}: {exc}\n")
            if exc.message != "bad substitution":
                self.refuse([w.src for w in cmd.words])
            raise ShellExit(1) from exc
        if opened is None:
            return 1
        cio, files = opened
        status = 0
        if argv:
            status = await self.exec(
                argv, cio.out, cio.err, cio.stdin, login=sh.login, root=sh.root, shell=sh
            )
        return self._save(files, status)

    def _open(
        self, sh: Shell, redirects: list[Redirect], io: Io
    ) -> tuple[Io, dict[str, list[str]]] | None:
        """The streams after the redirections, in order, and the files written to (saved when
        the command ends), or None when one fails (bash's message written)."""
        files: dict[str, list[str]] = {}
        if not redirects:
            return io, files
        cio = Io(io.stdin, io.out, io.err)
        for r in redirects:
            path = expand.target(self, sh, r.target)
            if path is None:
                io.err(f"bash: line {sh.line}: {r.target.src}: ambiguous redirect\n")
                return None
            if r.op == "<":
                content = "" if path == "/dev/null" else read_file(self, path, sh.root)
                if content is None:
                    io.err(f"bash: line {sh.line}: {path}: No such file or directory\n")
                    return None
                cio.stdin = Input(content)
                continue
            if r.op in (">&", "<&") and path.isdigit() and path not in ("0", "1", "2"):
                io.err(f"bash: line {sh.line}: {path}: Bad file descriptor\n")
                return None
            if r.op == "<&" or r.fd == 0:
                continue  # `<&0`: stdin stays the same
            dup = r.op == ">&" and path in ("1", "2", "-")
            if r.op == ">&" and not dup and r.fd != 1:
                io.err(f"bash: line {sh.line}: {r.target.src}: ambiguous redirect\n")
                return None
            if not dup and path.startswith("/etc/") and not sh.root:
                io.err(f"bash: line {sh.line}: {path}: Permission denied\n")
                return None
            target = self._writer(r, path, cio, files)
            if r.op == ">&" and not dup:
                cio.out = cio.err = target  # bash's `>&FILE`: stdout and stderr to FILE
            elif r.fd == 1:
                cio.out = target
            else:
                cio.err = target
        return cio, files

    def _writer(self, r: Redirect, path: str, cio: Io, files: dict[str, list[str]]) -> Write:
        if r.op == ">&" and path in ("1", "2", "-"):
            return {"1": cio.out, "2": cio.err}.get(path, null)  # `-`: closed
        if path == "/dev/null":
            return null
        buf = files.setdefault(path, [])
        if r.op == ">>" and len(buf) == 0:
            buf.append(self.node.files.get(path, ""))
        return buf.append

    def _save(self, files: dict[str, list[str]], status: int) -> int:
        for path, parts in files.items():
            self.node.files[path] = "".join(parts)
        return status

    async def exec(
        self,
        argv: list[str],
        out: Write,
        err: Write,
        stdin: str | Input,
        *,
        login: bool = False,
        root: bool = False,
        shell: Shell | None = None,
        stdout_mode: str = "",
    ) -> int:
        """Run one command. `shell`: the shell running it itself (its builtins need it); a
        command another tool starts (`sudo`, `timeout`) runs without one. `stdout_mode`: how
        the C library buffers its stdout (`Ctx.stdout_mode`, set by `stdbuf -o`)."""
        name = argv[0]
        stream = stdin if isinstance(stdin, Input) else Input(stdin)
        builtin = BUILTINS.get(name) if shell is not None else None
        if builtin is not None:
            ctx = Ctx(self, out, err, stream, root=root, login=login, shell=shell)
            return await builtin(ctx, argv[1:])
        handler = COMMANDS.get(name.rsplit("/", 1)[-1] if "/" in name else name)
        absent = nodetools.resolve(self, name) if handler is not None else None
        if absent is not None:
            err(absent)
            return 127
        if handler is None:
            err(f"bash: {name}: command not found\n")
            self.refuse(argv)
            return 127
        ctx = Ctx(
            self, out, err, stream, root=root, login=login, shell=shell, stdout_mode=stdout_mode
        )
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
