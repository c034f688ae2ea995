"""A node's boot and persistent configuration, as on a real GB10: power-on (new boot id, counters
from zero, staged firmware activated), the kernel lines of a boot, and the persistent files
applied at boot and by `netplan apply`/`sysctl --system`/`systemctl` (`/etc/netplan/*.yaml`,
`/etc/sysctl.d/*.conf`, oneshot units), so a fix that only changes the runtime state is undone
by a reboot.
"""

from __future__ import annotations

import random
import re
import uuid
from typing import TYPE_CHECKING, Any

import yaml

from wizard.lab.elements import (
    DEFAULT_SYSCTLS,
    GOOD_FIRMWARE,
    RAIL_LAYOUT,
    End,
    NodeState,
    parse_pfc,
    rail_address,
)

if TYPE_CHECKING:
    from wizard.lab.world import World


def boot_log(world: World, node: NodeState) -> None:
    """The kernel lines of a GB10 boot (timestamps as on a real unit), replacing old ones."""
    node.dmesg = [(t, m) for t, m in node.dmesg if t >= 9.0]
    lines: list[tuple[float, str]] = [
        (0.0, "Booting Linux on physical CPU 0x0000000000 [0x411fd870]"),
        (
            0.103426,
            "pci 000f:01:00.0: 0.000 Gb/s available PCIe bandwidth, limited by Unknown x0 "
            "link at 000f:00:00.0 (capable of 32.000 Gb/s with 2.5 GT/s PCIe x16 link)",
        ),
    ]
    t = 1.1
    for rail in node.rails:
        if not rail.pci.endswith(".0"):
            continue
        gbps = 126.028 * node.pcie_width / 4
        lines += [
            (t, f"mlx5_core {rail.pci}: firmware version: {node.firmware}"),
            (
                t + 0.050104,
                f"mlx5_core {rail.pci}: {gbps:.3f} Gb/s available PCIe bandwidth "
                f"(32.0 GT/s PCIe x{node.pcie_width} link)",
            ),
            (
                t + 0.433198,
                f"mlx5_core {rail.pci}: mlx5_pcie_event:326:(pid 12): Detected insufficient "
                "power on the PCIe slot (27W).",
            ),
        ]
        t += 0.61
    lines += [
        (
            5.309621,
            "cx7-pcie-hotplug MTKP0001:00: PCIe hotplug driver initialized successfully",
        ),
        (5.406738, "cx7-pcie-hotplug MTKP0001:00: Hotplug enabled"),
    ]
    t = 8.2
    for port in (0, 1):
        if world.port_link(node.name, port):
            for rail in node.rails_of_port(port):
                lines.append((t, f"mlx5_core {rail.pci} {rail.netdev}: Link up"))
                t += 0.0131
    # every boot of every node takes its own time: no two kernels print the same stamps
    pace = random.Random(f"{world.seed}/{node.name}/{node.boot_id}").uniform(0.97, 1.03)
    lines = [(round(ts * pace, 6), m) for ts, m in lines]
    node.dmesg = sorted(lines + node.dmesg, key=lambda x: x[0])


def boot(world: World, node: NodeState) -> None:
    """Power-on: new boot_id, uptime from zero, config re-applied from the files."""
    now = world.now()
    if node.boot_id:  # the boot that ended goes to the journal's list, off_s before this one
        gap = node.off_s if node.off_s is not None else max(0.0, now - node.down_at)
        last = now - gap
        node.boots.append((node.boot_id, min(node.boot_time, last), last))
        node.off_s = None
    node.powered = True
    node.boot_id = str(uuid.uuid4())  # never repeats, even across labs of one scenario
    node.boot_time = now
    node.dmesg = []
    node.dirs = {d for d in node.dirs if not d.startswith("/run/")}  # /run is a tmpfs
    node.files = {p: t for p, t in node.files.items() if not p.startswith("/run/")}
    # the driver loads afresh: every port and RDMA counter starts from zero again
    for rail in node.rails:
        for name in rail.counters:
            if name != "lifespan":
                rail.counters[name] = 0
    if node.staged_firmware:
        node.firmware = node.staged_firmware
        node.staged_firmware = None
        if node.firmware == GOOD_FIRMWARE:
            node.throttled = False
            # the update package carries the BIOS fix too: the CX7 retrains at Gen5 x4
            node.pcie_width = 4
    for rail in node.rails:
        rail.pfc = node.pfc_boot
    node.sysctls = dict(DEFAULT_SYSCTLS)
    apply_sysctl_files(world, node)
    apply_netplan(world, node)
    from wizard.lab import nmprofiles  # NetworkManager's own profiles win at boot

    nmprofiles.apply_at_boot(world, node)
    for unit in sorted(node.enabled_units):
        run_unit(world, node, unit)
    for c in world.cables:
        if End("node", node.name, "port0") in (c.a, c.b) or End("node", node.name, "port1") in (
            c.a,
            c.b,
        ):
            world.sync_switch_side(c)
    boot_log(world, node)
    world.learn_macs()


