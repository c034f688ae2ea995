"""perftest parser on every real perftest output (text and --out_json)."""

from __future__ import annotations

from typing import Any

import pytest
from parsers_support import assert_covers, load_real

from wizard.parsers.perftest import MIB_TO_GBPS, parse_perftest, parse_perftest_json

# file -> key values it really contains (read off each file)
EXPECTED: dict[str, dict[str, Any]] = {
    "dell-gb10-ib_write_bw-server-waiting.txt": {
        "test": "ib_write_bw",
        "device": None,
        "waiting_for_client": True,
        "rows": 0,
        "bw_avg_gbps": None,
        "error_kind": "no-result-row",
    },
    "dgx-spark-eugr-ib_write_bw-q4-rdma_cm-force-link-IB.txt": {
        "test": "ib_write_bw",
        "device": "rocep1s0f1",
        "qps": 4,
        "mtu": 1024,
        "link_type": "IB",
        "rdma_cm": True,
        "server": "192.168.177.12",
        "reported_unit": "Gb/sec",
        "msg_size": 65536,
        "bw_peak_gbps": 111.72,
        "bw_avg_gbps": 111.71,
        "rows": 1,
        "error": None,
    },
    "dgx-spark-eugr-ib_write_lat-rdma_cm.txt": {
        "test": "ib_write_lat",
        "latency": True,
        "device": "rocep1s0f1",
        "qps": 1,
        "rows": 0,
        "bw_avg_gbps": None,
        "error": None,
    },
    "dgx-spark-ib_write_bw-roceP2p1s0f0-run_infinitely-gbits.txt": {
        "test": "ib_write_bw",
        "device": "roceP2p1s0f0",
        "qps": 1,
        "mtu": 1024,
        "gid_index": 3,
        "link_type": "Ethernet",
        "server": "192.168.201.12",
        "msg_size": 65536,
        "bw_peak_gbps": 0.0,
        "peak_measured": False,
        "rows": 6,
        "error": None,
    },
    "dgx-spark-ib_write_bw-rocep1s0f0-run_infinitely-gbits.txt": {
        "test": "ib_write_bw",
        "device": "rocep1s0f0",
        "qps": 1,
        "gid_index": 3,
        "server": "192.168.200.12",
        "msg_size": 65536,
        "peak_measured": False,
        "rows": 5,
        "error": None,
    },
    "dgx-spark-ib_write_bw-two-concurrent-q4-interleaved-truncated.txt": {
        "test": "ib_write_bw",
        "device": "rocep1s0f1",
        "devices": ("rocep1s0f1", "roceP2p1s0f1"),
        "qps": 4,
        "mtu": 4096,
        "msg_size": 1048576,
        "bw_avg_gbps": 98.04,
        "rows": 2,
        "error": None,
    },
    "error-couldnt-connect-unable-to-init-socket.txt": {
        "test": "ib_write_bw",
        "server": "192.168.125.211",
        "rows": 0,
        "error_kind": "connect-failed",
        "bw_avg_gbps": None,
    },
    "error-failed-status-4-syndrom-0x51-bidir-cuda.txt": {
        "test": "perftest",
        "rows": 0,
        "error_kind": "local-protection",
        "wc_status": 4,
        "syndrome": "0x51",
    },
    "error-read-bw-server-couldnt-read-remote-address.txt": {
        "test": "ib_read_bw",
        "device": "pib_0",
        "mtu": 4096,
        "reported_unit": "MB/sec",
        "rows": 0,
        "error_kind": "remote-address",
    },
    "gb10-ib_write_bw-D10-cpu_util-gbits-roceP2p1s0f0.txt": {
        "test": "ib_write_bw",
        "device": "roceP2p1s0f0",
        "gid_index": 3,
        "server": "192.168.100.10",
        "msg_size": 65536,
        "bw_peak_gbps": 0.0,
        "bw_avg_gbps": 92.57,
        "rows": 1,
        "error": None,
    },
    "new-header-lockfree-ddp-rdma_cm-run-infinitely-partial.txt": {
        "test": "ib_write_bw",
        "device": "mlx5_0",
        "mtu": 4096,
        "gid_index": 0,
        "rdma_cm": True,
        "bw_avg_gbps": 42.31,
        "rows": 1,
        "error": None,
    },
}


