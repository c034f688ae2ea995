"""End to end: a Lab on 127.0.0.1, real SSH (asyncssh and OpenSSH), real RouterOS API."""

from __future__ import annotations

import asyncio
import shutil
import stat
from typing import Any

import asyncssh
import pytest
import yaml

from wizard.lab import Lab, scenarios
from wizard.lab.clock import ManualClock
from wizard.lab.lab import REBOOT_SECONDS

pytestmark = pytest.mark.lab


def _connect(lab: Lab, node: str) -> Any:
    """An asyncssh connection to `node` as the lab's inventory describes it (use with async with)."""
    return asyncssh.connect(
        "127.0.0.1",
        lab.node_port(node),
        username="fabwiz",
        client_keys=[str(lab.key_path)],
        known_hosts=str(lab.known_hosts_path),
    )


async def test_lab_writes_inventory_key_known_hosts_and_password_files() -> None:
    async with Lab("healthy-4node-crs804", time_scale=100) as lab:
        inv = yaml.safe_load(lab.inventory_path.read_text())
        assert [n["name"] for n in inv["nodes"]] == ["spark1", "spark2", "spark3", "spark4"]
        assert all(n["host"] == "127.0.0.1" and n["port"] > 0 for n in inv["nodes"])
        assert inv["nodes"][0]["identity_file"] == "id_ed25519"
        assert inv["cabling"]["spark2/enP2p1s0f1np1"] == "crs804/qsfp56-dd-2-5"
        assert stat.S_IMODE(lab.key_path.stat().st_mode) == 0o600
        known = lab.known_hosts_path.read_text().splitlines()
        assert len(known) == 4 and all(k.startswith("[127.0.0.1]:") for k in known)
        if inv["switches"]:
            sw = inv["switches"][0]
            pw_file = lab.directory / sw["password"]["file"]
            assert stat.S_IMODE(pw_file.stat().st_mode) == 0o600
            assert sw["host"] == "127.0.0.1" and sw["model"] == "CRS804-4DDQ"
    assert not lab.ssh  # stopped


async def test_asyncssh_client_runs_commands_and_stdin() -> None:
    async with Lab("healthy-2node-direct", time_scale=100) as lab:
        async with _connect(lab, "spark1") as conn:
            r = await conn.run("ibdev2netdev; echo rc=$?")
            assert r.exit_status == 0
            assert r.stdout == (
                "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\n"
                "rocep1s0f1 port 1 ==> enp1s0f1np1 (Down)\n"
                "roceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Up)\n"
                "roceP2p1s0f1 port 1 ==> enP2p1s0f1np1 (Down)\n"
                "rc=0\n"
            )
            r = await conn.run("sudo -n tee /etc/nccl.conf", input="NCCL_DEBUG=WARN\n")
            assert r.exit_status == 0
            assert lab.world.nodes["spark1"].files["/etc/nccl.conf"] == "NCCL_DEBUG=WARN\n"
            r = await conn.run("nosuchtool")
            assert r.exit_status == 127 and r.stderr == "bash: nosuchtool: command not found\n"
        # password auth works too
        async with asyncssh.connect(
            "127.0.0.1",
            lab.node_port("spark2"),
            username="fabwiz",
            password=lab.ssh_password,
            client_keys=None,
            known_hosts=str(lab.known_hosts_path),
        ) as conn:
            r = await conn.run("hostname")
            assert r.stdout == "spark2\n"


async def test_perftest_pair_over_ssh_and_counters_move() -> None:
    async with Lab("healthy-2node-direct", time_scale=50) as lab:
        opts = {
            "username": "fabwiz",
            "client_keys": [str(lab.key_path)],
            "known_hosts": str(lab.known_hosts_path),
        }
        async with (
            asyncssh.connect("127.0.0.1", lab.node_port("spark1"), **opts) as c1,
            asyncssh.connect("127.0.0.1", lab.node_port("spark2"), **opts) as c2,
        ):
            cnt = "cat /sys/class/infiniband/roceP2p1s0f0/ports/1/counters/port_xmit_data"
            before = int((await c1.run(cnt)).stdout)
            # on a pipe perftest's C library keeps its stdout until the run ends: nothing comes
            # while it waits for its client...
            quiet = await c2.create_process(
                "ib_write_bw -d roceP2p1s0f0 -x 3 -q 1 -D 5 -F --report_gbits -p 18600"
            )
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(quiet.stdout.readline(), 0.3)
            quiet.close()
            # ...`stdbuf -oL` has it say it listens as it prints the line
            server = await c2.create_process(
                "stdbuf -oL ib_write_bw -d roceP2p1s0f0 -x 3 -q 1 -D 5 -F --report_gbits"
            )
            banner = ""
            while "Waiting for client to connect" not in banner:  # it listens: start the client
                banner += await asyncio.wait_for(server.stdout.readline(), 10)
            r = await c1.run(
                "ib_write_bw -d roceP2p1s0f0 -x 3 -q 1 -D 5 -F --report_gbits 10.9.2.2"
            )
            s = await server.wait()
            assert r.exit_status == 0 and s.exit_status == 0, r.stderr
            assert " #bytes" in str(s.stdout)  # the server's own results follow
            line = next(x for x in str(r.stdout).splitlines() if x.startswith(" 65536"))
            assert float(line.split()[3]) == pytest.approx(111.86, rel=0.01)
            after = int((await c1.run(cnt)).stdout)
            moved_gbit = (after - before) * 4 * 8 / 1e9
            # 5 simulated seconds at ~112 Gb/s of payload (a loaded test machine may stretch the
            # run a little in simulated time, never shorten it)
            assert 0.9 * 111.86 * 5 < moved_gbit < 2.0 * 111.86 * 5


