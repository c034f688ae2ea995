"""The scenario fact `ports: {sw/port: {hw-offload: false}}`: offload lost with no modelled cause.

The switch must show it the way RouterOS does: no H flag on the port, the host MACs learned on it
without the hardware flag, a deactivation log line, and the CPU busy while traffic crosses it.
"""

from __future__ import annotations

from typing import Any

from flows.expectations import DEFAULT as EXPECTATIONS
from wizard.lab.physics import FlowSpec
from wizard.lab.routeros.menus import find_menu
from wizard.lab.scenarios import build_world, load_text
from wizard.lab.switchport import CRS804, cpu_forwarding

ONE_PORT = """
name: lost-one
topology: {nodes: 2, switches: [{model: CRS804-4DDQ}], cables_per_node: 1}
facts:
  ports:
    crs804/qsfp56-dd-1-1: {hw-offload: false}
"""


def _rows(sw: Any, *path: str) -> list[dict[str, str]]:
    menu = find_menu(tuple(path))
    assert menu is not None
    return list(menu.rows(sw))


def test_lost_offload_port_has_no_h_flag_and_logs_the_deactivation() -> None:
    world = build_world(load_text(ONE_PORT, path="lost.yaml"))
    sw: Any = world.switches["crs804"]
    ports = {r["interface"]: r for r in _rows(sw, "interface", "bridge", "port")}
    assert ports["qsfp56-dd-1-1"]["hw-offload"] == "false"
    assert ports["qsfp56-dd-1-1"]["hw"] == "true"  # no configuration cause
    assert ports["qsfp56-dd-1-5"]["hw-offload"] == "true"
    log = [r["message"] for r in _rows(sw, "log")]
    assert any(m.startswith('hardware offloading deactivated on bridge "bridge"') for m in log)
    last = [m for m in log if "hardware offloading" in m][-1]
    assert "qsfp56-dd-1-1" not in last


def test_lost_offload_forwards_in_software_and_loads_the_cpu() -> None:
    world = build_world(load_text(ONE_PORT, path="lost.yaml"))
    sw: Any = world.switches["crs804"]
    idle = int(_rows(sw, "system", "resource")[0]["cpu-load"])
    fid = world.traffic.start([FlowSpec("spark1", "enp1s0f0np0", "spark2", "enp1s0f0np0")])
    result = world.traffic.result(fid[0])
    assert result is not None
    assert result.gbps < 10.0
    busy = int(_rows(sw, "system", "resource")[0]["cpu-load"])
    # the flow's share of the CRS804 CPU's forwarding capacity (9.5 of 15.5 Gb/s: ~62 %), well
    # above the expectations' idle ceiling that fabwiz judges "busy" by
    share = round(result.gbps / cpu_forwarding(CRS804).total_gbps * 100)
    assert idle <= 5 and busy == idle + share
    assert busy > EXPECTATIONS.switch_cpu_idle_max_pct
    world.learn_macs()
    hosts = {r["on-interface"]: r for r in _rows(sw, "interface", "bridge", "host")}
    assert hosts["qsfp56-dd-1-1"]["external"] == "false"
    world.traffic.stop(fid)


def test_lost_offload_survives_a_state_round_trip() -> None:
    world = build_world(load_text(ONE_PORT, path="lost.yaml"))
    from wizard.lab.routeros.switch import SwitchState

    sw: Any = world.switches["crs804"]
    again = SwitchState.from_state(sw.to_state(), clock=world.now)
    assert again.offload_lost == {"qsfp56-dd-1-1"}
    assert again.hw_offload("qsfp56-dd-1-1") is False
