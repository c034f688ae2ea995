"""Shared helpers of the reliability tests: walk a few steps of the wizard on a lab with fault
hooks armed, and check that nothing was lost on the way."""

from __future__ import annotations

import dataclasses
import io
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from flows.bisection import FLOW
from screens.compose import open_wizard
from screens.terminal import EventPrinter, TerminalOperator
from wizard.engine import RunResult
from wizard.events import Event, ProbeAnswered, ProbeSent

TIME_SCALE = 100.0


@dataclass
class Walk:
    result: RunResult
    events: list[Event]
    text: str  # everything the operator saw on the terminal
    folder: Path  # the session folder

    def log(self) -> list[dict[str, Any]]:
        lines = (self.folder / "events.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines]

    def of(self, kind: type[Event]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


async def walk(
    lab: Any,
    tmp_path: Path,
    steps: Sequence[str] | None = None,
    *,
    traffic: bool = True,
    operator: TerminalOperator | None = None,
    tweak: Callable[[Any], None] | None = None,
) -> Walk:
    """Run the wizard (`steps` of the flow only, when given) on a running lab, headless."""
    events: list[Event] = []
    console = Console(file=io.StringIO(), width=160, highlight=False)
    if operator is None:
        operator = TerminalOperator(console, yes=True, interactive=False)
    wiring = await open_wizard(
        operator=operator,
        sinks=[events.append, EventPrinter(console)],
        lab_object=lab,
        session_dir=tmp_path / "session",
        time_scale=TIME_SCALE,
    )
    if steps is not None:
        wiring.engine.flow = [
            s if traffic else dataclasses.replace(s, traffic=False) for s in FLOW if s.id in steps
        ]
    if tweak is not None:
        tweak(wiring)
    try:
        result = await wiring.engine.run()
    finally:
        await wiring.close()
    text = console.file.getvalue()  # type: ignore[attr-defined]
    return Walk(result, events, text, tmp_path / "session")


def assert_nothing_lost(w: Walk) -> None:
    """No traceback shown, every persisted event in the log in order, every probe answered."""
    assert "Traceback" not in w.text, w.text[-3000:]
    logged = [r["type"] for r in w.log()]
    emitted = [e.type for e in w.events if e.persist]
    # the log holds every emitted event, in the same order (plus its own session records)
    it = iter(logged)
    missing = [t for t in emitted if not any(t == x for x in it)]
    assert not missing, f"events missing from the session log: {missing[:5]}"
    assert logged[-1] == "session_ended"
    sent = Counter(e.target for e in w.of(ProbeSent))
    answered = Counter(e.result.target for e in w.of(ProbeAnswered))
    assert sent == answered, f"probes sent without an answer in the log: {sent - answered}"
