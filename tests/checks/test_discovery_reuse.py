"""The checks' rails come from the sweep that took the observations: rebuilt from recorded
outputs (replay) they are worked out from those outputs, else taken from `Observations.rails`
as the sweep worked them out, with the cabling applied either way."""

from __future__ import annotations

from dataclasses import replace

import pytest

from wizard import discovery
from wizard.model import ProbeResult, Rail
from wizard.probes import Observations

IBDEV = "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\nroceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Up)\n"


def _outputs() -> Observations:
    ib = ProbeResult(
        target="spark1", kind="ssh", command="ibdev2netdev", stdout=IBDEV, exit_status=0
    )
    table = ProbeResult(
        target="crs804",
        kind="api",
        command="/interface/bridge/host print",
        rows=({"mac-address": "AA:BB:CC:00:00:01", "on-interface": "qsfp56-dd-1-1"},),
    )
    return Observations(
        nodes={"spark1": {"ibdev2netdev": ib}}, switches={"crs804": {"bridge_host": table}}
    )


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = discovery.discover_rails

    def counting(node: str, *a: object, **kw: object) -> tuple[Rail, ...]:
        calls.append(node)
        return real(node, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(discovery, "discover_rails", counting)
    return calls


def test_recorded_outputs_are_worked_out(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch)
    rails = discovery.rails_from_observations(_outputs())
    assert calls == ["spark1"]
    assert [(r.netdev, r.rdma, r.port, r.half, r.pci) for r in rails["spark1"]] == [
        ("enp1s0f0np0", "rocep1s0f0", 0, "A", "0000:01:00.0"),
        ("enP2p1s0f0np0", "roceP2p1s0f0", 0, "B", "0002:01:00.0"),
    ]


def test_the_sweeps_rails_are_taken_and_cabled(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch)
    swept = (
        Rail("spark1", "enp1s0f0np0", "rocep1s0f0", 0, "A", mac="aa:bb:cc:00:00:01", mtu=9000),
        Rail("spark1", "enP2p1s0f0np0", "roceP2p1s0f0", 0, "B", mtu=9000),
    )
    obs = replace(_outputs(), rails={"spark1": swept})
    rails = discovery.rails_from_observations(obs)["spark1"]
    assert calls == []  # not worked out again
    assert [r.mtu for r in rails] == [9000, 9000]
    # the MAC learned on qsfp56-dd-1-1 cables the rail, and its sibling half shares the cable
    assert [(r.switch, r.switch_port) for r in rails] == [("crs804", "qsfp56-dd-1-1")] * 2
    # the inventory's map wins over the host tables
    mapped = discovery.rails_from_observations(
        obs, {"spark1/enp1s0f0np0": ("crs804", "qsfp56-dd-2-1")}
    )["spark1"]
    assert [r.switch_port for r in mapped] == ["qsfp56-dd-2-1"] * 2
