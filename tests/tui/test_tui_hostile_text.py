"""Names and outputs from the targets never reach the terminal as control characters.

A switch names its interfaces, a node its netdevs, and both write the outputs and errors fabwiz
shows: any of them can carry an escape sequence (clear the screen, retitle the window, move the
cursor) or a bidirectional override. Every event field that can hold such a value is fed one
here, and every line of the screen (the step list, the step's conclusion, the gauges, the log,
the fabric map, the summary, the raw output) is read back: it may show the text, never the
control characters (`wizard.safetext.clean`)."""

from __future__ import annotations

import re

from tui_fakes import T0

from screens.app import FabwizApp
from wizard.events import (
    MeasurementTaken,
    Note,
    ProbeSent,
    StepChanged,
    VerdictReached,
)
from wizard.model import Evidence, Measurement, Status, Verdict

EVIL = "x\x1b]0;pwned\x07\x1b[2J\x9b31m\u202ey"
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _hostile(app: FabwizApp) -> None:
    for i, step in enumerate(("preflight", "direct_connect")):
        t = T0 + 10 * i
        app.ports.emit(StepChanged(step=step, phase="probing", at=t))
        app.ports.emit(
            ProbeSent(step=step, target=f"spark1{EVIL}", command=f"ethtool {EVIL}", at=t + 1)
        )
        app.ports.emit(Note(level="warn", step=step, text=f"note {EVIL}", at=t + 2))
        evidence = Evidence(
            f"crs804/{EVIL}",
            f"cmd {EVIL}",
            f"obs {EVIL}",
            f"exp {EVIL}",
            Status.UNKNOWN,
            f"raw {EVIL}",
        )
        unseen = Verdict(
            "switch.mtu",
            Status.UNKNOWN,
            f"unseen {EVIL}",
            evidence=(evidence,),
            targets=(f"crs804/{EVIL}",),
        )
        app.ports.emit(VerdictReached(step=step, verdict=unseen, at=t + 3))
        bad = Verdict("host.duplicate-ip", Status.FAIL, f"bad {EVIL}", targets=(f"spark1/{EVIL}",))
        app.ports.emit(VerdictReached(step=step, verdict=bad, at=t + 4))
        rail = Measurement("rail", f"spark1/{EVIL}->spark2/{EVIL}", 7.7, "Gb/s")
        app.ports.emit(MeasurementTaken(step=step, measurement=rail, at=t + 5))
        app.ports.emit(StepChanged(step=step, phase="done", at=t + 6))


def _lines(app: FabwizApp) -> list[str]:
    return ["".join(seg.text for seg in s) for s in app.screen._compositor.render_strips()]


def _leaks(app: FabwizApp) -> list[str]:
    return [line for line in _lines(app) if CONTROLS.search(line)]


async def test_no_control_character_from_a_target_reaches_the_screen() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        _hostile(app)
        await pilot.pause(0.5)
        shown: list[str] = []
        for step in ("preflight", "direct_connect"):
            app.session.viewed = step
            app.session.update_view({"steps", "detail", "log"})
            await pilot.pause(0.3)
            assert _leaks(app) == [], step
            shown += [
                "".join(s.text for s in strip) for strip in app.screen._compositor.render_strips()
            ]
        # the names are shown, their escape sequences dropped and the override as U+FFFD
        text = "\n".join(shown)
        assert "crs804/x\ufffdy" in text  # the step list's reason and the conclusion
        assert "bad x\ufffdy" in text and "note x\ufffdy" in text  # a verdict, the log
        assert "spark1   x\ufffdy " in text  # the gauge row: node, netdev
        # a question naming a rail: the prompt under the verdicts shows it
        import asyncio

        from screens.ports import PendingChoice

        future = asyncio.get_running_loop().create_future()
        question = f"low on spark3/{EVIL}. Skip the physical test?"
        app.session.engine_ready = True
        app.offer_choice(PendingChoice("preflight", question, ("next",), {"next": "next"}, future))
        app.session.viewed = "preflight"
        app.session.update_view({"detail"})
        await pilot.pause(0.3)
        assert _leaks(app) == []
        assert any("▶ low on spark3/x\ufffdy" in line for line in _lines(app))
        for key in ("m", "escape", "u", "escape", "x"):
            await pilot.press(key)
            await pilot.pause(0.3)
            assert _leaks(app) == [], (key, app.screen)


