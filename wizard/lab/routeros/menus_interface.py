"""Interface menus: /interface, ethernet (+ monitor), bridge, bridge port/host, switch, QoS.

What the checks read (`hw` vs the derived `hw-offload`, link status, `trust-l3`/`pfc`) and what
the fixes set (speed, auto-negotiation, fec-mode, l2mtu/mtu, bridge membership, path-cost). The
ethernet menus live in `menus_ether.py`, the bridge menus in `menus_bridge.py` and the
switch-chip and QoS menus in `menus_qos.py`; this module names them together.
"""

from __future__ import annotations

from wizard.lab.routeros.menus_bridge import BridgeHostMenu, BridgeMenu, BridgePortMenu
from wizard.lab.routeros.menus_ether import EthernetMenu, InterfaceMenu, monitor_row
from wizard.lab.routeros.menus_qos import PfcMenu, QosPortMenu, SwitchMenu

__all__ = [
    "BridgeHostMenu",
    "BridgeMenu",
    "BridgePortMenu",
    "EthernetMenu",
    "InterfaceMenu",
    "PfcMenu",
    "QosPortMenu",
    "SwitchMenu",
    "monitor_row",
]
