"""Links as the hardware brings them up: a forced leg takes its time, an l2mtu change resets the
chip, the API session rides the management port. The lab clock is advanced, never slept on."""

from __future__ import annotations

import asyncio

import pytest

from wizard.lab import Lab
from wizard.lab.routeros.menus import EthernetMenu
from wizard.lab.scenarios import build_world, load_text

pytestmark = pytest.mark.lab

TEXT = """
name: links
topology: {nodes: 2, switches: [{model: CRS804-4DDQ}], cables_per_node: 1}
faults: [{id: switch.breakout-autoneg}]
facts: {switches: {crs804: {link_up_delay_s: 8}}}
"""


def test_a_forced_leg_comes_up_after_the_delay_on_the_lab_clock() -> None:
    w = build_world(load_text(TEXT, path="links.yaml"))
    sw = w.switches["crs804"]
    assert not w.port_link("spark1", 0)
    t0 = w.now()
    EthernetMenu().set(sw, "qsfp56-dd-1-1", {"auto-negotiation": "no", "speed": "200G-baseCR4"})  # type: ignore[arg-type]
    assert not w.port_link("spark1", 0) and sw.link("qsfp56-dd-1-1").reason == "link coming up"
    w.set_clock(t0 + 7.5)
    assert not w.port_link("spark1", 0)
    w.set_clock(t0 + 8.5)
    assert w.port_link("spark1", 0)
    sw.tick()  # type: ignore[attr-defined]
    logs = [i["message"] for i in sw.tables["log"]]  # type: ignore[attr-defined]
    assert logs[-1].startswith("qsfp56-dd-1-1 link up (speed 200G")


def test_an_l2mtu_change_resets_every_chip_link() -> None:
    w = build_world(
        load_text(TEXT.replace("faults: [{id: switch.breakout-autoneg}]\n", ""), path="x")
    )
    sw = w.switches["crs804"]
    assert w.port_link("spark1", 0) and w.port_link("spark2", 0)
    before = w.nodes["spark2"].rails[0].counters["link_down_events_phy"]
    EthernetMenu().set(sw, "qsfp56-dd-1-1", {"l2mtu": "9216"})  # type: ignore[arg-type]
    assert w.port_link("spark2", 0)  # unchanged value: nothing happens
    EthernetMenu().set(sw, "qsfp56-dd-1-1", {"l2mtu": "9000"})  # type: ignore[arg-type]
    assert not w.port_link("spark2", 0)  # spark2's leg retrains too: the chip reset
    assert w.nodes["spark2"].rails[0].counters["link_down_events_phy"] > before
    w.set_clock(w.now() + 8.5)
    assert w.port_link("spark1", 0) and w.port_link("spark2", 0)


async def test_a_change_that_cuts_the_management_port_drops_the_api_session() -> None:
    librouteros = pytest.importorskip("librouteros")
    text = (
        "name: mgmt\n"
        "topology: {nodes: 2, switches: [{model: CRS804-4DDQ}], cables_per_node: 1}\n"
        "facts: {switches: {crs804: {management_port: qsfp56-dd-1-5}}}\n"
    )
    path = __import__("pathlib").Path(__import__("tempfile").mkdtemp()) / "mgmt.yaml"
    path.write_text(text)
    async with Lab(str(path), time_scale=100) as lab:
        import yaml

        inv = yaml.safe_load(lab.inventory_path.read_text())
        sw = inv["switches"][0]
        password = (lab.directory / sw["password"]["file"]).read_text().strip()

        def session() -> str:
            api = librouteros.connect("127.0.0.1", sw["user"], password, port=sw["port"], timeout=5)
            eth = api.path("interface", "ethernet")
            row = next(r for r in eth if r["name"] == "qsfp56-dd-1-1")
            eth.update(**{".id": row[".id"], "l2mtu": 9000})  # the chip resets
            try:
                tuple(api.path("system", "identity"))
            except Exception as exc:
                return type(exc).__name__
            finally:
                api.close()
            return "still connected"

        outcome = await asyncio.to_thread(session)
        assert outcome != "still connected"


class FakeClock:
    def __init__(self, start: float = 1_790_000_000.0) -> None:
        self.t = start

    def __call__(self) -> float:
        return self.t


