"""The lab's node answers what a real DGX OS node answers about its tools, sudo and SSH.

`command -v` (paths, exit 1 when any is missing), the playbook's nccl-tests outside PATH, sudo's
own refusal text, `sudo -n -l`, `ssh -o BatchMode=yes` to a peer, and what mpirun checks before
it starts: Open MPI's option errors, the hostfile, SSH to every host, orted and the program.
"""

from __future__ import annotations

import pytest

from wizard.lab import scenarios
from wizard.lab.hostcmds import Host
from wizard.lab.perftest import Registry
from wizard.lab.world import World

FACTS = """
name: readiness-facts
topology: {nodes: 3, switches: [{model: CRS804-4DDQ}], cables_per_node: 1}
facts:
  nodes:
    spark2: {missing_tools: [perftest, all_reduce_perf], sudo: password}
    spark3: {peer_ssh: host-key, missing_tools: [openmpi-bin]}
"""


async def _run(w: World, node: str, script: str) -> tuple[str, str, int]:
    out: list[str] = []
    err: list[str] = []
    rc = await Host(w, w.nodes[node], Registry()).run(script, out.append, err.append)
    return "".join(out), "".join(err), rc


@pytest.fixture
def world() -> World:
    return scenarios.build_world(scenarios.load_text(FACTS, path="facts.yaml"), time_scale=500)


async def test_command_v_and_the_playbook_layout(world: World) -> None:
    out, _e, rc = await _run(world, "spark1", "command -v ib_write_bw mpirun all_reduce_perf")
    assert (out, rc) == ("/usr/bin/ib_write_bw\n/usr/bin/mpirun\n", 1)  # nccl-tests: not on PATH
    out, _e, rc = await _run(world, "spark1", "ls -1d $HOME/nccl-tests/build/all_reduce_perf")
    assert (out, rc) == ("/home/fabwiz/nccl-tests/build/all_reduce_perf\n", 0)
    out, err, rc = await _run(world, "spark2", "ib_write_bw -d rocep1s0f0")
    assert (out, err, rc) == ("", "bash: ib_write_bw: command not found\n", 127)
    out, err, rc = await _run(
        world,
        "spark2",
        "ls -1d $HOME/nccl-tests/build/sendrecv_perf $HOME/nccl-tests/build/all_reduce_perf",
    )
    assert out == "/home/fabwiz/nccl-tests/build/sendrecv_perf\n" and rc == 2
    assert "cannot access '/home/fabwiz/nccl-tests/build/all_reduce_perf'" in err


async def test_sudo_refuses_in_its_own_words(world: World) -> None:
    assert await _run(world, "spark2", "sudo -n dmesg") == ("", "sudo: a password is required\n", 1)
    assert await _run(world, "spark2", "sudo -n -l mlnx_qos -i x") == (
        "",
        "sudo: a password is required\n",
        1,
    )
    out, _e, rc = await _run(world, "spark1", "sudo -n -l mlnx_qos -i enp1s0f0np0")
    assert (out, rc) == ("/usr/bin/mlnx_qos -i enp1s0f0np0\n", 0)


async def test_ssh_to_a_peer_as_mpirun_does(world: World) -> None:
    out, err, rc = await _run(world, "spark1", "ssh -o BatchMode=yes 192.168.1.102 hostname")
    assert (out, err, rc) == ("spark2\n", "", 0)
    out, err, rc = await _run(world, "spark1", "ssh -o BatchMode=yes 192.168.1.103 true")
    assert (err, rc) == ("Host key verification failed.\n", 255)
    out, err, rc = await _run(world, "spark1", "ssh -o BatchMode=yes nosuch true")
    assert rc == 255 and "Could not resolve hostname nosuch" in err


async def test_mpirun_checks_what_open_mpi_checks(world: World) -> None:
    _o, err, rc = await _run(world, "spark1", "mpirun --bogus -np 2 x")
    assert rc == 1 and err.startswith('mpirun: Error: unknown option "--bogus"')
    _o, err, rc = await _run(world, "spark1", "mpirun --hostfile hf -np 2 x")
    assert rc == 1 and "Open RTE was unable to open the hostfile:\n    hf\n" in err
    prog = "/home/fabwiz/nccl-tests/build/all_reduce_perf -b 1G -e 1G"
    hf = "printf '%s\\n' '192.168.1.101 slots=1' '192.168.1.102 slots=1' > hf && "
    _o, err, rc = await _run(world, "spark1", hf + f"mpirun --hostfile hf -np 2 {prog}")
    # Open MPI 4.1's exit statuses (checked with the real mpirun): 132 for a program it cannot
    # execute, 255 when a daemon does not start
    assert (
        rc == 132 and "could not access\nor execute an executable" in err and "Node: spark2" in err
    )
    hf3 = "printf '%s\\n' '192.168.1.101 slots=1' '192.168.1.103 slots=1' > hf && "
    _o, err, rc = await _run(world, "spark1", hf3 + f"mpirun --hostfile hf -np 2 {prog}")
    assert rc == 255 and err.startswith("Host key verification failed.\n")
    assert "ORTE was unable to reliably start one or more daemons" in err


async def test_a_login_to_a_peer_takes_its_time_and_a_peer_that_is_down_its_arp_timeout() -> None:
    """An SSH login costs its exchanges (LOGIN_SECONDS of lab time); a powered-off peer answers
    no ARP: "No route to host" once the kernel gives up (3 s), or "Connection timed out" at a
    shorter ConnectTimeout."""
    from wizard.lab.nodecmds import ARP_GIVE_UP_SECONDS, LOGIN_SECONDS

    # a slow clock (20x), so that the interpreter's own time is a small part of a lab second
    world = scenarios.build_world(scenarios.load_text(FACTS, path="facts.yaml"), time_scale=20)

    t0 = world.now()
    _o, _e, rc = await _run(world, "spark1", "ssh -o BatchMode=yes 192.168.1.102 true")
    took = world.now() - t0
    assert rc == 0 and LOGIN_SECONDS <= took < LOGIN_SECONDS + 0.5
    world.nodes["spark2"].powered = False
    t0 = world.now()
    _o, err, rc = await _run(
        world, "spark1", "ssh -o BatchMode=yes -o ConnectTimeout=5 192.168.1.102 true"
    )
    took = world.now() - t0
    assert (err, rc) == ("ssh: connect to host 192.168.1.102 port 22: No route to host\n", 255)
    assert ARP_GIVE_UP_SECONDS <= took < ARP_GIVE_UP_SECONDS + 0.5
    t0 = world.now()
    _o, err, rc = await _run(
        world, "spark1", "ssh -oConnectTimeout=1 -o BatchMode=yes 192.168.1.102 true"
    )
    took = world.now() - t0
    assert (err, rc) == ("ssh: connect to host 192.168.1.102 port 22: Connection timed out\n", 255)
    assert 1.0 <= took < 1.5
