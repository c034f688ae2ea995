"""`ibv_devinfo` (rdma-core) from the node's state: devices, firmware, port state, active MTU."""

from __future__ import annotations

from collections.abc import Callable

from wizard.lab.gids import default_gid
from wizard.lab.physics import active_mtu
from wizard.lab.world import PSID, End, NodeState, World

Write = Callable[[str], None]
USAGE = (
    "Usage: ibv_devinfo             print the ca attributes\n"
    "\n"
    "Options:\n"
    "  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n"
    "  -i, --ib-port=<port>   use port <port> of IB device (default all ports)\n"
    "  -l, --list             print only the IB devices names\n"
    "  -v, --verbose          print all the attributes of the IB device(s)\n"
)
_MTU_CODE = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
_LONG = {"ib-dev": "d", "ib-port": "i", "list": "l", "verbose": "v"}


def _guid(mac: str) -> str:
    raw = default_gid(mac)[8:]
    return ":".join(raw[i : i + 2].hex() for i in range(0, 8, 2))


def _options(args: list[str], out: Write, err: Write) -> tuple[str, int, bool] | None:
    """ibv_devinfo's device, port and `-l`, or None when it refused the command line (its
    message and usage already written)."""
    dev = ""
    port = 0
    listing = False
    it = iter(args)
    for a in it:
        key = a
        value: str | None = None
        if a.startswith("--"):
            name, eq, v = a[2:].partition("=")
            hits = [n for n in _LONG if n.startswith(name)]
            if len(hits) != 1:
                err(f"ibv_devinfo: unrecognized option '{a}'\n")
                out(USAGE)
                return None
            key = "-" + _LONG[hits[0]]
            value = v if eq else None
        elif len(a) > 2 and a[:2] in ("-d", "-i"):
            key, value = a[:2], a[2:]
        if key in ("-d", "-i"):
            value = value if value is not None else next(it, None)
            if value is None:
                err(f"ibv_devinfo: option requires an argument -- '{key[1]}'\n")
                out(USAGE)
                return None
            if key == "-d":
                dev = value
            elif value.isdigit():
                port = int(value)
        elif key == "-l":
            listing = True
        elif key == "-v":
            err("ibv_devinfo: the lab does not model the verbose attribute dump (-v)\n")
            return None
        elif a.startswith("-"):
            err(f"ibv_devinfo: invalid option -- '{a[1:2]}'\n")
            out(USAGE)
            return None
    return dev, port, listing


def ibv_devinfo(world: World, node: NodeState, args: list[str], out: Write, err: Write) -> int:
    options = _options(args, out, err)
    if options is None:
        return 255
    dev, port, listing = options
    rails = sorted(node.rails, key=lambda r: (r.half, r.port))
    if listing:
        out(f"{len(rails)} HCA{'s' if len(rails) != 1 else ''} found:\n")
        for r in rails:
            out(f"\t{r.rdma}\n")
        return 0
    if dev:
        rails = [r for r in rails if r.rdma == dev]
        if not rails:
            err(f"IB device '{dev}' wasn't found\n")
            return 255
    if port > 1:
        err("Invalid port requested for device\n")
        return 255
    sys_guid = _guid(node.rails[0].mac)
    blocks = []
    for r in rails:
        up = world.rail_up(node.name, r)
        mtu = active_mtu(r.mtu)
        blocks.append(
            f"hca_id:\t{r.rdma}\n"
            "\ttransport:\t\t\tInfiniBand (0)\n"
            f"\tfw_ver:\t\t\t\t{node.firmware}\n"
            f"\tnode_guid:\t\t\t{_guid(r.mac)}\n"
            f"\tsys_image_guid:\t\t\t{sys_guid}\n"
            "\tvendor_id:\t\t\t0x02c9\n"
            "\tvendor_part_id:\t\t\t4129\n"
            "\thw_ver:\t\t\t\t0x0\n"
            f"\tboard_id:\t\t\t{PSID}\n"
            "\tphys_port_cnt:\t\t\t1\n"
            "\t\tport:\t1\n"
            f"\t\t\tstate:\t\t\t{'PORT_ACTIVE (4)' if up else 'PORT_DOWN (1)'}\n"
            "\t\t\tmax_mtu:\t\t4096 (5)\n"
            f"\t\t\tactive_mtu:\t\t{mtu} ({_MTU_CODE[mtu]})\n"
            "\t\t\tsm_lid:\t\t\t0\n"
            "\t\t\tport_lid:\t\t0\n"
            "\t\t\tport_lmc:\t\t0x00\n"
            "\t\t\tlink_layer:\t\tEthernet\n"
        )
    out("\n".join(blocks) + "\n")
    return 0


