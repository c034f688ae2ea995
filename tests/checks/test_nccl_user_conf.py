"""The login user's ~/.nccl.conf: NCCL reads it after the environment and before
/etc/nccl.conf, and so does every rank mpirun starts over ssh. A wrong setting there is named
with its file and offered as a change by hand (rewriting the system files would change nothing
for the job)."""

from __future__ import annotations

from flows import plans
from flows.base import Context
from flows.checks.nccl_config import NcclConfig, NodeNccl
from flows.expectations import DEFAULT
from wizard.model import Status, Verdict


def _node(env: dict[str, str], user: dict[str, str], conf: dict[str, str]) -> NodeNccl:
    return NodeNccl("spark1", env, conf, ("rocep1s0f0", "roceP2p1s0f0"), user_conf=user)


def test_the_environment_wins_then_the_users_file_then_the_system_file() -> None:
    n = _node({}, {"NCCL_IB_HCA": "rocep1s0f"}, {"NCCL_IB_HCA": "=rocep1s0f0,roceP2p1s0f0"})
    assert n.effective["NCCL_IB_HCA"] == "rocep1s0f" and n.source("NCCL_IB_HCA") == "~/.nccl.conf"
    env = _node({"NCCL_IB_HCA": "x"}, {"NCCL_IB_HCA": "rocep1s0f"}, {})
    assert env.effective["NCCL_IB_HCA"] == "x" and env.source("NCCL_IB_HCA") == "login env"
    assert _node({}, {}, {"NCCL_NET": "Socket"}).source("NCCL_NET") == "/etc/nccl.conf"


def test_a_setting_in_the_users_file_is_a_change_by_hand_naming_it() -> None:
    ctx = Context(expectations=DEFAULT, nodes=("spark1",))
    verdict = Verdict("nccl.hca-filter", Status.FAIL, "one half", targets=("spark1",))
    n = NcclConfig((_node({}, {"NCCL_IB_HCA": "rocep1s0f"}, {}),), ())
    plan = plans.nccl_plan(n, verdict, ctx)
    assert plan is not None and plan.physical is not None and not plan.host_changes
    assert plan.physical.kind == "manual" and plan.physical.nodes == ("spark1",)
    assert "spark1: remove NCCL_IB_HCA=rocep1s0f from ~/.nccl.conf" in plan.preview
    # the same setting in /etc/nccl.conf is fabwiz's to rewrite
    system = NcclConfig((_node({}, {}, {"NCCL_IB_HCA": "rocep1s0f"}),), ())
    fixed = plans.nccl_plan(system, verdict, ctx)
    assert fixed is not None and fixed.physical is None and fixed.host_changes
