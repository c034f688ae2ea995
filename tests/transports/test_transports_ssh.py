"""SshTransport against an in-process asyncssh server on 127.0.0.1, port 0."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import asyncssh
import pytest

from wizard.transports.ssh import SshTarget, SshTransport


@dataclass
class Server:
    port: int
    host_key: asyncssh.SSHKey
    client_key_path: Path
    tmp: Path
    commands: list[str]

    def known_hosts(self, key: asyncssh.SSHKey | None = None) -> Path:
        k = key or self.host_key
        p = self.tmp / f"known_hosts_{id(k)}"
        p.write_text(f"[127.0.0.1]:{self.port} {k.export_public_key().decode()}")
        return p

    def target(self, name: str = "spark1", **kw: object) -> SshTarget:
        args: dict[str, object] = {
            "host": "127.0.0.1",
            "port": self.port,
            "user": "fabwiz",
            "identity_file": str(self.client_key_path),
            "known_hosts": str(self.known_hosts()),
        }
        args.update(kw)
        return SshTarget(name=name, **args)  # type: ignore[arg-type]


async def _process(commands: list[str], process: asyncssh.SSHServerProcess[str]) -> None:
    cmd = process.command or ""
    commands.append(cmd)
    if cmd.startswith("sudo -n"):
        process.stderr.write("sudo: a password is required\n")
        process.exit(1)
    elif cmd == "sleep":
        await asyncio.sleep(30)
        process.exit(0)
    elif cmd.startswith("big "):  # `big MB`: MB megabytes of output, written in 1 MiB pieces
        line = ("x" * 1023 + "\n") * 1024
        for _ in range(int(cmd.split()[1])):
            process.stdout.write(line)
            await process.stdout.drain()
        process.stderr.write("done\n")
        process.exit(0)
    elif cmd == "cat":
        data = await process.stdin.read()
        process.stdout.write(data.upper())
        process.exit(0)
    elif cmd == "both":  # both streams, interleaved, in several packets each
        for i in range(3):
            process.stdout.write(f"out {i} é\n")
            process.stderr.write(f"err {i}\n")
            await process.stdout.drain()
        process.exit(0)
    elif cmd == "killed":
        process.stdout.write("half")
        process.exit_with_signal("KILL")
    elif cmd == "vanish":  # the channel closes with no exit status
        process.stdout.write("partial\n")
        await process.stdout.drain()
        process.channel.close()
    elif cmd == "drop":  # the whole connection goes away mid-command
        process.stdout.write("partial\n")
        await process.stdout.drain()
        process.channel.get_connection().abort()
    else:
        process.stdout.write(f"ran: {cmd}\n")
        process.exit(3 if "fail" in cmd else 0)


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key_path = tmp_path / "id_ed25519"
    client_key.write_private_key(str(client_key_path))
    commands: list[str] = []
    acceptor = await asyncssh.listen(
        "127.0.0.1",
        0,
        server_host_keys=[host_key],
        authorized_client_keys=asyncssh.import_authorized_keys(
            client_key.export_public_key().decode()
        ),
        process_factory=lambda p: _process(commands, p),
    )
    yield Server(acceptor.get_port(), host_key, client_key_path, tmp_path, commands)
    acceptor.close()
    await acceptor.wait_closed()


async def test_one_connection_reused_by_every_probe(server: Server) -> None:
    async with SshTransport([server.target()], ssh_config=None) as t:
        results = await asyncio.gather(*(t.run("spark1", f"echo {i}") for i in range(6)))
        assert [r.stdout for r in results] == [f"ran: echo {i}\n" for i in range(6)]
        assert all(r.ok and r.exit_status == 0 and r.target == "spark1" for r in results)
        failed = await t.run("spark1", "fail now")
        assert (failed.exit_status, failed.error, failed.ok) == (3, None, False)
        piped = await t.run("spark1", "cat", stdin="netplan\n")
        assert piped.stdout == "NETPLAN\n"
        assert t.handshakes == 1


async def test_streams_signals_and_a_vanished_channel(server: Server) -> None:
    async with SshTransport([server.target()], ssh_config=None) as t:
        both = await t.run("spark1", "both")
        killed = await t.run("spark1", "killed")
        vanished = await t.run("spark1", "vanish")
        after = await t.run("spark1", "echo again")
    assert both.stdout == "out 0 é\nout 1 é\nout 2 é\n"
    assert both.stderr == "err 0\nerr 1\nerr 2\n"
    assert (both.exit_status, both.error) == (0, None)
    assert (killed.stdout, killed.exit_status, killed.ok) == ("half", -1, False)  # a signal
    assert vanished.stdout == "partial\n" and vanished.exit_status is None
    assert vanished.error is not None and "ended without an exit status" in vanished.error
    assert after.ok and after.stdout == "ran: echo again\n"  # a new connection


async def test_a_connection_lost_mid_command_is_named_and_reconnected(server: Server) -> None:
    async with SshTransport([server.target()], ssh_config=None) as t:
        lost = await t.run("spark1", "drop")
        after = await t.run("spark1", "echo again")
        assert t.handshakes == 2
    assert lost.exit_status is None and lost.error is not None
    assert lost.error.startswith("spark1: the SSH connection broke during `drop`")
    assert after.ok and after.stdout == "ran: echo again\n"


async def test_unknown_host_key_is_refused_by_default(server: Server, tmp_path: Path) -> None:
    empty = tmp_path / "empty_known_hosts"
    async with SshTransport([server.target(known_hosts=str(empty))], ssh_config=None) as t:
        r = await t.run("spark1", "echo x")
    assert r.error is not None and r.exit_status is None
    assert r.error.startswith("spark1: the host key of [127.0.0.1]:")
    assert "--accept-new-host-keys" in r.error
    assert server.host_key.get_fingerprint("sha256") in r.error
    assert server.commands == []
    assert not empty.exists()


async def test_accept_new_host_keys_records_them(server: Server, tmp_path: Path) -> None:
    kh = tmp_path / "kh"
    target = server.target(known_hosts=str(kh))
    async with SshTransport([target], ssh_config=None, accept_new_host_keys=True) as t:
        r = await t.run("spark1", "echo x")
        assert r.ok
        assert t.accepted_host_keys == [
            ("spark1", f"[127.0.0.1]:{server.port}", server.host_key.get_fingerprint("sha256"))
        ]
    line = kh.read_text()
    assert line.startswith(f"[127.0.0.1]:{server.port} ssh-ed25519 AAAA")
    async with SshTransport([target], ssh_config=None) as t2:  # now known: no flag needed
        assert (await t2.run("spark1", "echo y")).ok


async def test_changed_host_key_is_refused_even_with_accept_new(server: Server) -> None:
    other = asyncssh.generate_private_key("ssh-ed25519")
    target = server.target(known_hosts=str(server.known_hosts(other)))
    async with SshTransport([target], ssh_config=None, accept_new_host_keys=True) as t:
        r = await t.run("spark1", "echo x")
    assert r.error is not None
    assert "CHANGED" in r.error and "ssh-keygen -R" in r.error
    assert t.accepted_host_keys == []


async def test_sudo_password_required_is_a_clear_message(server: Server) -> None:
    async with SshTransport([server.target()], ssh_config=None) as t:
        r = await t.run("spark1", "sudo -n mlnx_qos -i enp1s0f0np0")
    assert r.exit_status == 1
    assert r.error is not None
    assert r.error.startswith("spark1: sudo needs a password to run mlnx_qos")
    assert "NOPASSWD: /usr/bin/mlnx_qos" in r.error


async def test_command_timeout(server: Server) -> None:
    async with SshTransport([server.target()], ssh_config=None, command_timeout=0.3) as t:
        r = await t.run("spark1", "sleep")
        assert (
            r.error
            == "spark1: `sleep` gave no answer within 0.3 s; the node may be overloaded or the command hung"
        )
        assert 0.25 < r.duration_s < 2


async def test_refused_and_wrong_key_name_the_target(server: Server, tmp_path: Path) -> None:
    wrong = asyncssh.generate_private_key("ssh-ed25519")
    wrong_path = tmp_path / "wrong"
    wrong.write_private_key(str(wrong_path))
    # a port nobody listens on: bind one and close it
    probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    dead_port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    targets = [
        server.target("dead", port=dead_port),
        server.target("badkey", identity_file=str(wrong_path)),
        server.target("good"),
    ]
    async with SshTransport(targets, ssh_config=None, connect_timeout=3) as t:
        dead, bad, good = await asyncio.gather(
            t.run("dead", "echo"), t.run("badkey", "echo"), t.run("good", "echo")
        )
    assert dead.error is not None and dead.error.startswith(
        f"dead: cannot reach 127.0.0.1:{dead_port}"
    )
    assert bad.error is not None
    assert bad.error.startswith("badkey: SSH login refused for user fabwiz")
    assert "authorized_keys" in bad.error
    assert good.ok


async def test_a_missing_identity_file_is_named(server: Server, tmp_path: Path) -> None:
    missing = tmp_path / "keys" / "id_fabric"
    async with SshTransport(
        [server.target("spark9", identity_file=str(missing))], ssh_config=None
    ) as t:
        res = await t.run("spark9", "echo")
    assert res.error == (
        f"spark9: the identity file {missing} does not exist: fix identity_file in the "
        "inventory (or leave it out to use your SSH agent)"
    )


async def test_ssh_config_alias_is_honoured(server: Server, tmp_path: Path) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        f"Host rack-spark7\n  HostName 127.0.0.1\n  Port {server.port}\n  User fabwiz\n"
        f"  IdentityFile {server.client_key_path}\n"
    )
    target = SshTarget(name="spark7", host="rack-spark7", known_hosts=str(server.known_hosts()))
    async with SshTransport([target], ssh_config=cfg) as t:
        r = await t.run("spark7", "hostname")
    assert r.ok, r.error
    assert r.stdout == "ran: hostname\n"


async def test_handshakes_are_bounded(server: Server) -> None:
    targets = [server.target(f"n{i}") for i in range(10)]
    async with SshTransport(targets, ssh_config=None, max_handshakes=3) as t:
        results = await asyncio.gather(*(t.run(f"n{i}", "echo") for i in range(10)))
        assert all(r.ok for r in results)
        assert t.handshakes == 10
        assert 1 <= t.max_concurrent_handshakes <= 3


async def test_unknown_target() -> None:
    async with SshTransport([], ssh_config=None) as t:
        r = await t.run("ghost", "echo")
    assert r.error == "ghost: not in the inventory"


async def test_a_100_mb_probe_output_is_capped_with_a_mark(server: Server) -> None:
    async with SshTransport([server.target()], ssh_config=None) as t:
        assert t.output_cap == 4 * 1024 * 1024  # the default
        r = await t.run("spark1", "big 100", timeout=120)
    assert r.exit_status == 0 and r.error is None  # drained to the end: the real exit status
    assert r.stderr == "done\n"
    body, _, tail = r.stdout.partition("\n[fabwiz: output truncated: ")
    assert len(body.encode()) == 4 * 1024 * 1024
    assert tail.startswith(f"{100 * 1024 * 1024} bytes, only the first {4 * 1024 * 1024} kept")


async def test_the_cap_is_configurable(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FABWIZ_PROBE_OUTPUT_MB", "1")
    async with SshTransport([server.target()], ssh_config=None) as t:
        small = await t.run("spark1", "echo small")
        r = await t.run("spark1", "big 3")
    assert small.stdout == "ran: echo small\n"
    assert r.stdout.count("x") == 1024 * 1024 - 1024  # 1 MiB kept, less its newlines
    assert "output truncated: 3145728 bytes" in r.stdout
