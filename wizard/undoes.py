"""Persistence faults that would undo a step's fix: fixed with that step, first, not at step 8.

A NetworkManager profile of the node's own that autoconnects on a rail takes the rail over at
the next boot (or AC drain): the addresses and MTU the addressing step is about to write into
netplan would be gone after the first drain the walk asks for. Which persistence faults undo
which step is data (`StepSpec.persisted_with` in flows/bisection.py); the rule is here, pure:
a persistence finding counts when it is on a node one of the step's own host findings is about
to change.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from wizard.model import Status, Verdict


def nodes_of(verdict: Verdict, nodes: Collection[str]) -> set[str]:
    """The inventory nodes a verdict names (`spark2`, `spark2/enp1s0f0np0`, `spark1 (container
    vllm)`, `spark1 -> spark2`...)."""
    out: set[str] = set()
    for target in verdict.targets:
        for word in target.replace("->", " ").replace("/", " ").replace(",", " ").split():
            if word in nodes:
                out.add(word)
    return out


def undoing(
    own: Sequence[Verdict], persist: Sequence[Verdict], nodes: Collection[str]
) -> list[tuple[Verdict, tuple[str, ...]]]:
    """The persistence findings (fail or warn) on a node that one of the step's own findings
    (fail or warn) names, each with the step's fault ids it would undo there."""
    actionable = (Status.FAIL, Status.WARN)
    changing: dict[str, list[str]] = {}
    for v in own:
        if v.status in actionable:
            for n in nodes_of(v, nodes):
                changing.setdefault(n, []).append(v.fault)
    out: list[tuple[Verdict, tuple[str, ...]]] = []
    for p in persist:
        if p.status not in actionable:
            continue
        undone = [f for n in sorted(nodes_of(p, nodes)) for f in changing.get(n, ())]
        if undone:
            out.append((p, tuple(dict.fromkeys(undone))))
    return out


def sentence(
    persist: Verdict, undone: Sequence[str], step_title: str, nodes: Collection[str]
) -> str:
    """What the step says before it fixes the persistence first."""
    where = ", ".join(sorted(nodes_of(persist, nodes))) or ", ".join(persist.targets)
    return (
        f"{persist.fault} on {where} would undo this step's fix ({', '.join(undone)}) at the "
        f"next boot or AC drain: {persist.summary}. Fixed first, with {step_title}, not left "
        "to step 8"
    )
