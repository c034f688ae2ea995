"""The job's container environment in the NCCL check: parsed, judged, and a named container
that does not run is something the check cannot see (unknown), never a pass."""

from __future__ import annotations

import dataclasses

from flows.checks import nccl_config
from flows.registry import make_context
from tests.checks.tests_checks_support import no_user_nccl_conf
from wizard.model import ProbeResult, Status
from wizard.probes import Observations

INSPECT = (
    '/vllm ["PATH=/usr/bin","NCCL_IB_HCA=rocep1s0f","NCCL_CROSS_NIC=1"]\n/redis ["PATH=/usr/bin"]\n'
)
IBDEV = "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\nroceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Up)\n"


def test_inspect_lines_parse_to_each_containers_environment() -> None:
    got = nccl_config.parse_containers(INSPECT + "garbage\n/x not-json\n")
    assert got == {
        "vllm": {"PATH": "/usr/bin", "NCCL_IB_HCA": "rocep1s0f", "NCCL_CROSS_NIC": "1"},
        "redis": {"PATH": "/usr/bin"},
    }


def _obs(inspect: str) -> Observations:
    def r(cmd: str, out: str) -> ProbeResult:
        return ProbeResult(target="spark1", kind="ssh", command=cmd, stdout=out, exit_status=0)

    return Observations(
        nodes={
            "spark1": {
                nccl_config.NCCL_ENV.name: r("env", "PATH=/usr/bin\n"),
                nccl_config.NCCL_CONF.name: r("cat /etc/nccl.conf", ""),
                nccl_config.NCCL_USER_CONF.name: no_user_nccl_conf(),
                nccl_config.IBDEV.name: r("ibdev2netdev", IBDEV),
                nccl_config.CONTAINERS.name: r(nccl_config.CONTAINERS.command, inspect),
            }
        }
    )


def test_a_named_container_that_does_not_run_is_unknown() -> None:
    ctx = make_context(_obs(INSPECT), nodes=["spark1"], switches=[])
    ctx = dataclasses.replace(ctx, jobs={"spark1": "sglang"})
    parsed = nccl_config.parse(_obs(INSPECT), ctx)
    assert parsed.nodes[0].containers == {}
    assert [u.reason for u in parsed.unreadable] == ["the job's container sglang is not running"]
    verdicts = {v.fault: v for v in nccl_config.judge(parsed, ctx)}
    assert verdicts["nccl.hca-filter"].status is Status.UNKNOWN
