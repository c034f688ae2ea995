"""SSH to the GB10 nodes with asyncssh: one persistent connection per node, reused by every probe.

Why this shape: a sweep runs dozens of probes on each node; a new SSH handshake per command costs
more than the commands themselves, and an OpenSSH daemon drops more than 10 unauthenticated
connections at once (MaxStartups), so the handshakes to one daemon are bounded by a semaphore
below that (every node runs its own daemon; a bastion in the ssh config is one daemon for all),
and a handshake the server drops before it began is retried after a short, jittered pause. Client CPU per node is kept
small: AES-GCM is preferred where both ends offer it (falling back to asyncssh's defaults), and
`known_hosts` and identity files are read once per run, not once per connection. asyncssh itself
is imported on the first connection, so commands that never open one start fast. Host keys are checked against
known_hosts by default; a host that is not there yet is accepted only when the operator asked
(`accept_new_host_keys`), and then recorded; a host whose key changed is always refused, with the
commands to check it. The session channels open on one connection stay below the node's sshd
MaxSessions (`wizard.transports.sessions`): a rail test, its counters, the next round's servers and
the gauges' sampling loop all share it, and a refused open waits for a slot instead of breaking
the connection. Every failure comes back as a `ProbeResult` whose `error` names the target
and says what to do: the sweep goes on with the other nodes.
"""

from __future__ import annotations

import asyncio
import random
import socket
import time
from collections.abc import AsyncGenerator, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wizard.model import ProbeResult
from wizard.transports.capped import OutputWatch, cap_from_env, run_capped
from wizard.transports.sessions import DEFAULT_MAX_SESSIONS, SessionSlots
from wizard.transports.sshlib import load_asyncssh

if TYPE_CHECKING:
    import asyncssh

__all__ = ["SshTarget", "SshTransport", "StreamFailed", "sudo_error"]

DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts")
DEFAULT_SSH_CONFIG = Path("~/.ssh/config")
# OpenSSH's MaxStartups starts dropping a daemon's unauthenticated connections at 10: stay
# below it, per daemon (`SshTransport._gate`).
DEFAULT_MAX_HANDSHAKES = 8
# AES-GCM runs in the AES instructions of both ends; asyncssh's default (chacha20-poly1305)
# costs the client several times more CPU per byte. Asked for first; the defaults follow.
PREFERRED_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")
# A handshake the server dropped before its banner (MaxStartups, a busy sshd) is tried again.
HANDSHAKE_RETRIES = 3


def _asyncssh() -> Any:
    """asyncssh, imported on first use (it costs ~0.1 s, which `--help` and replay never pay),
    without the parts a client of the nodes never needs (`wizard.transports.sshlib`)."""
    return load_asyncssh()


def encryption_algs() -> list[str]:
    """The cipher preference sent to the server: AES-GCM first, then asyncssh's defaults."""
    _asyncssh()
    from asyncssh.encryption import get_default_encryption_algs

    rest = [a.decode() for a in get_default_encryption_algs()]
    return [*PREFERRED_CIPHERS, *(a for a in rest if a not in PREFERRED_CIPHERS)]


@dataclass(frozen=True, slots=True)
class SshTarget:
    """How to reach one node. `host` may be an ~/.ssh/config alias; None fields defer to it."""

    name: str
    host: str
    port: int | None = None
    user: str | None = None
    identity_file: str | None = None
    known_hosts: str | None = None

    @classmethod
    def from_spec(cls, spec: Any) -> SshTarget:
        """From an inventory `NodeSpec` (duck-typed to keep this module free of pydantic)."""
        return cls(
            name=spec.name,
            host=spec.address,
            port=spec.port,
            user=spec.user,
            identity_file=spec.identity_file,
            known_hosts=spec.known_hosts,
        )

    @property
    def where(self) -> str:
        return self.host if self.port in (None, 22) else f"{self.host}:{self.port}"


