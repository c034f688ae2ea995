"""NetworkManager in the lab: `nmcli -t` in the real terse forms, netplan's generated profiles,
a profile of the node's own (`facts.nodes.<n>.nm_profile`) that takes its rail at boot, and
`nmcli connection modify` that needs root."""

from __future__ import annotations

import asyncio

import pytest

from flows.checks.persist_host import NM_LIST, NM_PROFILES
from wizard.errors import ScenarioError
from wizard.lab import scenarios
from wizard.lab.hands import Hands
from wizard.lab.hostcmds import Host
from wizard.lab.perftest import Registry
from wizard.parsers import nmcli

TEXT = """
name: nm
topology: {nodes: 2, switches: [{model: CRS804-4DDQ}], cables_per_node: 1}
faults: []
facts:
  nodes:
    spark1: {netplan_renderer: NetworkManager}
    spark2: {netplan_renderer: NetworkManager, nm_profile: enp1s0f0np0}
"""


def _run(host: Host, script: str, *, root: bool = False) -> tuple[int, str, str]:
    out: list[str] = []
    err: list[str] = []
    status = asyncio.run(host.run(script, out.append, err.append, root=root))
    return status, "".join(out), "".join(err)


def test_the_profiles_in_the_real_terse_forms() -> None:
    world = scenarios.build_world(scenarios.load_text(TEXT, path="nm.yaml"))
    host = Host(world, world.nodes["spark2"], Registry())
    status, out, err = _run(host, NM_LIST.command)
    assert status == 0 and not err
    rows = nmcli.parse_list(out)
    assert [r.name for r in rows] == [
        "netplan-enp1s0f0np0",
        "netplan-enP2p1s0f0np0",
        "netplan-enp1s0f1np1",
        "netplan-enP2p1s0f1np1",
        "Wired connection 1",
    ]
    assert rows[0].filename == (
        "/run/NetworkManager/system-connections/netplan-enp1s0f0np0.nmconnection"
    )
    # the running rail still has netplan's address: the own profile is not active (yet)
    assert rows[0].device == "enp1s0f0np0" and rows[-1].device == ""
    status, out, _ = _run(host, NM_PROFILES.command)
    assert status == 0
    profiles = {p.id: p for p in nmcli.parse_details(out)}
    assert profiles["netplan-enp1s0f0np0"].addresses == ("10.9.1.2/24",)
    own = profiles["Wired connection 1"]
    assert (own.interface, own.autoconnect, own.method) == ("enp1s0f0np0", True, "auto")


def test_the_own_profile_takes_the_rail_at_boot_unless_it_stops_autoconnecting() -> None:
    world = scenarios.build_world(scenarios.load_text(TEXT, path="nm.yaml"))
    node = world.nodes["spark2"]
    host = Host(world, node, Registry())
    rail = node.rail("enp1s0f0np0")
    assert rail is not None and rail.addresses == ["10.9.1.2/24"]
    Hands(world).reboot("spark2")
    assert rail.addresses == []  # DHCP on the fabric: nothing answers
    assert node.rail("enP2p1s0f0np0").addresses == ["10.9.2.2/24"]  # type: ignore[union-attr]
    uuid = nmcli.parse_details(_run(host, NM_PROFILES.command)[1])[-1].uuid
    status, _, err = _run(host, f"nmcli connection modify uuid {uuid} connection.autoconnect no")
    assert status == 1 and "Insufficient privileges" in err
    status, _, err = _run(
        host, f"sudo -n nmcli connection modify uuid {uuid} connection.autoconnect no", root=True
    )
    assert status == 0, err
    world.apply_netplan(node)  # `netplan apply`: netplan's profile is active again
    Hands(world).reboot("spark2")
    assert rail.addresses == ["10.9.1.2/24"]


def test_a_profile_on_a_netdev_the_node_does_not_have_names_the_field() -> None:
    text = TEXT.replace("nm_profile: enp1s0f0np0", "nm_profile: eth7")
    with pytest.raises(ScenarioError) as exc:
        scenarios.build_world(scenarios.load_text(text, path="nm.yaml"))
    assert exc.value.field == "facts.nodes.spark2.nm_profile"
    assert "no fabric netdev 'eth7'" in str(exc.value)
