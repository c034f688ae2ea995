"""The `fabwiz` command line: the composition root that wires engine, flows and screens.

Each subcommand lives in its own module under `screens/commands/` and is registered here, so that
`fabwiz --help` stays fast (imports are lazy) and helpers can add commands without editing one big
file. Exit codes: 0 healthy/success, 1 findings, 2 error (bad input, nothing could be checked).
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
import threading
import types
from typing import NoReturn

import click

from wizard import __version__

# fabwiz uses no pydantic plugins: without this, pydantic's first model scans every installed
# distribution's entry points for them (tens of milliseconds on each start).
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def _no_plugin_loader() -> None:
    """With every plugin disabled, pydantic's plugin loader returns none, but importing it still
    imports importlib.metadata (and email, zipfile, csv: ~15 ms before the first handshake). The
    loader's one entry point, with the answer it would give, stands in for it."""
    name = "pydantic.plugin._loader"
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") not in ("__all__", "1", "true"):
        return
    if name in sys.modules:
        return
    loader = types.ModuleType(name, "pydantic plugins: all disabled (PYDANTIC_DISABLE_PLUGINS)")
    loader.get_plugins = lambda: ()  # type: ignore[attr-defined]
    sys.modules[name] = loader


_no_plugin_loader()

# name -> (module, attribute, one-line help). The module is imported only when the command runs.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "demo": ("screens.commands.demo", "demo", "Open the wizard (TUI) on the built-in lab."),
    "run": ("screens.commands.run", "run", "Open the wizard (TUI) on a real cluster."),
    "check": ("screens.commands.check", "check", "Headless read-only sweep of every check."),
    "fix": ("screens.commands.fix", "fix", "Headless wizard: walk the bisection and offer fixes."),
    "lab": ("screens.commands.lab", "lab", "Run the simulated GB10 + MikroTik lab."),
    "resume": ("screens.commands.session", "resume", "Continue a session cut off mid-way."),
    "replay": ("screens.commands.session", "replay", "Re-run a session's verdicts offline."),
    "report": ("screens.commands.session", "report", "Write a session report for a ticket."),
    "analyze": ("screens.commands.analyze", "analyze", "Recognise and judge raw tool outputs."),
    "setup": ("screens.commands.setup", "setup", "Print what nodes need (e.g. a sudoers drop-in)."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attr, _help = COMMANDS[cmd_name]
        if _STANDALONE:
            import atexit

            from screens import codecache

            codecache.install()  # before the command's imports: their dataclasses compile from it
            # a command that ends before its start-up is declared done (`report`, `replay`,
            # `analyze`, `check --help`) keeps what it compiled and imported too (exit_now saves
            # before its quick exit; `fabwiz --help` alone writes nothing)
            atexit.unregister(save_startup_caches)
            atexit.register(save_startup_caches)
        try:
            cmd = getattr(importlib.import_module(module), attr)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise

            @click.command(name=cmd_name, help=_help + " (not available in this build)")
            def missing() -> None:
                click.echo(f"fabwiz {cmd_name}: not available in this build yet.", err=True)
                sys.exit(2)

            return missing
        assert isinstance(cmd, click.Command)
        return cmd

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_) for name, (_m, _a, help_) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="fabwiz")
def cli() -> None:
    """fabwiz: find why a GB10 RoCE fabric behind MikroTik CRS804/CRS812 switches is slow.

    A guided wizard walks the bisection that took real clusters from a ~10 Gb/s ceiling to
    line rate: direct-connect test, drain, switch offload, QoS, addressing, both PCIe halves,
    then NCCL all-reduce as ground truth. Start with `fabwiz demo` on the built-in lab.
    """


_STANDALONE = False  # set by main(): fabwiz is its own process (not a test's CliRunner)


def exit_now(code: int) -> NoReturn:
    """End a headless command whose work is done and printed. As its own process, fabwiz skips
    the interpreter's teardown (freeing some 600 modules costs 0.1-0.4 s, longer than a small
    sweep): output is flushed, nothing else is left to do. Inside a caller, a plain exit."""
    if _STANDALONE:
        save_startup_caches()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass  # a closed pipe: nothing more can be said there
        os._exit(code)
    sys.exit(code)


_GC_PAUSED = False
# How long a command may run with the cyclic garbage collector paused for its start-up.
STARTUP_GC_PAUSE_S = 2.0


def pause_collector_for_startup() -> threading.Timer:
    """Start-up builds a few hundred thousand objects that live as long as the process (modules,
    classes, compiled patterns, asyncssh's and pydantic's tables). The collector would scan them
    again and again while they are built (about a fifth of `check`'s start-up CPU) and free
    nothing. It is paused until `startup_done()`, or for STARTUP_GC_PAUSE_S at most, whichever
    comes first, so no command runs long without it."""
    global _GC_PAUSED
    gc.disable()
    _GC_PAUSED = True
    timer = threading.Timer(STARTUP_GC_PAUSE_S, startup_done)
    timer.daemon = True
    timer.start()
    return timer


def startup_done() -> None:
    """The imports are done: what exists now lives as long as the process, so later collections
    leave it out (`gc.freeze`), and the collector runs again. Only undoes the start-up pause
    (once): a pause someone else makes later (Textual pauses it while scrolling) is theirs."""
    global _GC_PAUSED
    if _GC_PAUSED:
        _GC_PAUSED = False
        gc.freeze()
        gc.enable()
        save_startup_caches()  # what start-up compiled and found, for the next start


def save_startup_caches() -> None:
    """Keep what this start compiled (screens.codecache) and which modules it read from where
    (screens.importcache), for the next start. Each writes only if it learned something."""
    from screens import codecache, importcache

    codecache.save()
    importcache.save()


def main() -> None:
    global _STANDALONE
    _STANDALONE = True
    from screens import importcache

    importcache.install()  # as `fabwiz` (screens.boot) does, for `python -m screens.cli`
    pause_collector_for_startup()
    cli(prog_name="fabwiz")


if __name__ == "__main__":
    # `python -m screens.cli`: run the module the commands import (`screens.cli`), not this
    # `__main__` copy of it, so its start-up state (standalone, collector paused) is theirs
    from screens.cli import main as _main

    _main()
