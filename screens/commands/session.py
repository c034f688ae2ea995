"""`fabwiz resume`, `fabwiz replay` and `fabwiz report`: the commands that work on a recorded
session (a session folder, or its events.jsonl).

Resume hands the session to `screens.compose.resume_fix`; replay and report work
offline on the log alone. Exit codes: 0 ok (replay: every verdict agrees), 1 findings (replay:
some verdicts differ), 2 error (no such session, a log from a newer fabwiz, not a fabwiz log).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from wizard.errors import FabwizError

if TYPE_CHECKING:
    from flows.expectations import Expectations


def _fail(message: str, code: int = 2) -> NoReturn:
    click.echo(f"fabwiz: {message}", err=True)
    sys.exit(code)


def _load(session: str) -> Any:
    from wizard.session import load_session

    try:
        loaded = load_session(session)
    except FabwizError as exc:
        _fail(str(exc))
    if loaded.torn_tail:
        click.echo(
            "fabwiz: note: the session log's last line was cut mid-write (the session stopped "
            "abruptly); everything before it is loaded.",
            err=True,
        )
    return loaded


@click.command()
@click.argument("session", type=click.Path(path_type=Path))
@click.option(
    "--yes", "-y", is_flag=True, help="Confirm every fix and physical action (as `fix --yes`)."
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the same final JSON object as `fix --json`."
)
@click.option(
    "--break-stale-lock",
    is_flag=True,
    help="Take over a switch or node lock whose session is gone and whose expiry is past.",
)
def resume(session: Path, yes: bool, as_json: bool, break_stale_lock: bool) -> None:
    """Continue SESSION (a folder or its events.jsonl) from where it stopped.

    Applied fixes are not sent again, and the drain guard knows every link transition recorded.
    """
    loaded = _load(str(session))
    from screens.compose import resume_fix

    sys.exit(resume_fix(loaded.folder, yes=yes, as_json=as_json, break_stale_lock=break_stale_lock))


async def _await(awaitable: Any) -> Any:
    return await awaitable


@click.command()
@click.argument("session", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def replay(session: Path, as_json: bool) -> None:
    """Re-run SESSION's verdicts offline from its recorded outputs and show where they differ.

    Exit 0 when every verdict agrees, 1 when some differ.
    """
    from flows.replay import replay_session

    loaded = _load(str(session))
    try:
        result = replay_session(loaded)
    except FabwizError as exc:
        _fail(str(exc))
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        _print_replay(result, str(loaded.folder))
    sys.exit(0 if result.agree else 1)


def _print_replay(result: Any, where: str) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from wizard.safetext import clean

    console = Console()
    table = Table(title=Text(f"Replay of {clean(where)}"), title_justify="left")
    table.add_column("step")
    table.add_column("fault", no_wrap=True)
    table.add_column("recorded")
    table.add_column("replayed")
    table.add_column("targets", overflow="fold")
    table.add_column("difference")
    for row in result.rows:
        style = "" if row.agree else "bold"
        targets = ", ".join(row.recorded_targets or row.replayed_targets)
        # names and differences come from the log (the targets' text): plain, without escapes
        cells = (
            row.step,
            row.fault,
            "—" if row.recorded is None else str(row.recorded),
            "—" if row.replayed is None else str(row.replayed),
            targets,
            row.difference or ("agrees" if row.compared else row.note),
        )
        table.add_row(*(Text(clean(c)) for c in cells), style=style)
    console.print(table)
    n = len(result.differences)
    recorded = sum(1 for r in result.rows if r.recorded is not None)
    engine = sum(1 for r in result.rows if not r.compared)
    aside = f" ({engine} judged by the engine itself, not judged again)" if engine else ""
    console.print(
        f"{recorded} recorded verdicts replayed: {n} differences{aside}"
        if n
        else f"all {recorded - engine} recorded verdicts a check judges agree{aside}",
        markup=False,
    )
    for w in result.warnings:
        console.print(f"warning: {w}", markup=False)


@click.command()
@click.argument("session", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "html", "json"]),
    default="md",
    show_default=True,
    help="Markdown for a ticket, standalone HTML, or JSON.",
)
@click.option("--redact", is_flag=True, help="Replace host names, addresses and MACs.")
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), help="Write to FILE instead of stdout."
)
@click.option(
    "--bundle",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write an evidence bundle (.tar.gz): the report in every format, every raw "
    "output and switch export, and a manifest; redacted the same way with --redact.",
)
def report(session: Path, fmt: str, redact: bool, output: Path | None, bundle: Path | None) -> None:
    """Write SESSION's report: what was checked, evidence, verdicts, fixes with their exports,
    and the numbers before and after."""
    from wizard.report import render

    loaded = _load(str(session))
    from screens.report_limits import recorded_limits

    limits = recorded_limits(loaded.started)  # what the session judged against
    if limits.problem:
        click.echo(f"warning: {limits.problem}; the charts use the table's defaults", err=True)
    ceilings = report_ceilings(len(loaded.started.nodes), limits.expectations)
    fabric_map = None
    if bundle is not None or fmt == "html":
        from screens.report_map import fabric_map_data

        fabric_map = fabric_map_data(loaded, limits.expectations)
    if bundle is not None:
        from wizard.bundle import build_bundle, write_bundle

        try:
            write_bundle(
                bundle,
                build_bundle(loaded, redact=redact, ceilings=ceilings, fabric_map=fabric_map),
            )
        except OSError as exc:
            _fail(f"cannot write {bundle}: {exc.strerror or exc}")
        click.echo(
            f"evidence bundle written to {bundle}" + (" (redacted)" if redact else ""), err=True
        )
        if output is None:
            return
    text = render(
        loaded,
        "md" if fmt == "md" else "html" if fmt == "html" else "json",
        redact=redact,
        ceilings=ceilings,
        fabric_map=fabric_map if fmt == "html" else None,
    )
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        # private from the first byte: a report names hosts, addresses and switch configs
        fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        _fail(f"cannot write {output}: {exc.strerror or exc}")
    click.echo(f"report written to {output}", err=True)


def report_ceilings(nodes: int, e: Expectations | None = None) -> dict[str, float]:
    """What the report's charts draw against: the expectations table's numbers (the
    session's own, with its recorded overrides, when given)."""
    from flows.expectations import DEFAULT
    from screens.report_limits import ceilings

    return ceilings(e or DEFAULT, nodes)
