"""The ConnectX-7 as its tools show it: `ethtool` (settings, `-i`, `-S`, `-m`, `--show-fec`),
`mlnx_qos` (PFC; a change bounces the link, as mlx5 does), `lspci` (the PCIe link width) and
`mlxfwmanager`.
"""

from __future__ import annotations

from wizard.lab.hostcmds.registry import KERNEL, MGMT_IF, Ctx, command
from wizard.lab.world import (
    PHY_COUNTERS,
    parse_pfc,
)

_LINK_MODES = (
    "1000baseKX/Full",
    "10000baseKR/Full",
    "25000baseCR/Full",
    "50000baseCR2/Full",
    "100000baseCR4/Full",
    "200000baseCR4/Full",
)


@command("ethtool")
async def _ethtool(ctx: Ctx, args: list[str]) -> int:
    opts = [a for a in args if a.startswith("-")]
    names = [a for a in args if not a.startswith("-")]
    if not names:
        ctx.err("ethtool: bad command line argument(s)\nFor more information run ethtool -h\n")
        return 1
    dev = names[0]
    rail = ctx.node.rail(dev)
    if rail is None or dev != rail.netdev:
        if dev == MGMT_IF and not opts:
            ctx.out(
                f"Settings for {dev}:\n\tSpeed: 10000Mb/s\n\tDuplex: Full\n\tLink detected: yes\n"
            )
            return 0
        ctx.err(
            "netlink error: no device matches name (offset 24)\nnetlink error: No such device\n"
        )
        return 1
    from wizard.lab import hostrdma

    bad = [o for o in opts if o not in hostrdma.ETHTOOL_OPTS]
    if bad:
        ctx.err("ethtool: bad command line argument(s)\nFor more information run ethtool -h\n")
        ctx.host.refuse(["ethtool", *args])
        return 1
    up = ctx.world.rail_up(ctx.node.name, rail)
    mbps, fec = hostrdma.link_rate(ctx.world, ctx.node, rail.port)
    if "-m" in opts or "--dump-module-eeprom" in opts or "--module-info" in opts:
        return hostrdma.module_eeprom(ctx.world, ctx.node, rail.port, ctx.out, ctx.err)
    if "-i" in opts or "--driver" in opts:
        ctx.out(
            "driver: mlx5_core\n"
            f"version: {KERNEL}\n"
            f"firmware-version: {ctx.node.firmware} (NVD0000000087)\n"
            "expansion-rom-version: \n"
            f"bus-info: {rail.pci}\n"
            "supports-statistics: yes\n"
            "supports-test: yes\n"
            "supports-eeprom-access: no\n"
            "supports-register-dump: no\n"
            "supports-priv-flags: yes\n"
        )
        return 0
    if "-S" in opts or "--statistics" in opts:
        if ctx.world.traffic is not None:
            ctx.world.traffic.settle()
        c = rail.counters
        lines = ["NIC statistics:"]
        for name in PHY_COUNTERS:
            lines.append(f"     {name}: {c.get(name, 0)}")
        for p in range(8):
            if p != 3:
                lines.append(f"     rx_prio{p}_packets: 0")
        lines.append(f"     rx_prio0_discards: {c.get('rx_discards_phy', 0)}")
        lines.append("     tx_global_pause: 0")
        lines.append("     rx_global_pause: 0")
        ctx.out("\n".join(lines) + "\n")
        return 0
    if "--show-fec" in opts:
        ctx.out(
            f"FEC parameters for {dev}:\nSupported/Configured FEC encodings: Auto\n"
            f"Active FEC encoding: {fec}\n"
        )
        return 0
    modes = ("\n" + " " * 32).join(_LINK_MODES)
    ctx.out(
        f"Settings for {dev}:\n"
        "\tSupported ports: [ Backplane ]\n"
        f"\tSupported link modes:   {modes}\n"
        "\tSupported pause frame use: Symmetric\n"
        "\tSupports auto-negotiation: Yes\n"
        "\tSupported FEC modes: None\t RS\t BASER\n"
        f"\tAdvertised link modes:  {modes}\n"
        "\tAdvertised pause frame use: Symmetric\n"
        "\tAdvertised auto-negotiation: Yes\n"
        "\tAdvertised FEC modes: RS\n"
        + (
            f"\tSpeed: {mbps}Mb/s\n\tLanes: 4\n\tDuplex: Full\n"
            if up
            else "\tSpeed: Unknown!\n\tDuplex: Unknown! (255)\n"
        )
        + "\tAuto-negotiation: on\n"
        f"\tPort: {'Direct Attach Copper' if up else 'Other'}\n"
        "\tPHYAD: 0\n"
        "\tTranceiver: internal\n"
        "\tSupports Wake-on: d\n"
        "\tWake-on: d\n"
        "\tCurrent message level: 0x00000004 (4)\n"
        "\t\t\t       link\n"
        f"\tLink detected: {'yes' if up else 'no'}\n"
    )
    return 0


