"""Shared loader of the recorded check fixtures (not a test module)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wizard.model import Measurement, ProbeResult
from wizard.probes import Observations

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checks"


def load_case(check_id: str, scenario: str) -> tuple[Observations, dict[str, Any]]:
    data = json.loads((FIXTURES / check_id / scenario / "observations.json").read_text())
    obs = Observations(
        nodes={
            n: {k: ProbeResult.from_json(r) for k, r in rs.items()}
            for n, rs in data["nodes"].items()
        },
        switches={
            s: {k: ProbeResult.from_json(r) for k, r in rs.items()}
            for s, rs in data["switches"].items()
        },
        unreachable=data["unreachable"],
        measurements=tuple(Measurement(**m) for m in data["measurements"]),
    )
    return obs, data["settings"]


def no_user_nccl_conf(node: str = "spark1", user: str = "fabwiz") -> ProbeResult:
    """`cat ~/.nccl.conf` on a node where the login user has none (cat's own message)."""
    return ProbeResult(
        target=node,
        kind="ssh",
        command="cat ~/.nccl.conf",
        stderr=f"cat: /home/{user}/.nccl.conf: No such file or directory\n",
        exit_status=1,
    )