def power_off(world: World, node: NodeState) -> None:
    if not node.powered:
        return
    if world.traffic is not None:
        world.traffic.node_lost(node.name)
    node.powered = False
    node.down_at = world.now()
    for c in world.cables:
        if node.name in (c.a.name, c.b.name):
            world.sync_switch_side(c)


def apply_sysctl_files(world: World, node: NodeState) -> None:
    for path in sorted(p for p in node.files if re.match(r"/etc/sysctl\.d/.+\.conf$", p)):
        for raw in node.files[path].splitlines():
            line = raw.strip()
            if not line or line.startswith(("#", ";")) or "=" not in line:
                continue
            key, _, value = line.partition("=")
            node.sysctls[key.strip()] = value.strip()


def netplan_config(world: World, node: NodeState) -> tuple[dict[str, dict[str, Any]], str | None]:
    """Merged `network.ethernets` of every netplan file, or an error text."""
    merged: dict[str, dict[str, Any]] = {}
    for path in sorted(p for p in node.files if re.match(r"/etc/netplan/.+\.ya?ml$", p)):
        try:
            data = yaml.safe_load(node.files[path]) or {}
        except yaml.YAMLError as exc:
            return {}, f"{path}: {exc}"
        if not isinstance(data, dict):
            return {}, f"{path}: not a mapping"
        eths = (data.get("network") or {}).get("ethernets") or {}
        if not isinstance(eths, dict):
            return {}, f"{path}: network.ethernets is not a mapping"
        for name, cfg in eths.items():
            merged.setdefault(str(name), {}).update(cfg or {})
    return merged, None


def apply_netplan(world: World, node: NodeState) -> str | None:
    cfg, err = netplan_config(world, node)
    if err:
        return err
    for rail in node.rails:
        c = cfg.get(rail.netdev)
        if c is None:
            rail.addresses, rail.ipv6, rail.mtu = [], [], 1500
            continue
        addrs = [str(a) for a in c.get("addresses") or []]
        rail.addresses = [a for a in addrs if ":" not in a]
        v6 = [a for a in addrs if ":" in a]
        rail.v6_first = bool(addrs) and ":" in addrs[0]  # netplan adds them in list order
        link_local = c.get("link-local", ["ipv6"])
        if link_local is None or "ipv6" in (link_local or []):
            v6.append(_link_local(rail.mac))
        rail.ipv6 = v6
        rail.mtu = int(c.get("mtu", 1500))
    if world.traffic is not None:
        world.traffic.recompute()
    world.changed(f"netplan:{node.name}")
    return None


def run_unit(world: World, node: NodeState, unit: str) -> None:
    """Run a oneshot unit's ExecStart lines (only `mlnx_qos ... --pfc` has an effect)."""
    text = node.files.get(f"/etc/systemd/system/{unit}", "")
    for line in text.splitlines():
        if not line.strip().startswith("ExecStart="):
            continue
        cmd = line.split("=", 1)[1].strip().lstrip("-@+!")
        m = re.search(r"mlnx_qos\s+-i\s+(\S+)\s+--pfc\s+([0-9,]+)", cmd)
        if m:
            rail = node.rail(m.group(1))
            if rail is not None:
                rail.pfc = parse_pfc(m.group(2))


def _link_local(mac: str) -> str:
    b = [int(x, 16) for x in mac.split(":")]
    b[0] ^= 0x02
    words = [(b[0] << 8) | b[1], (b[2] << 8) | 0xFF, 0xFE00 | b[3], (b[4] << 8) | b[5]]
    return "fe80::" + ":".join(f"{w:x}" for w in words) + "/64"


def healthy_netplan(host: int, *, overrides: dict[str, dict[str, Any]] | None = None) -> str:
    """The netplan file of a healthy node (the default addressing plan), with per-netdev overrides."""
    eths: dict[str, dict[str, Any]] = {}
    for r, (netdev, *_rest) in enumerate(RAIL_LAYOUT, start=1):
        eths[netdev] = {
            "addresses": [rail_address(r, host)],
            "mtu": 9000,
            "dhcp4": False,
            "dhcp6": False,
            "link-local": [],
        }
    for netdev, cfg in (overrides or {}).items():
        eths.setdefault(netdev, {}).update(cfg)
    doc = {"network": {"version": 2, "renderer": "networkd", "ethernets": eths}}
    text: str = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None)
    return text
