"""A switch log line is evidence only when it is newer than this session's last change of the
switch: the time of a change is read from the target's own clock (`/system/clock`, `date +%s`)
right after it lands, and an offload line older than it is history."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest

from flows.checks import forwarding, switch_offload
from flows.registry import make_context
from wizard import changes
from wizard.inventory import load_inventory, resolve_password
from wizard.lab.lab import Lab
from wizard.lab.scenarios import load_text
from wizard.model import ProbeResult, Status
from wizard.probes import Observations
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport
from wizard.transports.ssh import SshTarget, SshTransport

REF = dt.datetime(2026, 12, 1, 13, 45, 56, tzinfo=dt.UTC).timestamp()


@pytest.mark.parametrize(
    ("text", "offset_s"),
    [
        ("2026-12-01 13:45:56", 0),
        ("dec/01/2026 13:40:56", -300),
        ("nov/30 13:45:56", -86400),
        ("13:45:50", -6),
    ],
)
def test_log_times_of_every_routeros_format_land_on_the_clock_scale(
    text: str, offset_s: int
) -> None:
    assert changes.log_time(text, REF) == REF + offset_s


def test_unreadable_log_times_are_none() -> None:
    assert changes.log_time("yesterday", REF) is None
    assert changes.log_time("feb/30/2026 10:00:00", REF) is None


def _log(time_text: str) -> Observations:
    row = {
        "time": time_text,
        "topics": "bridge,info",
        "message": 'hardware offloading activated on bridge "bridge" ports: qsfp56-dd-1-1',
    }
    res = ProbeResult(target="sw", kind="api", command="/log print", rows=(row,))
    return Observations(switches={"sw": {"log": res}})


def test_an_offload_line_older_than_the_change_is_history() -> None:
    obs = _log("2026-12-01 13:40:00")
    assert forwarding.log_evidence(obs, "sw", "bridge", ("qsfp56-dd-1-1",)).status == Status.PASS
    ev = forwarding.log_evidence(obs, "sw", "bridge", ("qsfp56-dd-1-1",), since=REF)
    assert ev.status == Status.UNKNOWN
    assert "predates this session's change at 2026-12-01 13:45:56" in ev.observed
    newer = forwarding.log_evidence(_log("13:46:10"), "sw", "bridge", (), since=REF)
    assert newer.status == Status.PASS


async def test_stamp_reads_each_targets_own_clock() -> None:
    class Api:
        async def call(self, path: str, verb: str, **args: str) -> list[dict[str, str]]:
            assert (path, verb) == ("/system/clock", "print")
            return [{"date": "dec/01/2026", "time": "13:45:56", "gmt-offset": "+01:00"}]

    async def run(node: str, command: str) -> ProbeResult:
        return ProbeResult(target=node, kind="ssh", command=command, stdout="1796132756\n")

    plan = SimpleNamespace(
        switch_changes=[SimpleNamespace(switch="sw")], host_changes=[SimpleNamespace(node="n1")]
    )
    got: dict[str, float] = {"old": 1.0}
    await changes.stamp(got, plan, lambda _s: Api(), run)
    assert got == {"old": 1.0, "sw": REF, "n1": 1796132756.0}


TWO = "name: two\ntopology: {nodes: 2, switches: [{model: CRS804-4DDQ}], cables_per_node: 1}\n"


@pytest.mark.lab
async def test_lab_change_makes_old_lines_history_and_the_new_line_proof() -> None:
    from flows.checks.switch_offload import CHECK as OFFLOAD
    from wizard.fabric import InventoryFabric

    async with Lab(load_text(TWO, path="two.yaml"), time_scale=50.0) as lab:
        inv = load_inventory(lab.inventory_path)
        ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
        sws = {
            s.name: RouterOsTransport(RouterOsTarget.from_spec(s, resolve_password(s)))
            for s in inv.switches
        }
        fabric = InventoryFabric(inv, ssh, sws)
        api = fabric.api("crs804")
        before = await fabric.sweep(OFFLOAD.probes)
        stamped: dict[str, float] = {}
        plan = SimpleNamespace(switch_changes=[SimpleNamespace(switch="crs804")])
        await changes.stamp(stamped, plan, fabric.api, fabric.run)
        # the change: one fabric port out of hardware offload and back (the chip logs both)
        port = next(
            r
            for r in await api.call("/interface/bridge/port", "print")
            if r.get("interface") == "qsfp56-dd-1-1"
        )
        await api.call("/interface/bridge/port", "set", **{".id": port[".id"], "hw": "no"})
        await api.call("/interface/bridge/port", "set", **{".id": port[".id"], "hw": "yes"})
        after = await fabric.sweep(OFFLOAD.probes)
        await ssh.close()
        for t in sws.values():
            await t.close()
    nodes, switches = [n.name for n in inv.nodes], ["crs804"]

    def log_row(obs: Observations, since: dict[str, float]) -> object:
        ctx = make_context(obs, nodes=nodes, switches=switches, cabling=inv.cabling)
        from dataclasses import replace

        ctx = replace(ctx, changed_at=since)
        v = {v.fault: v for v in switch_offload.CHECK.run(obs, ctx)}["switch.offload-lost"]  # type: ignore[arg-type]
        assert v.status == Status.PASS
        return next(e for e in v.evidence if e.command == "/log print")

    assert "crs804" in stamped
    old = log_row(before, stamped)  # the start-up activation line predates the change
    assert old.status == Status.UNKNOWN and "history" in old.observed  # type: ignore[attr-defined]
    new = log_row(after, stamped)  # the chip re-activated the bridge after the change
    assert new.status == Status.PASS  # type: ignore[attr-defined]
    assert "activated" in new.observed  # type: ignore[attr-defined]
