"""`fabwiz fix`: the headless wizard. Walks the same state machine as the TUI on a terminal.

It prints each step, its evidence and verdict, asks before each fix and physical action
(`--yes` confirms all; against a lab, `--yes` also performs physical actions with the lab's
hands) and with `--json` ends with one object on stdout. Exit 0 when the cluster ends healthy,
1 when it does not, 2 when the walk could not run (bad inventory, nothing reachable).
"""

from __future__ import annotations

from pathlib import Path

import click

from screens.options import target_options, walk_options


@click.command(name="fix")
@target_options
@walk_options
@click.option(
    "--break-stale-lock",
    is_flag=True,
    help="Take over a switch or node lock whose session is gone and whose expiry is past.",
)
def fix(
    inventory: Path | None,
    lab: str | None,
    yes: bool,
    as_json: bool,
    session_dir: Path | None,
    accept_new_host_keys: bool,
    time_scale: float | None,
    break_stale_lock: bool,
) -> None:
    """Walk the bisection headless: evidence, verdicts, fixes (export first), measurements.

    \b
    Examples:
      fabwiz fix --lab crs804-three-bugs --yes
      fabwiz fix -i fabric.yaml                 # asks before each fix
      fabwiz fix -i fabric.yaml --yes --json    # for scripts: one JSON object on stdout
    """
    from screens.compose import run_fix_command

    raise SystemExit(
        run_fix_command(
            inventory=inventory,
            lab=lab,
            yes=yes,
            as_json=as_json,
            session_dir=session_dir,
            accept_new_host_keys=accept_new_host_keys,
            time_scale=time_scale,
            break_stale_lock=break_stale_lock,
        )
    )
