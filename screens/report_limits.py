"""The limits a recorded session ran with, for its report.

The session start records the inventory's `expectations:` overrides (`options.context
.expectations`); the report's charts, the fabric map's colours and the texts that quote a limit
are drawn against the expectations table with those overrides, the same numbers the checks
judged against during the session, never the bare defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flows.expectations import DEFAULT, Expectations
from wizard.events import SessionStarted


@dataclass(frozen=True, slots=True)
class RecordedLimits:
    expectations: Expectations
    overrides: dict[str, Any]  # what the inventory changed, as recorded
    problem: str = ""  # why the recorded overrides could not be used (then: the defaults)


def recorded_limits(started: SessionStarted) -> RecordedLimits:
    """The expectations of `started`'s session: defaults plus its recorded overrides."""
    opts: Mapping[str, Any] = started.options
    context = opts.get("context")
    raw = context.get("expectations") if isinstance(context, Mapping) else None
    if not isinstance(raw, Mapping) or not raw:
        return RecordedLimits(DEFAULT, {})
    overrides = {str(k): v for k, v in raw.items()}
    try:
        return RecordedLimits(DEFAULT.with_overrides(overrides), overrides)
    except KeyError as exc:
        why = f"recorded override(s) {exc.args[0]} unknown to this fabwiz"
    except (TypeError, ValueError) as exc:
        why = f"recorded overrides unreadable: {exc}"
    return RecordedLimits(DEFAULT, overrides, why)


def ceilings(e: Expectations, nodes: int) -> dict[str, float]:
    """What the report's charts draw against."""
    return {
        "rail": e.rail_switched_gbps,
        "rail_bidir": e.bidir_rail_gbps,
        "nccl": e.nccl_expected(nodes),
        "pass_ratio": e.pass_ratio,
        "warn_ratio": e.warn_ratio,
    }


__all__ = ["RecordedLimits", "ceilings", "recorded_limits"]
