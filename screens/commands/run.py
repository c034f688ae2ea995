"""`fabwiz run -i INVENTORY`: the wizard (TUI) on a real cluster.

The inventory is validated and typed passwords (`password: {prompt: true}`) are asked on the
terminal before the TUI takes the screen. The nodes' handshakes, the switches' logins and the
preflight's read-only sweep then begin on the session's event loop while Textual loads
(`_before_the_app`); the engine starts in the app's one async worker after the first paint
(`screens.compose.open_wizard`, the same wiring as `fabwiz fix`) and its preflight takes that
sweep over. Exit 0 when the session ends healthy, 1 otherwise, 2 when it could not start or
the wizard gave up.
"""

from __future__ import annotations

import asyncio
import importlib
import selectors
import sys
import threading
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from screens.connections import EarlyConnections
    from screens.ports import TuiPorts


class WizardFactory:
    """The engine factory of `fabwiz run` and `fabwiz demo` for `FabwizApp`: opens the wizard
    (and the lab) inside the app's worker (`screens.compose.open_wizard`).

    On an inventory's cluster the nodes' handshakes and the switches' logins begin before the
    engine is built (`screens.connections.begin`). `fabwiz run` begins them before the app,
    with the preflight's read-only sweep (`connect_now`: Textual loads while their round trips
    go on). Otherwise while the first screen is composed when the transports are loaded
    already (`begin`, as the app mounts: nothing is imported before the first paint), else
    right after the first paint, before the engine's modules load (the factory's call). The
    lab of `fabwiz demo` starts after the first paint, with the engine.
    """

    def __init__(
        self,
        *,
        inventory: Path | None = None,
        lab: str | None = None,
        time_scale: float | None = None,
        session_dir: Path | None = None,
        accept_new_host_keys: bool = False,
        prompt: Callable[[str], str] | None = None,
    ) -> None:
        self.inventory = inventory
        self.lab = lab
        self.time_scale = time_scale
        self.session_dir = session_dir
        self.accept_new_host_keys = accept_new_host_keys
        self.prompt = prompt
        self.early: EarlyConnections | None = None
        self._closing = False  # an exit stack closes `early` (unless the wizard adopted them)

    def begin(self, stack: AsyncExitStack) -> None:
        """As the app mounts: begin the cluster's connections if that loads no module (or take
        charge of those `connect_now` began)."""
        if self.early is not None or all(name in sys.modules for name in _CONNECTING):
            self._connect(stack)

    def connect_now(self) -> None:
        """Before the app: load the transports and begin the cluster's connections and the
        preflight's sweep on the running loop (`fabwiz run`: their round trips go on while
        Textual loads). The app's `begin` takes charge of closing them. Nothing begins when the
        session log could not be created: no probe runs that the log would not record (the app
        says why once it is up)."""
        from wizard.session.files import cannot_create_session

        if cannot_create_session(self.session_dir) is not None:
            return
        _load_transports()
        self._connect(None, prefetch=True)

    async def opened(self, timeout: float) -> None:
        """Wait until the handshakes and logins `connect_now` began have ended, at most
        `timeout` seconds (nothing to wait for when none began)."""
        if self.early is not None:
            await self.early.opened(timeout)

    def _connect(self, stack: AsyncExitStack | None, *, prefetch: bool = False) -> None:
        if self.early is None and self.inventory is not None and self.lab is None:
            from screens.connections import begin
            from wizard.errors import FabwizError

            try:
                self.early = begin(
                    self.inventory,
                    accept_new_host_keys=self.accept_new_host_keys,
                    prompt=self.prompt,
                    prefetch=prefetch,
                )
            except FabwizError:
                return  # open_wizard meets it again and the app says it
        if self.early is not None and stack is not None and not self._closing:
            self._closing = True
            stack.push_async_callback(self.early.release)  # unless the wizard takes them over

    async def __call__(self, ports: TuiPorts, stack: AsyncExitStack) -> Any:
        if self.early is None and self.inventory is not None and self.lab is None:
            # the handshakes go out first; the engine's modules load while they are in flight
            await asyncio.to_thread(_load_transports)
            self._connect(stack)
            await asyncio.to_thread(importlib.import_module, "screens.compose")
        from screens.compose import DEMO_TIME_SCALE, open_wizard

        lab = self.lab
        wiring = await open_wizard(
            operator=ports,
            sinks=[ports.emit],
            inventory=self.inventory,
            lab=lab,
            session_dir=self.session_dir,
            accept_new_host_keys=self.accept_new_host_keys,
            time_scale=self.time_scale or (DEMO_TIME_SCALE if lab else None),
            command="demo" if lab else "run",
            prompt=self.prompt,
            connections=self.early,
        )
        stack.push_async_callback(wiring.close)
        ports.app.rails_source = lambda: wiring.fabric.rails
        ports.app.cabling = dict(wiring.inventory.cabling)
        ports.app.session_folder = str(wiring.log.folder)
        return wiring.engine


# How long `fabwiz run` lets the handshakes go first before Textual loads (and its first screen
# comes): enough for a rack's handshakes, short enough that a node that does not answer delays
# the screen by no more than this.
HANDSHAKES_FIRST_S = 0.3


