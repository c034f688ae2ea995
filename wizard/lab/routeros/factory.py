"""The factory configuration of a lab switch: the tables a CRS804/CRS812 boots with.

A fabric switch as a technician left it: every port in one hardware-offloaded bridge, data MTUs
on the fabric legs, the switch chip and its QoS defaults.
"""

from __future__ import annotations

from wizard.lab.routeros.fabric import SwitchFabric
from wizard.lab.routeros.ports import (
    BRIDGE,
    DATA_L2MTU,
    DATA_MTU,
    DD_RE,
    Counters,
    Item,
    is_cpu_port,
    is_lane_master,
    mac_address,
    port_names,
)

__all__ = ["install_factory"]


def install_factory(sw: SwitchFabric, seed: int) -> None:
    """Fill `sw`'s empty tables with the factory configuration (MACs derived from `seed`)."""
    for t in (
        "interface",
        "bridge-port",
        "bridge-host",
        "qos-port",
        "pfc",
        "switch",
        "log",
        "file",
        "scheduler",
        "identity",
    ):
        sw.tables[t] = []
    sw.tables["identity"].append({"name": sw.name})
    sw.tables["switch"].append(
        {
            ".id": "*1",
            "name": "switch1",
            "type": "Marvell-98DX7335",
            "l3-hw-offloading": "false",
            "qos-hw-offloading": "true",
            "cpu-flow-control": "true",
            "mirror-source": "none",
            "mirror-target": "none",
        }
    )
    sw.add_item(
        "pfc",
        {
            "name": "disabled",
            "traffic-class": "",
            "rx": "false",
            "tx": "false",
            "default": "true",
        },
    )
    ports = port_names(sw.model)
    for index, port in enumerate(ports):
        data = not is_cpu_port(port)
        item: Item = {
            "name": port,
            "default-name": port,
            "type": "ether",
            "mtu": DATA_MTU if data else "1500",
            "l2mtu": DATA_L2MTU if data else "1592",
            "mac-address": mac_address(seed, index + 1),
            "auto-negotiation": "true",
            "disabled": "false",
            "fec-mode": "auto",
            "tx-flow-control": "off",
            "rx-flow-control": "off",
        }
        if DD_RE.match(port) and is_lane_master(port):
            item.update({"auto-negotiation": "false", "speed": "200G-baseCR4", "fec-mode": "fec91"})
        sw.add_item("interface", item)
        sw.counters[port] = Counters()
    sw.add_item(
        "interface",
        {
            "name": BRIDGE,
            "type": "bridge",
            "mtu": "auto",
            "l2mtu": "65535",
            "mac-address": mac_address(seed, 0),
            "admin-mac": mac_address(seed, 0),
            "auto-mac": "false",
            "protocol-mode": "rstp",
            "vlan-filtering": "false",
            "priority": "0x8000",
            "ageing-time": "5m",
            "disabled": "false",
            "comment": "defconf",
            "port-cost-mode": "long",
        },
    )
    for port in ports:
        if port == "ether2":
            continue
        sw.add_item(
            "bridge-port",
            {
                "bridge": BRIDGE,
                "interface": port,
                "hw": "true",
                "disabled": "false",
                "comment": "defconf",
            },
        )
    for port in ports:
        if is_cpu_port(port):
            continue
        sw.add_item(
            "qos-port",
            {
                "name": port,
                "switch": "switch1",
                "profile": "default",
                "map": "default",
                "trust-l2": "ignore",
                "trust-l3": "ignore",
                "tx-manager": "default",
                "pfc": "disabled",
            },
        )
    sw.add_item("qos-port", {"name": "switch1-cpu", "switch": "switch1"})
    sw.log("system,info", "router rebooted")
