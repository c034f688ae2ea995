"""Red herring: "Detected insufficient power on the PCIe slot (27W)".

Healthy GB10 units log this mlx5 line at every boot (a SlotPowerLimit=0 reporting artifact). It
is shown as seen and harmless (`benign.pcie-27w`), never as a fault.
"""

from __future__ import annotations

from dataclasses import dataclass

from flows import hostlog
from flows.base import Check, Context, Observations, PastedRule
from flows.checks._common import DMESG, Unreadable, listing, pasted_host, read, sudo_command
from wizard.model import Evidence, Status, Verdict
from wizard.parsers.kernel_log import parse_kernel_log


@dataclass(frozen=True, slots=True)
class Seen:
    nodes: tuple[tuple[str, str], ...]  # (node, line)
    unreadable: tuple[Unreadable, ...]
    history: tuple[tuple[str, str], ...] = ()  # (node, what was set aside as older than a change)


def parse(obs: Observations, ctx: Context) -> Seen:
    seen: list[tuple[str, str]] = []
    bad: list[Unreadable] = []
    old: list[tuple[str, str]] = []
    for node in ctx.nodes:
        value, why, _ = read(obs, node, DMESG, parse_kernel_log)
        if why is not None:
            bad.append(why)
        if value is None:
            continue
        btime, _why, _ = read(obs, node, hostlog.BTIME, hostlog.parse_btime)
        lines = hostlog.split(value.of("pcie-27w"), node, ctx.changed_at, btime)
        if lines.current:
            seen.append((node, lines.current[0].text))
        elif lines.history:
            old.append((node, hostlog.history_text(lines, btime)))
    return Seen(tuple(seen), tuple(bad), tuple(old))


def judge(s: Seen, ctx: Context) -> list[Verdict]:
    if not s.nodes:
        aside = tuple(
            Evidence(node, sudo_command(DMESG), text, "not current evidence", Status.PASS)
            for node, text in s.history
        )
        return [
            Verdict(
                "benign.pcie-27w",
                Status.PASS,
                "the 27W line was not seen"
                + (" since the last change (older lines are history)" if aside else ""),
                evidence=aside,
            )
        ]
    ev = tuple(
        Evidence(node, sudo_command(DMESG), line, "harmless on GB10", Status.BENIGN)
        for node, line in s.nodes
    )
    return [
        Verdict(
            "benign.pcie-27w",
            Status.BENIGN,
            f"the mlx5 27W slot-power line on {listing(n for n, _ in s.nodes)} is a reporting "
            "artifact on GB10: harmless",
            targets=tuple(n for n, _ in s.nodes),
            evidence=ev,
        )
    ]


def judge_pasted(text: str, ctx: Context) -> list[Verdict]:
    """A pasted kernel log (`dmesg`, `journalctl -k`), as one node's."""
    obs, one = pasted_host(text, ctx, DMESG)
    return CHECK.run(obs, one)


CHECK = Check(
    id="benign.pcie-27w",
    title="Red herring: the 27W PCIe slot-power line",
    description=__doc__ or "",
    faults=("benign.pcie-27w",),
    step="preflight",
    probes=(DMESG, hostlog.BTIME),
    parse=parse,
    judge=judge,
    pasted=(PastedRule(("kernel-log",), judge_pasted),),
)
