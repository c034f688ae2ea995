"""PFC pause frames come from the mechanism (wizard/lab/pause.py): a receiver with PFC on for the
RoCE priority and two flows landing on one rail pauses the senders (a lossy switch counts and
drops the frames), a lossless switch queue that never drains keeps its sender paused, and a
lossy fabric with PFC off sends none. The counters fabwiz reads around every test show it."""

from __future__ import annotations

from typing import Any

import pytest

from wizard import readiness
from wizard.inventory import load_inventory, resolve_password
from wizard.lab import pause
from wizard.lab.lab import Lab
from wizard.lab.scenarios import load
from wizard.model import Measurement
from wizard.sweep import Sweeper
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport
from wizard.transports.ssh import SshTarget, SshTransport


def test_pause_rate_follows_the_quanta_and_the_overload() -> None:
    pause_s = 0xFFFF * 512 / 200e9  # 167.8 us per frame at 200 Gb/s
    assert pause.frames_per_s(0.5) == pytest.approx(0.5 * 2 / pause_s)
    assert round(pause.frames_per_s(1.0)) == 11921
    assert pause.frames_per_s(0.0) == 0.0


async def _tests(name: str, incast: bool) -> tuple[list[Measurement], Any, str]:
    """Two senders into one receiver's first rail at once (or one flow), with counters."""
    # 20x: a 4 s test is 200 ms, room for its counters to be read while its data moves even
    # on a loaded machine
    async with Lab(load(name), time_scale=20.0) as lab:
        inv = load_inventory(lab.inventory_path)
        ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
        sws = {
            s.name: RouterOsTransport(RouterOsTarget.from_spec(s, resolve_password(s)))
            for s in inv.switches
        }
        nodes = [n.name for n in inv.nodes]
        sweeper = Sweeper(ssh=ssh, nodes=nodes, switches=sws)
        sweeper.clock_rate = lab.time_scale
        await sweeper.sweep([readiness.TOOLS_PROBE])
        first = {n: sorted(sweeper.rails[n], key=lambda r: (r.port, r.half))[0] for n in nodes}
        receiver = nodes[-1]
        senders = nodes[:2] if incast else nodes[:1]
        jobs = [
            sweeper._one_rail_test(
                first[s], first[receiver], port=18515 + i, duration_s=4, delay=0.05, timeout=30.0
            )
            for i, s in enumerate(senders)
        ]
        ms = await sweeper.rail_round(jobs)  # at once, their counters read over one window
        switch = lab.world.switches[inv.switches[0].name]
        port = first[receiver].switch_port or ""
        await ssh.close()
        for t in sws.values():
            await t.close()
        return ms, switch, port


@pytest.mark.lab
async def test_incast_on_a_pfc_receiver_sends_pause_frames_a_lossy_switch_drops() -> None:
    ms, switch, port = await _tests("fault-host-pfc-enabled", incast=True)
    for m in ms:
        c = m.extra["counters"]
        assert c["server"]["tx_pause_ctrl_phy"] > 0  # the receiver pauses what it cannot drain
        assert c["client"]["rx_pause_ctrl_phy"] == 0  # the lossy switch never passes them on
        assert m.value > 40.0  # and nothing stalls: host PFC on a lossy fabric is hygiene
    assert switch.counter(port).rx_pause > 0  # the switch port toward the receiver counts them


@pytest.mark.lab
async def test_no_pfc_no_pause_frames() -> None:
    ms, switch, port = await _tests("healthy-4node-crs804", incast=True)
    for m in ms:
        c = m.extra["counters"]
        assert c["server"]["tx_pause_ctrl_phy"] == 0 and c["client"]["rx_pause_ctrl_phy"] == 0
    assert switch.counter(port).rx_pause == 0


@pytest.mark.lab
async def test_a_lossless_switch_queue_keeps_the_sender_paused() -> None:
    ms, _switch, _port = await _tests("fault-switch-qos-pfc-stall", incast=False)
    c = ms[0].extra["counters"]
    assert c["client"]["rx_pause_ctrl_phy"] > 0 and c["client"]["local_ack_timeout_err"] > 0
    assert c["server"]["rx_packets_phy"] == 0  # the receiver sees nothing