def sudo_error(target: str, command: str, stderr: str) -> str | None:
    """The operator's message when `sudo -n` refused for want of a password, else None."""
    low = stderr.lower()
    if "a password is required" in low or "a terminal is required" in low:
        tool = command.split("sudo -n", 1)[-1].split()[:1]
        what = tool[0] if tool else "the command"
        return (
            f"{target}: sudo needs a password to run {what}; fabwiz only uses `sudo -n`. "
            f"Allow it without a password (e.g. /etc/sudoers.d/fabwiz: "
            f"`<user> ALL=(root) NOPASSWD: /usr/bin/{what}`)"
        )
    return None


class _HostKeyPolicy:
    """Decides on host keys known_hosts does not trust: accept a *new* host when allowed."""

    def __init__(self, transport: SshTransport, target: SshTarget, known: Any) -> None:
        self._transport = transport
        self._target = target
        self._known = known
        self.refusal: str | None = None
        self.authenticated = False

    def auth_completed(self) -> None:
        self.authenticated = True

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        matched = self._known.match(host, addr, None if port == 22 else port)
        fingerprint = key.get_fingerprint("sha256")
        kh = self._transport.known_hosts_path(self._target)
        pattern = host if port == 22 else f"[{host}]:{port}"
        if matched[0]:
            self.refusal = (
                f"{self._target.name}: the host key of {pattern} CHANGED: it now presents "
                f"{fingerprint}, which is not the key recorded in {kh}. Either the node was "
                f"reinstalled or something is in the way. Check the fingerprint on the console "
                f"of the node (`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`), then remove "
                f"the old entry with `ssh-keygen -R '{pattern}' -f {kh}` and run again"
            )
            return False

        if self._transport.accept_new_host_keys:
            self._transport.record_host_key(self._target, pattern, key)
            return True
        self.refusal = (
            f"{self._target.name}: the host key of {pattern} ({fingerprint}) is not in {kh}. "
            f"Check the fingerprint on the node's console, then run again with "
            f"--accept-new-host-keys to record it (or `ssh {self._target.where}` once by hand)"
        )
        return False


_POLICY_CLASS: type | None = None


def _make_policy(transport: SshTransport, target: SshTarget, known: Any) -> Any:
    """A `_HostKeyPolicy` that is also an `asyncssh.SSHClient` (built on first use)."""
    global _POLICY_CLASS
    if _POLICY_CLASS is None:
        _POLICY_CLASS = type("HostKeyPolicy", (_HostKeyPolicy, _asyncssh().SSHClient), {})
    return _POLICY_CLASS(transport, target, known)


