"""The lab's hands over a control channel, `fabwiz lab hands`, and `--state FILE`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from screens.commands.lab import lab as lab_cmd
from wizard.errors import FabwizError
from wizard.lab import Lab
from wizard.lab.control import RemoteHands, call
from wizard.lab.world import End
from wizard.model import PhysicalAction

ROOT = Path(__file__).resolve().parents[2]


def _link(lab: Lab) -> tuple[str, str]:
    inv = yaml.safe_load(lab.inventory_path.read_text())
    token = (lab.inventory_path.parent / inv["lab"]["token_file"]).read_text().strip()
    return inv["lab"]["control"], token


async def test_control_channel_performs_hands_and_checks_the_token() -> None:
    async with Lab("fault-host-cx7-degraded", time_scale=100) as lab:
        address, token = _link(lab)
        assert address.startswith("127.0.0.1:")
        assert (lab.directory / "control.token").stat().st_mode & 0o077 == 0
        status = await call(address, token, "status")
        assert status["nodes"]["spark2"]["degraded"] is True
        boot = status["nodes"]["spark2"]["boot_id"]
        done = await call(address, token, "drain", "spark2")
        assert done[0].startswith("spark2 AC-drained")
        assert not lab.world.nodes["spark2"].degraded
        assert lab.world.nodes["spark2"].boot_id != boot
        with pytest.raises(FabwizError, match="bad token"):
            await call(address, "wrong", "status")
        with pytest.raises(FabwizError, match="unknown action"):
            await call(address, token, "fly")
        # the engine's Hands port, remote flavour
        hands = RemoteHands(address, token)
        text = await hands.perform(
            PhysicalAction(
                kind="recable",
                nodes=("spark1",),
                instructions="direct cable",
                cables=(("spark1", "port0", "node:spark2:port0"),),
            )
        )
        assert text == "cabled spark1:port0 -> spark2:port0"
        # fault hooks for the reliability tests
        await call(address, token, "inject", "host.mtu", "spark3")
        assert lab.world.nodes["spark3"].rails[0].mtu == 1500


async def test_state_file_survives_a_kill_and_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "world.json"
    folder = tmp_path / "lab"
    async with Lab("fault-host-cx7-degraded", directory=folder, state_file=state) as lab:
        lab.hands.ac_drain("spark2")
        host = lab.hosts["spark1"]
        await host.run(
            "sudo -n tee /etc/nccl.conf",
            lambda s: None,
            lambda s: None,
            stdin="NCCL_IB_HCA==rocep1s0f0\n",
        )
        lab.hands.recable("spark4", 1, "unplugged")
        lab.hands.recable("spark3", 0, "node:spark4:port0")  # a direct-connect test
        boot2 = lab.world.nodes["spark2"].boot_id
        ports = {n: lab.node_port(n) for n in lab.world.nodes}
        # as if killed now: the file already holds every change
        saved = json.loads(state.read_text())
        by = {n["name"]: n for n in saved["nodes"]}
        assert by["spark2"]["boot_id"] == boot2 and by["spark2"]["degraded"] is False
        assert by["spark1"]["files"]["/etc/nccl.conf"] == "NCCL_IB_HCA==rocep1s0f0\n"
    async with Lab("healthy-2node-direct", directory=folder, state_file=state) as again:
        assert again.resumed and again.scenario.name == "fault-host-cx7-degraded"
        w = again.world
        assert len(w.nodes) == 4
        assert w.nodes["spark2"].boot_id == boot2 and not w.nodes["spark2"].degraded
        assert w.nodes["spark2"].susceptible
        assert w.nodes["spark1"].files["/etc/nccl.conf"] == "NCCL_IB_HCA==rocep1s0f0\n"
        assert not w.port_link("spark4", 1) and w.port_link("spark4", 0)
        assert {n: again.node_port(n) for n in w.nodes} == ports  # same ports when free
        # the inventory keeps the planned cabling while the direct-connect cable is in place
        inv = yaml.safe_load(again.inventory_path.read_text())
        assert inv["cabling"]["spark3/enp1s0f0np0"] == "crs804/qsfp56-dd-3-1"
        assert w.peer(End("node", "spark3", "port0")) == End("node", "spark4", "port0")
        out: list[str] = []
        await again.hosts["spark2"].run(
            "cat /proc/sys/kernel/random/boot_id", out.append, out.append
        )
        assert out == [boot2 + "\n"]


async def test_switch_config_survives_restart(tmp_path: Path) -> None:
    pytest.importorskip("wizard.lab.routeros.switch")
    state = tmp_path / "world.json"
    async with Lab(
        "fault-switch-offload-split-cage", directory=tmp_path / "l", state_file=state
    ) as lab:
        from wizard.lab.physics import FlowSpec, flow

        before = flow(lab.world, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0")).gbps
        assert before < 10
    async with Lab("healthy-4node-crs804", directory=tmp_path / "l", state_file=state) as again:
        from wizard.lab.physics import FlowSpec, flow

        after = flow(again.world, FlowSpec("spark1", "rocep1s0f0", "spark2", "rocep1s0f0")).gbps
        assert after < 10  # the split cage is still there: the switch config came back


def test_lab_scenarios_lists_one_line_each() -> None:
    result = CliRunner().invoke(lab_cmd, ["scenarios"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    names = [line.split()[0] for line in lines]
    assert "crs804-three-bugs" in names and "healthy-2node-direct" in names
    assert all(len(line.split(None, 1)) == 2 for line in lines)


def test_fabwiz_lab_foreground_hands_from_another_terminal_and_clean_stop(tmp_path: Path) -> None:
    inv = tmp_path / "lab" / "inventory.yaml"
    state = tmp_path / "state.json"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    fabwiz = [sys.executable, "-m", "screens.cli"]
    proc = subprocess.Popen(
        [
            *fabwiz,
            "lab",
            "--scenario",
            "fault-host-cx7-degraded",
            "--inventory-out",
            str(inv),
            "--time-scale",
            "100",
            "--state",
            str(state),
        ],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while not (inv.exists() and "lab" in (yaml.safe_load(inv.read_text()) or {})):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.05)
        r = subprocess.run(
            [*fabwiz, "lab", "hands", "-i", str(inv), "--json", "drain", "spark2"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)[0].startswith("spark2 AC-drained")
        r = subprocess.run(
            [*fabwiz, "lab", "hands", "-i", str(inv), "teleport"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert r.returncode == 1 and "unknown action" in r.stderr
        # the instructor's prompt on the lab's own stdin
        assert proc.stdin is not None
        proc.stdin.write("reboot spark1\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            saved = json.loads(state.read_text())
            if any(n["name"] == "spark1" and n["uptime"] < 1000 for n in saved["nodes"]):
                break
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "fabwiz lab: stopped" in out
    assert "spark1 rebooted" in out
    saved = {n["name"]: n for n in json.loads(state.read_text())["nodes"]}
    assert saved["spark2"]["degraded"] is False
