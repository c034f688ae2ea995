"""The lab's emulated MikroTik switch: its state model and its RouterOS API server.

`SwitchState` (switch.py) is what the world's physics asks about links and forwarding;
`RouterOsServer` (server.py) serves it over the real RouterOS API; `apply_switch_fault`
(faults.py) injects the `switch.*` faults of FAULTS.md.
"""

from wizard.lab.routeros.switch import Forwarding, LinkStatus, SwitchState

__all__ = ["Forwarding", "LinkStatus", "SwitchState"]
