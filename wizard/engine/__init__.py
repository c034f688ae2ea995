"""The wizard engine: walks the bisection with the operator, one step at a time.

For each step of the flow (flows/bisection.py, injected): probe (one concurrent sweep of the
step's checks), judge (the checks, injected), show the evidence (events), offer each fix (preview,
mandatory export, dead-man rollback, apply, verify, disarm or roll back), perform or prompt for
physical actions and watch for their result, and confirm with a bandwidth test where the step
calls for one. The drain guard refuses to judge bandwidth from undrained nodes.

Everything goes through ports (STYLE.md rule 6): `Fabric` (transports, sweep, traffic, the lab's
hands if any), `Operator` (decisions, awaited), an event sink, a clock. The same engine runs in
the TUI, headless (`fabwiz fix`), in tests and on resume. The engine never imports flows: the
flow, the checks and the context factory are given to it.

The package, bottom up:

- `ports`: the protocols the engine is given; `records`: what a walk produces and resumes from;
- `machine`: the step life cycle (a `transitions` state machine, defined as data);
- `txn`: the fix transaction, with `guards` (locks, the checks that fail closed), `linkwait`
  (links a fix bounced), `rollback` (loss recovery, rollbacks run now) and `settlement` (a
  resumed session's armed rollbacks);
- `core` (state, events, probing, judging, measuring) < `physical` (hands at the rack) <
  `fixing` (fixes within a step) < `bisection` (the direct-connect test) < `steps` < `walk`
  (`Engine`, the step loop).
"""

from wizard.engine.fixing import MANUAL_RECHECKS
from wizard.engine.machine import Phase, StepLifecycle
from wizard.engine.ports import (
    CheckLike,
    Choice,
    Fabric,
    Hands,
    MeasureKind,
    Operator,
    StepLike,
    Thresholds,
)
from wizard.engine.records import FixRecord, Resume, RunResult
from wizard.engine.steps import JOB_ENV, UNREACHABLE
from wizard.engine.walk import Engine

__all__ = [
    "JOB_ENV",
    "MANUAL_RECHECKS",
    "UNREACHABLE",
    "CheckLike",
    "Choice",
    "Engine",
    "Fabric",
    "FixRecord",
    "Hands",
    "MeasureKind",
    "Operator",
    "Phase",
    "Resume",
    "RunResult",
    "StepLifecycle",
    "StepLike",
    "Thresholds",
]
