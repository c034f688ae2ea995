"""Findings from real fixtures, and `fabwiz analyze` end to end (click's CliRunner)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from parsers_support import REAL, load_real

from flows.analyze import analyze_text
from screens.commands.analyze import analyze
from wizard.model import Status

FINDINGS = {  # (folder, file) -> {(fault, status)}
    ("nccl-tests", "allreduce-2gpu-socket-debug.txt"): {
        ("nccl.socket-fallback", "fail"),
        ("benign.gdr-disabled", "benign"),
    },
    ("nccl-tests", "allreduce-2gpu-ib-nodevice.txt"): {("nccl.hca-filter", "fail")},
    ("nccl-debug", "dgx-spark-ib-hca-no-device-found-socket-fallback-sriov-vf.txt"): {
        ("nccl.socket-fallback", "fail"),
        ("nccl.hca-filter", "fail"),
    },
    ("nccl-debug", "dgx-spark-nccl-2.28.9-init-net-ib-two-rails-gdr-disabled-trimmed.txt"): {
        ("benign.gdr-disabled", "benign")
    },
    (
        "nccl-tests",
        "dgx-spark-2node-all_gather_perf-1G-4G-via-qsfp-switch-healthy-21.4GBs.txt",
    ): set(),
    ("perftest", "dgx-spark-eugr-ib_write_bw-q4-rdma_cm-force-link-IB.txt"): set(),
    ("perftest-json", "write-bw-json-mlx5_11-MBps.json"): {("host.cx7-degraded", "fail")},
    ("dmesg", "dgx-spark-dmesg-grep-insufficient-power-pcie-bandwidth-hotplug.txt"): {
        ("benign.pcie-27w", "benign")
    },
    ("dmesg", "gb10-cx7-pcie-hotplug-cable-plugin-link-up.txt"): {
        ("process.undrained-measurement", "warn")
    },
    ("mlnx_qos", "mlnx_qos-trust-pcp-set-pfc3-buffer-map-vendor-tsa.txt"): {
        ("host.pfc-enabled", "fail")
    },
    ("iproute2", "ip-j-addr-spark1-dup-ip-two-rails.json"): {
        ("host.duplicate-ip", "fail"),
        ("host.ipv6-on-fabric", "fail"),  # the addressing check's status
        ("host.mtu", "fail"),
    },
    # a pasted sysctl does not show whether its host has several addressed rails
    ("sysctl", "sysctl-arp-defaults.txt"): {("host.arp-sysctls", "unknown")},
    ("sysctl", "sysctl-w-arp-roce.txt"): set(),
    ("lspci", "gb10-lspci-vvv-lnkcap-lnksta-x4.txt"): set(),
    ("ping", "ping-M-do-s1433-message-too-long-mtu1460-failure.txt"): {("host.mtu", "fail")},
    ("ping", "ping-M-do-s8972-peer-mtu1500-veth-nobufs.txt"): {("switch.mtu", "warn")},
    ("ping", "ping-M-do-s8972-jumbo-ok.txt"): set(),
    ("routeros-export", "export-v7.24.4-crs504-roce-pfc-qos-second-bridge-roce.rsc"): {
        ("switch.qos-pfc-stall", "fail"),
        ("switch.mtu", "fail"),
    },
    ("routeros-cli", "switch-qos-port-print-pfc-crs812-rx-tx-pause.txt"): {
        ("switch.qos-pfc-stall", "fail")
    },
    ("routeros-cli", "bridge-port-print-v7-columns-HW-OFFLOAD-H-flags.txt"): set(),
}


@pytest.mark.parametrize(("folder", "name"), sorted(FINDINGS))
def test_findings_real(folder: str, name: str) -> None:
    result = analyze_text(load_real(folder, name))
    got = {(v.fault, v.status.value) for v in result.findings}
    assert got == FINDINGS[(folder, name)]


def _perftest(bw: str, extra: str = "") -> str:
    return (
        "---------------------------------------------------------------------------------------\n"
        "                    RDMA_Write BW Test\n"
        " Dual-port       : OFF          Device         : rocep1s0f0\n"
        "---------------------------------------------------------------------------------------\n"
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
        f" 65536      5000             0.00               {bw}             0.02\n" + extra
    )


def test_signature_bands() -> None:
    degraded = analyze_text(_perftest("13.20"))
    assert [v.fault for v in degraded.findings] == ["host.cx7-degraded"]
    assert "host.cx7-throttled" in degraded.findings[0].summary
    software = analyze_text(_perftest("9.62"))
    assert [v.fault for v in software.findings] == ["switch.offload-split-cage"]
    assert "9.62 Gb/s" in software.findings[0].summary
    healthy = analyze_text(_perftest("109.20"))
    assert healthy.findings == ()


def test_retry_exceeded_names_both_faults() -> None:
    text = _perftest("0.00").split(" #bytes")[0] + (
        " Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81\n"
    )
    result = analyze_text(text)
    assert {v.fault for v in result.findings} == {"switch.qos-pfc-stall", "host.duplicate-ip"}
    assert all(v.status is Status.FAIL for v in result.findings)


def test_iperf_single_stream_is_benign() -> None:
    text = json.dumps(
        {
            "start": {"test_start": {"protocol": "TCP", "num_streams": 1}},
            "end": {
                "sum_sent": {"bits_per_second": 12.1e9},
                "sum_received": {"bits_per_second": 12.0e9},
            },
        }
    )
    result = analyze_text(text)
    assert [(v.fault, v.status) for v in result.findings] == [
        ("benign.iperf-single-stream", Status.BENIGN)
    ]


def test_lspci_narrow_link() -> None:
    result = analyze_text(
        "0000:01:00.0 Ethernet controller: Mellanox Technologies MT2910 "
        "Family [ConnectX-7]\n\t\tLnkSta:\tSpeed 32GT/s, Width x2\n"
    )
    assert [v.fault for v in result.findings] == ["host.pcie-width"]


def _paths(*parts: tuple[str, str]) -> list[str]:
    paths = [REAL / folder / name for folder, name in parts]
    if not all(p.is_file() for p in paths):
        pytest.skip("../shared/fixtures/real is absent")
    return [str(p) for p in paths]


def test_cli_json_on_real_fixtures(tmp_path: Path) -> None:
    files = _paths(
        ("perftest", "dgx-spark-eugr-ib_write_bw-q4-rdma_cm-force-link-IB.txt"),
        ("nccl-tests", "allreduce-2gpu-socket-debug.txt"),
        ("ibdev2netdev", "dgx-spark-5c2d-port0-up.txt"),
        ("netplan", "dgx-spark-eugr-40-cx7-dual-twins-mtu9000.yaml"),
    )
    result = CliRunner().invoke(analyze, [*files, "--json"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert [f["kind"] for f in data["files"]] == [
        "perftest",
        "nccl-tests",
        "ibdev2netdev",
        "unknown",
    ]
    perf, nccl, ibdev, unknown = data["files"]
    assert perf["path"] == files[0]
    assert perf["parsed"]["test"] == "ib_write_bw"
    assert perf["parsed"]["bw_avg_gbps"] == 111.71
    assert perf["parsed"]["bw_peak_gbps"] == 111.72
    assert perf["parsed"]["msg_size"] == 65536
    assert perf["parsed"]["error"] is None
    assert perf["findings"] == []
    assert nccl["parsed"]["op"] == "all_reduce_perf"
    assert nccl["parsed"]["avg_busbw"] == 2.37422
    assert nccl["parsed"]["transport"] == "Socket"
    assert nccl["parsed"]["error"] is None
    assert nccl["parsed"]["rows"][-1]["size"] == 268435456
    assert nccl["parsed"]["rows"][-1]["busbw_out_of_place"] == 2.61
    assert nccl["parsed"]["rows"][-1]["busbw_in_place"] == 2.86
    assert {(f["fault"], f["status"]) for f in nccl["findings"]} == {
        ("nccl.socket-fallback", "fail"),
        ("benign.gdr-disabled", "benign"),
    }
    assert all(f["summary"] for f in nccl["findings"])
    assert ibdev["parsed"]["mappings"][0] == {
        "rdma": "rocep1s0f0",
        "port": 1,
        "netdev": "enp1s0f0np0",
        "up": True,
        "state": "Up",
        "half": "A",
    }
    assert unknown["parsed"] is None and unknown["findings"] == []
    assert "network:" in unknown["raw"]


def test_cli_unreadable_file_is_named_and_others_still_analysed(tmp_path: Path) -> None:
    files = _paths(("mlnx_qos", "mlnx_qos-trust-pcp-set-pfc3-buffer-map-vendor-tsa.txt"))
    missing = str(tmp_path / "missing.txt")
    result = CliRunner().invoke(analyze, [missing, *files, "--json"])
    assert result.exit_code == 2
    assert f"cannot read {missing}" in result.stderr
    data = json.loads(result.stdout)
    assert data["files"][0]["path"] == missing and "cannot read" in data["files"][0]["error"]
    assert data["files"][1]["kind"] == "mlnx_qos"
    assert data["files"][1]["parsed"]["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert data["files"][1]["findings"][0]["fault"] == "host.pfc-enabled"


def test_cli_table_and_exit_zero() -> None:
    files = _paths(
        ("sysctl", "sysctl-w-arp-roce.txt"),
        ("dmesg", "dgx-spark-dmesg-grep-insufficient-power-pcie-bandwidth-hotplug.txt"),
    )
    result = CliRunner().invoke(analyze, files)
    assert result.exit_code == 0, result.output
    assert "sysctl" in result.output and "kernel-log" in result.output
    assert "benign.pcie-27w" in result.output


def test_registered_in_the_fabwiz_group() -> None:
    from screens.cli import cli

    files = _paths(("perftest", "error-couldnt-connect-unable-to-init-socket.txt"))
    result = CliRunner().invoke(cli, ["analyze", "--json", *files])
    assert result.exit_code == 0, result.output
    entry = json.loads(result.stdout)["files"][0]
    assert entry["kind"] == "perftest"
    assert entry["parsed"]["test"] == "ib_write_bw"
    assert entry["parsed"]["bw_avg_gbps"] is None
    assert entry["parsed"]["error"].startswith("Couldn't connect to 192.168.125.211:18515")


def test_a_rule_that_raises_is_unknown_naming_its_check(monkeypatch: pytest.MonkeyPatch) -> None:
    import flows.analyze
    from flows.base import PastedRule
    from flows.registry import by_fault

    def broken(text: str, ctx: object) -> list[object]:
        raise ValueError("bad row")

    check = by_fault("host.pfc-enabled")
    monkeypatch.setattr(flows.analyze, "PASTED_RULES", ((check, PastedRule(("sysctl",), broken)),))
    result = analyze_text("net.ipv4.conf.all.arp_ignore = 1\n")
    assert result.kind == "sysctl" and result.parsed is not None
    (v,) = result.findings
    assert (v.fault, v.status, v.check) == ("host.pfc-enabled", Status.UNKNOWN, check.id)
    assert "ValueError: bad row" in v.summary
    assert v.evidence[0].target == "fabwiz"


def test_cli_table_shows_what_a_file_holds_as_plain_text(tmp_path: Path) -> None:
    """A pasted output is the targets' text: a device named with markup and an escape sequence
    is shown as written, without the escape, and never read as markup (`[/x]` crashed the
    table)."""
    hostile = "roce[/x][bold]\x1b]0;pwned\x07\x1b[2J"
    text = (
        "-" * 87
        + "\n                    RDMA_Write BW Test\n"
        + f" Dual-port       : OFF          Device         : {hostile}\n"
        + " Number of qps   : 1            Transport type : IB\n"
        + "-" * 87
        + "\n Completion with error at client\n"
        + " Failed status 12: wr_id 0 syndrom 0x81\nscnt=128, ccnt=0\n"
    )
    path = tmp_path / "ib_write_bw.txt"
    path.write_text(text)
    result = CliRunner().invoke(analyze, [str(path)])
    assert result.exit_code in (0, 1), result.exception  # 1: the retry error is a finding
    assert "[/x]" in result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
