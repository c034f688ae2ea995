"""A change only the technician can make (a container's environment) is answered with
"I changed it, re-check", which the engine follows with a re-run of the step's probes."""

from __future__ import annotations

import asyncio

from textual.app import App
from textual.widgets import Button

from screens.modals import PhysicalActionModal
from wizard.model import PhysicalAction

MANUAL = PhysicalAction(
    kind="manual",
    nodes=("spark1",),
    instructions="Change the job's environment by hand, then re-check: spark1 (container vllm): "
    "in the container vllm's environment (NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0)",
)


async def test_the_manual_step_offers_i_changed_it_re_check() -> None:
    answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    class Host(App[None]):
        def on_mount(self) -> None:
            self.push_screen(PhysicalActionModal(MANUAL, can_perform_in_lab=False, answer=answer))

    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, PhysicalActionModal)
        title = modal.query_one("#dialog-title").render()
        assert "Change by hand on spark1" in str(title)
        done = modal.query_one("#done", Button)
        assert str(done.label) == "I changed it, re-check (d)"
        await pilot.press("d")
        await pilot.pause()
        assert answer.done() and answer.result() == "done"
