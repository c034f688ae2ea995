"""`fabwiz demo`: the wizard (TUI) on the built-in lab, started in-process.

The first screen paints before anything slow happens: the lab (SSH and RouterOS API servers on
127.0.0.1) and the engine start inside the app's one async worker, after the first refresh. The
lab's hands are offered for physical actions ("Perform in lab"). Exit 0 when the session ends
healthy, 1 otherwise, 2 when it could not start.
"""

from __future__ import annotations

from pathlib import Path

import click


@click.command(name="demo")
@click.option(
    "--scenario",
    "scenario",
    default="crs804-three-bugs",
    show_default=True,
    metavar="NAME|FILE",
    help="A built-in lab scenario (`fabwiz lab scenarios`) or a scenario YAML file.",
)
@click.option(
    "--time-scale",
    type=float,
    default=None,
    help="Simulated seconds per wall second (default: the demo's, fast but watchable).",
)
@click.option(
    "--session-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where to write the session log (default: under your user state directory).",
)
def demo(scenario: str, time_scale: float | None, session_dir: Path | None) -> None:
    """Open the wizard on the simulated GB10 + MikroTik lab.

    \b
    Examples:
      fabwiz demo                                  # the CRS804 three-bug build
      fabwiz demo --scenario crs812-six-node
      fabwiz demo --scenario my-faults.yaml
    """
    if not _builtin(scenario):
        from wizard.errors import FabwizError
        from wizard.lab import scenarios

        try:
            scenarios.load(scenario)  # a wrong name or a broken file is said here, not in the TUI
        except FabwizError as exc:
            click.echo(f"fabwiz demo: {exc}", err=True)
            raise SystemExit(2) from None

    from screens.app import FabwizApp
    from screens.commands.run import wizard_factory

    factory = wizard_factory(lab=scenario, time_scale=time_scale, session_dir=session_dir)
    app = FabwizApp(factory, sub_title=f"demo · {scenario}")
    code = app.run()
    from screens.cli import save_startup_caches

    save_startup_caches()  # what the session parsed, compiled or imported after start-up
    if app.exit_message():
        click.echo(app.exit_message(), err=True)
    raise SystemExit(2 if code is None else code)


def _builtin(scenario: str) -> bool:
    """`scenario` names a built-in scenario (`wizard.lab.scenarios.load` reads it by that name):
    its file ships with fabwiz and the tests load every one, so it is not loaded twice, here and
    again as the lab starts. Loading it would import the whole lab model before the first
    screen. A file or any other name is loaded here, so a mistake is said before the TUI."""
    import wizard.lab

    path = Path(scenario)
    if path.suffix in (".yaml", ".yml") or "/" in scenario or path.exists():
        return False
    return (Path(wizard.lab.__file__).with_name("scenarios") / f"{scenario}.yaml").is_file()
