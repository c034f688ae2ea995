"""The collector is paused while a command starts and comes back when its imports are done, or
after a bounded time whatever the command does; a pause made by someone else is left alone."""

from __future__ import annotations

import gc
from collections.abc import Iterator

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
