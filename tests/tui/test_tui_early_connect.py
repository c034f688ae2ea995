"""The TUI begins an inventory's connections before it builds the engine: while the first screen
is composed when the transports are loaded already, else right after the first paint. The sweep
takes those handshakes over (one per node), what they accepted is in the session log, and they
are closed when the app goes before the engine is built."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from screens.app import FabwizApp
from screens.commands import run
from screens.commands.run import WizardFactory
from wizard.lab import Lab
from wizard.transports.ssh import SshTransport

pytestmark = pytest.mark.lab


async def _until(pilot: Any, predicate: Any, timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        assert loop.time() < end, "timed out"
        await pilot.pause(0.02)


async def closed_at_first_paint(factory: WizardFactory) -> list[int]:
    """Run an app on `factory` that closes at its first paint, before its engine is built
    (a call of the factory fails the test). Returns the factory's calls: none."""
    built: list[int] = []

    async def call(ports: Any, stack: Any) -> Any:
        built.append(1)
        raise AssertionError("never built: the app closes first")

    app = FabwizApp(factory)
    app._first_paint = lambda: app.exit(0)  # type: ignore[method-assign]
    factory.__class__ = type("Unbuilt", (WizardFactory,), {"__call__": call})
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
    return built


def _count_handshakes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    opened: list[str] = []
    real = SshTransport._connect

    async def connect(self: SshTransport, name: str) -> str | None:
        opened.append(name)
        return await real(self, name)

    monkeypatch.setattr(SshTransport, "_connect", connect)
    return opened


async def test_handshakes_begin_as_the_app_mounts_and_the_sweep_takes_them_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncssh  # noqa: F401  - loaded (a process that ran a session): nothing is imported

    import screens.connections  # noqa: F401

    opened = _count_handshakes(monkeypatch)
    async with Lab("healthy-2node-direct", time_scale=100.0) as lab:
        lab.known_hosts_path.write_text("")  # first use: the keys accepted are said in the log
        factory = WizardFactory(
            inventory=lab.inventory_path,
            session_dir=tmp_path / "s",
            accept_new_host_keys=True,
        )
        app = FabwizApp(factory)
        at_first_paint: list[Any] = []
        real_paint = app._first_paint

        def first_paint() -> None:
            early = factory.early
            at_first_paint.append(early and sorted(early.ssh._starting) + sorted(opened))
            real_paint()

        app._first_paint = first_paint  # type: ignore[method-assign]
        async with app.run_test(size=(120, 40)) as pilot:
            await _until(
                pilot, lambda: app.pending_choice is not None or app.view.ended is not None
            )
            nodes = sorted(lab.world.nodes)
            # under way before the first screen was painted
            assert at_first_paint == [nodes + nodes]
            assert factory.early is not None and factory.early.adopted
            # the sweep waited for those handshakes: one per node, none again
            assert sorted(opened) == nodes
            assert app.view.steps["preflight"].verdicts
            app.exit_session()
            await pilot.pause(0.2)
        events = [json.loads(line) for line in (tmp_path / "s" / "events.jsonl").open()]
        assert events[0]["type"] == "session_started"
        notes = [e["text"] for e in events if e["type"] == "note" and "SSH host key" in e["text"]]
        assert sorted(n.split(":")[0] for n in notes) == nodes
        assert all("SHA256:" in n for n in notes)
        assert not factory.early.ssh._conns  # closed with the wizard


async def test_without_the_transports_loaded_they_begin_after_the_first_paint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run, "_CONNECTING", ("asyncssh", "a.module.nobody.loaded"))
    opened = _count_handshakes(monkeypatch)
    async with Lab("healthy-2node-direct", time_scale=100.0) as lab:
        factory = WizardFactory(inventory=lab.inventory_path, session_dir=tmp_path / "s")
        app = FabwizApp(factory)
        at_first_paint: list[Any] = []
        real_paint = app._first_paint

        def first_paint() -> None:
            at_first_paint.append((factory.early, list(opened)))
            real_paint()

        app._first_paint = first_paint  # type: ignore[method-assign]
        async with app.run_test(size=(120, 40)) as pilot:
            await _until(
                pilot, lambda: app.pending_choice is not None or app.view.ended is not None
            )
            assert at_first_paint == [(None, [])]  # nothing began before the paint
            assert factory.early is not None and factory.early.adopted
            assert sorted(opened) == sorted(lab.world.nodes)
            assert app.view.steps["preflight"].verdicts
            app.exit_session()
            await pilot.pause(0.2)


async def test_connections_begun_for_an_engine_never_built_are_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncssh  # noqa: F401

    import screens.connections  # noqa: F401

    async with Lab("healthy-2node-direct", time_scale=100.0) as lab:
        factory = WizardFactory(inventory=lab.inventory_path, session_dir=tmp_path / "s")
        built = await closed_at_first_paint(factory)
        early = factory.early
        assert early is not None and not early.adopted and built == []
        assert early.ssh._starting == {} and early.ssh._conns == {}  # cancelled and closed
        assert not (tmp_path / "s").exists()  # no session was started
