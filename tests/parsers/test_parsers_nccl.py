"""nccl-tests tables and NCCL debug logs: every real file, key values written out."""

from __future__ import annotations

from typing import Any

import pytest
from parsers_support import assert_covers, load_real

from wizard.parsers.nccl import parse_nccl

TESTS: dict[str, dict[str, Any]] = {
    "all_reduce_perf-2node-16gpu-h200-datatype-all-ucx-warn-noise.txt": {
        "op": "all_reduce_perf",
        "tests_version": "2.18.3",
        "nccl_version": "2.30.4+cuda13.2",
        "ranks": 16,
        "rows": 36,
        "avg_busbw": 433.477,
        "largest_size_busbw": 390.14,
        "peak_busbw": 488.19,
        "out_of_bounds": 0,
        "transport": None,
        "error": None,
    },
    "all_reduce_perf-2node-4rank-h100nvl-stepbytes-GOOD.txt": {
        "op": "all_reduce_perf",
        "ranks": 4,
        "hosts": ("gpu-0001", "gpu-0003"),
        "rows": 11,
        "avg_busbw": 9.11404,
        "largest_size_busbw": 11.24,
        "error": None,
    },
    "allgather-2gpu.txt": {
        "op": "all_gather_perf",
        "ranks": 2,
        "rows": 10,
        "avg_busbw": 156.979,
        "largest_size_busbw": 272.47,
        "transport": None,
        "error": None,
    },
    "allreduce-1gpu.txt": {
        "op": "all_reduce_perf",
        "ranks": 1,
        "rows": 25,
        "avg_busbw": 0.0,
        "error": None,
    },
    "allreduce-2gpu-ib-nodevice.txt": {
        "op": "all_reduce_perf",
        "nccl_version": "2.28.9+cuda13.0",
        "rows": 0,
        "avg_busbw": None,
        "ib_hca": "rocep1s0f",
        "ib_no_device": True,
        "net_plugin_failed": True,
        "net_ib_device_count": 0,
        "exit_code": 3,
    },
    "allreduce-2gpu-nvlink.txt": {
        "op": "all_reduce_perf",
        "rows": 27,
        "avg_busbw": 76.298,
        "largest_size_busbw": 313.52,
        "error": None,
    },
    "allreduce-2gpu-socket-debug.txt": {
        "op": "all_reduce_perf",
        "rows": 5,
        "avg_busbw": 2.37422,
        "largest_size_busbw": 2.86,
        "transport": "Socket",
        "networks": ("Socket",),
        "channel_nets": ("NET/Socket/0",),
        "ib_no_device": True,
        "net_plugin_failed": False,
        "gdr": False,
        "error": None,
    },
    "allreduce-2gpu.json": {
        "op": "all_reduce_perf",
        "rows": 27,
        "avg_busbw": 76.298006,
        "largest_size_busbw": 313.518334,
        "out_of_bounds": 0,
        "error": None,
    },
    "allreduce-per-iter.txt": {
        "op": "all_reduce_perf",
        "rows": 18,
        "avg_busbw": 4.00479,
        "largest_size_busbw": 37.2,
        "error": None,
    },
    "allreduce-timeout.txt": {
        "op": "all_reduce_perf",
        "rows": 5,
        "avg_busbw": None,
        "complete": False,
        "largest_size_busbw": 219.91,
        "exit_code": 124,
    },
    "dgx-spark-2node-all_gather_perf-16G-single-size-v2.17.6-partial.txt": {
        "op": "all_gather_perf",
        "tests_version": "2.17.6",
        "hosts": ("spark", "spark-3995"),
        "gpus": ("NVIDIA GB10",),
        "rows": 1,
        "avg_busbw": None,
        "out_of_bounds": 0,
        "out_of_bounds_ok": True,
        "largest_size_busbw": 20.95,
    },
    "dgx-spark-2node-all_gather_perf-1G-4G-via-qsfp-switch-healthy-21.4GBs.txt": {
        "op": "all_gather_perf",
        "hosts": ("spark-fb97", "spark-4440"),
        "gpus": ("NVIDIA GB10",),
        "rows": 3,
        "avg_busbw": 21.4033,
        "largest_size_busbw": 22.46,
        "error": None,
    },
    "dgx-spark-2node-all_gather_perf-merged-nics-v2.19.6.txt": {
        "op": "all_gather_perf",
        "tests_version": "2.19.6",
        "hosts": ("spark-101", "spark-102"),
        "rows": 6,
        "avg_busbw": 22.1205,
        "largest_size_busbw": 24.2,
        "error": None,
    },
    "dgx-spark-all_gather_perf-tail-rows-interleaved-ssh-timeouts-and-nccl-info-degraded.txt": {
        "op": "all_gather_perf",
        "rows": 3,
        "avg_busbw": 2.83174,
        "largest_size_busbw": 2.84,
        "gdr": False,
        "error": None,
    },
    "mpirun-2proc-allreduce-p2p.txt": {
        "op": "all_reduce_perf",
        "ranks": 2,
        "rows": 13,
        "avg_busbw": 62.6459,
        "transport": None,
        "error": None,
    },
    "mpirun-2proc-allreduce-socket-debug.txt": {
        "op": "all_reduce_perf",
        "rows": 4,
        "avg_busbw": 3.40208,
        "largest_size_busbw": 3.45,
        "transport": "Socket",
        "ib_no_device": True,
        "exit_code": 0,
        "error": None,
    },
    "mpirun-tag-output-all_reduce_perf_mpi-socket-2ranks-stderr-noise.txt": {
        "op": "all_reduce_perf_mpi",
        "tests_version": "2.18.0",
        "ranks": 2,
        "rows": 8,
        "avg_busbw": 1.57614,
        "largest_size_busbw": 2.31,
        "error": None,
    },
    "sendrecv-2gpu-socket.txt": {
        "op": "sendrecv_perf",
        "rows": 26,
        "avg_busbw": 0.837028,
        "largest_size_busbw": 1.68,
        "error": None,
    },
}

