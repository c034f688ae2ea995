"""The collector is paused while a command starts and comes back when its imports are done, or
after a bounded time whatever the command does; a pause made by someone else is left alone."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from screens import cli


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    yield
    cli._GC_PAUSED = False
    gc.enable()
    gc.unfreeze()


def test_startup_done_freezes_what_start_up_built_and_resumes_the_collector() -> None:
    timer = cli.pause_collector_for_startup()
    try:
        assert not gc.isenabled()
        frozen_before = gc.get_freeze_count()
        cli.startup_done()
        assert gc.isenabled()
        assert gc.get_freeze_count() > frozen_before  # start-up's objects left out of later scans
    finally:
        timer.cancel()


def test_the_collector_comes_back_by_itself_when_a_command_never_says_it_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cli, "STARTUP_GC_PAUSE_S", 0.01)
    timer = cli.pause_collector_for_startup()
    assert not gc.isenabled()
    timer.join(timeout=5)
    assert gc.isenabled()


def test_a_pause_made_later_by_someone_else_is_not_undone() -> None:
    timer = cli.pause_collector_for_startup()
    cli.startup_done()
    timer.cancel()
    gc.disable()  # e.g. Textual while it scrolls
    cli.startup_done()  # the start-up pause is over: nothing to undo
    assert not gc.isenabled()


def _modules_after_loading_an_inventory(env: dict[str, str], extra: str = "") -> str:
    code = (
        "import sys\n"
        "import screens.cli\n"
        "from flows.expectations import validate_overrides\n"
        "from wizard.inventory import parse_inventory\n"
        f"text = 'nodes: [{{name: n1, host: 127.0.0.1}}]\\n{extra}'\n"
        "inv = parse_inventory(text, path='x.yaml', expectations=validate_overrides)\n"
        "print(len(inv.nodes), dict(inv.expectations), 'pydantic' in sys.modules,"
        " 'importlib.metadata' in sys.modules)\n"
    )
    base = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[1],
        env={**base, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


OVERRIDE = "expectations: {rail_pass_gate_gbps: 70}\\n"


def test_an_inventory_without_overrides_loads_without_pydantic() -> None:
    # the inventory's records are plain dataclasses: only the overrides' validator needs pydantic
    assert _modules_after_loading_an_inventory({}) == "1 {} False False"


def test_with_plugins_disabled_pydantic_does_not_look_for_them() -> None:
    got = _modules_after_loading_an_inventory({}, OVERRIDE)
    assert got == "1 {'rail_pass_gate_gbps': 70} True False"


def test_a_plugin_the_user_enables_is_still_looked_for() -> None:
    # the user's own setting wins: pydantic's real loader (and its metadata scan) runs
    got = _modules_after_loading_an_inventory({"PYDANTIC_DISABLE_PLUGINS": "logfire"}, OVERRIDE)
    assert got == "1 {'rail_pass_gate_gbps': 70} True True"


def _fabwiz(args: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "screens.cli", *args],
        cwd=Path(__file__).resolve().parents[1],
        env={**os.environ, "XDG_CACHE_HOME": str(cache)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def test_help_neither_reads_nor_writes_the_start_up_cache(tmp_path: Path) -> None:
    assert _fabwiz(["--help"], tmp_path).returncode == 0
    assert not (tmp_path / "fabwiz").exists()


@pytest.mark.lab
def test_a_check_leaves_the_start_up_cache_for_the_next_one(tmp_path: Path) -> None:
    first = _fabwiz(["check", "--lab", "healthy-2node-direct", "--json"], tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    (cached,) = (tmp_path / "fabwiz").glob("startup-*.bin")
    assert cached.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "fabwiz").stat().st_mode & 0o777 == 0o700
    second = _fabwiz(["check", "--lab", "healthy-2node-direct", "--json"], tmp_path)
    assert second.returncode == 0 and second.stdout == first.stdout  # the same report
