"""Property: every parser raises ParseError and nothing else, on random text and on mutated
real fixtures (lines dropped, duplicated, truncated, bytes flipped)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parsers_support import REAL, real_files

from flows.analyze import analyze_text
from wizard.errors import ParseError
from wizard.parsers import ethtool, iproute2, nccl, nmcli, perftest, routeros
from wizard.parsers.detect import PARSERS, detect

# Every public parse function, not only the ones detect dispatches to.
ALL_PARSERS: dict[str, Callable[[str], Any]] = {
    **PARSERS,
    "perftest_json": perftest.parse_perftest_json,
    "nccl_json": nccl.parse_nccl_json,
    "ip_any": iproute2.parse_ip,
    "ethtool_settings": ethtool.parse_ethtool,
    "ethtool_driver": ethtool.parse_ethtool_driver,
    "ethtool_fec": ethtool.parse_ethtool_fec,
    "ethtool_module": ethtool.parse_ethtool_module,
    "ros_export": routeros.parse_export,
    "ros_cli": routeros.parse_cli,
    "ros_log": routeros.parse_log,
    "ros_sentences": routeros.parse_api_sentences,
    "ros_json": routeros.parse_api_json,
    "ros_repr": routeros.parse_api_python_repr,
    "nmcli_list": nmcli.parse_list,
    "nmcli_details": nmcli.parse_details,
}

FOLDERS = {
    "perftest": ["perftest", "perftest-json"],
    "nccl-tests": ["nccl-tests", "nccl-debug"],
    "ibdev2netdev": ["ibdev2netdev"],
    "ip-json": ["iproute2"],
    "ip-brief": ["iproute2"],
    "ip-text": ["iproute2"],
    "ethtool": ["ethtool", "ethtool-fec", "ethtool-m"],
    "ethtool-stats": ["ethtool-S"],
    "mlnx_qos": ["mlnx_qos"],
    "sysctl": ["sysctl"],
    "sysfs": ["sysfs-infiniband"],
    "lspci": ["lspci"],
    "kernel-log": ["dmesg"],
    "ping": ["ping"],
    "iperf3": ["iperf3-json"],
    "routeros": ["routeros-api", "routeros-cli", "routeros-export"],
    "rdma-link": ["rdma-link"],
    "show-gids": ["show_gids"],
    "ibstat": ["ibstat"],
}


def _corpus(kind: str) -> list[str]:
    texts = []
    for folder in FOLDERS[kind]:
        for name in real_files(folder):
            texts.append((REAL / folder / name).read_text(encoding="utf-8", errors="replace"))
    return texts


def _only_parse_error(parser: Callable[[str], Any], text: str) -> None:
    try:
        parser(text)
    except ParseError as exc:
        assert exc.raw == text


# Text built from the characters and tokens the real formats use, so the fuzzing goes deep.
TOKENS = st.sampled_from(
    [
        "\n",
        " ",
        "\t",
        ":",
        "=",
        "#",
        "[",
        "]",
        "{",
        "}",
        '"',
        "\\",
        "/",
        "-",
        "*",
        ",",
        "0",
        "1",
        "65536",
        "9000",
        "Gb/sec",
        "MB/sec",
        "BW peak[Gb/sec]",
        "#bytes",
        "NCCL INFO ",
        "NCCL WARN ",
        "Using network Socket",
        "via NET/IB/0",
        "# Avg bus bandwidth    : ",
        "port 1 ==> ",
        "(Up)",
        "!re",
        "!done",
        "=.id=*1",
        "Flags: X - disabled",
        " # NAME ",
        "/interface bridge port",
        "add",
        "set",
        "[ find ]",
        "LnkSta: Speed 32GT/s, Width x4",
        "PING ",
        "mtu=",
        "enabled ",
        "Speed: ",
        "Mb/s",
        "Failed status 12: wr_id 0 syndrom 0x81",
        "RDMA_Write BW Test",
        "float",
        "sum",
        "-1",
        "N/A",
        "[1,0]<stdout>:",
        "rocep1s0f0",
        "\xa0",
        "\r",
    ]
)
TEXT = st.one_of(st.text(max_size=400), st.lists(TOKENS, max_size=80).map("".join))


@pytest.mark.parametrize("kind", sorted(ALL_PARSERS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT)
def test_random_text_only_raises_parse_error(kind: str, text: str) -> None:
    _only_parse_error(ALL_PARSERS[kind], text)


@st.composite
def mutated(draw: st.DrawFn, texts: list[str]) -> str:
    text = draw(st.sampled_from(texts))
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(0, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["drop", "dup", "cut", "flip", "swap"]))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "cut":
            lines[i] = lines[i][: draw(st.integers(0, max(0, len(lines[i]) - 1)))]
        elif op == "flip" and lines[i]:
            j = draw(st.integers(0, len(lines[i]) - 1))
            lines[i] = lines[i][:j] + draw(st.characters()) + lines[i][j + 1 :]
        elif op == "swap":
            k = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[k] = lines[k], lines[i]
    joined = "".join(lines)
    cut = draw(st.integers(0, len(joined)))
    return joined[:cut] if draw(st.booleans()) else joined


@pytest.mark.parametrize("kind", sorted(PARSERS))
def test_mutated_fixtures_only_raise_parse_error(kind: str) -> None:
    corpus = _corpus(kind)
    if not corpus:
        pytest.skip("../shared/fixtures/real is absent")

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(text=mutated(corpus))
    def run(text: str) -> None:
        _only_parse_error(PARSERS[kind], text)
        assert detect(text) in {*PARSERS, "unknown"}
        analyze_text(text)  # detect + parse + judge never raises

    run()
