"""The host's own NCCL_IB_HCA wrong and the job's container's too: two plans, each for its own
targets (the host's files; the container's environment by hand, with the exact change)."""

from __future__ import annotations

import dataclasses

from flows.checks import nccl_config
from flows.registry import make_context
from tests.checks.tests_checks_support import no_user_nccl_conf
from wizard.model import ProbeResult, Rail, Status
from wizard.probes import Observations

IBDEV = "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\nroceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Up)\n"
INSPECT = '/vllm ["PATH=/usr/bin","NCCL_IB_HCA=rocep1s0f"]\n'


def _obs(env: str, conf: str = "") -> Observations:
    def r(cmd: str, out: str) -> ProbeResult:
        return ProbeResult(target="spark1", kind="ssh", command=cmd, stdout=out, exit_status=0)

    return Observations(
        nodes={
            "spark1": {
                nccl_config.NCCL_ENV.name: r("env", env),
                nccl_config.NCCL_CONF.name: r("cat /etc/nccl.conf", conf),
                nccl_config.NCCL_USER_CONF.name: no_user_nccl_conf(),
                nccl_config.IBDEV.name: r("ibdev2netdev", IBDEV),
                nccl_config.CONTAINERS.name: r(nccl_config.CONTAINERS.command, INSPECT),
            }
        }
    )


def _plan_of(obs: Observations):  # type: ignore[no-untyped-def]
    ctx = make_context(obs, nodes=["spark1"], switches=[])
    rails = (
        Rail("spark1", "enp1s0f0np0", "rocep1s0f0", 0, "A", addresses=("10.9.1.1/24",), up=True),
        Rail(
            "spark1",
            "enP2p1s0f0np0",
            "roceP2p1s0f0",
            0,
            "B",
            addresses=("10.9.3.1/24",),
            up=True,
        ),
    )
    ctx = dataclasses.replace(ctx, jobs={"spark1": "vllm"}, rails={"spark1": rails})
    parsed = nccl_config.parse(obs, ctx)
    verdict = {v.fault: v for v in nccl_config.judge(parsed, ctx)}["nccl.hca-filter"]
    return verdict, nccl_config.fix(parsed, verdict, ctx)


def test_host_and_container_both_wrong_give_the_host_change_then_the_container_change() -> None:
    verdict, plan = _plan_of(_obs("PATH=/usr/bin\n", "NCCL_IB_HCA=rocep1s0f\n"))
    assert verdict.status is Status.FAIL
    assert set(verdict.targets) == {"spark1", "spark1 (container vllm)"}
    assert plan is not None
    # the host's own files, verified on the host only
    assert plan.verify_targets == ("spark1",)
    assert [c.node for c in plan.host_changes] == ["spark1"]
    files = {f.path: f.content for c in plan.host_changes for f in c.files}
    assert "NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0" in files["/etc/nccl.conf"]
    assert plan.physical is None
    # then the container's environment, by hand, with the exact compose / docker run text
    (job,) = plan.then
    assert job.verify_targets == ("spark1 (container vllm)",)
    assert job.physical is not None and job.physical.kind == "manual"
    assert job.host_changes == ()
    text = job.physical.instructions
    assert text.startswith(
        "Change the job's environment by hand, then re-check: spark1 (container vllm): "
    )
    assert "NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0" in text
    assert "docker run -e" in text and "environment:" in text
    assert "/etc/nccl.conf" not in text


def test_only_the_container_wrong_is_the_change_by_hand_alone() -> None:
    verdict, plan = _plan_of(_obs("PATH=/usr/bin\n"))
    assert verdict.targets == ("spark1 (container vllm)",)
    assert plan is not None and plan.physical is not None and plan.then == ()
    assert plan.verify_targets == () and plan.host_changes == ()