DEBUG: dict[str, dict[str, Any]] = {
    "dgx-spark-ib-hca-no-device-found-socket-fallback-sriov-vf.txt": {
        "op": None,
        "ib_hca": "rocep1s0f0v7",
        "ib_no_device": True,
        "transport": "Socket",
        "net_ib_device_count": 0,
    },
    "dgx-spark-mesh-plugin-channels-net-ib-4-5-gid3.txt": {
        "transport": "IB",
        "channel_nets": ("NET/IB/4", "NET/IB/5"),
        "gdr": False,
    },
    "dgx-spark-nccl-2.28.9-init-net-ib-two-rails-gdr-disabled-trimmed.txt": {
        "op": "all_gather_perf",
        "nccl_version": "2.28.9+cuda13.0",
        "transport": "IB",
        "net_ib_device_count": 2,
        "virtual_devices": ("rocep1s0f1", "roceP2p1s0f1"),
        "socket_ifname": "enp1s0f1np1",
        "gdr": False,
        "hosts": ("spark-fb97", "spark-4440"),
    },
    "nccl-2.19.3-init-ib-hca-set-using-network-IB.txt": {
        "nccl_version": "2.19.3+cuda12.3",
        "ib_hca": "mlx5_0",
        "transport": "IB",
        "net_ib_device_count": 1,
    },
    "nccl-2.27.6-socket-ifname-bootstrap-h100-vm.txt": {
        "nccl_version": "2.27.6+cuda13.0",
        "socket_ifname": "enp9s0np0",
        "transport": None,
        "ranks": 2,
    },
    "nccl-gdr-disabled-no-module-channels-net-ib-0.txt": {
        "transport": "IB",
        "channel_nets": ("NET/IB/0",),
        "gdr": False,
    },
    "nccl-ibext-sharp-plugin-net-ib-using-4-hcas.txt": {
        "transport": "IB",
        "networks": ("IBext",),
        "net_ib_device_count": 4,
    },
    "nccl-roce-2hca-gdr-disabled.txt": {"transport": "IB", "net_ib_device_count": 2, "gdr": False},
    "nccl-socket-channels-then-proxy-connect-warn.txt": {
        "transport": "Socket",
        "channel_nets": ("P2P/IPC/read", "NET/Socket/0"),
    },
    "nccl-warn-bootstrap-address-family-error.txt": {
        "transport": "IB",
        "networks": ("IBext_v6",),
        "net_ib_device_count": 8,
    },
}


def test_every_nccl_fixture_has_expectations() -> None:
    assert_covers("nccl-tests", TESTS)
    assert_covers("nccl-debug", DEBUG)


def _check(folder: str, name: str, want: dict[str, Any]) -> None:
    r = parse_nccl(load_real(folder, name))
    for key, value in want.items():
        got = len(r.rows) if key == "rows" else getattr(r, key)
        assert got == value, f"{name}: {key}"