@pytest.mark.skipif(shutil.which("ssh") is None, reason="OpenSSH client not installed")
async def test_openssh_client_logs_in_with_the_written_files() -> None:
    async with Lab("healthy-2node-direct", time_scale=100) as lab:
        proc = await asyncio.create_subprocess_exec(
            "ssh",
            "-i",
            str(lab.key_path),
            "-o",
            f"UserKnownHostsFile={lab.known_hosts_path}",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-F",
            "/dev/null",
            "-p",
            str(lab.node_port("spark2")),
            "fabwiz@127.0.0.1",
            "cat /proc/sys/kernel/random/boot_id",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 20)
        assert proc.returncode == 0, err.decode()
        assert out.decode().strip() == lab.world.nodes["spark2"].boot_id


async def test_reboot_command_drops_the_session_and_node_returns() -> None:
    clock = ManualClock()
    scenario = scenarios.load("healthy-2node-direct")
    world = scenarios.build_world(scenario, clock=clock)
    async with Lab(scenario, world=world) as lab:
        opts = {
            "username": "fabwiz",
            "client_keys": [str(lab.key_path)],
            "known_hosts": str(lab.known_hosts_path),
        }
        node = lab.world.nodes["spark1"]
        boot0 = node.boot_id
        powered: list[bool] = []
        off = asyncio.Event()

        def seen(name: str, on: bool) -> None:
            powered.append(on)
            if name == "spark1" and not on:
                off.set()

        lab.hands.power_listeners.append(seen)
        async with asyncssh.connect("127.0.0.1", lab.node_port("spark1"), **opts) as c:
            r = await c.run("sudo -n reboot")
            assert r.exit_status == 0
        await asyncio.wait_for(off.wait(), 10)
        await clock.advance(REBOOT_SECONDS - 1)
        assert not node.powered  # a reboot takes its time in lab time, not in real time
        await clock.advance(1)
        assert node.powered and node.boot_id != boot0 and powered == [False, True]
        async with asyncssh.connect("127.0.0.1", lab.node_port("spark1"), **opts) as c:
            r = await c.run("cat /proc/sys/kernel/random/boot_id")
            assert r.stdout.strip() != boot0


async def test_routeros_api_answers_with_the_written_password() -> None:
    pytest.importorskip("wizard.lab.routeros.server")
    librouteros = pytest.importorskip("librouteros")
    async with Lab("healthy-4node-crs804", time_scale=100) as lab:
        inv = yaml.safe_load(lab.inventory_path.read_text())
        sw = inv["switches"][0]
        password = (lab.directory / sw["password"]["file"]).read_text().strip()

        def query() -> list[dict[str, object]]:
            api = librouteros.connect(
                host="127.0.0.1", username=sw["user"], password=password, port=sw["port"]
            )
            try:
                return list(api.path("/system/identity").select("name"))
            finally:
                api.close()

        rows = await asyncio.to_thread(query)
        assert rows == [{"name": "crs804"}]


async def test_interactive_shell_and_dead_session_kills_its_server() -> None:
    async with Lab("healthy-2node-direct", time_scale=100) as lab:
        opts = {
            "username": "fabwiz",
            "client_keys": [str(lab.key_path)],
            "known_hosts": str(lab.known_hosts_path),
        }
        async with asyncssh.connect("127.0.0.1", lab.node_port("spark1"), **opts) as conn:
            proc = await conn.create_process()
            proc.stdin.write("hostname\nexit\n")
            out = await asyncio.wait_for(proc.stdout.read(), 10)
            assert "spark1\n" in out and "fabwiz@spark1:~$ " in out
            # a perftest server whose session goes away stops listening (SIGHUP)
            server = await conn.create_process(
                "stdbuf -oL ib_write_bw -d rocep1s0f0 -x 3 -D 5 --report_gbits"
            )
            await asyncio.wait_for(server.stdout.readline(), 10)
            assert ("spark1", 18515) in lab.perf.servers
            server.close()
            for _ in range(100):
                if ("spark1", 18515) not in lab.perf.servers:
                    break
                await asyncio.sleep(0.01)
            assert ("spark1", 18515) not in lab.perf.servers


async def test_a_connection_holds_max_sessions_channels_and_the_next_is_refused() -> None:
    """sshd's MaxSessions (10): the eleventh session channel of one connection is refused at
    its open, the connection and its ten sessions carry on, and a session freed makes room."""
    async with Lab("healthy-2node-direct", time_scale=100) as lab:
        async with _connect(lab, "spark1") as conn:
            held = [await conn.create_process("cat -") for _ in range(10)]  # each waits on stdin
            with pytest.raises(asyncssh.ChannelOpenError) as refused:
                await conn.create_process("true")
            assert refused.value.code == asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED
            assert refused.value.reason == "open failed"
            held[0].stdin.write("one\n")
            held[0].stdin.write_eof()
            assert (await held[0].wait()).stdout == "one\n"
            await asyncio.sleep(0.05)  # the server has seen the channel close
            assert (await conn.run("echo room")).stdout == "room\n"
            for p in held[1:]:
                p.stdin.write_eof()
                await p.wait()
        server = lab.ssh["spark1"]
        assert server.peak_sessions == 10 and server.refused_sessions == 1
