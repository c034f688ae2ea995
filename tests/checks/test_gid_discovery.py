"""The RoCE GID index for ib_write_bw: the v2 GID of the rail's IPv4 address, per device, read
from show_gids or sysfs, never a fixed `-x 3`."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.expectations import DEFAULT
from wizard.errors import ParseError
from wizard.gids import gids_from_show_gids, parse_sysfs_gids, roce_v2_index, sysfs_command
from wizard.inventory import load_inventory
from wizard.lab.lab import Lab
from wizard.sweep import Sweeper
from wizard.transports.ssh import SshTarget, SshTransport

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "fixtures" / "real"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="shared real fixtures absent")


@needs_real
def test_gb10_show_gids_gives_index_3_for_the_ipv4_v2_gid() -> None:
    gids = gids_from_show_gids((REAL / "show_gids/gb10-show_gids-12-gids-masked.txt").read_text())
    assert roce_v2_index(gids, "rocep1s0f0", "192.168.100.10/24") == 3
    assert roce_v2_index(gids, "roceP2p1s0f0", "192.168.100.14") == 3
    # rocep1s0f1 has link-local GIDs only: no address, no index (never a guess)
    assert roce_v2_index(gids, "rocep1s0f1", "192.168.100.11") is None
    # the IPv4 of another device is not this device's GID
    assert roce_v2_index(gids, "rocep1s0f0", "192.168.100.14") is None


@needs_real
def test_ipv4_first_table_gives_index_5_not_3() -> None:
    text = (REAL / "show_gids/show_gids-k8s-net1-index4-5-ipv4-first.txt").read_text()
    gids = gids_from_show_gids(text)
    assert roce_v2_index(gids, "mlx5_0", "10.12.0.21") == 5


def test_sysfs_gid_table_and_empty_slots() -> None:
    base = "/sys/class/infiniband/rocep1s0f0/ports/1"
    text = "\n".join(
        [
            f"{base}/gids/0:fe80:0000:0000:0000:8cce:a9ff:fe08:e0fc",
            f"{base}/gids/1:fe80:0000:0000:0000:8cce:a9ff:fe08:e0fc",
            f"{base}/gids/2:2001:0db8:0000:0000:0000:0000:0000:0001",
            f"{base}/gids/3:2001:0db8:0000:0000:0000:0000:0000:0001",
            f"{base}/gids/4:0000:0000:0000:0000:0000:ffff:0a09:0001",
            f"{base}/gids/5:0000:0000:0000:0000:0000:ffff:0a09:0001",
            f"{base}/gids/6:0000:0000:0000:0000:0000:0000:0000:0000",
            f"{base}/gid_attrs/types/0:IB/RoCE v1",
            f"{base}/gid_attrs/types/1:RoCE v2",
            f"{base}/gid_attrs/types/2:IB/RoCE v1",
            f"{base}/gid_attrs/types/3:RoCE v2",
            f"{base}/gid_attrs/types/4:IB/RoCE v1",
            f"{base}/gid_attrs/types/5:RoCE v2",
            f"{base}/gid_attrs/ndevs/5:enp1s0f0np0",
        ]
    )
    gids = parse_sysfs_gids(text)
    assert [g.index for g in gids] == [0, 1, 2, 3, 4, 5]
    assert gids[5].ipv4 == "10.9.0.1" and gids[5].netdev == "enp1s0f0np0"
    assert roce_v2_index(gids, "rocep1s0f0", "10.9.0.1/24") == 5
    with pytest.raises(ParseError):
        parse_sysfs_gids(
            "grep: /sys/class/infiniband/x/ports/1/gid_attrs/types/9: Invalid argument"
        )
    assert "'a b'" in sysfs_command("a b")  # a hostile device name stays one word


IPV6_FIRST = """
name: ipv6-first
topology: {nodes: 2, switches: [{model: CRS804-4DDQ}], cables_per_node: 1}
faults:
  - {id: host.ipv6-on-fabric, nodes: [spark2]}
"""


@pytest.mark.lab
async def test_rail_test_uses_the_discovered_index_on_each_end() -> None:
    from wizard.lab.scenarios import load_text

    async with Lab(load_text(IPV6_FIRST, path="v6.yaml"), time_scale=1000.0) as lab:
        inv = load_inventory(lab.inventory_path)
        ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
        sweeper = Sweeper(ssh=ssh, nodes=[n.name for n in inv.nodes], limits=DEFAULT)
        await sweeper.sweep([])
        r1 = sweeper.rails["spark1"][0]
        r2 = next(r for r in sweeper.rails["spark2"] if r.netdev == r1.netdev)
        i1, _ = await sweeper.gid_index(r1)
        i2, _ = await sweeper.gid_index(r2)
        sysfs = await ssh.run("spark2", sysfs_command(r2.rdma))
        ms = await sweeper.rail_tests(duration_s=1)
        await ssh.close()
    # the sysfs table (the fallback when show_gids is missing) agrees with show_gids
    assert roce_v2_index(parse_sysfs_gids(sysfs.stdout), r2.rdma, r2.addresses[0]) == 5
    assert r2.ipv6 and not r1.ipv6
    assert (i1, i2) == (3, 5)  # spark2's global IPv6 GIDs come before its IPv4 ones
    m = next(m for m in ms if m.extra.get("client_netdev") == r1.netdev)
    assert m.extra["gid_index"] == {"client": 3, "server": 5}
    assert " -x 3 " in m.extra["command"]
    assert m.valid and m.value > 100