def link_rate(world: World, node: NodeState, port: int) -> tuple[int, str]:
    """(Mb/s, active FEC) the host sees on a QSFP port: what the far end negotiated."""
    if not world.port_link(node.name, port):
        return 0, "None"
    other = world.peer(End("node", node.name, f"port{port}"))
    if other is None or other.kind != "switch":
        return 200000, "RS"
    link = world.switches[other.name].link(other.port)
    return int(link.rate_gbps * 1000), "RS" if link.fec == "fec91" else "None"


ETHTOOL_OPTS = {
    "-i", "--driver", "-S", "--statistics", "--show-fec", "-m", "--dump-module-eeprom",
    "--module-info", "-k", "--show-features", "--show-offload", "-a", "--show-pause", "-g",
    "--show-ring", "-l", "--show-channels", "-c", "--show-coalesce", "--json", "-I",
    "--include-statistics", "--phy-statistics", "-P", "--show-permaddr", "-T", "--show-time-stamping",
}  # fmt: skip


def module_eeprom(world: World, node: NodeState, port: int, out: Write, err: Write) -> int:
    """`ethtool -m`: the SFF-8636 page of the node's 0.5 m QSFP112 DAC, as mlx5 decodes it."""
    cable = world.cable_at(End("node", node.name, f"port{port}"))
    if cable is None:
        err("netlink error: Input/output error\n")
        return 1
    serial = f"APF{26000000 + node.index * 10 + port:08d}"
    rows = [
        ("Identifier", "0x11 (QSFP28)"),
        ("Extended identifier", "0x00"),
        ("Extended identifier description", "1.5W max. Power consumption"),
        ("Extended identifier description", "No CDR in TX, No CDR in RX"),
        ("Extended identifier description", "High Power Class (> 3.5 W) not enabled"),
        ("Connector", "0x23 (No separable connector)"),
        ("Transceiver codes", "0x08 0x00 0x00 0x00 0x00 0x00 0x00 0x00"),
        ("Transceiver type", "40G Ethernet: 40G Base-CR4"),
        ("Encoding", "0x08 (PAM4)"),
        ("BR, Nominal", "25500Mbps"),
        ("Rate identifier", "0x00"),
        ("Length (SMF,km)", "0km"),
        ("Length (OM3 50um)", "0m"),
        ("Length (OM2 50um)", "0m"),
        ("Length (OM1 62.5um)", "0m"),
        ("Length (Copper or Active cable)", "1m"),
        ("Transmitter technology", "0xa0 (Copper cable unequalized)"),
        ("Attenuation at 2.5GHz", "2db"),
        ("Attenuation at 5.0GHz", "3db"),
        ("Attenuation at 7.0GHz", "4db"),
        ("Attenuation at 12.9GHz", "6db"),
        ("Vendor name", "Amphenol"),
        ("Vendor OUI", "78:a7:14"),
        ("Vendor PN", "NJAAKK-N911"),
        ("Vendor rev", "A"),
        ("Vendor SN", serial),
        ("Revision Compliance", "Unallocated"),
        ("Module temperature", f"{30.0 + node.index * 0.25:.2f} degrees C / "
         f"{(30.0 + node.index * 0.25) * 9 / 5 + 32:.2f} degrees F"),
        ("Module voltage", "3.2870 V"),
    ]  # fmt: skip
    out("".join(f"\t{k:<41} : {v}\n" for k, v in rows))
    return 0
