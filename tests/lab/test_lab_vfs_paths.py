"""The lab's glob lists only the sysfs directories a pattern can reach, and finds the same paths
as a glob over the whole file system would."""

from __future__ import annotations

import pytest

from wizard.lab import scenarios
from wizard.lab.hostcmds import Host
from wizard.lab.hostcmds.vfs import (
    _rail_ib_paths,
    _rail_net_paths,
    _rail_sysfs,
    glob_match,
    vfs_paths,
)
from wizard.lab.perftest import Registry

PATTERNS = (
    "/sys/class/infiniband/*/ports/1/counters/port_xmit_data",
    "/sys/class/infiniband/*/ports/1/hw_counters/*",
    "/sys/class/infiniband/*/ports/1/gids/*",
    "/sys/class/infiniband/*/ports/1/gid_attrs/types/*",
    "/sys/class/infiniband/*/fw_ver",
    "/sys/class/net/*/carrier_down_count",
    "/sys/class/net/*/statistics/*_bytes",
    "/sys/class/net/enp1s0f?np?/mtu",
    "/proc/*/environ",
    "/proc/sys/net/ipv4/conf/*/arp_ignore",
    "/etc/netplan/*.yaml",
    "/sys/class/dmi/id/*",
    "*.yaml",
)


@pytest.fixture
def host() -> Host:
    world = scenarios.build_world(scenarios.load("crs804-three-bugs"), time_scale=200.0)
    return Host(world, world.nodes["spark1"], Registry())


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_pattern_finds_what_a_glob_over_every_path_finds(host: Host, pattern: str) -> None:
    assert glob_match(vfs_paths(host, pattern), pattern) == glob_match(vfs_paths(host), pattern)


def test_counters_glob_lists_no_gid_table(host: Host) -> None:
    pattern = "/sys/class/infiniband/*/ports/1/counters/port_xmit_data"
    listed = vfs_paths(host, pattern)
    assert not [p for p in listed if "/gids/" in p or "/gid_attrs/" in p]
    found = glob_match(listed, pattern)
    assert len(found) == len(host.node.rails) == 4
    assert len(listed) < len(vfs_paths(host)) // 5


def test_listed_rail_paths_are_the_attributes_served(host: Host) -> None:
    """The path lists a glob sees are exactly the attributes a read of the rail serves."""
    for rail in host.node.rails:
        served = set(_rail_sysfs(host.world, rail, host.node))
        assert set(_rail_ib_paths(rail.rdma)) | set(_rail_net_paths(rail.netdev)) == served
