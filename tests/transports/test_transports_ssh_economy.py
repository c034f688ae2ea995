"""SshTransport's economy: AES-GCM preferred, known_hosts and keys read once, dropped handshakes
retried. Against an in-process asyncssh server on 127.0.0.1 (port 0)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh
import pytest

from wizard.transports import ssh as ssh_mod
from wizard.transports.ssh import SshTarget, SshTransport


@dataclass
class Server:
    port: int
    key_path: Path
    known_hosts: Path


@dataclass
class DroppingProxy:
    """Closes the first `drop` connections at once (as sshd does past MaxStartups), then
    forwards to the real server."""

    upstream: int
    drop: int
    accepted: int = 0
    dropped: int = 0
    port: int = 0
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        if self.dropped < self.drop:
            self.dropped += 1
            writer.transport.abort()  # a reset, before any banner
            return
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream)

        async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            try:
                while data := await r.read(65536):
                    w.write(data)
                    await w.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                w.close()

        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))


async def _echo(process: asyncssh.SSHServerProcess[str]) -> None:
    process.stdout.write(f"ran: {process.command}\n")
    process.exit(0)


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    key_path = tmp_path / "id_ed25519"
    client_key.write_private_key(str(key_path))
    acceptor = await asyncssh.listen(
        "127.0.0.1",
        0,
        server_host_keys=[host_key],
        authorized_client_keys=asyncssh.import_authorized_keys(
            client_key.export_public_key().decode()
        ),
        process_factory=_echo,
    )
    port = acceptor.get_port()
    kh = tmp_path / "known_hosts"
    lines = [
        f"[127.0.0.1]:{p} {host_key.export_public_key().decode().strip()}"
        for p in range(port, port + 1)
    ]
    kh.write_text("\n".join(lines) + "\n")
    yield Server(port, key_path, kh)
    acceptor.close()
    await acceptor.wait_closed()


def _target(server: Server, name: str, port: int | None = None) -> SshTarget:
    return SshTarget(
        name=name,
        host="127.0.0.1",
        port=port or server.port,
        user="fabwiz",
        identity_file=str(server.key_path),
        known_hosts=str(server.known_hosts),
    )


def test_cipher_preference_puts_aes_gcm_first_and_keeps_the_defaults() -> None:
    from asyncssh.encryption import get_default_encryption_algs

    algs = ssh_mod.encryption_algs()
    assert algs[:2] == ["aes128-gcm@openssh.com", "aes256-gcm@openssh.com"]
    defaults = {a.decode() for a in get_default_encryption_algs()}
    assert set(algs) == defaults  # nothing the defaults lack, nothing of theirs dropped
    assert len(algs) == len(defaults)


async def test_aes_gcm_is_negotiated_when_both_ends_offer_it(server: Server) -> None:
    async with SshTransport([_target(server, "spark1")], ssh_config=None) as t:
        r = await t.run("spark1", "hostname")
        assert r.stdout == "ran: hostname\n"
        conn = t._conns["spark1"]
        assert conn.get_extra_info("send_cipher") == "aes128-gcm@openssh.com"
        assert conn.get_extra_info("recv_cipher") == "aes128-gcm@openssh.com"


async def test_a_server_without_gcm_falls_back_to_a_default(tmp_path: Path) -> None:
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    key_path = tmp_path / "k"
    client_key.write_private_key(str(key_path))
    acceptor = await asyncssh.listen(
        "127.0.0.1",
        0,
        server_host_keys=[host_key],
        authorized_client_keys=asyncssh.import_authorized_keys(
            client_key.export_public_key().decode()
        ),
        process_factory=_echo,
        encryption_algs=["aes256-ctr"],
    )
    port = acceptor.get_port()
    kh = tmp_path / "kh"
    kh.write_text(f"[127.0.0.1]:{port} {host_key.export_public_key().decode()}")
    try:
        target = SshTarget("old", "127.0.0.1", port, "fabwiz", str(key_path), str(kh))
        async with SshTransport([target], ssh_config=None) as t:
            r = await t.run("old", "uname")
            assert r.stdout == "ran: uname\n"
            assert t._conns["old"].get_extra_info("send_cipher") == "aes256-ctr"
    finally:
        acceptor.close()
        await acceptor.wait_closed()


async def test_ssh_config_ciphers_are_left_to_the_config(server: Server, tmp_path: Path) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host *\n  Ciphers aes256-ctr\n")
    async with SshTransport([_target(server, "spark1")], ssh_config=cfg) as t:
        assert (await t.run("spark1", "id")).ok
        assert t._conns["spark1"].get_extra_info("send_cipher") == "aes256-ctr"


async def test_known_hosts_and_identity_are_read_once_per_run(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[str] = []
    loaded: list[list[str]] = []
    real_import, real_load = asyncssh.import_known_hosts, asyncssh.load_keypairs

    def counting_import(text: str) -> asyncssh.SSHKnownHosts:
        parsed.append(text)
        return real_import(text)

    def counting_load(paths: list[str]) -> list[asyncssh.SSHKeyPair]:
        loaded.append(paths)
        return real_load(paths)

    monkeypatch.setattr(asyncssh, "import_known_hosts", counting_import)
    monkeypatch.setattr(asyncssh, "load_keypairs", counting_load)
    targets = [_target(server, f"n{i}") for i in range(6)]
    async with SshTransport(targets, ssh_config=None) as t:
        results = await asyncio.gather(*(t.run(f"n{i}", "echo") for i in range(6)))
        assert [r.stdout for r in results] == ["ran: echo\n"] * 6
        assert t.handshakes == 6
    assert len(parsed) == 1 and f"[127.0.0.1]:{server.port}" in parsed[0]
    assert loaded == [[str(server.key_path)]]


async def test_a_handshake_dropped_before_the_banner_is_retried(server: Server) -> None:
    proxy = DroppingProxy(upstream=server.port, drop=2)
    listener = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    proxy.port = listener.sockets[0].getsockname()[1]
    server.known_hosts.write_text(
        server.known_hosts.read_text().replace(f":{server.port} ", f":{proxy.port} ")
    )
    try:
        async with SshTransport([_target(server, "spark1", proxy.port)], ssh_config=None) as t:
            r = await t.run("spark1", "hostname")
            assert r.error is None and r.stdout == "ran: hostname\n"
            assert t.retried_handshakes == 2
            assert t.handshakes == 3
        assert (proxy.accepted, proxy.dropped) == (3, 2)
    finally:
        listener.close()


async def test_a_server_that_always_drops_gets_a_clear_message(server: Server) -> None:
    proxy = DroppingProxy(upstream=server.port, drop=100)
    listener = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    proxy.port = listener.sockets[0].getsockname()[1]
    try:
        async with SshTransport([_target(server, "spark1", proxy.port)], ssh_config=None) as t:
            r = await t.run("spark1", "hostname")
        assert r.exit_status is None and r.error is not None
        assert r.error.startswith(f"spark1: 127.0.0.1:{proxy.port} dropped the SSH handshake")
        assert "MaxStartups" in r.error
        assert proxy.dropped == ssh_mod.HANDSHAKE_RETRIES + 1
    finally:
        listener.close()


def test_default_handshake_bound_is_below_openssh_maxstartups() -> None:
    assert SshTransport([], ssh_config=None).max_handshakes == ssh_mod.DEFAULT_MAX_HANDSHAKES
    assert ssh_mod.DEFAULT_MAX_HANDSHAKES < 10


def test_each_daemon_has_its_own_bound_unless_the_config_may_share_one(tmp_path: Path) -> None:
    """MaxStartups counts per sshd: nodes (their own daemons) do not wait for each other's
    handshakes; a config that may route several targets to one daemon shares one bound."""
    a, b = SshTarget("a", "10.0.0.1"), SshTarget("b", "10.0.0.2")
    a2 = SshTarget("a2", "10.0.0.1", port=22)
    plain = SshTransport([a, b, a2], ssh_config=None)
    assert plain._gate(a) is not plain._gate(b)  # two daemons
    assert plain._gate(a) is plain._gate(a2)  # one daemon, two targets
    for line in ("ProxyJump bastion", "  HostName 10.0.0.9", "proxycommand ssh -W %h:%p gw"):
        cfg = tmp_path / "ssh_config"
        cfg.write_text(f"Host *\n{line}\n")
        routed = SshTransport([a, b], ssh_config=cfg)
        assert routed._gate(a) is routed._gate(b), line  # maybe one bastion: one bound
    cfg.write_text("Host *\n  User fabwiz\n  Ciphers aes128-gcm@openssh.com\n")
    own = SshTransport([a, b], ssh_config=cfg)
    assert own._gate(a) is not own._gate(b)  # nothing in it reroutes a host


async def test_started_handshakes_are_the_ones_connect_waits_for(server: Server) -> None:
    proxy = DroppingProxy(upstream=server.port, drop=0)
    listener = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    proxy.port = listener.sockets[0].getsockname()[1]
    server.known_hosts.write_text(
        server.known_hosts.read_text().replace(f":{server.port} ", f":{proxy.port} ")
    )
    closed = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    dead_port = closed.sockets[0].getsockname()[1]
    closed.close()
    await closed.wait_closed()
    targets = [_target(server, "spark1", proxy.port), _target(server, "dead", dead_port)]
    try:
        async with SshTransport(targets, ssh_config=None) as t:
            t.start(["spark1", "dead", "spark1"])
            assert await t.connect("spark1") is None
            err = await t.connect("dead")
            assert err is not None and err.startswith(f"dead: cannot reach 127.0.0.1:{dead_port}")
            assert t.handshakes == 2  # one try each: the started handshake was the one awaited
            r = await t.run("spark1", "hostname")
            assert r.stdout == "ran: hostname\n" and t.handshakes == 2
            assert await t.connect("dead") is not None and t.handshakes == 3  # a new try
        assert proxy.accepted == 1
    finally:
        listener.close()


async def test_close_cancels_handshakes_nobody_waited_for(server: Server) -> None:
    t = SshTransport([_target(server, "spark1")], ssh_config=None)
    t.start(["spark1"])
    started = list(t._starting.values())
    await t.close()
    assert started and all(f.done() for f in started)
    assert t._conns == {} and t._starting == {}


async def test_started_says_when_the_begun_handshakes_have_ended_within_its_bound(
    server: Server,
) -> None:
    # a daemon that accepts and never sends its banner: its handshake hangs (a node half up)
    silent = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    silent_port = silent.sockets[0].getsockname()[1]
    targets = [_target(server, "spark1"), _target(server, "half-up", silent_port)]
    try:
        async with SshTransport(targets, ssh_config=None) as t:
            assert await t.started(0.01)  # nothing begun: nothing to wait for
            t.start(["spark1"])
            taken = asyncio.ensure_future(t.connect("spark1"))  # a sweep takes it over at once
            await asyncio.sleep(0)
            assert t._starting == {}
            assert await t.started(5.0)  # still the one it waits for: ended
            assert "spark1" in t._conns and await taken is None
            t.start(["half-up"])
            loop = asyncio.get_running_loop()
            began = loop.time()
            assert not await t.started(0.2)  # bounded: the hanging handshake is not waited out
            assert 0.15 < loop.time() - began < 2.0
    finally:
        silent.close()
