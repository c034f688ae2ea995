"""The rail tests' re-run and bidirectional limits are expectations keys (overridable from the
inventory's `expectations:`), not constants of the sweep."""

from __future__ import annotations

import pytest

from flows.expectations import DEFAULT
from wizard.inventory import load_inventory
from wizard.lab.lab import Lab
from wizard.lab.scenarios import load_text
from wizard.sweep import Sweeper
from wizard.transports.ssh import SshTarget, SshTransport

LOST = """
name: lost-two
topology: {nodes: 2, switches: [{model: CRS804-4DDQ}], cables_per_node: 1}
facts:
  ports:
    crs804/qsfp56-dd-1-1: {hw-offload: false}
    crs804/qsfp56-dd-1-5: {hw-offload: false}
"""


def test_the_limits_are_keys_of_the_table() -> None:
    assert (DEFAULT.bidir_rails, DEFAULT.qp_rerun_qps, DEFAULT.qp_rerun_max_rails) == (1, 8, 4)
    got = DEFAULT.with_overrides({"bidir_rails": 0, "qp_rerun_qps": 16})
    assert (got.bidir_rails, got.qp_rerun_qps, got.qp_rerun_max_rails) == (0, 16, 4)


@pytest.mark.lab
async def test_rail_tests_follow_the_table() -> None:
    limits = DEFAULT.with_overrides({"bidir_rails": 2, "qp_rerun_max_rails": 1, "qp_rerun_qps": 4})
    async with Lab(load_text(LOST, path="lost.yaml"), time_scale=1000.0) as lab:
        inv = load_inventory(lab.inventory_path)
        ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
        sweeper = Sweeper(ssh=ssh, nodes=[n.name for n in inv.nodes], limits=limits)
        await sweeper.sweep([])
        ms = await sweeper.rail_tests(duration_s=1)
        await ssh.close()
    single = [m for m in ms if not m.extra.get("bidir")]
    assert len(single) == 2 and all(m.value < 12.0 for m in single)  # both halves CPU-forwarded
    rerun = [m for m in single if "rerun_qps" in m.extra]
    assert len(rerun) == 1  # qp_rerun_max_rails
    assert rerun[0].extra["rerun_qps"] == 4 and " -q 4 " in str(rerun[0].extra["rerun_command"])
    bidir = [m for m in ms if m.extra.get("bidir")]
    assert len(bidir) == 2 and all(" -b" in str(m.extra["command"]) for m in bidir)
