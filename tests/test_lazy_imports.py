"""Modules are loaded when used: each command imports what it needs and nothing more.

Each case runs `fabwiz ...` in a fresh interpreter and reports which heavy packages ended up in
`sys.modules` when it exited (no timing: what is imported is the behaviour under test).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.own_process import python

HEAVY = ("asyncssh", "textual", "rich", "pydantic", "yaml", "librouteros", "transitions")

_PROBE = """
import atexit, json, sys
def _report():
    heavy = {heavy!r}
    loaded = sorted(h for h in heavy if h in sys.modules)
    sys.__stderr__.write("\\nLOADED " + json.dumps(loaded) + "\\n")
atexit.register(_report)
from screens.cli import cli
cli(["fabwiz", *{args!r}][1:], prog_name="fabwiz")
"""


def _python(code: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter from the checkout (nothing loaded but what it loads)."""
    return python("-c", code)


def _loaded(*args: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    proc = _python(_PROBE.format(heavy=HEAVY, args=list(args)))
    line = [x for x in proc.stderr.splitlines() if x.startswith("LOADED ")]
    assert line, proc.stderr[-2000:]
    return set(json.loads(line[-1].removeprefix("LOADED "))), proc


def test_help_imports_neither_ssh_nor_the_ui() -> None:
    loaded, proc = _loaded("--help")
    assert proc.returncode == 0
    assert "check" in proc.stdout and "demo" in proc.stdout
    assert loaded == set(), loaded


def test_check_help_does_not_load_the_sweep() -> None:
    loaded, proc = _loaded("check", "--help")
    assert proc.returncode == 0 and "--perf" in proc.stdout
    assert not loaded & {"asyncssh", "textual", "pydantic", "librouteros"}, loaded


@pytest.mark.lab
def test_check_sweeps_without_importing_textual() -> None:
    loaded, proc = _loaded("check", "--lab", "healthy-2node-direct", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["healthy"] is True
    assert [n["name"] for n in report["nodes"]] == ["spark1", "spark2"]
    assert all(n["reachable"] and n["rails"] for n in report["nodes"])
    assert {"asyncssh", "librouteros"} <= loaded  # it really talked SSH and the API
    assert "textual" not in loaded and "transitions" not in loaded, loaded
    assert "rich" not in loaded  # --json prints no table


def test_analyze_of_a_file_opens_no_connection_library(tmp_path: Path) -> None:
    sample = tmp_path / "ibdev2netdev.txt"
    sample.write_text("rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\n")
    loaded, proc = _loaded("analyze", str(sample))
    assert proc.returncode == 0 and "ibdev2netdev" in proc.stdout, proc.stderr[-1000:]
    assert "asyncssh" not in loaded and "textual" not in loaded, (loaded, proc.stderr[-1000:])


@pytest.mark.lab
def test_check_as_its_own_process_prints_everything_and_its_exit_code() -> None:
    # `fabwiz check` ends without the interpreter's teardown: its output must be complete
    proc = python("-m", "screens.cli", "check", "--lab", "fault-host-mtu", "--json")
    assert proc.returncode == 1, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert "host.mtu" in {f["fault"] for f in report["findings"]}
    assert len(report["nodes"]) == 4 and proc.stdout.rstrip().endswith("}")


def test_the_app_loads_its_dialogs_when_one_first_opens() -> None:
    code = (
        "import sys, screens.app\n"
        "print(sorted(m for m in ('screens.modals', 'screens.end_screen', 'asyncssh')"
        " if m in sys.modules))\n"
    )
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["[]"]


def test_the_app_loads_what_only_reports_use_when_a_report_is_made() -> None:
    # the HTML escaping of reports (`wizard.safetext.html_text`) loads `html` and its entity
    # tables when first used, not before the TUI's first screen
    code = (
        "import sys, screens.app\n"
        "print(sorted(m for m in ('html', 'html.entities') if m in sys.modules))\n"
        "from wizard.safetext import html_text\n"
        "print(html_text('<b>spark1</b>'))\n"
    )
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == ["[]", "&lt;b&gt;spark1&lt;/b&gt;"]


def test_a_scenario_is_checked_without_building_the_lab() -> None:
    # `fabwiz demo` refuses a bad scenario before its first screen: that check loads neither
    # the world nor pydantic
    code = (
        "import sys\n"
        "from wizard.lab import scenarios\n"
        "s = scenarios.load('crs804-three-bugs')\n"
        "print(s.topology.nodes, len(s.faults), sorted(m for m in ('pydantic', 'asyncssh',"
        " 'wizard.lab.world', 'wizard.lab.faults') if m in sys.modules))\n"
    )
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "4 3 []"
