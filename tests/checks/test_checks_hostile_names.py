"""Names read from a node reach host files only as plain kernel names, quoted in shell lines:
hypothesis feeds hostile RDMA and interface names into the NCCL, netplan and PFC fix plans."""

from __future__ import annotations

import dataclasses
import shlex
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests_checks_support import load_case  # type: ignore[import-not-found]

from flows import plans
from flows.registry import by_fault, make_context
from wizard import hostvalues

NAMES = st.one_of(
    st.sampled_from(
        [
            "$(touch /tmp/fabwiz-pwned)",
            "`id`",
            "a b",
            "x;reboot",
            "mlx5_0\nexport LD_PRELOAD=/tmp/x.so",
            "'",
            '"',
            "%n",
            "..",
            "eth0:1",
            "a" * 16,
            "-rf",
            "rocep1s0f0",
        ]
    ),
    st.text(min_size=1, max_size=20),
)


def _case() -> tuple[Any, Any, Any, Any]:
    obs, s = load_case("nccl.hca-filter", "fault-nccl-hca-filter")
    ctx = make_context(
        obs,
        nodes=s["nodes"],
        switches=s["switches"],
        cabling={k: tuple(v) for k, v in s["cabling"].items()},
        management={k: tuple(v) for k, v in s["management"].items()},
    )
    check = by_fault("nccl.hca-filter")
    parsed = check.parse(obs, ctx)
    verdict = next(v for v in check.judge(parsed, ctx) if v.fault == "nccl.hca-filter")
    return ctx, check, parsed, verdict


CASE = _case()


def _with_names(ctx: Any, rdma: str, netdev: str) -> Any:
    node = next(n for n, rails in ctx.rails.items() if rails)
    rails = list(ctx.rails[node])
    rails[0] = dataclasses.replace(rails[0], rdma=rdma, netdev=netdev)
    return dataclasses.replace(ctx, rails={**ctx.rails, node: tuple(rails)}), node


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(NAMES, NAMES)
def test_hostile_names_never_reach_profile_d_or_nccl_conf_as_code(rdma: str, netdev: str) -> None:
    ctx, check, parsed, verdict = CASE
    hostile_ctx, node = _with_names(ctx, rdma, netdev)
    try:
        plan = check.fix(parsed, verdict, hostile_ctx)
    except hostvalues.HostValueError as exc:
        assert node in exc.message and "not written" in exc.message
        return
    assert plan is not None
    for change in plan.host_changes:
        for f in change.files:
            if f.path == plans.NCCL_PROFILE_PATH:
                # every line is one command of plain words: `export VAR=value`, `unset VAR`
                # (the GID index the profile stops pinning) or a comment
                for line in f.content.splitlines():
                    if line.startswith("#"):
                        continue
                    words = shlex.split(line)
                    assert words[0] in ("export", "unset") and len(words) == 2, line
                    if words[0] == "unset":
                        assert words[1].isidentifier(), line
                    assert "$" not in line and "`" not in line and ";" not in line
            if f.path == plans.NCCL_CONF_PATH:
                for line in f.content.splitlines():
                    assert "=" in line and "\n" not in line
    assert rdma in ("rocep1s0f0",) or hostvalues._RDMA.fullmatch(rdma)


@settings(max_examples=150, deadline=None)
@given(NAMES)
def test_hostile_netdev_names_never_reach_netplan_or_the_pfc_unit(netdev: str) -> None:
    ctx, _check, _parsed, _verdict = CASE
    hostile_ctx, node = _with_names(ctx, "rocep1s0f0", netdev)
    try:
        text = plans.netplan_text(node, hostile_ctx)
    except hostvalues.HostValueError as exc:
        assert "interface name" in exc.message and plans.NETPLAN_PATH in exc.message
    else:
        doc = yaml.safe_load(text)
        assert netdev in doc["network"]["ethernets"]
        assert hostvalues._NETDEV.fullmatch(netdev)
    unit = plans.pfc_unit_text(plans.safe_netdevs([netdev, "enp1s0f0np0"]))
    for line in unit.splitlines():
        if line.startswith("ExecStart=/usr/bin/mlnx_qos "):
            words = line.split()
            assert len(words) == 5 and "%" not in line and "$" not in line, line
        elif line.startswith("ExecStart="):
            # the one other command, seed 000's C-state setting, takes no name at all
            assert line == "ExecStart=-/usr/bin/cpupower idle-set -D 0", line


@pytest.mark.parametrize("bad", ["$(id)", "a b", "eth0:1", "..", "x" * 16, "tab\there"])
def test_netdev_rules(bad: str) -> None:
    with pytest.raises(hostvalues.HostValueError):
        hostvalues.netdev(bad)
    assert hostvalues.netdev("enP2p1s0f1np1") == "enP2p1s0f1np1"


def test_export_line_quotes() -> None:
    assert hostvalues.export_line("NCCL_IB_HCA", "=a,b") == "export NCCL_IB_HCA==a,b"
    assert hostvalues.export_line("X", "$(id)") == "export X='$(id)'"
