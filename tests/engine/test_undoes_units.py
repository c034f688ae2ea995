"""Which persistence findings would undo a step's fix: those on a node the step is about to
change, each with the fault ids it would undo there."""

from __future__ import annotations

from wizard import undoes
from wizard.model import Status, Verdict

NODES = ("spark1", "spark2", "spark3", "spark4")


def _v(fault: str, status: Status, *targets: str) -> Verdict:
    return Verdict(fault=fault, status=status, summary=f"{fault} seen", targets=targets)


def test_a_profile_on_a_node_the_step_changes_is_fixed_first() -> None:
    own = [
        _v("host.mtu", Status.FAIL, "spark2/enp1s0f0np0", "spark2/enp1s0f1np1"),
        _v("host.duplicate-ip", Status.FAIL, "spark1 -> spark3"),
        _v("switch.mtu", Status.FAIL, "crs804/qsfp56-dd-1-1"),
        _v("host.ipv6-on-fabric", Status.PASS, "spark4"),
    ]
    nm2 = _v("persist.nm-profile", Status.FAIL, "spark2/enp1s0f0np0")
    nm3 = _v("persist.nm-profile", Status.WARN, "spark3/enp1s0f1np1")
    nm4 = _v("persist.nm-profile", Status.FAIL, "spark4/enp1s0f0np0")
    found = undoes.undoing(own, [nm2, nm3, nm4], NODES)
    assert found == [(nm2, ("host.mtu",)), (nm3, ("host.duplicate-ip",))]


def test_nothing_to_fix_or_nothing_fighting_is_left_to_step_8() -> None:
    nm = _v("persist.nm-profile", Status.FAIL, "spark2/enp1s0f0np0")
    assert undoes.undoing([_v("host.mtu", Status.PASS, "spark2")], [nm], NODES) == []
    assert undoes.undoing([_v("host.mtu", Status.FAIL, "spark2")], [], NODES) == []
    unknown = _v("persist.nm-profile", Status.UNKNOWN, "spark2")
    assert undoes.undoing([_v("host.mtu", Status.FAIL, "spark2")], [unknown], NODES) == []


def test_the_sentence_names_the_fault_the_node_the_undone_fix_and_the_step() -> None:
    nm = _v("persist.nm-profile", Status.FAIL, "spark2/enp1s0f0np0")
    text = undoes.sentence(nm, ("host.mtu", "host.duplicate-ip"), "Addressing and MTU", NODES)
    assert text == (
        "persist.nm-profile on spark2 would undo this step's fix (host.mtu, host.duplicate-ip) "
        "at the next boot or AC drain: persist.nm-profile seen. Fixed first, with Addressing "
        "and MTU, not left to step 8"
    )
    assert undoes.nodes_of(_v("x", Status.FAIL, "spark1 (container vllm)", "spark10"), NODES) == {
        "spark1"
    }
