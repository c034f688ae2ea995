"""Reliability figures: how many fault cases, dead-man cases, bad inputs, security checks and
generated examples ran, and how many passed, every figure counted from the test results
(hypothesis' rejected inputs and skipped tests are shown apart, never as passed).

Runs the reliability tests (tests/reliability), the parsers' property tests and the broken-
inventory corpus with pytest in-process, counts the cases per category from the test reports,
and counts every hypothesis example through hypothesis' observability callback.

    .venv/bin/python bench/reliability.py            # everything (about a minute)
    .venv/bin/python bench/reliability.py --quick    # without the slow kill-and-resume runs
    .venv/bin/python bench/reliability.py --json     # one JSON object for the README/CI
    FABWIZ_REL_SEEDS=1,2,3,4,5 .venv/bin/python bench/reliability.py   # more random kills
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

PATHS = [
    "tests/reliability",
    "tests/parsers/test_parsers_hypothesis.py",
    "tests/checks/test_checks_inventory.py",
    "tests/checks/test_checks_hostile_names.py",
    "tests/engine/test_engine_hostile.py",
    "tests/engine/test_engine_disarm.py",
    "tests/engine/test_engine_locks.py",
    "tests/engine/test_engine_node_lock.py",
    "tests/engine/test_engine_export_escapes.py",
    "tests/engine/test_engine_resume_disarmed.py",
    "tests/tui/test_tui_deadman.py",
    "tests/transports/test_transports_api_cap.py",
    "tests/engine/test_engine_rosquote.py",
    "tests/engine/test_engine_safetext.py",
    "tests/transports/test_transports_tls.py",
    "tests/transports/test_transports_ssh.py::test_a_100_mb_probe_output_is_capped_with_a_mark",
]

# nodeid fragment -> category (first match wins)
CATEGORIES = [
    ("test_rel_faults.py", "fault cases"),
    ("test_rel_resume_random.py", "fault cases"),
    ("test_engine_resume.py", "fault cases"),
    ("test_a_100_mb_probe", "fault cases"),
    ("test_rel_environment.py", "fault cases"),
    ("test_transports_api_cap.py", "fault cases"),
    ("test_engine_hostile.py", "dead-man cases"),
    ("test_engine_disarm.py", "dead-man cases"),
    ("test_engine_locks.py", "dead-man cases"),
    ("test_engine_node_lock.py", "dead-man cases"),
    ("test_engine_export_escapes.py", "dead-man cases"),
    ("test_engine_resume_disarmed.py", "dead-man cases"),
    ("test_tui_deadman.py", "dead-man cases"),
    ("test_rel_badinput.py", "bad inputs"),
    ("test_broken_inventory", "bad inputs"),
    ("test_rel_security.py", "security checks"),
    ("test_rel_trust.py", "security checks"),
    ("test_transports_tls.py", "security checks"),
    ("test_engine_safetext.py", "security checks"),
    ("test_rel_parsers_cover.py", "property tests"),
    ("test_parsers_hypothesis.py", "property tests"),
    ("test_engine_rosquote.py", "property tests"),
    ("test_checks_hostile_names.py", "property tests"),
]
NAMES = ("fault cases", "dead-man cases", "bad inputs", "security checks", "property tests")


def category(nodeid: str) -> str | None:
    for fragment, name in CATEGORIES:
        if fragment in nodeid:
            return name
    return None


class Collector:
    """A pytest plugin: outcomes per category, and the hypothesis examples run."""

    def __init__(self) -> None:
        self.outcomes: dict[str, Counter[str]] = {}
        self.known_gaps: list[str] = []
        self.failed: list[str] = []
        self.examples: Counter[str] = Counter()

    def pytest_runtest_logreport(self, report: Any) -> None:
        name = category(report.nodeid)
        if name is None:
            return
        counts = self.outcomes.setdefault(name, Counter())
        if report.when == "call":
            if hasattr(report, "wasxfail"):
                counts["known gap (xfail)"] += 1
                self.known_gaps.append(f"{report.nodeid}: {report.wasxfail}")
            elif report.passed:
                counts["survived"] += 1
            elif report.failed:
                counts["failed"] += 1
                self.failed.append(report.nodeid)
        elif report.failed:  # setup or teardown broke
            counts["failed"] += 1
            self.failed.append(f"{report.nodeid} ({report.when})")
        elif report.skipped and report.when == "setup":
            counts["skipped"] += 1

    def pytest_sessionstart(self, session: Any) -> None:
        from hypothesis.internal.observability import add_observability_callback

        add_observability_callback(self.observe)

    def pytest_sessionfinish(self, session: Any) -> None:
        from hypothesis.internal.observability import remove_observability_callback

        remove_observability_callback(self.observe)

    def observe(self, observation: Any) -> None:
        if getattr(observation, "type", None) == "test_case":
            self.examples[str(getattr(observation, "status", "?"))] += 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="skip the slow kill-and-resume runs")
    ap.add_argument("--full", action="store_true", help="add tests/engine/test_engine_resume.py")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)

    collector = Collector()
    paths = [str(ROOT / p) for p in PATHS]
    if args.full:
        paths.append(str(ROOT / "tests/engine/test_engine_resume.py"))
    pytest_args = [*paths, "-q", "-p", "no:cacheprovider", "--no-header", "-rN"]
    if args.quick:
        pytest_args += ["-m", "not slow"]
    t0 = time.monotonic()
    code = pytest.main(pytest_args, plugins=[collector])
    took = time.monotonic() - t0

    figures: dict[str, Any] = {}
    for name in NAMES:
        c = collector.outcomes.get(name, Counter())
        figures[name] = {
            "ran": c["survived"] + c["failed"] + c["known gap (xfail)"],
            "passed": c["survived"],
            "failed": c["failed"],
            "known_gaps": c["known gap (xfail)"],
            "skipped": c["skipped"],
        }
    examples = collector.examples
    figures["generated examples"] = {
        # an example hypothesis rejected (assume/filter: "gave_up") was never run on the code
        "ran": examples["passed"] + examples["failed"],
        "passed": examples["passed"],
        "failed": examples["failed"],
        "rejected": examples["gave_up"],
    }
    figures["seconds"] = round(took, 1)
    figures["known_gaps"] = collector.known_gaps
    figures["failures"] = collector.failed
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print()
        print("fabwiz reliability figures (counted from the test results)")
        for name in NAMES:
            f = figures[name]
            extra = [
                f"{f[k]} {label}"
                for k, label in (("failed", "failed"), ("known_gaps", "known gaps"))
                if f[k]
            ]
            extra += [f"{f['skipped']} skipped, not counted"] if f["skipped"] else []
            tail = f" ({', '.join(extra)})" if extra else ""
            print(f"  {name:<19} {f['passed']:>6} of {f['ran']:>6} passed{tail}")
        g = figures["generated examples"]
        where = f", {g['failed']} failed (hypothesis on a known gap)" if g["failed"] else ""
        print(
            f"  {'generated examples':<19} {g['passed']:>6} of {g['ran']:>6} passed{where}; "
            f"{g['rejected']} rejected by the generators, not counted"
        )
        print(f"  in {took:.0f} s")
        for gap in collector.known_gaps:
            print(f"  known gap: {gap}")
        for failure in collector.failed:
            print(f"  FAILED: {failure}")
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
