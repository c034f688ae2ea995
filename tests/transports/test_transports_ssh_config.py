"""SSH as engineers use it: ~/.ssh/config aliases, ProxyJump through a bastion, IdentityFile,
User, Port, and keys held by ssh-agent, against lab SSH servers on 127.0.0.1.

The bastion is a second SSH server started here: it authenticates the jump user by key and
forwards `direct-tcpip` only to 127.0.0.1, recording where it was asked to go.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncssh
import pytest

from wizard.lab.lab import Lab
from wizard.transports.ssh import SshTarget, SshTransport

pytestmark = pytest.mark.lab


class _Bastion(asyncssh.SSHServer):
    def __init__(self, seen: list[tuple[str, int, str]]) -> None:
        self.seen = seen
        self.user = ""

    def begin_auth(self, username: str) -> bool:
        self.user = username
        return True

    def connection_requested(
        self, dest_host: str, dest_port: int, orig_host: str, orig_port: int
    ) -> bool:
        self.seen.append((dest_host, dest_port, self.user))
        return dest_host == "127.0.0.1"


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    the_lab = Lab(
        "healthy-2node-direct", directory=tmp_path / "lab", time_scale=100.0, control=False
    )
    await the_lab.start()
    try:
        yield the_lab
    finally:
        await the_lab.stop()


async def _bastion(
    lab: Lab, seen: list[tuple[str, int, str]]
) -> tuple[asyncssh.SSHAcceptor, int, str]:
    key = asyncssh.generate_private_key("ssh-ed25519")
    pub = (lab.directory / "id_ed25519.pub").read_text()
    server = await asyncssh.listen(
        "127.0.0.1",
        0,
        server_host_keys=[key],
        authorized_client_keys=asyncssh.import_authorized_keys(pub),
        server_factory=lambda: _Bastion(seen),
    )
    port = server.sockets[0].getsockname()[1]
    line = f"[127.0.0.1]:{port} {key.export_public_key().decode().strip()}\n"
    return server, port, line


async def test_alias_with_proxyjump_user_port_and_identityfile(lab: Lab, tmp_path: Path) -> None:
    seen: list[tuple[str, int, str]] = []
    server, bport, bastion_key = await _bastion(lab, seen)
    try:
        jump_known = tmp_path / "bastion_known_hosts"
        jump_known.write_text(bastion_key)
        node_port = lab.node_port("spark1")
        config = tmp_path / "config"
        config.write_text(
            f"Host bastion\n  HostName 127.0.0.1\n  Port {bport}\n  User jump\n"
            f"  IdentityFile {lab.key_path}\n  UserKnownHostsFile {jump_known}\n\n"
            f"Host spark1-behind-bastion\n  HostName 127.0.0.1\n  Port {node_port}\n"
            f"  User {lab.user}\n  IdentityFile {lab.key_path}\n  ProxyJump bastion\n"
        )
        # the inventory names only the alias: port, user, key and route come from the config
        ssh = SshTransport(
            [SshTarget(name="spark1", host="spark1-behind-bastion")],
            ssh_config=config,
            known_hosts=lab.known_hosts_path,
        )
        try:
            res = await ssh.run("spark1", "hostname; whoami")
        finally:
            await ssh.close()
        assert res.error is None, res.error
        assert res.stdout == f"spark1\n{lab.user}\n"
        assert seen == [("127.0.0.1", node_port, "jump")]  # it went through the bastion
    finally:
        server.close()


async def test_a_changed_host_key_behind_the_bastion_is_still_refused(
    lab: Lab, tmp_path: Path
) -> None:
    seen: list[tuple[str, int, str]] = []
    server, bport, bastion_key = await _bastion(lab, seen)
    try:
        jump_known = tmp_path / "bastion_known_hosts"
        jump_known.write_text(bastion_key)
        node_port = lab.node_port("spark1")
        wrong = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
        known = tmp_path / "known_hosts"
        known.write_text(f"[127.0.0.1]:{node_port} {wrong}\n")
        config = tmp_path / "config"
        config.write_text(
            f"Host bastion\n  HostName 127.0.0.1\n  Port {bport}\n  User jump\n"
            f"  IdentityFile {lab.key_path}\n  UserKnownHostsFile {jump_known}\n\n"
            f"Host s1\n  HostName 127.0.0.1\n  Port {node_port}\n  User {lab.user}\n"
            f"  IdentityFile {lab.key_path}\n  ProxyJump bastion\n"
        )
        ssh = SshTransport(
            [SshTarget(name="spark1", host="s1")], ssh_config=config, known_hosts=known
        )
        try:
            res = await ssh.run("spark1", "hostname")
        finally:
            await ssh.close()
        assert res.stdout == ""
        assert res.error is not None and "CHANGED" in res.error
    finally:
        server.close()


@pytest.fixture
def agent(tmp_path: Path, lab: Lab) -> Iterator[str]:
    if shutil.which("ssh-agent") is None or shutil.which("ssh-add") is None:
        pytest.skip("ssh-agent is not installed (openssh-client provides it)")
    sock = tmp_path / "agent.sock"
    proc = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if sock.exists():
                break
            time.sleep(0.02)
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
        subprocess.run(["ssh-add", str(lab.key_path)], env=env, check=True, capture_output=True)
        yield str(sock)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=5)


async def test_keys_from_ssh_agent_only(
    lab: Lab, tmp_path: Path, agent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))  # no default key files: only the agent has the key
    config = home / ".ssh" / "config"
    config.write_text(
        f"Host spark2\n  HostName 127.0.0.1\n  Port {lab.node_port('spark2')}\n  User {lab.user}\n"
    )
    monkeypatch.setenv("SSH_AUTH_SOCK", agent)
    ssh = SshTransport(
        [SshTarget(name="spark2", host="spark2")],
        ssh_config=config,
        known_hosts=lab.known_hosts_path,
    )
    try:
        res = await ssh.run("spark2", "hostname")
    finally:
        await ssh.close()
    assert res.error is None, res.error
    assert res.stdout == "spark2\n"
    # without the agent the same login is refused, and the error says what to check
    monkeypatch.delenv("SSH_AUTH_SOCK")
    ssh = SshTransport(
        [SshTarget(name="spark2", host="spark2")],
        ssh_config=config,
        known_hosts=lab.known_hosts_path,
    )
    try:
        res = await ssh.run("spark2", "hostname")
    finally:
        await ssh.close()
    assert res.error is not None and "SSH login refused" in res.error


async def _dropping_front(
    target_port: int, drop_first: int
) -> tuple[asyncio.Server, int, list[str]]:
    """A TCP front on 127.0.0.1 that closes its first `drop_first` connections at once (as sshd
    does past MaxStartups), then relays to the lab node."""
    log: list[str] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len([x for x in log if x == "dropped"]) < drop_first:
            log.append("dropped")
            writer.close()
            return
        log.append("relayed")
        up_r, up_w = await asyncio.open_connection("127.0.0.1", target_port)

        async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            try:
                while data := await r.read(65536):
                    w.write(data)
                    await w.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                w.close()

        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], log


@pytest.mark.parametrize(("drops", "ok"), [(2, True), (9, False)])
async def test_a_connection_dropped_before_the_handshake_is_tried_again(
    lab: Lab, tmp_path: Path, drops: int, ok: bool
) -> None:
    server, port, log = await _dropping_front(lab.node_port("spark1"), drops)
    node_key = next(
        ln.split(" ", 1)[1]
        for ln in lab.known_hosts_path.read_text().splitlines()
        if ln.startswith(f"[127.0.0.1]:{lab.node_port('spark1')} ")
    )
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {node_key}\n")
    ssh = SshTransport(
        [
            SshTarget(
                "spark1", "127.0.0.1", port=port, user=lab.user, identity_file=str(lab.key_path)
            )
        ],
        ssh_config=None,
        known_hosts=known,
    )
    try:
        res = await ssh.run("spark1", "hostname")
    finally:
        await ssh.close()
        server.close()
    if ok:
        assert res.error is None and res.stdout == "spark1\n"
        assert ssh.retried_handshakes == 2 and log[:3] == ["dropped", "dropped", "relayed"]
    else:
        assert res.error is not None and "dropped the SSH handshake" in res.error
        assert "MaxStartups" in res.error and log == ["dropped"] * 4
