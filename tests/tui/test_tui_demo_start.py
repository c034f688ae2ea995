"""`fabwiz demo` before its first screen: a built-in scenario is not loaded (the lab loads it as it
starts, after the first paint); a wrong name or a broken file is still said before the TUI."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from screens.cli import cli
from screens.commands.demo import _builtin
from tests.own_process import python
from wizard.lab import scenarios

# What is loaded when the app is about to run (its `run` replaced: nothing is painted).
_PROBE = """
import sys
from screens.app import FabwizApp
def run(self, **kw):
    print("LAB-LOADED", "wizard.lab.scenarios" in sys.modules, "asyncssh" in sys.modules)
    return 0
FabwizApp.run = run
from screens.cli import cli
cli({args!r}, prog_name="fabwiz")
"""


def _before_the_tui(*args: str) -> str:
    proc = python("-c", _PROBE.format(args=list(args)))
    line = [x for x in proc.stdout.splitlines() if x.startswith("LAB-LOADED")]
    assert line, proc.stderr[-2000:]
    return line[-1]


def test_every_built_in_name_is_known_without_loading_it() -> None:
    names = scenarios.builtin_names()
    assert "crs804-three-bugs" in names and len(names) > 5
    assert all(_builtin(n) for n in names)
    assert not _builtin("no-such-scenario")
    assert not _builtin("crs804-three-bugs.yaml")  # a file name: loaded (and read) before the TUI
    assert not _builtin("some/dir/crs804-three-bugs")


def test_a_built_in_scenario_loads_no_lab_before_the_first_screen() -> None:
    assert _before_the_tui("demo") == "LAB-LOADED False False"
    assert _before_the_tui("demo", "--scenario", "crs812-six-node") == "LAB-LOADED False False"


def test_a_wrong_name_or_a_broken_file_is_said_before_the_tui(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["demo", "--scenario", "nope"])
    assert res.exit_code == 2
    assert "fabwiz demo:" in res.output and "no built-in scenario named 'nope'" in res.output
    broken = tmp_path / "broken.yaml"
    broken.write_text("topology: [this is not a topology\n", encoding="utf-8")
    res = CliRunner().invoke(cli, ["demo", "--scenario", str(broken)])
    assert res.exit_code == 2 and "fabwiz demo:" in res.output and str(broken) in res.output
    # a file is read and checked before the TUI: the lab model is loaded for it
    good = tmp_path / "mine.yaml"
    builtin = Path(scenarios.__file__).with_name("scenarios") / "crs804-three-bugs.yaml"
    good.write_text(builtin.read_text(encoding="utf-8"), encoding="utf-8")
    assert _before_the_tui("demo", "--scenario", str(good)).startswith("LAB-LOADED True")