@pytest.mark.parametrize("name", sorted(TESTS))
def test_nccl_tests_real(name: str) -> None:
    _check("nccl-tests", name, TESTS[name])


@pytest.mark.parametrize("name", sorted(DEBUG))
def test_nccl_debug_real(name: str) -> None:
    _check("nccl-debug", name, DEBUG[name])


def test_row_columns_healthy_gb10_all_gather() -> None:
    r = parse_nccl(
        load_real(
            "nccl-tests",
            "dgx-spark-2node-all_gather_perf-1G-4G-via-qsfp-switch-healthy-21.4GBs.txt",
        )
    )
    first = r.rows[0]
    assert (first.size, first.count, first.type, first.redop, first.root) == (
        1073741824,
        134217728,
        "float",
        "none",
        -1,
    )
    assert (first.time_out_of_place, first.algbw_out_of_place, first.busbw_out_of_place) == (
        27211.0,
        39.46,
        19.73,
    )
    assert (first.time_in_place, first.busbw_in_place, first.wrong_in_place) == (25806.7, 20.80, 0)
    assert r.rows[2].time_out_of_place == 96986.7


def test_sendrecv_in_place_wrong_is_na() -> None:
    r = parse_nccl(load_real("nccl-tests", "sendrecv-2gpu-socket.txt"))
    assert all(row.wrong_in_place is None for row in r.rows)
    assert all(row.wrong_out_of_place == 0 for row in r.rows)


def test_per_iteration_columns_do_not_shift_busbw() -> None:
    r = parse_nccl(load_real("nccl-tests", "allreduce-per-iter.txt"))
    last = r.rows[-1]
    assert (last.size, last.busbw_out_of_place, last.busbw_in_place) == (1048576, 37.20, 36.77)


def test_interleaved_rows_survive_ssh_noise() -> None:
    r = parse_nccl(
        load_real(
            "nccl-tests",
            "dgx-spark-all_gather_perf-tail-rows-interleaved-ssh-timeouts-and-nccl-info-degraded.txt",
        )
    )
    assert [row.size for row in r.rows] == [1073741824, 2147483648, 4294967296]
    assert [row.busbw_out_of_place for row in r.rows] == [2.82, 2.83, 2.83]


def test_failure_texts() -> None:
    r = parse_nccl(load_real("nccl-tests", "allreduce-2gpu-ib-nodevice.txt"))
    assert r.error is not None and "Test NCCL failure common.cu:222" in r.error
    assert any("Failed to initialize any NET plugin" in w for w in r.warnings)
    r = parse_nccl(load_real("nccl-tests", "allreduce-timeout.txt"))
    assert r.error is not None and "cut short" in r.error
    r = parse_nccl(load_real("nccl-debug", "nccl-warn-bootstrap-address-family-error.txt"))
    assert r.error is not None and "neither AF_INET(2) nor AF_INET6(10)" in r.error


def test_net_ib_devices_named() -> None:
    r = parse_nccl(
        load_real(
            "nccl-debug", "dgx-spark-nccl-2.28.9-init-net-ib-two-rails-gdr-disabled-trimmed.txt"
        )
    )
    assert [(d.index, d.name, d.port, d.link) for d in r.net_ib_devices] == [
        (0, "rocep1s0f1", 1, "RoCE"),
        (1, "roceP2p1s0f1", 1, "RoCE"),
    ]


def test_json_rows() -> None:
    r = parse_nccl(load_real("nccl-tests", "allreduce-2gpu.json"))
    assert r.rows[0].size == 8 and r.rows[0].type == "float" and r.rows[0].root == -1
    assert r.nccl_version == "22809"
    assert r.out_of_bounds_ok is True


def test_old_format_without_redop_root_and_pasted_without_hash() -> None:
    text = (
        "       size         count    type   time   algbw   busbw  error     time   algbw   busbw  error\n"
        "   33554432       8388608   float  4821.1    6.96   13.05  0e+00   4830.0    6.95   13.03  0e+00\n"
        " Out of bounds values : 0 OK\n"
        " Avg bus bandwidth    : 13.04\n"
    )
    r = parse_nccl(text)
    row = r.rows[0]
    assert (row.size, row.type, row.redop, row.root) == (33554432, "float", None, None)
    assert (row.busbw_out_of_place, row.busbw_in_place) == (13.05, 13.03)
