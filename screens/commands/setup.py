"""`fabwiz setup ...`: what a node needs before a walk, printed for the operator to install.

`fabwiz setup sudoers --user fabwiz` prints the sudoers drop-in that allows, without a password,
exactly the commands fabwiz runs with `sudo -n` (`flows.sudoers.RULES`, the same data the
preflight sudo check asks each node about). `--read-only` limits it to the read-only probes
(`fabwiz check` then works; fixes are refused).
"""

from __future__ import annotations

import sys

import click


@click.group()
def setup() -> None:
    """Prepare nodes for fabwiz (prints what to install; changes nothing)."""


@setup.command("sudoers")
@click.option("--user", "user", required=True, help="The account fabwiz logs in as.")
@click.option("--read-only", is_flag=True, help="Only the read-only probes, no fix commands.")
def sudoers_cmd(user: str, read_only: bool) -> None:
    """Print a minimal /etc/sudoers.d/fabwiz for USER.

    Check and install it on each node:
    sudo visudo -c -f fabwiz.sudoers && sudo install -m 0440 fabwiz.sudoers /etc/sudoers.d/fabwiz
    """
    from flows.sudoers import sudoers

    try:
        text = sudoers(user, read_only=read_only)
    except ValueError as exc:
        click.echo(f"fabwiz setup sudoers: --user: {exc}", err=True)
        sys.exit(2)
    click.echo(text, nl=False)
