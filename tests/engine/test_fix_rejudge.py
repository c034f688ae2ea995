"""After a verified fix, what the verification's sweep shows about the step's other faults
replaces what was judged before the change: no pre-fix verdict stays on the step as if current."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.fix_walk import fix_walk

pytestmark = pytest.mark.lab


def test_the_offload_step_is_judged_again_after_its_fix(tmp_path: Path) -> None:
    events = fix_walk("fault-switch-offload-split-cage", tmp_path / "s")
    applied = next(
        e["seq"]
        for e in events
        if e["type"] == "fix_applied" and e["fault"] == "switch.offload-split-cage"
    )
    lost = [
        e
        for e in events
        if e["type"] == "verdict_reached"
        and e["step"] == "offload"
        and e["verdict"]["fault"] == "switch.offload-lost"
    ]
    before = [e for e in lost if e["seq"] < applied]
    after = [e for e in lost if e["seq"] > applied]
    # before the change the loss was explained by the split cage; after it, the sweep that
    # verified the fix shows every fabric port with the H flag
    assert "explained by switch.offload-split-cage" in before[-1]["verdict"]["summary"]
    assert after, [e["seq"] for e in lost]
    assert after[-1]["verdict"]["status"] == "pass"
    assert "hardware-offloaded (H flag)" in after[-1]["verdict"]["summary"]
