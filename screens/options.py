"""Click options shared by the commands that open a cluster (`fix`, `run`, `demo`, `resume`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

F = Callable[..., Any]


def target_options(f: F) -> F:
    f = click.option(
        "--lab",
        "lab",
        metavar="NAME|FILE",
        help="Start the built-in lab with this scenario in-process (see `fabwiz lab scenarios`).",
    )(f)
    f = click.option(
        "-i",
        "--inventory",
        "inventory",
        type=click.Path(path_type=Path, dir_okay=False),
        help="The cluster's inventory YAML (nodes, switches, credentials' sources).",
    )(f)
    return f


def walk_options(f: F) -> F:
    f = click.option(
        "--time-scale",
        type=float,
        default=None,
        help="Lab only: simulated seconds per wall second (default: the lab's).",
    )(f)
    f = click.option(
        "--accept-new-host-keys",
        is_flag=True,
        help="Accept and record SSH host keys not yet in known_hosts, and API-SSL certificates "
        "no CA vouches for (never a changed one).",
    )(f)
    f = click.option(
        "--session-dir",
        type=click.Path(path_type=Path, file_okay=False),
        default=None,
        help="Where to write the session log (default: under your user state directory).",
    )(f)
    f = click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON object at the end, on stdout."
    )(f)
    f = click.option(
        "--yes",
        "-y",
        is_flag=True,
        help="Confirm every fix and physical action (in a lab, perform them with its hands).",
    )(f)
    return f