def test_every_perftest_fixture_has_expectations() -> None:
    assert_covers("perftest", EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_perftest_real(name: str) -> None:
    r = parse_perftest(load_real("perftest", name))
    for key, want in EXPECTED[name].items():
        got = len(r.rows) if key == "rows" else getattr(r, key)
        assert got == want, f"{name}: {key}"


def test_run_infinitely_averages_all_rows() -> None:
    r = parse_perftest(
        load_real("perftest", "dgx-spark-ib_write_bw-rocep1s0f0-run_infinitely-gbits.txt")
    )
    assert [row.bw_avg_gbps for row in r.rows] == [92.57, 92.57, 92.57, 92.56, 92.57]
    assert r.bw_avg_gbps == pytest.approx(92.568)
    r2 = parse_perftest(
        load_real("perftest", "dgx-spark-ib_write_bw-roceP2p1s0f0-run_infinitely-gbits.txt")
    )
    assert r2.bw_avg_gbps == pytest.approx(97.2817, abs=1e-3)


def test_cpu_util_column() -> None:
    r = parse_perftest(
        load_real("perftest", "gb10-ib_write_bw-D10-cpu_util-gbits-roceP2p1s0f0.txt")
    )
    assert r.rows[0].cpu_util_pct == 5.07
    assert r.rows[0].iterations == 1059332
    assert r.rows[0].msg_rate_mpps == 0.176557


def test_error_texts() -> None:
    r = parse_perftest(load_real("perftest", "error-couldnt-connect-unable-to-init-socket.txt"))
    assert r.error is not None
    assert "Couldn't connect to 192.168.125.211:18515" in r.error
    assert "Unable to init the socket connection" in r.error
    r = parse_perftest(load_real("perftest", "error-failed-status-4-syndrom-0x51-bidir-cuda.txt"))
    assert r.error is not None
    assert "Failed status 4" in r.error and "scnt=828, ccnt=700" in r.error
    r = parse_perftest(
        load_real("perftest", "error-read-bw-server-couldnt-read-remote-address.txt")
    )
    assert r.error is not None and "Couldn't read remote address" in r.error


def test_latency_rows() -> None:
    r = parse_perftest(load_real("perftest", "dgx-spark-eugr-ib_write_lat-rdma_cm.txt"))
    row = r.latency_rows[0]
    assert (row.msg_size, row.iterations, row.t_min_us, row.t_max_us, row.t_typical_us) == (
        2,
        1000,
        1.42,
        1.93,
        1.47,
    )
    assert (row.p99_us, row.p999_us) == (1.57, 1.93)


def test_perftest_json_mbps_converted() -> None:
    r = parse_perftest(load_real("perftest-json", "write-bw-json-mlx5_11-MBps.json"))
    assert r.test == "ib_write_bw"
    assert r.device == "mlx5_11" and r.gid_index == 1 and r.mtu == 1024 and r.qps == 1
    assert r.reported_unit == "MB/sec"
    assert r.msg_size == 65536
    assert r.bw_avg_gbps == pytest.approx(2229.27 * MIB_TO_GBPS, abs=1e-3)
    assert r.bw_avg_gbps == pytest.approx(18.70, abs=0.01)
    assert r.bw_peak_gbps == pytest.approx(44.405, abs=0.01)


def test_every_perftest_json_fixture_has_expectations() -> None:
    assert_covers("perftest-json", {"write-bw-json-mlx5_11-MBps.json"})


def test_json_units_can_be_forced() -> None:
    text = load_real("perftest-json", "write-bw-json-mlx5_11-MBps.json")
    assert parse_perftest_json(text, report_gbits=True).bw_avg_gbps == 2229.27


# Synthetic variants built from real lines (the formats tool-formats.md documents).
HEADER = """---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF          Device         : rocep1s0f0
 Number of qps   : 1            Transport type : IB
---------------------------------------------------------------------------------------
"""


@pytest.mark.parametrize(
    "line",
    [
        "  Failed status 12: wr_id 0 syndrom 0x81",
        " Failed status-transport retry counter exceeded (12): wr_id 0 syndrom 0x81",
    ],
)
def test_retry_exceeded_old_and_new_forms(line: str) -> None:
    text = HEADER + " Completion with error at client\n" + line + "\nscnt=128, ccnt=0\n"
    r = parse_perftest(text)
    assert r.error_kind == "retry-exceeded"
    assert r.wc_status == 12 and r.syndrome == "0x81"
    assert r.error is not None and "transport retry counter exceeded" in r.error


def test_header_without_rows_is_a_failed_result() -> None:
    text = (
        HEADER
        + " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
    )
    r = parse_perftest(text)
    assert r.error == "no result row" and r.error_kind == "no-result-row"
    assert r.device == "rocep1s0f0"


def test_mib_per_sec_rows_convert_to_gbits() -> None:
    text = HEADER + (
        " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n"
        " 65536      5000             11000.00            10000.00             0.160000\n"
    )
    r = parse_perftest(text)
    assert r.reported_unit == "MiB/sec"
    assert r.bw_avg_gbps == pytest.approx(83.886, abs=1e-3)


def test_bidirectional_title() -> None:
    text = HEADER.replace("RDMA_Write BW Test", "RDMA_Write Bidirectional BW Test")
    text += (
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
        " 65536      10000            206.10             205.90             0.392\n"
    )
    r = parse_perftest(text)
    assert r.bidirectional and r.test == "ib_write_bw" and r.bw_avg_gbps == 205.90
