"""`fabwiz analyze FILE... [--json]`: recognise raw tool outputs, parse them, judge them.

For tickets and chat pastes: each file is detected by content (perftest, nccl-tests, ip -j,
mlnx_qos, RouterOS prints and exports...), parsed, and judged with the signatures of FAULTS.md.
Exit codes: 0 no fail finding, 1 at least one fail finding, 2 a file could not be read (the
other files are still analysed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from flows.analyze import FileAnalysis, analyze_text, headline
from wizard.model import Status
from wizard.parsers.common import to_jsonable


def _entry(
    path: str, result: FileAnalysis | None, read_error: str | None, raw: str
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "path": path,
        "kind": result.kind if result else "unknown",
        "parsed": to_jsonable(result.parsed) if result and result.parsed is not None else None,
        "findings": [
            {
                "fault": v.fault,
                "status": v.status.value,
                "summary": v.summary,
                "targets": list(v.targets),
            }
            for v in (result.findings if result else ())
        ],
    }
    error = read_error or (result.error if result else None)
    if error:
        entry["error"] = error
    if result is not None and result.parsed is None:
        entry["raw"] = raw
    return entry


@click.command(name="analyze")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
def analyze(files: tuple[Path, ...], as_json: bool) -> None:
    """Recognise raw tool outputs (ib_write_bw, nccl-tests, ibdev2netdev, ip -j, ethtool,
    mlnx_qos, sysctl, lspci, dmesg, ping, iperf3 -J, RouterOS prints and exports) and show
    the parsed values and the findings they imply.

    Exit 0 when no finding fails, 1 when one does, 2 when a file could not be read.
    """
    entries: list[dict[str, Any]] = []
    results: list[tuple[str, FileAnalysis | None, str | None]] = []
    unreadable = False
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            unreadable = True
            msg = f"cannot read {path}: {exc.strerror or exc}"
            click.echo(f"fabwiz analyze: {msg}", err=True)
            entries.append(_entry(str(path), None, msg, ""))
            results.append((str(path), None, msg))
            continue
        result = analyze_text(text)
        entries.append(_entry(str(path), result, None, text))
        results.append((str(path), result, None))

    if as_json:
        click.echo(json.dumps({"files": entries}, indent=2))
    else:
        _print_table(results)

    if unreadable:
        sys.exit(2)
    failing = any(v.status is Status.FAIL for _, r, _ in results if r for v in r.findings)
    sys.exit(1 if failing else 0)


def _print_table(results: list[tuple[str, FileAnalysis | None, str | None]]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from wizard.safetext import clean

    table = Table(title="fabwiz analyze", show_lines=True)
    table.add_column("file", overflow="fold")
    table.add_column("kind")
    table.add_column("parsed")
    table.add_column("findings")
    styles = {
        "fail": "red",
        "warn": "yellow",
        "benign": "cyan",
        "unknown": "magenta",
        "pass": "green",
    }
    # what the files hold (device names, error texts) is shown as written: plain text without
    # its escapes, never read as markup
    for path, result, error in results:
        if result is None:
            table.add_row(Text(clean(path)), "-", Text(clean(error), style="red"), "")
            continue
        parsed = (
            Text(clean(headline(result.kind, result.parsed)))
            if result.parsed is not None
            else Text(clean(result.error), style="magenta")
        )
        findings = Text("-") if not result.findings else Text()
        for i, v in enumerate(result.findings):
            if i:
                findings.append("\n")
            findings.append(v.status.value, style=styles.get(v.status.value, "white"))
            findings.append(f" {clean(v.fault)}: {clean(v.summary)}")
        table.add_row(Text(clean(path)), Text(clean(result.kind)), parsed, findings)
    Console().print(table)
