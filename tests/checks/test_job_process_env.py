"""The NCCL environment of the job's process (`/proc/<pid>/environ`, NUL-separated), named in
the inventory by its command name: judged like the login environment, shown as the change to
make where the job is started, and a named process that does not run is unknown."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from click.testing import CliRunner

from flows import jobproc
from flows.checks import nccl_config
from flows.registry import make_context
from screens.commands.check import check
from tests.checks.tests_checks_support import no_user_nccl_conf
from wizard.model import ProbeResult, Status
from wizard.probes import Observations

IBDEV = "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\nroceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Up)\n"
ENVIRON = (
    "/proc/4242/environ:NCCL_IB_HCA=rocep1s0f\0/proc/4242/environ:NCCL_DEBUG=INFO\0"
    "/proc/77/environ:NCCL_SOCKET_IFNAME=eth0\0"
)
COMM = "/proc/1/comm:systemd\n/proc/77/comm:bash\n/proc/4242/comm:python3\n"
SCENARIO = """
name: process-hca
topology: {nodes: 2, switches: [{model: CRS804-4DDQ}], cables_per_node: 2}
faults: []
facts:
  processes:
    spark1: {name: python3, env: {NCCL_IB_HCA: rocep1s0f, NCCL_DEBUG: INFO}}
"""


def test_environ_records_are_nul_separated_and_only_nccl_is_kept() -> None:
    text = ENVIRON + "/proc/4242/environ:AWS_SECRET=x\0garbage\0"
    assert jobproc.parse_environ(text) == {
        4242: {"NCCL_IB_HCA": "rocep1s0f", "NCCL_DEBUG": "INFO"},
        77: {"NCCL_SOCKET_IFNAME": "eth0"},
    }
    assert jobproc.parse_comm(COMM + "noise\n") == {1: "systemd", 77: "bash", 4242: "python3"}


def _obs(comm: str) -> Observations:
    def r(cmd: str, out: str) -> ProbeResult:
        return ProbeResult(target="spark1", kind="ssh", command=cmd, stdout=out, exit_status=0)

    return Observations(
        nodes={
            "spark1": {
                nccl_config.NCCL_ENV.name: r("env", "PATH=/usr/bin\n"),
                nccl_config.NCCL_CONF.name: r("cat /etc/nccl.conf", ""),
                nccl_config.NCCL_USER_CONF.name: no_user_nccl_conf(),
                nccl_config.IBDEV.name: r("ibdev2netdev", IBDEV),
                jobproc.COMM.name: r(jobproc.COMM.command, comm),
                jobproc.ENVIRON.name: r(jobproc.ENVIRON.command, ENVIRON),
            }
        }
    )


def test_a_named_process_that_does_not_run_is_unknown() -> None:
    obs = _obs(COMM.replace("python3", "sleep"))
    ctx = dataclasses.replace(
        make_context(obs, nodes=["spark1"], switches=[]), job_processes={"spark1": "python3"}
    )
    parsed = nccl_config.parse(obs, ctx)
    assert [u.reason for u in parsed.unreadable] == ["the job's process python3 is not running"]
    verdicts = {v.fault: v for v in nccl_config.judge(parsed, ctx)}
    assert verdicts["nccl.hca-filter"].status is Status.UNKNOWN


def test_the_process_filter_is_a_finding_with_the_change_where_the_job_starts(
    tmp_path: Path,
) -> None:
    path = tmp_path / "process-hca.yaml"
    path.write_text(SCENARIO)
    result = CliRunner().invoke(
        check, ["--lab", str(path), "--json", "--time-scale", "1000"], catch_exceptions=False
    )
    report = json.loads(result.stdout)
    found = {f["fault"]: f for f in report["findings"]}
    hca = found["nccl.hca-filter"]
    assert hca["status"] == "fail" and hca["targets"] == ["spark1 (process python3)"]
    ev = hca["evidence"][0]
    assert ev["observed"] == (
        "NCCL_IB_HCA=rocep1s0f (process python3, pid 3108) selects rocep1s0f0, rocep1s0f1"
    )
    assert ev["expected"].startswith(
        "in the environment the job python3 (pid 3108) is started with "
        "(NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0,rocep1s0f1,roceP2p1s0f1)"
    )
    assert "then restart python3" in ev["expected"]
    assert result.exit_code == 1