@command("mlnx_qos")
async def _mlnx_qos(ctx: Ctx, args: list[str]) -> int:
    if "-i" not in args:
        ctx.err("Usage: mlnx_qos -i <interface> [options]\n")
        return 1
    dev = args[args.index("-i") + 1]
    rail = ctx.node.rail(dev)
    if rail is None:
        ctx.err(f"Netlink error: Bad value. see dmesg.\nInterface {dev} doesn't exist\n")
        return 1
    if not ctx.root:
        ctx.err("Netlink error: Operation not permitted\n")
        return 1
    if "--pfc" in args:
        pfc = parse_pfc(args[args.index("--pfc") + 1])
        if pfc != rail.pfc and ctx.world.port_link(ctx.node.name, rail.port):
            # mlx5 reconfigures the port buffers: the link goes down and comes back
            ctx.world.link_transition(ctx.node.name, rail.port, up=False)
            ctx.world.link_transition(ctx.node.name, rail.port, up=True)
        rail.pfc = pfc
        if ctx.world.traffic is not None:
            ctx.world.traffic.recompute()
        ctx.world.changed(f"pfc:{ctx.node.name}")
    enabled = "".join(f"{v:<4d}" for v in rail.pfc)
    out = [
        "DCBX mode: OS controlled",
        "Priority trust state: dscp",
        "dscp2prio mapping:",
    ]
    for p in range(8):
        dscps = ",".join(f"{d:02d}" for d in range(8 * p + 7, 8 * p - 1, -1))
        out.append(f"\tprio:{p} dscp:{dscps},")
    out += [
        "Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=262016",
        "Cable len: 7",
        "PFC configuration:",
        "\tpriority    0   1   2   3   4   5   6   7",
        f"\tenabled     {enabled}",
        f"\tbuffer      {''.join(f'{min(v, 1):<4d}' for v in rail.pfc)}",
    ]
    for tc in range(8):
        out.append(f"tc: {tc} ratelimit: unlimited, tsa: vendor")
        out.append(f"\t priority:  {1 if tc == 0 else 0 if tc == 1 else tc}")
    ctx.out("\n".join(out) + "\n")
    return 0


@command("lspci")
async def _lspci(ctx: Ctx, args: list[str]) -> int:
    verbose = any(a.startswith("-v") for a in args)
    sel = None
    if "-s" in args:
        sel = args[args.index("-s") + 1]
    rails = sorted(ctx.node.rails, key=lambda r: r.pci)
    if sel:
        rails = [r for r in rails if r.pci.endswith(sel) or r.pci == sel]
    want_mlx = "-d" in args and args[args.index("-d") + 1].startswith("15b3")
    out: list[str] = []
    if not sel and not want_mlx:
        out.append("0000:00:00.0 PCI bridge: NVIDIA Corporation Device 22ce (rev 01)")
    w = ctx.node.pcie_width
    for r in rails:
        out.append(f"{r.pci} Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]")
        if not verbose:
            continue
        out.append("\tSubsystem: Mellanox Technologies Device 0026")
        out.append(
            "\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr+ "
            "Stepping- SERR+ FastB2B- DisINTx+"
        )
        if not ctx.root:
            out.append("\tCapabilities: <access denied>")
        else:
            down = " (downgraded)" if w < 4 else ""
            out += [
                "\tCapabilities: [60] Express (v2) Endpoint, MSI 00",
                "\t\tDevCap:\tMaxPayload 512 bytes, PhantFunc 0, Latency L0s unlimited, "
                "L1 unlimited",
                "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x4, ASPM not supported",
                "\t\t\tClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+",
                f"\t\tLnkSta:\tSpeed 32GT/s, Width x{w}{down}",
                "\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-",
            ]
        out.append("\tKernel driver in use: mlx5_core")
        out.append("\tKernel modules: mlx5_core")
        out.append("")
    if not sel and not want_mlx:
        out.append(
            "0007:01:00.0 Ethernet controller: Realtek Semiconductor Co., Ltd. Device 8127 (rev 05)"
        )
        out.append(
            "000f:01:00.0 VGA compatible controller: NVIDIA Corporation Device 2e12 (rev a1)"
        )
    ctx.out("\n".join(out) + ("\n" if out and out[-1] else ""))
    return 0


@command("mlxfwmanager")
async def _mlxfwmanager(ctx: Ctx, args: list[str]) -> int:
    node = ctx.node
    ctx.out(
        "Querying Mellanox devices firmware ...\n\n"
        "Device #1:\n----------\n\n"
        "  Device Type:      ConnectX7\n"
        "  Part Number:      MCX75343AMC-NEAC_Ax\n"
        "  PSID:             NVD0000000087\n"
        "  PCI Device Name:  0000:01:00.0\n"
        "  Versions:         Current        Available     \n"
        f"     FW             {node.firmware:<15}N/A           \n\n"
        "  Status:           No matching image found\n"
    )
    return 0