async def test_the_end_summary_shows_target_values_without_their_control_characters() -> None:
    """The session's end: the reason, the faults found and their targets, what was never
    checked and why, the reboot proof not done."""
    from screens.end_screen import SessionEndModal
    from wizard.events import OperatorAnswered, SessionEnded

    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        _hostile(app)
        app.ports.emit(
            OperatorAnswered(
                step="persist", question="reboot proof", answer=f"skip {EVIL}", at=T0 + 50
            )
        )
        app.ports.emit(SessionEnded(healthy=False, reason=f"reason {EVIL}", at=T0 + 60))
        await pilot.pause(0.3)
        await pilot.press("u")
        await pilot.pause(0.3)
        assert isinstance(app.screen, SessionEndModal)
        assert _leaks(app) == []
        text = "\n".join(_lines(app))
        assert "reason x\ufffdy" in text and "spark1/x\ufffdy" in text
        assert "unseen x\ufffdy" in text and "skip x\ufffdy" in text


async def test_dialogs_show_target_values_without_their_control_characters() -> None:
    """The fix, hands-needed, error, question and quit dialogs name switches, nodes, fixes and
    the targets' own error texts."""
    from dataclasses import replace

    from textual.widgets import SelectionList
    from tui_fakes import OFFLOAD_PLAN, export_of

    from screens.modals import (
        ChoiceModal,
        ConfirmModal,
        ErrorModal,
        FixConfirmModal,
        PhysicalActionModal,
        QuitModal,
    )
    from wizard.model import PhysicalAction

    plan = replace(OFFLOAD_PLAN, target=f"crs804{EVIL}", summary=f"move {EVIL} into bridge")
    dialogs = [
        FixConfirmModal(plan, export_of("offload", 1), rollback_window_s=300),
        PhysicalActionModal(
            PhysicalAction("ac_drain", (f"spark1{EVIL}",), f"unplug spark1{EVIL}"),
            can_perform_in_lab=False,
        ),
        PhysicalActionModal(  # a checklist: one line per action, the node's name in each
            PhysicalAction(
                "ac_drain",
                (f"spark1{EVIL}",),
                f"1. shut down spark1{EVIL}[bold]b[/]\n2. unplug its cord\n3. power on",
            ),
            can_perform_in_lab=False,
        ),
        ErrorModal(f"spark1{EVIL} refused", f"the server said: {EVIL}", f"check {EVIL}"),
        ChoiceModal("offload", f"which port of crs804{EVIL}?", ["one", "two"]),
        ConfirmModal(f"apply on {EVIL}?", f"crs804{EVIL} bounces its links"),
        QuitModal([f"offload:switch.offload-split-cage:crs804{EVIL}"]),
    ]
    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        for dialog in dialogs:
            app.push_screen(dialog)
            await pilot.pause(0.2)
            lines = ["".join(s.text for s in st) for st in app.screen._compositor.render_strips()]
            assert _leaks(app) == [], type(dialog).__name__
            assert any("x\ufffdy" in line for line in lines), type(dialog).__name__
            if isinstance(dialog, PhysicalActionModal) and "[bold]" in dialog.action.instructions:
                # the checklist shows the name as text: its markup is not read (a crash before)
                checklist = dialog.query_one(SelectionList)
                items = ["".join(s.text for s in checklist.render_line(y)) for y in range(3)]
                assert "shut down spark1x\ufffdy[bold]b[/]" in items[0]
            app.pop_screen()
            await pilot.pause()


async def test_a_key_pressed_out_of_turn_is_answered_in_plain_text() -> None:
    """The toast for a key the engine is not asking for names the question (which can name a
    target) and the keys that answer it, in brackets: shown as written, never read as markup
    (a `[/x]` in the question crashed the app, the `[n]` hints vanished)."""
    import asyncio

    from screens.ports import PendingChoice

    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.ports.emit(StepChanged(step="preflight", phase="verdict", at=T0))
        app.session.engine_ready = True
        future = asyncio.get_running_loop().create_future()
        question = f"low on spark3/[/x][bold]{EVIL}. Go on?"
        app.offer_choice(
            PendingChoice("preflight", question, ("next", "rerun"), {"next": "n"}, future)
        )
        await pilot.pause()
        await pilot.press("a")  # apply: not what the engine asks
        await pilot.pause(0.2)
        (toast,) = [n.message for n in app._notifications]
        assert toast.startswith("apply: not now — the engine asks “low on spark3/[/x][bold]x")
        assert "next [n]" in toast and "\x1b" not in toast
        assert app.is_running
