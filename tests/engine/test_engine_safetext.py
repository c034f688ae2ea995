"""Text from targets on screen and in reports: escape sequences removed, never read as markup
(rich, Markdown, HTML) — spoofing a fix preview or a report takes more than a switch comment."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from screens.terminal import EventPrinter, TerminalOperator
from wizard import safetext
from wizard.events import FixRefusedEvent, Note
from wizard.lab import Lab
from wizard.model import FixPlan
from wizard.report import render

SPOOF = "\x1b[2J\x1b[H\x1b]0;owned\x07[bold red]APPLIED OK[/] <script>x</script> | *b* \u202eevil"


def test_clean_removes_escapes_and_shows_controls() -> None:
    assert safetext.clean("a\x1b[31mb\x1b]8;;http://x\x1b\\c\x07d\re") == "abc\ufffdd\ufffde"
    assert safetext.clean("tab\tand\nline") == "tab\tand\nline"
    assert "\u202e" not in safetext.clean("x\u202ey")


def test_markdown_and_html_never_carry_markup() -> None:
    md = safetext.markdown("<script>|[link](javascript:x)*")
    assert "<" not in md and "\\[link\\]" in md and "\\|" in md and "\\*" in md
    assert safetext.html_text("<b>&") == "&lt;b&gt;&amp;"
    fence = safetext.code_block("a ``` b")
    assert fence[0] == "````" and fence[-1] == "````"


@pytest.mark.parametrize("markup", ["[/]", "[bold red]x", "a\\[b]"])
async def test_terminal_shows_target_text_literally(markup: str) -> None:
    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=True, color_system=None)
    printer = EventPrinter(console)
    printer(Note(level="warn", text=SPOOF + markup, step="offload"))
    printer(FixRefusedEvent(step="offload", fault="f", target="crs804", reason=SPOOF))
    op = TerminalOperator(console, yes=True, interactive=False)
    plan = FixPlan(fault="f", target="crs804", summary=SPOOF, preview=SPOOF)
    assert await op.confirm_fix(plan, None)
    await op.error(f"cannot reach {SPOOF}{markup}", SPOOF, SPOOF)
    text = out.getvalue()
    assert "cannot reach" in text  # the error's title, printed (a "[/]" in it raised before)
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "[bold red]APPLIED OK[/]" in text  # shown as typed, not as style


async def test_hostile_comment_reaches_neither_terminal_nor_report_as_escapes(
    tmp_path: Path,
) -> None:
    from tests.reliability.rel_support import walk
    from wizard.session import load_session

    async with Lab("fault-switch-offload-split-cage", time_scale=100.0) as lab:
        sw: Any = lab.world.switches["crs804"]
        port = next(p for p in sw.tables["bridge-port"] if p["interface"] == "qsfp56-dd-1-2")
        port["comment"] = SPOOF
        w = await walk(lab, tmp_path, ["preflight", "offload"], traffic=False)
        assert "\x1b" not in w.text
        loaded = load_session(tmp_path / "session")
        html_report = render(loaded, "html")
        assert "\x1b" not in html_report and "<script>" not in html_report
        md = render(loaded, "md")
        assert "\x1b" not in md and "\u202e" not in md
        # outside code blocks (shown literally by every renderer) no raw HTML from the switch
        prose = re.split(r"^`{3,}.*$", md, flags=re.M)[::2]
        assert not [p for p in prose if "<script>" in p]
        assert any("<script>" in block for block in re.split(r"^`{3,}.*$", md, flags=re.M)[1::2])
        # the preview carried the comment as RouterOS escapes, and the rollback restored it
        assert port["comment"] == SPOOF or any(
            p.get("comment") == SPOOF for p in sw.tables["bridge-port"]
        )


@pytest.mark.parametrize("markup", ["[/]", "[/nope]", "[bold red]x"])
def test_check_report_shows_target_text_literally(markup: str) -> None:
    """`fabwiz check`'s text report: a port comment, an output or an error from a target with
    markup or escapes in it is printed as it reads (it crashed the report with "[/nope]")."""
    from screens.commands.check import CheckReport
    from screens.console import print_report
    from wizard.model import Evidence, Measurement, Status, Verdict

    text = f"{markup} {SPOOF}"
    ev = Evidence(
        f"crs804/{markup}", f"cmd {markup}", f"seen {text}", f"want {markup}", Status.FAIL
    )
    report = CheckReport(
        verdicts=[
            Verdict("switch.mtu", Status.FAIL, f"summary {text}", ("crs804",), (ev,)),
            Verdict("benign.pcie-27w", Status.BENIGN, f"benign {text}", ("n1",), (ev,)),
        ],
        nodes=[],
        switches=[],
        measurements=[Measurement("rail", f"n1/{markup}", 9.5, "Gb/s", reason=f"why {text}")],
        warnings=[f"warned {text}"],
        checked=True,
        seconds=1.0,
        measured=True,
    )
    out = io.StringIO()
    print_report(Console(file=out, width=400, highlight=False), report)
    shown = out.getvalue()
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    for literal in (
        f"crs804/{markup}",
        f"cmd {markup}",
        f"want {markup}",
        "[bold red]APPLIED OK[/]",
    ):
        assert literal in shown
    assert shown.count("[bold red]APPLIED OK[/]") == 5  # seen, two summaries, why, warning
