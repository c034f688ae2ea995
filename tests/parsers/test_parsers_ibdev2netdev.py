"""ibdev2netdev on every real output: mapping by name, Up/Down, PCIe half."""

from __future__ import annotations

import pytest
from parsers_support import assert_covers, load_real

from wizard.errors import ParseError
from wizard.parsers.ibdev2netdev import parse_ibdev2netdev

GB10_PORT0_UP = {
    ("rocep1s0f0", "enp1s0f0np0", True, "A"),
    ("rocep1s0f1", "enp1s0f1np1", False, "A"),
    ("roceP2p1s0f0", "enP2p1s0f0np0", True, "B"),
    ("roceP2p1s0f1", "enP2p1s0f1np1", False, "B"),
}
GB10_PORT1_UP = {(r, n, not up, h) for r, n, up, h in GB10_PORT0_UP}

EXPECTED = {
    "dgx-spark-5c2d-port0-up.txt": GB10_PORT0_UP,
    "gb10-sean-port0-up.txt": GB10_PORT0_UP,
    "dgx-spark-eugr-port1-up.txt": GB10_PORT1_UP,
    "dgx-spark-port1-up-roceP2-listed-first.txt": GB10_PORT1_UP,
    "mlx5-8devices-mixed-eth-and-ib0.txt": {
        ("mlx5_0", "ens4f0", False, None),
        ("mlx5_1", "ens4f1", False, None),
        ("mlx5_2", "ens6", True, None),
        ("mlx5_3", "ens14f0", True, None),
        ("mlx5_4", "ens14f1", False, None),
        ("mlx5_5", "ib0", True, None),
        ("mlx5_6", "ens6f1", False, None),
        ("mlx5_7", "ens6f2", True, None),
    },
}


def test_every_ibdev2netdev_fixture_has_expectations() -> None:
    assert_covers("ibdev2netdev", EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_ibdev2netdev_real(name: str) -> None:
    r = parse_ibdev2netdev(load_real("ibdev2netdev", name))
    assert {(m.rdma, m.netdev, m.up, m.half) for m in r.mappings} == EXPECTED[name]
    assert all(m.port == 1 for m in r.mappings)


def test_order_does_not_matter() -> None:
    r = parse_ibdev2netdev(load_real("ibdev2netdev", "dgx-spark-port1-up-roceP2-listed-first.txt"))
    assert r.mappings[0].rdma == "roceP2p1s0f0"
    assert r.by_netdev("enp1s0f1np1") is not None
    assert r.by_rdma("roceP2p1s0f1") is not None
    assert set(r.up) == {"roceP2p1s0f1", "rocep1s0f1"}


def test_trailing_spaces_and_garbage() -> None:
    r = parse_ibdev2netdev("rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)   \n")
    assert r.mappings[0].up
    with pytest.raises(ParseError):
        parse_ibdev2netdev("no devices here\n")