class SshTransport:
    """A pool of persistent SSH connections, one per node, opened on first use."""

    def __init__(
        self,
        targets: Iterable[SshTarget] = (),
        *,
        accept_new_host_keys: bool = False,
        max_handshakes: int = DEFAULT_MAX_HANDSHAKES,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        connect_timeout: float = 10.0,
        command_timeout: float = 30.0,
        ssh_config: str | Path | None = DEFAULT_SSH_CONFIG,
        known_hosts: str | Path = DEFAULT_KNOWN_HOSTS,
    ) -> None:
        self.targets: dict[str, SshTarget] = {t.name: t for t in targets}
        self.accept_new_host_keys = accept_new_host_keys
        self.output_cap = cap_from_env()  # bytes kept per stream of one probe
        self.connect_timeout = connect_timeout
        self.command_timeout = command_timeout
        self._ssh_config = None if ssh_config is None else Path(ssh_config).expanduser()
        self._known_hosts = Path(known_hosts).expanduser()
        self.max_handshakes = max_handshakes  # per sshd (see `_gate`)
        self._gates: dict[tuple[str, int] | None, asyncio.Semaphore] = {}
        self.max_sessions = max_sessions  # per connection, below sshd's MaxSessions
        self._sessions: dict[str, SessionSlots] = {}  # node -> its connection's session slots
        self._config_text: str | None = None
        self._conns: dict[str, asyncssh.SSHClientConnection] = {}
        self._known_cache: dict[Path, Any] = {}  # known_hosts path -> parsed, read once per run
        self._keys_cache: dict[str, Any] = {}  # identity file -> loaded key pairs
        self._ciphers: list[str] | None = None
        self.retried_handshakes = 0  # handshakes dropped by the server and tried again
        self._locks: dict[str, asyncio.Lock] = {}
        self._starting: dict[str, asyncio.Future[str | None]] = {}  # handshakes begun by start()
        self._begun: list[asyncio.Future[str | None]] = []  # the same, kept once connect took them
        self.handshakes = 0  # connections opened, for tests and the bench
        self.max_concurrent_handshakes = 0
        self._in_handshake = 0
        self.accepted_host_keys: list[tuple[str, str, str]] = []  # (target, pattern, fingerprint)
        self.on_host_key: Callable[[str, str, str], None] | None = None

    def add(self, target: SshTarget) -> None:
        self.targets[target.name] = target

    def known_hosts_path(self, target: SshTarget) -> Path:
        return Path(target.known_hosts).expanduser() if target.known_hosts else self._known_hosts

    def record_host_key(self, target: SshTarget, pattern: str, key: asyncssh.SSHKey) -> None:
        """Append a newly accepted host key to the target's known_hosts file."""
        path = self.known_hosts_path(target)
        algo, blob = key.export_public_key("openssh").decode().split()[:2]
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"{pattern} {algo} {blob}\n")
        self.accepted_host_keys.append((target.name, pattern, key.get_fingerprint("sha256")))
        if self.on_host_key is not None:  # shown to the operator and kept in the session
            self.on_host_key(target.name, pattern, key.get_fingerprint("sha256"))

    def start(self, names: Iterable[str]) -> None:
        """Begin the handshakes of `names` now, in the background, so that a caller overlaps
        their round trips with work of its own (loading the checks). The next `connect` of each
        node waits for that handshake: still one try per node."""
        self._begun = [f for f in self._begun if not f.done()]
        for name in names:
            if name not in self._starting and name not in self._conns:
                self._starting[name] = asyncio.ensure_future(self._connect(name))
                self._begun.append(self._starting[name])

    async def started(self, timeout: float) -> bool:
        """Wait until every handshake `start` began has ended (either way), at most `timeout`
        seconds. True when they all have."""
        self._begun = [f for f in self._begun if not f.done()]
        if self._begun:
            await asyncio.wait(self._begun, timeout=timeout)
            self._begun = [f for f in self._begun if not f.done()]
        return not self._begun

    async def connect(self, name: str) -> str | None:
        """Open (or reuse) the connection to `name`. Returns None, or the error text."""
        started = self._starting.pop(name, None)
        return await (started if started is not None else self._connect(name))

    async def _connect(self, name: str) -> str | None:
        try:
            await self._connection(name)
        except _ConnectFailed as exc:
            return exc.message
        return None

    async def run(
        self,
        name: str,
        command: str,
        *,
        timeout: float | None = None,
        stdin: str | None = None,
        watch: OutputWatch | None = None,
    ) -> ProbeResult:
        """Run one command on node `name`; never raises for transport trouble. `watch` sees
        its stdout as it comes (a server that says when it listens)."""
        started = time.time()
        t0 = time.monotonic()

        def result(**kw: Any) -> ProbeResult:
            return ProbeResult(
                target=name,
                kind="ssh",
                command=command,
                started_at=started,
                duration_s=time.monotonic() - t0,
                **kw,
            )

        try:
            conn = await self._connection(name)
        except _ConnectFailed as exc:
            return result(error=exc.message)
        limit = self.command_timeout if timeout is None else timeout
        slots = self.sessions(name)
        while True:
            # a slot below the daemon's MaxSessions first (its wait is not the command's time)
            await slots.take()
            try:
                # stdin is written, then closed at once (like `ssh -n` when there is none)
                proc = await asyncio.wait_for(
                    run_capped(conn, command, stdin, self.output_cap, watch), limit
                )
                break
            except TimeoutError:
                return result(
                    error=f"{name}: `{_short(command)}` gave no answer within {limit:g} s; "
                    "the node may be overloaded or the command hung"
                )
            except (_asyncssh().Error, OSError) as exc:
                if _session_refused(exc):
                    if slots.refused():
                        continue  # its MaxSessions is lower: wait for one of ours to end
                    return result(error=_refused_message(name, command, exc))
                self._drop(name)
                return result(
                    error=f"{name}: the SSH connection broke during `{_short(command)}`: "
                    f"{_reason(exc)}; fabwiz reconnects on the next probe"
                )
            finally:
                slots.give()
        stdout = _text(proc.stdout)
        stderr = _text(proc.stderr)
        status = proc.exit_status
        if status is None and proc.exit_signal is not None:
            status = 128
        if status is None:
            # the channel closed without an exit status: the connection went away mid-command
            # (asyncssh returns what arrived so far instead of raising)
            self._drop(name)
            return result(
                stdout=stdout,
                stderr=stderr,
                error=f"{name}: the SSH connection broke during `{_short(command)}` (it ended "
                "without an exit status, the output may be cut short); fabwiz reconnects on the "
                "next probe",
            )
        error = sudo_error(name, command, stderr) if "sudo -n" in command else None
        return result(stdout=stdout, stderr=stderr, exit_status=status, error=error)

    async def stream_lines(self, name: str, command: str) -> AsyncGenerator[str, None]:
        """Run a long-lived command on node `name` over its connection (a channel of its own)
        and yield its stdout line by line as it comes; closing the generator closes the
        channel, which ends the remote command. Transport trouble raises `StreamFailed`."""
        try:
            conn = await self._connection(name)
        except _ConnectFailed as exc:
            raise StreamFailed(exc.message) from None
        asyncssh = _asyncssh()
        slots = self.sessions(name)
        while True:
            await slots.take()
            try:
                async with conn.create_process(command, stderr=asyncssh.DEVNULL) as proc:
                    async for line in proc.stdout:
                        yield str(line)
                return
            except (asyncssh.Error, OSError) as exc:
                if _session_refused(exc):
                    if slots.refused():
                        continue
                    raise StreamFailed(_refused_message(name, command, exc)) from None
                raise StreamFailed(
                    f"{name}: the stream of `{_short(command)}` broke: {_reason(exc)}"
                ) from None
            finally:
                slots.give()

    def sessions(self, name: str) -> SessionSlots:
        """The session slots of node `name`'s connection (`wizard.transports.sessions`)."""
        slots = self._sessions.get(name)
        if slots is None:
            slots = self._sessions[name] = SessionSlots(self.max_sessions)
        return slots

    async def close(self) -> None:
        starting = list(self._starting.values())
        self._starting.clear()
        self._begun.clear()
        for fut in starting:
            fut.cancel()
        await asyncio.gather(*starting, return_exceptions=True)
        conns = list(self._conns.values())
        self._conns.clear()
        for c in conns:
            c.close()
        for c in conns:
            try:
                await asyncio.wait_for(c.wait_closed(), 2.0)
            except (TimeoutError, _asyncssh().Error, OSError):
                pass

    async def __aenter__(self) -> SshTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- internals ---------------------------------------------------------------------------

    def _drop(self, name: str) -> None:
        conn = self._conns.pop(name, None)
        if conn is not None:
            conn.close()

    async def _connection(self, name: str) -> asyncssh.SSHClientConnection:
        conn = self._conns.get(name)
        if conn is not None and not conn.is_closed():
            return conn
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            conn = self._conns.get(name)
            if conn is not None and not conn.is_closed():
                return conn
            target = self.targets.get(name)
            if target is None:
                raise _ConnectFailed(f"{name}: not in the inventory")
            for attempt in range(HANDSHAKE_RETRIES + 1):
                async with self._gate(target):
                    self._in_handshake += 1
                    self.max_concurrent_handshakes = max(
                        self.max_concurrent_handshakes, self._in_handshake
                    )
                    try:
                        conn = await self._open(target)
                        break
                    except _Dropped as exc:
                        if attempt == HANDSHAKE_RETRIES:
                            raise _ConnectFailed(exc.message) from None
                    finally:
                        self._in_handshake -= 1
                # dropped before the banner: let the server's other handshakes finish first
                self.retried_handshakes += 1
                await asyncio.sleep(0.05 * 2**attempt * (1 + random.random()))
            assert conn is not None  # the loop either broke with a connection or raised
            self._conns[name] = conn
            return conn

    def _parsed_known_hosts(self, target: SshTarget) -> Any:
        """The parsed known_hosts of `target`: each file is read once per run."""
        kh_path = self.known_hosts_path(target)
        known = self._known_cache.get(kh_path)
        if known is None:
            try:
                kh_text = kh_path.read_text(encoding="utf-8") if kh_path.exists() else ""
                known = _asyncssh().import_known_hosts(kh_text)
            except (OSError, ValueError) as exc:
                raise _ConnectFailed(
                    f"{target.name}: cannot read known_hosts {kh_path}: {exc}; fix or move it"
                ) from None
            self._known_cache[kh_path] = known
        return known

    def _client_keys(self, target: SshTarget) -> Any:
        """The key pairs of the target's identity file, loaded once per run."""
        path = str(target.identity_file)
        keys = self._keys_cache.get(path)
        if keys is None:
            asyncssh = _asyncssh()
            try:
                keys = asyncssh.load_keypairs([str(Path(path).expanduser())])
            except (OSError, asyncssh.KeyImportError, ValueError) as exc:
                raise _ConnectFailed(
                    f"{target.name}: cannot load identity file {target.identity_file}: "
                    f"{getattr(exc, 'strerror', None) or exc}; check the path in the inventory"
                ) from None
            self._keys_cache[path] = keys
        return keys

    def _config_says(self, *keywords: str) -> bool:
        """The operator's ssh config has a line starting with one of `keywords` (lowercase);
        the file is read once per run."""
        if self._config_text is None:
            text = ""
            if self._ssh_config is not None and self._ssh_config.is_file():
                try:
                    text = self._ssh_config.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    text = ""
            self._config_text = text.lower()
        return any(line.strip().startswith(keywords) for line in self._config_text.splitlines())

    def _gate(self, target: SshTarget) -> asyncio.Semaphore:
        """The handshake semaphore of the sshd that `target`'s connection reaches. OpenSSH's
        MaxStartups counts the unauthenticated connections of one daemon: nodes each run their
        own, so their handshakes need not wait for each other's. When the ssh config may send
        several targets to one daemon (a `ProxyJump` or `ProxyCommand` bastion, a `HostName`
        behind aliases), every target shares one semaphore, as if it were one daemon."""
        shared = self._config_says("hostname", "proxyjump", "proxycommand")
        key = None if shared else (target.host, target.port or 22)
        gate = self._gates.get(key)
        if gate is None:
            gate = self._gates[key] = asyncio.Semaphore(self.max_handshakes)
        return gate

    def _cipher_options(self) -> list[str] | None:
        """AES-GCM first, unless the operator's ssh config chooses the ciphers itself."""
        if self._ciphers is None:
            self._ciphers = [] if self._config_says("ciphers") else encryption_algs()
        return self._ciphers or None

    def _options(self, target: SshTarget, known: Any, policy: _HostKeyPolicy) -> dict[str, Any]:
        """asyncssh.connect's options for `target` (raises `_ConnectFailed` for a missing key)."""
        options: dict[str, Any] = {
            "known_hosts": known,
            "connect_timeout": self.connect_timeout,
            "login_timeout": self.connect_timeout,
            "client_factory": lambda: policy,
        }
        if self._ssh_config is not None and self._ssh_config.is_file():
            options["config"] = [str(self._ssh_config)]
        else:
            options["config"] = []
        if target.port is not None:
            options["port"] = target.port
        if target.user is not None:
            options["username"] = target.user
        ciphers = self._cipher_options()
        if ciphers:
            options["encryption_algs"] = ciphers
        if target.identity_file is not None:
            if _missing(target.identity_file):
                raise _ConnectFailed(
                    f"{target.name}: the identity file {target.identity_file} does not exist: "
                    "fix identity_file in the inventory (or leave it out to use your SSH agent)"
                )
            options["client_keys"] = self._client_keys(target)
        return options

    async def _open(self, target: SshTarget) -> asyncssh.SSHClientConnection:
        asyncssh = _asyncssh()
        known = self._parsed_known_hosts(target)
        policy = _make_policy(self, target, known)
        options = self._options(target, known, policy)
        self.handshakes += 1
        try:
            return await asyncio.wait_for(
                asyncssh.connect(target.host, **options), self.connect_timeout + 1
            )
        except asyncssh.HostKeyNotVerifiable as exc:
            raise _ConnectFailed(policy.refusal or f"{target.name}: {_reason(exc)}") from None
        except asyncssh.PermissionDenied:
            user = target.user or "(your login)"
            raise _ConnectFailed(
                f"{target.name}: SSH login refused for user {user} at {target.where}: check "
                f"identity_file ({target.identity_file or 'default keys'}) and that its public "
                f"key is in ~{user}/.ssh/authorized_keys on the node"
            ) from None
        except (asyncssh.ConnectionLost, ConnectionResetError) as exc:
            if not policy.authenticated:
                raise _Dropped(
                    f"{target.name}: {target.where} dropped the SSH handshake "
                    f"({_reason(exc) or 'connection lost'}) on every try: sshd may be refusing "
                    "new connections (MaxStartups) or restarting; try again in a moment"
                ) from None
            raise _ConnectFailed(f"{target.name}: SSH failed: {_reason(exc)}") from None
        except TimeoutError as exc:
            raise _ConnectFailed(
                f"{target.name}: no SSH answer from {target.where} within "
                f"{self.connect_timeout:g} s ({_reason(exc) or 'timeout'}): is the node up and "
                "on the management network?"
            ) from None
        except socket.gaierror:
            raise _ConnectFailed(
                f"{target.name}: cannot resolve host {target.host!r}: check the inventory or "
                "the alias in ~/.ssh/config"
            ) from None
        except asyncssh.KeyImportError as exc:
            raise _ConnectFailed(
                f"{target.name}: cannot load identity file {target.identity_file}: {exc}"
            ) from None
        except OSError as exc:
            raise _ConnectFailed(
                f"{target.name}: cannot reach {target.where}: {exc.strerror or exc}; check the "
                "node is powered and sshd listens on that port"
            ) from None
        except asyncssh.Error as exc:
            raise _ConnectFailed(f"{target.name}: SSH failed: {_reason(exc)}") from None
        except ValueError as exc:  # asyncssh raises ValueError for bad config/options
            raise _ConnectFailed(f"{target.name}: bad SSH settings: {exc}") from None


class StreamFailed(Exception):
    """A long-lived command could not start or its channel broke (the message says which)."""


class _ConnectFailed(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Dropped(_ConnectFailed):
    """The server closed the connection before the handshake got anywhere: worth a retry."""


def _session_refused(exc: BaseException) -> bool:
    """sshd refused a session channel at its open (MaxSessions), the connection still up."""
    asyncssh = _asyncssh()
    return (
        isinstance(exc, asyncssh.ChannelOpenError)
        and exc.code == asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED
    )


def _refused_message(name: str, command: str, exc: BaseException) -> str:
    return (
        f"{name}: sshd refused a session for `{_short(command)}` ({_reason(exc)}) while fabwiz "
        f"held no other session there: its MaxSessions may be 0, or a Match block forbids "
        f"commands; check `sudo sshd -T | grep -i maxsessions` on {name}"
    )


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return str(reason) if reason else str(exc)


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _short(command: str, limit: int = 60) -> str:
    first = command.strip().splitlines()[0] if command.strip() else command
    return first if len(first) <= limit else first[: limit - 1] + "…"


def _missing(path: str) -> bool:
    """An identity file that is not there (a stat: no reason to leave the event loop)."""
    return not Path(path).expanduser().is_file()
