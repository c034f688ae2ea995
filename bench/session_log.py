"""Bench: the session log's cost on a real fix walk. Prints figures, asserts nothing:

  .venv/bin/python bench/session_log.py [--scenario fault-switch-offload-disabled] [--runs 5]

walk      one lab fix walk with the log fsynced: events written, fsyncs of the log (the
          durability rule: what precedes or records a change at once, observations batched);
codec     encoding every event of that log (`Event.to_json`) and decoding every line back
          (`event_from_json`), per event, best of --runs; and the one-off cost of building the
          typed codecs (a fresh interpreter decoding one line of each event type);
load      `load_session` of the whole log, best of --runs.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BUILD = """
import json, sys, time
from wizard.events import event_from_json
bodies = [json.loads(line) for line in sys.stdin]
t = time.perf_counter()
for b in bodies:
    event_from_json(b)
print((time.perf_counter() - t) * 1000)
"""


def _best(fn: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


async def _walk(scenario: str, folder: Path) -> tuple[Path, int]:
    from rich.console import Console

    from screens.compose import open_wizard
    from screens.terminal import TerminalOperator

    operator = TerminalOperator(Console(file=io.StringIO()), yes=True, interactive=False)
    wiring = await open_wizard(
        operator=operator,
        sinks=[],
        lab=scenario,
        session_dir=folder,
        time_scale=100.0,
        fsync=True,
    )
    try:
        await wiring.engine.run()
    finally:
        await wiring.close()
    return wiring.log.path, wiring.log.fsyncs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="fault-switch-offload-disabled")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()

    from wizard.events import event_from_json
    from wizard.session import load_session

    with tempfile.TemporaryDirectory() as tmp:
        path, fsyncs = asyncio.run(_walk(args.scenario, Path(tmp) / "session"))
        lines = path.read_text(encoding="utf-8").splitlines()
        bodies = [{k: v for k, v in json.loads(x).items() if k != "seq"} for x in lines]
        events = [event_from_json(b) for b in bodies]
        n = len(events)
        print(
            f"walk     {args.scenario}: {n} events, {fsyncs} fsyncs of the log ({fsyncs / n:.3f} per event)"
        )
        enc = _best(lambda: [e.to_json() for e in events], args.runs)
        dec = _best(lambda: [event_from_json(b) for b in bodies], args.runs)
        print(f"codec    encode {enc / n * 1e6:.1f} us/event, decode {dec / n * 1e6:.1f} us/event")
        one_each = {b["type"]: b for b in bodies}
        built = subprocess.run(
            [sys.executable, "-c", BUILD],
            input="".join(json.dumps(b) + "\n" for b in one_each.values()),
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        print(
            f"codec    first decode of {len(one_each)} event types in a fresh process "
            f"(codecs built): {float(built.stdout):.0f} ms"
        )
        load = _best(lambda: load_session(path), args.runs)
        print(f"load     load_session: {load * 1000:.0f} ms ({load / n * 1e6:.1f} us/event)")


if __name__ == "__main__":
    main()
