"""Security: passwords never land in any artefact, exports kept without sensitive values
unless asked, hostile names from probe output never reach a shell unquoted, the lab listens on
127.0.0.1 only, and SSH host keys are verified (a changed key refused, with how to check it)."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner
from rel_support import assert_nothing_lost, walk

from wizard.lab import Lab
from wizard.lab.faulthooks import FaultHooks
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport

pytestmark = pytest.mark.lab


def _texts(folder: Path, skip: tuple[str, ...] = ()) -> dict[Path, str]:
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not p.name.endswith(skip):
            out[p] = p.read_bytes().decode("utf-8", "replace")
    return out


async def test_no_password_in_any_artefact_of_a_lab_session(tmp_path: Path) -> None:
    from screens.cli import cli

    async with Lab("fault-switch-offload-split-cage", time_scale=100.0) as lab:
        secrets = [lab.ssh_password, *lab.switch_passwords.values()]
        assert all(len(s) >= 12 for s in secrets) and lab.switch_passwords
        # a failed login on the way: its error message must not echo what was tried
        wrong = "WRONG-" + next(iter(lab.switch_passwords.values()))
        bad = RouterOsTransport(
            RouterOsTarget("crs804", "127.0.0.1", lab.user, wrong, port=lab.switch_port("crs804"))
        )
        refused = await bad.print("/system/identity")
        assert refused.error and "login refused" in refused.error
        assert wrong not in refused.error and wrong not in refused.command
        w = await walk(lab, tmp_path, ["preflight", "offload", "persist"], traffic=False)
        assert_nothing_lost(w)
        assert any(e.type == "export_taken" for e in w.events)
        lab_files = _texts(lab.directory, skip=(".password", "id_ed25519"))
        assert lab_files, "the lab wrote its inventory and state"
        for fmt in ("md", "html", "json"):
            out = tmp_path / "session" / f"report.{fmt}"
            res = CliRunner().invoke(
                cli, ["report", str(tmp_path / "session"), "--format", fmt, "-o", str(out)]
            )
            assert res.exit_code == 0, res.output
            assert out.stat().st_size > 200
        artefacts = {**_texts(tmp_path / "session"), **lab_files}
        artefacts[Path("<terminal>")] = w.text + refused.error
        assert len(artefacts) >= 6
        for path, text in artefacts.items():
            for secret in [*secrets, wrong]:
                assert secret not in text, f"a password is written in {path}"


async def test_export_is_taken_without_sensitive_values_unless_asked() -> None:
    from wizard.lab.routeros.server import RouterOsServer
    from wizard.lab.routeros.switch import SwitchState

    srv = RouterOsServer(SwitchState.new("crs804", "CRS804-4DDQ"), users={"fabwiz": "pw-123456"})
    seen: list[dict[str, str]] = []
    dispatch = srv.dispatch

    def record(cmd: str, attrs: dict[str, str], queries: list[str], reply: object) -> bool:
        if cmd == "/export":
            seen.append(dict(attrs))
        return dispatch(cmd, attrs, queries, reply)  # type: ignore[arg-type]

    srv.dispatch = record  # type: ignore[method-assign]
    await srv.start("127.0.0.1", 0)
    try:
        from wizard.fabric import ApiPort
        from wizard.fixes import take_export

        t = RouterOsTransport(
            RouterOsTarget("crs804", "127.0.0.1", "fabwiz", "pw-123456", port=srv.port)
        )
        status = await take_export(ApiPort(t), "crs804", "fabwiz-test")
        assert status.verified and "/interface bridge" in status.contents
        assert seen == [{"file": "fabwiz-test"}], "the default export must not ask show-sensitive"
        asked = await take_export(ApiPort(t), "crs804", "fabwiz-sensitive", show_sensitive=True)
        assert asked.verified
        assert seen[-1] == {"file": "fabwiz-sensitive", "show-sensitive": ""}
        await t.close()
    finally:
        await srv.stop()


HOSTILE = "enp1s0f0np0;touch${IFS}/tmp/fabwiz-pwned$(id)`id`"


def _tokens(command: str) -> list[str]:
    """Shell tokens of a command, descending into `sh -c '...'` scripts."""
    lex = shlex.shlex(command, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    tokens = list(lex)
    out: list[str] = []
    for i, tok in enumerate(tokens):
        out.append(tok)
        if tok == "-c" and i > 0 and tokens[i - 1] in ("sh", "bash", "-lc") and i + 1 < len(tokens):
            out.extend(_tokens(tokens[i + 1]))
    return out


async def _hostile_run(tmp_path: Path) -> tuple[list[str], set[str], str]:
    """A pfc-enabled lab whose spark1 reports a hostile netdev name; every command the nodes
    received, the probe commands among them (ProbeSent), and what the operator saw."""
    async with Lab("fault-host-pfc-enabled", time_scale=100.0) as lab:
        lab.world.nodes["spark1"].rails[0].netdev = HOSTILE  # ibdev2netdev now prints it
        hooks = FaultHooks(lab)
        for node in lab.world.nodes:  # record every command a node receives
            hooks.ssh(node, "slow", delay_s=0.0, times=0)
        w = await walk(lab, tmp_path, ["preflight", "qos"], traffic=False)
        await hooks.stop()
    probes = {e.command for e in w.events if e.type == "probe_sent"}  # type: ignore[attr-defined]
    return [c for _n, _k, c in hooks.fired], probes, w.text


def _assert_quoted(command: str) -> None:
    tokens = _tokens(command)
    # the name stays one whole word: nothing of it runs as a command of its own
    assert any(HOSTILE in t for t in tokens), command
    assert "touch" not in tokens, command
    assert not any(t.startswith("touch$") for t in tokens), command


async def test_hostile_names_from_probe_output_are_quoted_in_probes(tmp_path: Path) -> None:
    sent, probes, text = await _hostile_run(tmp_path)
    # the per-rail probes run in the node's loop over its own ibdev2netdev: the name reaches
    # their commands as a double-quoted variable, never as script text
    assert any('ethtool "$netdev"' in c for c in sent)
    hostile = [c for c in sent if "fabwiz-pwned" in c and not c.startswith("sudo -n mlnx_qos")]
    for command in hostile:  # a later step that names the rail quotes it
        _assert_quoted(command)
    # what the log says ran on that rail names it, quoted
    logged = [p for p in probes if "fabwiz-pwned" in p]
    assert len(logged) >= 2, "the per-rail probes of the hostile rail are not in the log"
    for command in logged:
        _assert_quoted(command)
    assert not Path("/tmp/fabwiz-pwned").exists()
    assert "Traceback" not in text


async def test_hostile_names_from_probe_output_never_reach_a_fix_command_unquoted(
    tmp_path: Path,
) -> None:
    sent, probes, _text = await _hostile_run(tmp_path)
    # The fix did run (PFC off on the other rails), so there are fix commands to check...
    fix_commands = [c for c in sent if "mlnx_qos" in c and "--pfc 0,0,0,0,0,0,0,0" in c]
    assert len(fix_commands) >= 3, sent[-20:]
    # ...and a name the kernel would never give an interface is in none of them, nor in a
    # file the fix wrote (the PFC unit); any other command that carries it (a probe) quotes it.
    assert not [c for c in fix_commands if "fabwiz-pwned" in c]
    for command in sent:
        if "fabwiz-pwned" in command:
            assert command in probes or "tee" not in command, command
            _assert_quoted(command)
    assert not Path("/tmp/fabwiz-pwned").exists()


def _listening_inodes() -> dict[int, str]:
    """inode -> local address:port of every LISTEN TCP socket on this machine."""
    out: dict[int, str] = {}
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] != "0A":  # LISTEN
                continue
            addr, port = f[1].split(":")
            if len(addr) == 8:
                ip = ".".join(str(int(addr[i : i + 2], 16)) for i in (6, 4, 2, 0))
            else:
                ip = "ipv6:" + addr
            out[int(f[9])] = f"{ip}:{int(port, 16)}"
    return out


def _my_socket_inodes() -> set[int]:
    inodes = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = str(fd.readlink())
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


async def test_the_lab_listens_on_127_0_0_1_only() -> None:
    if not Path("/proc/net/tcp").exists():
        pytest.skip("needs /proc/net/tcp (Linux) to list listening sockets")
    before = _my_socket_inodes()
    async with Lab("crs812-six-node", time_scale=100.0) as lab:
        await asyncio.sleep(0)
        listening = _listening_inodes()
        mine = {listening[i] for i in _my_socket_inodes() - before if i in listening}
        ports = {lab.node_port(n) for n in lab.ssh} | {lab.switch_port(s) for s in lab.api}
        if lab.control_address:
            ports.add(int(lab.control_address.rsplit(":", 1)[1]))
        assert len(mine) >= len(ports) >= 8
        assert {int(a.rsplit(":", 1)[1]) for a in mine} >= ports
        assert all(a.startswith("127.0.0.1:") for a in mine), sorted(mine)


async def test_changed_host_key_of_a_lab_node_is_refused_with_how_to_check(tmp_path: Path) -> None:
    async with Lab("healthy-2node-direct", time_scale=100.0) as lab:
        lines = lab.known_hosts_path.read_text().splitlines()
        other = lines[1].split(" ", 1)[1]
        lines[0] = lines[0].split(" ", 1)[0] + " " + other  # spark1 now "has" spark2's key
        lab.known_hosts_path.write_text("\n".join(lines) + "\n")
        w = await walk(lab, tmp_path, ["preflight"], traffic=False)
        assert "spark1 is unreachable" in w.text
        said = " ".join(n.text for n in w.events if n.type == "note")
        assert "CHANGED" in said and "ssh-keygen -lf" in said and "ssh-keygen -R" in said
        assert lab.known_hosts_path.read_text().splitlines()[0].endswith(other)  # not rewritten
        assert_nothing_lost(w)