async def _before_the_app(factory: WizardFactory, selector: _LoopSelector) -> None:
    """`fabwiz run` before its app: the connections and the preflight's sweep begin; once the
    handshakes are through (or `HANDSHAKES_FIRST_S` has passed), Textual and the screens load in
    a thread while the nodes run the sweep's scripts. The handshakes are round trip after round
    trip, each delayed by a module that holds the interpreter; a script's answer is one, and the
    nodes take longer to run the scripts than Textual to load. The loop's work still goes first:
    the thread loads its next module only when the loop waits (`_Yielding`)."""
    factory.connect_now()
    await factory.opened(HANDSHAKES_FIRST_S)

    def load() -> None:
        hook = _Yielding(selector)
        sys.meta_path.insert(0, hook)
        try:
            importlib.import_module("screens.app")
        finally:
            sys.meta_path.remove(hook)

    await asyncio.to_thread(load)


class _LoopSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """The session loop's selector: knows when the loop is waiting in it (has nothing to run)."""

    waiting = False

    def select(self, timeout: float | None = None) -> Any:
        self.waiting = True
        try:
            return super().select(timeout)
        finally:
            self.waiting = False


class _Yielding:
    """A meta path finder that finds nothing: before each module the importing thread loads, it
    lets the loop finish what it is running (at most `MAX_WAIT_S` a module, `BUDGET_S` in all:
    these waits delay the first screen by that much at most, however big the cluster; the
    loop's work itself still shares the one interpreter), so that the handshakes' and the
    sweep's turns come first and the imports fill the loop's waits. Only that thread waits."""

    MAX_WAIT_S = 0.002
    BUDGET_S = 0.15

    def __init__(self, selector: _LoopSelector) -> None:
        self.selector = selector
        self.thread = threading.get_ident()
        self.left = self.BUDGET_S

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if threading.get_ident() != self.thread or self.selector.waiting or self.left <= 0:
            return None
        start = time.monotonic()
        end = start + min(self.MAX_WAIT_S, self.left)
        while not self.selector.waiting and time.monotonic() < end:
            time.sleep(0.0001)
        self.left -= time.monotonic() - start
        return None


# What `begin` needs loaded to start the connections without importing anything.
_CONNECTING = ("asyncssh", "screens.connections")


def _load_transports() -> None:
    """asyncssh and the transports, loaded in a worker thread (the app keeps painting)."""
    from wizard.transports.sshlib import load_asyncssh

    load_asyncssh()
    importlib.import_module("screens.connections")


# The engine factory of `fabwiz run` and `fabwiz demo` (and of tests and the bench), by the name
# they import it under.
wizard_factory = WizardFactory


def _typed_passwords(inventory: Path) -> Callable[[str], str] | None:
    """Ask typed switch passwords now, while the terminal is still a terminal."""
    from flows.expectations import validate_overrides
    from wizard.inventory import load_inventory, resolve_password

    inv = load_inventory(inventory, expectations=validate_overrides)
    answers: dict[str, str] = {}

    def ask(text: str) -> str:
        answers[text] = str(click.prompt(text, hide_input=True, err=True))
        return answers[text]

    for spec in inv.switches:
        resolve_password(spec, prompt=ask)
    if not answers:
        return None
    return lambda text: answers[text]


@click.command(name="run")
@click.option(
    "-i",
    "--inventory",
    "inventory",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="The cluster's inventory YAML (nodes, switches, where passwords come from).",
)
@click.option(
    "--accept-new-host-keys",
    is_flag=True,
    help="Accept and record SSH host keys not yet in known_hosts (never a changed one).",
)
@click.option(
    "--session-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where to write the session log (default: under your user state directory).",
)
def run(inventory: Path, accept_new_host_keys: bool, session_dir: Path | None) -> None:
    """Open the wizard on a real cluster described by an inventory.

    \b
    Example:
      fabwiz run -i fabric.yaml
    """
    from wizard.errors import FabwizError

    try:
        prompt = _typed_passwords(inventory)
    except FabwizError as exc:
        click.echo(f"fabwiz run: {exc}", err=True)
        raise SystemExit(2) from None
    factory = wizard_factory(
        inventory=inventory,
        session_dir=session_dir,
        accept_new_host_keys=accept_new_host_keys,
        prompt=prompt,
    )
    # One event loop for the whole session: the cluster's handshakes and the preflight's
    # read-only sweep begin on it before Textual loads (in a thread, so that their round trips
    # go on meanwhile), and the app runs on it and takes them over. Closing it cancels and
    # closes whatever the app did not take over.
    selector = _LoopSelector()
    with asyncio.Runner(loop_factory=lambda: asyncio.SelectorEventLoop(selector)) as runner:
        try:
            runner.run(_before_the_app(factory, selector))
            from screens.app import FabwizApp

            app = FabwizApp(factory, sub_title=str(inventory))
            code = app.run(loop=runner.get_loop())
        finally:
            # closed in order (a no-op once the wizard took them over), also after a ctrl-c
            # while Textual was loading
            if factory.early is not None:
                runner.run(factory.early.release())
    from screens.cli import save_startup_caches

    save_startup_caches()  # what the session parsed, compiled or imported after start-up
    if app.exit_message():
        click.echo(app.exit_message(), err=True)
    raise SystemExit(2 if code is None else code)