def test_an_injected_clock_drives_the_world_and_the_switch() -> None:
    clock = FakeClock()
    w = build_world(load_text(TEXT, path="links.yaml"), clock=clock)
    sw = w.switches["crs804"]
    assert w.now() == clock.t
    EthernetMenu().set(sw, "qsfp56-dd-1-1", {"auto-negotiation": "no", "speed": "200G-baseCR4"})  # type: ignore[arg-type]
    assert not w.port_link("spark1", 0)
    clock.t += 8.5  # eight and a half seconds later, without sleeping
    assert w.port_link("spark1", 0)
    node = w.nodes["spark1"]
    assert w.now() - node.boot_time > 3600  # the nodes have been up a while


async def test_taking_the_management_port_out_of_its_bridge_drops_the_session() -> None:
    librouteros = pytest.importorskip("librouteros")
    text = (
        "name: mgmt2\n"
        "topology: {nodes: 2, switches: [{model: CRS804-4DDQ}], cables_per_node: 1}\n"
        "facts: {switches: {crs804: {management_port: qsfp56-dd-3-1}}}\n"
    )
    path = __import__("pathlib").Path(__import__("tempfile").mkdtemp()) / "mgmt2.yaml"
    path.write_text(text)
    async with Lab(str(path), time_scale=100) as lab:
        import yaml

        inv = yaml.safe_load(lab.inventory_path.read_text())
        sw = inv["switches"][0]
        password = (lab.directory / sw["password"]["file"]).read_text().strip()

        def session() -> str:
            api = librouteros.connect("127.0.0.1", sw["user"], password, port=sw["port"], timeout=5)
            ports = api.path("interface", "bridge", "port")
            other = next(p for p in ports if p["interface"] == "qsfp56-dd-3-2")
            ports.remove(other[".id"])  # an unrelated port: the session stays
            tuple(api.path("system", "identity"))
            mine = next(p for p in ports if p["interface"] == "qsfp56-dd-3-1")
            ports.remove(mine[".id"])
            try:
                tuple(api.path("system", "identity"))
            except Exception as exc:
                return type(exc).__name__
            finally:
                api.close()
            return "still connected"

        assert await asyncio.to_thread(session) != "still connected"


def _hosts(w: object, switch: str) -> dict[str, str]:
    sw = w.switches[switch]  # type: ignore[attr-defined]
    return {h["mac-address"]: h["on-interface"] for h in sw.tables["bridge-host"]}


def _macs(w: object, node: str) -> set[str]:
    return {r.mac.upper() for r in w.nodes[node].rails if r.port == 0}  # type: ignore[attr-defined]


def test_every_switch_learns_every_node_on_the_port_its_frames_arrive_by() -> None:
    """A node's broadcasts flood the bridged fabric: its own switch learns its MACs on its
    leg, every other switch on the port toward that one (as a real bridge does), across the
    ISL, or through the campus LAN when RSTP blocks the ISL."""
    chain = load_text(
        "name: chain\ndescription: x\ntopology:\n  nodes: 9\n  switches: ["
        + ", ".join(["{model: CRS812-8DS-2DQ-2DDQ}"] * 3)
        + "]\n  cables_per_node: 1\nfaults: []\n",
        path="chain.yaml",
    )
    w = build_world(chain)
    lone = _macs(w, "spark9")  # the far switch's only node
    assert {_hosts(w, "crs812-c")[m] for m in lone} == {"qsfp56-dd-1-1"}
    assert {_hosts(w, "crs812-b")[m] for m in lone} == {"qsfp56-2-1"}  # b's ISL toward c
    assert {_hosts(w, "crs812-a")[m] for m in lone} == {"qsfp56-1-1"}  # a's only ISL
    first = _macs(w, "spark1")
    assert {_hosts(w, "crs812-c")[m] for m in first} == {"qsfp56-1-1"}
    assert {_hosts(w, "crs812-b")[m] for m in first} == {"qsfp56-1-1"}  # b's ISL toward a
    # RSTP blocks the ISL: the other switch's nodes arrive through the campus uplink
    blocked = build_world(load_text(_scenario("fault-switch-rstp-isl-blocked"), path="x.yaml"))
    assert {_hosts(blocked, "crs812-a")[m] for m in _macs(blocked, "spark5")} == {"ether1"}
    assert {_hosts(blocked, "crs812-b")[m] for m in _macs(blocked, "spark1")} == {"ether1"}
    assert {_hosts(blocked, "crs812-b")[m] for m in _macs(blocked, "spark5")} == {"qsfp56-dd-1-1"}


def _scenario(name: str) -> str:
    from pathlib import Path

    import wizard.lab.scenarios as s

    return (Path(s.__file__).parent / "scenarios" / f"{name}.yaml").read_text()
