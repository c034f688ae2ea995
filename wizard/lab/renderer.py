"""Which netplan renderer drives a lab node's fabric netdevs, and the bounce of changing it.

`facts.nodes.<n>.netplan_renderer: NetworkManager` makes a node look like DGX OS: the stock
`/etc/netplan/01-network-manager-all.yaml` (`renderer: NetworkManager`) and a fabric file with
the same renderer. netplan merges the files in name order and the last `network.renderer` wins
unless an interface names its own; `netplan apply` with another renderer for the fabric netdevs
hands them to another daemon, which takes their links down and up.
"""

from __future__ import annotations

import re

import yaml

from wizard.lab.world import NETPLAN_PATH, NodeState, World

NM_DEFAULT_PATH = "/etc/netplan/01-network-manager-all.yaml"
NM_DEFAULT = "# Let NetworkManager manage all devices on this system\nnetwork:\n  version: 2\n  renderer: NetworkManager\n"


def renderer_of(node: NodeState) -> str:
    """The renderer of the node's fabric netdevs, from its netplan files as they are now."""
    netdevs = {r.netdev for r in node.rails}
    renderer, own = "networkd", None
    for path in sorted(p for p in node.files if re.match(r"/etc/netplan/.+\.ya?ml$", p)):
        try:
            data = yaml.safe_load(node.files[path]) or {}
        except yaml.YAMLError:
            continue
        net = data.get("network") if isinstance(data, dict) else None
        if not isinstance(net, dict):
            continue
        if isinstance(net.get("renderer"), str):
            renderer = net["renderer"]
        for name, cfg in (net.get("ethernets") or {}).items():
            if name in netdevs and isinstance(cfg, dict) and isinstance(cfg.get("renderer"), str):
                own = cfg["renderer"]
    return own or renderer


def apply_facts(world: World) -> None:
    """Give the nodes the scenario names a NetworkManager (or networkd) netplan."""
    for name, facts in world.facts.nodes.items():
        if facts.netplan_renderer is None or name not in world.nodes:
            continue
        node = world.nodes[name]
        data = yaml.safe_load(node.files.get(NETPLAN_PATH, "")) or {}
        data.setdefault("network", {})["renderer"] = facts.netplan_renderer
        node.files[NETPLAN_PATH] = yaml.safe_dump(data, sort_keys=False, default_flow_style=None)
        if facts.netplan_renderer == "NetworkManager":
            node.files[NM_DEFAULT_PATH] = NM_DEFAULT
        node.renderer = facts.netplan_renderer


def applied(world: World, node: NodeState) -> None:
    """After `netplan apply`: a renderer change for the fabric netdevs bounces their links."""
    now = renderer_of(node)
    if now != node.renderer:
        for port in (0, 1):
            if world.port_link(node.name, port):
                world.link_transition(node.name, port, up=False)
                world.link_transition(node.name, port, up=True)
        node.renderer = now
