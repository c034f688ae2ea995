"""NCCL with the job's own environment, judged against fabwiz's canonical run.

The lab scenario `nccl-hca-user-conf` has a healthy fabric and `NCCL_IB_HCA=rocep1s0f` in the
login's `~/.nccl.conf`: no config sweep reads that file, fabwiz's canonical run (`-x
NCCL_IB_HCA==...`) drives both halves, and only the job's own run shows the job on one half.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from flows.checks import nccl_config, nccl_job
from flows.registry import make_context, probes_of
from screens.commands.check import check
from screens.commands.fix import fix
from wizard.inventory import load_inventory
from wizard.lab.lab import Lab
from wizard.model import Measurement, ProbeResult, Status
from wizard.probes import Observations
from wizard.sweep import Sweeper
from wizard.transports.ssh import SshTarget, SshTransport

SCENARIO = "nccl-hca-user-conf"


async def _measure() -> tuple[Observations, list[str], Measurement, Measurement]:
    async with Lab(SCENARIO, time_scale=1000.0) as lab:
        inv = load_inventory(lab.inventory_path)
        ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
        nodes = [n.name for n in inv.nodes]
        sweeper = Sweeper(ssh=ssh, nodes=nodes, switches={})
        try:
            obs = await sweeper.sweep(probes_of([nccl_config.CHECK]))
            canonical, _ = await sweeper.nccl_test()
            job, _ = await sweeper.nccl_test(mode="job")
        finally:
            await ssh.close()
    return obs, nodes, canonical, job


@pytest.fixture(scope="module")
def measured() -> Iterator[tuple[Observations, list[str], Measurement, Measurement]]:
    yield asyncio.run(_measure())


def _judge(
    obs: Observations, nodes: list[str], *ms: Measurement, jobs: dict[str, str] | None = None
) -> dict[str, Any]:
    obs = dataclasses.replace(obs, measurements=tuple(ms))
    ctx = make_context(obs, nodes=nodes, switches=[])
    if jobs:
        ctx = dataclasses.replace(ctx, jobs=jobs)
    return {v.fault: v for v in nccl_job.CHECK.run(obs, ctx)}


@pytest.mark.lab
def test_the_lab_job_run_comes_from_the_users_nccl_conf(measured: Any) -> None:
    _obs, _nodes, canonical, job = measured
    assert canonical.target == "cluster" and job.target == "cluster/job-env"
    assert "NCCL_IB_HCA==" in str(canonical.extra["command"])
    assert "NCCL_IB_HCA" not in str(job.extra["command"])  # the job's env decides
    assert canonical.extra["devices"] == ["rocep1s0f0", "roceP2p1s0f0"]
    assert job.extra["devices"] == ["rocep1s0f0"]  # the prefix of ~/.nccl.conf misses roceP2
    assert "NCCL_IB_HCA set to rocep1s0f" in str(job.extra["raw"])
    assert 0.4 < job.value / canonical.value < 0.6  # one half of two


@pytest.mark.lab
def test_fewer_devices_in_the_job_env_is_hca_filter_with_both_figures(measured: Any) -> None:
    obs, nodes, canonical, job = measured
    got = _judge(obs, nodes, canonical, job)
    assert set(got) == {"nccl.hca-filter"}
    v = got["nccl.hca-filter"]
    assert v.status == Status.FAIL and v.targets == ("cluster/job-env",)
    [ev] = v.evidence
    assert ev.observed.startswith("the job's own environment: 1 device(s) (rocep1s0f0), busbw ")
    assert ev.observed.endswith("; NCCL_IB_HCA set to rocep1s0f")
    assert ev.expected.startswith(
        "as fabwiz's canonical run: 2 device(s) (rocep1s0f0, roceP2p1s0f0), busbw "
    )
    assert f"busbw {job.value:.2f} GB/s" in ev.observed
    assert f"busbw {canonical.value:.2f} GB/s" in ev.expected
    assert "set NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0 where the job reads it" in v.summary
    assert "~/.nccl.conf" in v.summary


@pytest.mark.lab
def test_same_devices_pass_and_unmeasured_is_unknown(measured: Any) -> None:
    obs, nodes, canonical, job = measured
    same = dataclasses.replace(canonical, target="cluster/job-env")
    v = _judge(obs, nodes, canonical, same)["nccl.hca-filter"]
    assert v.status == Status.PASS and "same devices" in v.summary
    lost = dataclasses.replace(job, valid=False, reason="no result: timeout", value=0.0)
    v = _judge(obs, nodes, canonical, lost)["nccl.hca-filter"]
    assert v.status == Status.UNKNOWN and v.evidence[0].observed == "no result: timeout"
    assert _judge(obs, nodes, job) == {}  # no canonical run: perf_nccl says why
    assert _judge(obs, nodes, canonical) == {}  # no job run: nothing said
    # the canonical run short itself: perf_nccl reports it, not this check
    assert _judge(obs, nodes, dataclasses.replace(job, target="cluster"), job) == {}


@pytest.mark.lab
def test_a_job_env_on_sockets_is_socket_fallback(measured: Any) -> None:
    obs, nodes, canonical, job = measured
    raw = str(job.extra["raw"]).replace("NET/IB/", "NET/Socket/")
    sockets = dataclasses.replace(job, extra={**job.extra, "raw": raw})
    got = _judge(obs, nodes, canonical, sockets)
    v = got["nccl.socket-fallback"]
    assert set(got) == {"nccl.socket-fallback"}
    assert v.status == Status.FAIL and v.targets == ("cluster/job-env",)
    assert v.evidence[0].observed.startswith("the job's own environment: TCP sockets, busbw")


@pytest.mark.lab
def test_the_jobs_container_env_is_compared_too(measured: Any) -> None:
    obs, nodes, canonical, _job = measured
    same = dataclasses.replace(canonical, target="cluster/job-env")
    env = json.dumps(["PATH=/usr/bin", "NCCL_IB_HCA=roceP2p1s0f"])
    nodes_obs = {n: dict(rs) for n, rs in obs.nodes.items()}
    nodes_obs["spark2"][nccl_config.CONTAINERS.name] = ProbeResult(
        target="spark2",
        kind="ssh",
        command=nccl_config.CONTAINERS.command,
        stdout=f"/trainer {env}\n",
        exit_status=0,
    )
    with_container = dataclasses.replace(obs, nodes=nodes_obs)
    v = _judge(with_container, nodes, canonical, same, jobs={"spark2": "trainer"})[
        "nccl.hca-filter"
    ]
    assert v.status == Status.FAIL and v.targets == ("spark2",)
    [ev] = v.evidence
    assert (
        ev.observed
        == "container trainer: NCCL_IB_HCA=roceP2p1s0f selects 1 device(s) (roceP2p1s0f0)"
    )


@pytest.mark.lab
def test_check_perf_and_the_fix_walk_leave_the_job_env_open(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(check, ["--lab", SCENARIO, "--perf", "--json", "--time-scale", "1000"])
    report = json.loads(out.stdout)
    found = {f["fault"]: f for f in report["findings"] if f["status"] != "benign"}
    assert set(found) == {"nccl.hca-filter"} and out.exit_code == 1
    # the login user's ~/.nccl.conf is read on every node, and the job's own run confirms it
    assert found["nccl.hca-filter"]["targets"] == ["spark1", "spark2", "cluster/job-env"]
    [row] = [
        e
        for e in found["nccl.hca-filter"]["evidence"]
        if e["target"] == "spark1" and e["status"] == "fail"
    ]
    assert "(~/.nccl.conf)" in row["observed"]
    walk = CliRunner().invoke(
        fix,
        ["--lab", SCENARIO, "--yes", "--json", "--time-scale", "1000", "--session-dir", "."],
    )
    result = json.loads(walk.stdout)
    assert result["healthy_after"] is False  # the job would still run on one half
    halves = next(s for s in result["steps"] if s["step"] == "halves")
    hca = next(v for v in halves["verdicts"] if v["fault"] == "nccl.hca-filter")
    assert hca["status"] == "fail" and hca["targets"] == ["cluster/job-env"]
    assert result["measurements"]["nccl_busbw"] > 21.875  # the fabric itself is healthy
