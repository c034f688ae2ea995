"""The switch's model, RouterOS release, routerboard firmware and serial are read and recorded;
RouterOS 7.20/7.21 on a Marvell CRS is a warning (seed 000's reference)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from flows.base import Context
from flows.checks import switch_release
from flows.expectations import DEFAULT
from screens.commands.check import check
from wizard.model import ProbeResult, Status
from wizard.probes import Observations


def _obs(version: str, model: str = "CRS804-4DDQ", firmware: str | None = None) -> Observations:
    def res(path: str, row: dict[str, str]) -> ProbeResult:
        return ProbeResult(target="sw", kind="api", command=f"{path} print", rows=(row,))

    return Observations(
        switches={
            "sw": {
                "resource": res("/system/resource", {"version": version, "board-name": model}),
                "routerboard": res(
                    "/system/routerboard",
                    {
                        "model": model,
                        "serial-number": "HJ10ABC1234",
                        "current-firmware": firmware or version.split(maxsplit=1)[0],
                        "upgrade-firmware": version.split(maxsplit=1)[0],
                    },
                ),
            }
        }
    )


CTX = Context(expectations=DEFAULT, switches=("sw",))


@pytest.mark.parametrize(
    ("version", "model", "status"),
    [
        ("7.21.1 (stable)", "CRS804-4DDQ", Status.WARN),
        ("7.20 (stable)", "CRS812-8DS-2DQ-2DDQ", Status.WARN),
        ("7.21rc3 (testing)", "CRS504-4XQ", Status.WARN),
        ("7.23.2 (stable)", "CRS804-4DDQ", Status.PASS),
        ("7.19.4 (long-term)", "CRS804-4DDQ", Status.PASS),
        ("7.210 (stable)", "CRS804-4DDQ", Status.PASS),  # not 7.21
        ("7.21.1 (stable)", "CCR2004-16G-2S+", Status.PASS),  # not a Marvell CRS
    ],
)
def test_the_regression_is_a_release_on_a_marvell_crs(
    version: str, model: str, status: Status
) -> None:
    [v] = switch_release.CHECK.run(_obs(version, model), CTX)
    assert v.status is status
    assert v.fault == "switch.routeros-rdma-regression"


def test_model_version_firmware_and_serial_are_recorded() -> None:
    [v] = switch_release.CHECK.run(_obs("7.23.2 (stable)", firmware="7.19.4"), CTX)
    assert v.status is Status.PASS
    assert v.evidence[0].observed == (
        "CRS804-4DDQ, RouterOS 7.23.2 (stable), routerboard firmware 7.19.4, serial HJ10ABC1234; "
        "routerboard firmware 7.19.4 lags 7.23.2"
    )


def test_an_unreadable_resource_is_unknown() -> None:
    obs = Observations(
        switches={
            "sw": {"resource": ProbeResult(target="sw", kind="api", command="x", error="timeout")}
        }
    )
    [v] = switch_release.CHECK.run(obs, CTX)
    assert v.status is Status.UNKNOWN and v.targets == ("sw",)


@pytest.mark.lab
def test_the_lab_switch_reports_the_release_its_facts_give() -> None:
    res = CliRunner().invoke(
        check,
        ["--lab", "routeros-7-21-regression", "--json", "--time-scale", "1000"],
        catch_exceptions=False,
    )
    report = json.loads(res.stdout)
    [f] = [f for f in report["findings"] if f["fault"] == "switch.routeros-rdma-regression"]
    assert f["status"] == "warn" and f["targets"] == ["crs804"]
    assert f["evidence"][0]["observed"].startswith(
        "CRS804-4DDQ, RouterOS 7.21.1 (stable), routerboard firmware 7.21.1, serial HJ10"
    )
    assert "/system/package/update install" in f["summary"]
