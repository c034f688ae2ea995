"""rdma link, show_gids and ibstat on every real output."""

from __future__ import annotations

import pytest
from parsers_support import assert_covers, load_real

from wizard.parsers.rdma import parse_ibstat, parse_rdma_link, parse_show_gids

GB10 = ["rocep1s0f0", "rocep1s0f1", "roceP2p1s0f0", "roceP2p1s0f1"]
NETDEVS = ["enp1s0f0np0", "enp1s0f1np1", "enP2p1s0f0np0", "enP2p1s0f1np1"]
LINKS = {
    "asus-gx10-rdma-link-4-active-padded-columns.txt": ["ACTIVE"] * 4,
    "gb10-rdma-link-2-active-2-down.txt": ["ACTIVE", "DOWN", "ACTIVE", "DOWN"],
}
GIDS = {  # n_gids_found, rows, (device, index, ipv4, version, netdev) of some rows
    "gb10-show_gids-12-gids-masked.txt": (
        12,
        12,
        [
            ("rocep1s0f0", 3, "192.168.100.10", "v2", "enp1s0f0np0"),
            ("roceP2p1s0f0", 2, "192.168.100.14", "v1", "enP2p1s0f0np0"),
            ("roceP2p1s0f1", 1, None, "v2", "enP2p1s0f1np1"),
        ],
    ),
    "mlx5_bond_0-4gids-tabs.txt": (
        4,
        4,
        [("mlx5_bond_0", 0, None, "v1", "bond0"), ("mlx5_bond_0", 3, "10.96.83.26", "v2", "bond0")],
    ),
    "show_gids-k8s-net1-index4-5-ipv4-first.txt": (
        None,
        4,
        [
            ("mlx5_0", 4, "10.12.0.21", "v1", "net1"),
            ("mlx5_0", 5, "10.12.0.21", "v2", "net1"),
            ("mlx5_0", 7, None, "v2", "net1"),
        ],
    ),
}


def test_every_rdma_fixture_has_expectations() -> None:
    assert_covers("rdma-link", LINKS)
    assert_covers("show_gids", GIDS)
    assert_covers("ibstat", {"dell-gb10-ibstat-roce-3of4-cas-partial.txt"})


@pytest.mark.parametrize("name", sorted(LINKS))
def test_rdma_link_real(name: str) -> None:
    r = parse_rdma_link(load_real("rdma-link", name))
    assert [(x.device, x.port, x.state, x.netdev) for x in r.links] == [
        (d, 1, s, n) for d, s, n in zip(GB10, LINKS[name], NETDEVS, strict=True)
    ]
    assert all((x.physical_state == "LINK_UP") == x.active for x in r.links)


@pytest.mark.parametrize("name", sorted(GIDS))
def test_show_gids_real(name: str) -> None:
    r = parse_show_gids(load_real("show_gids", name))
    total, count, rows = GIDS[name]
    assert r.n_gids_found == total and len(r.gids) == count
    got = {(g.device, g.index, g.ipv4, g.version, g.netdev) for g in r.gids}
    assert set(rows) <= got


def test_show_gids_v2_ipv4_index() -> None:
    r = parse_show_gids(load_real("show_gids", "gb10-show_gids-12-gids-masked.txt"))
    assert [g.index for g in r.roce_v2_ipv4("rocep1s0f0")] == [3]
    assert r.roce_v2_ipv4("rocep1s0f1") == ()


def test_ibstat_real() -> None:
    r = parse_ibstat(load_real("ibstat", "dell-gb10-ibstat-roce-3of4-cas-partial.txt"))
    assert [
        (c.name, c.state, c.physical_state, c.rate, c.firmware, c.link_layer) for c in r.cas
    ] == [
        ("roceP2p1s0f0", "Active", "LinkUp", 200, "28.45.4028", "Ethernet"),
        ("roceP2p1s0f1", "Down", "Disabled", 40, "28.45.4028", "Ethernet"),
        ("rocep1s0f0", "Active", "LinkUp", 200, "28.45.4028", "Ethernet"),
    ]
    assert r.cas[0].ca_type == "MT4129"
