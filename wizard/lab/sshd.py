"""One real SSH server (asyncssh) per emulated node, on 127.0.0.1.

Key and password authentication for the lab user, a host key per node, exec requests run
through the node's tiny sh (`hostcmds.interp.Host`), and a bare interactive shell for humans. A node
that is powered off drops new connections, as an unreachable host does.

Like OpenSSH's sshd, a connection carries at most `MaxSessions` session channels at once (10 by
default, `max_sessions`): one more is refused at its open, "administratively prohibited: open
failed", and the connection stays up. The most a connection held (`peak_sessions`) is kept, so a
test can see how close a client came.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import asyncssh

from wizard.lab.hostcmds import Host
from wizard.lab.hostcmds.registry import Shell

STDIN_COMMANDS = ("tee", "netplan try", "cat -", "bash -s", "sh -s")
STDIN_WAIT_S = 5.0
PIPE_CHUNK = 32768  # OpenSSH's sshd forwards a command's output in reads of up to this much
MAX_SESSIONS = 10  # sshd_config's MaxSessions default (session.c: "no more sessions")


class PipeWriter:
    """A command's output as sshd forwards it: what the command wrote since sshd last read its
    pipe goes out as one channel packet (up to PIPE_CHUNK), not one packet per line. A burst
    (a sysfs walk, a framed batch script) is one read; output spaced in time (a test's progress,
    a sampling loop) goes out as it comes, at the next turn of the event loop."""

    def __init__(self, write: Callable[[str], object]) -> None:
        self._write = write
        self._parts: list[str] = []
        self._size = 0
        self._armed = False

    def __call__(self, text: str) -> None:
        if not text:
            return
        self._parts.append(text)
        self._size += len(text)
        if self._size >= PIPE_CHUNK:
            self.flush()
        elif not self._armed:
            self._armed = True
            asyncio.get_running_loop().call_soon(self._read)

    def _read(self) -> None:
        self._armed = False
        self.flush()

    def flush(self) -> None:
        if not self._parts:
            return
        data = "".join(self._parts)
        self._parts.clear()
        self._size = 0
        try:
            for at in range(0, len(data), PIPE_CHUNK):
                self._write(data[at : at + PIPE_CHUNK])
        except (asyncssh.Error, BrokenPipeError, ConnectionError):
            pass  # the client went away: like sshd, nothing to send it to


FaultHook = Callable[["NodeServer", "asyncssh.SSHServerProcess[str]", str], Awaitable[bool]]


class _Session(asyncssh.SSHServerProcess[str]):
    """A session that frees its MaxSessions slot the moment its channel is gone (asyncssh calls
    `connection_lost` as it processes the close, before the next packet, as sshd counts)."""

    def __init__(self, handler: Callable[..., Awaitable[None]], freed: Callable[[], None]):
        super().__init__(handler, None, 0, False)
        self._freed: Callable[[], None] | None = freed

    def connection_lost(self, exc: Exception | None) -> None:
        freed, self._freed = self._freed, None
        if freed is not None:
            freed()
        super().connection_lost(exc)


class _NodeSSH(asyncssh.SSHServer):
    def __init__(self, server: NodeServer) -> None:
        self._server = server
        self._conn: asyncssh.SSHServerConnection | None = None
        self._sessions = 0  # session channels open on this connection

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self._conn = conn
        if not self._server.host.node.powered:
            conn.close()
            return
        self._server.connections.add(conn)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._conn is not None:
            self._server.connections.discard(self._conn)

    def begin_auth(self, username: str) -> bool:
        return True

    def session_requested(self) -> asyncssh.SSHServerProcess[str]:
        """A session channel, while the connection holds fewer than MaxSessions; else refused
        at its open as sshd refuses it (the client sees "administratively prohibited")."""
        server = self._server
        if self._sessions >= server.max_sessions:
            server.refused_sessions += 1
            raise asyncssh.ChannelOpenError(
                asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED, "open failed"
            )
        self._sessions += 1
        server.peak_sessions = max(server.peak_sessions, self._sessions)
        return _Session(server._handle, self._session_closed)

    def _session_closed(self) -> None:
        self._sessions -= 1

    def password_auth_supported(self) -> bool:
        return True

    def validate_password(self, username: str, password: str) -> bool:
        return username == self._server.user and password == self._server.password


class NodeServer:
    """The SSH server of one node."""

    def __init__(
        self,
        host: Host,
        *,
        host_key: asyncssh.SSHKey,
        client_public_key: str,
        user: str,
        password: str,
        max_sessions: int = MAX_SESSIONS,
    ) -> None:
        self.host = host
        self.max_sessions = max_sessions  # per connection, as sshd_config's MaxSessions
        self.peak_sessions = 0  # the most session channels one connection held at once
        self.refused_sessions = 0
        self.host_key = host_key
        self.client_public_key = client_public_key
        self.user = user
        self.password = password
        self.port = 0
        self.connections: set[asyncssh.SSHServerConnection] = set()
        self._acceptor: asyncssh.SSHAcceptor | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        # wizard.lab.faulthooks: called before each exec request; True when it handled it
        self.fault_hook: FaultHook | None = None

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        keys = asyncssh.import_authorized_keys(self.client_public_key)
        self._acceptor = await asyncssh.create_server(
            lambda: _NodeSSH(self),
            host,
            port,
            server_host_keys=[self.host_key],
            authorized_client_keys=keys,
            encoding="utf-8",
            keepalive_interval=0,
        )
        sockets = self._acceptor.sockets
        self.port = int(sockets[0].getsockname()[1])
        return self.port

    def drop_connections(self) -> None:
        for conn in list(self.connections):
            conn.close()
        self.connections.clear()

    async def stop(self) -> None:
        self.drop_connections()
        if self._acceptor is not None:
            self._acceptor.close()
            await self._acceptor.wait_closed()
            self._acceptor = None

    async def _handle(self, process: asyncssh.SSHServerProcess[str]) -> None:
        try:
            if process.command is None:
                await self._interactive(process)
                return
            script = process.command
            stdin = ""
            if any(c in script for c in STDIN_COMMANDS):
                with contextlib.suppress(asyncio.TimeoutError, asyncssh.Error):
                    stdin = await asyncio.wait_for(process.stdin.read(), STDIN_WAIT_S)
            if self.fault_hook is not None and await self.fault_hook(self, process, script):
                return
            # a command whose session goes away dies with it (SIGHUP), e.g. a perftest server
            # whose client never came and whose caller gave up
            out, err = PipeWriter(process.stdout.write), PipeWriter(process.stderr.write)
            run = asyncio.ensure_future(self.host.run(script, out, err, stdin=stdin))
            closed = asyncio.ensure_future(process.channel.wait_closed())
            try:
                await asyncio.wait({run, closed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                closed.cancel()
                if not run.done():
                    run.cancel()
            if run.cancelled() or not run.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await run
                return
            out.flush()
            err.flush()
            failure = run.exception()
            if failure is not None:
                # a bug in an emulated command must not take the node's SSH server down: say
                # so like a crashing tool would, and keep serving
                process.stderr.write(f"fabwiz lab: internal error: {failure!r}\n")
                process.exit(70)
                return
            process.exit(run.result())
        except (asyncssh.Error, BrokenPipeError, ConnectionError):
            process.close()

    async def _interactive(self, process: asyncssh.SSHServerProcess[str]) -> None:
        node = self.host.node.name
        prompt = f"{self.user}@{node}:~$ "
        process.stdout.write(f"Welcome to the fabwiz lab node {node} (DGX OS 7, emulated)\n")
        shell = Shell(self.host.base_env(False))  # one shell for the session: `$?` carries on
        while True:
            process.stdout.write(prompt)
            try:
                line = await process.stdin.readline()
            except (asyncssh.Error, asyncio.IncompleteReadError):
                break
            if not line:
                break
            line = line.strip()
            if line in ("exit", "logout"):
                break
            if line:
                await self.host.run(line, process.stdout.write, process.stderr.write, shell=shell)
        process.exit(0)
