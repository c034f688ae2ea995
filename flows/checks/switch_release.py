"""Switch identity: model, RouterOS version, routerboard firmware and serial, and known regressions.

Each switch's `/system/resource` (version, board) and `/system/routerboard` (model, serial,
current and upgrade firmware) are read and recorded, so a report says exactly what was tested.
RouterOS 7.20 and 7.21 broke RDMA on Marvell (Prestera) CRS switches after their QoS rework
(seed 000's reference: the CRS504 iSER thread); on such a release the switch is a warning
(`switch.routeros-rdma-regression`): upgrade before trusting a result. A routerboard firmware
older than the RouterOS it runs is noted too (`/system/routerboard/upgrade`, then a reboot).
Good: a release outside the regression list, firmware matching it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flows.base import Check, Context, Observations, SwitchProbe
from flows.checks._common import SW_RESOURCE, Finding, Unreadable, listing, rows
from wizard.model import Evidence, Status, Verdict

SW_ROUTERBOARD = SwitchProbe("routerboard", "/system/routerboard")
FAULT = "switch.routeros-rdma-regression"
MARVELL = re.compile(r"^CRS[3-9]\d\d")  # CRS3xx..CRS8xx: Marvell Prestera switch chips


@dataclass(frozen=True, slots=True)
class SwitchRelease:
    switch: str
    model: str
    version: str  # "7.21.1", without "(stable)"
    channel: str
    firmware: str
    upgrade_firmware: str
    serial: str

    @property
    def text(self) -> str:
        return (
            f"{self.model}, RouterOS {self.version}"
            + (f" ({self.channel})" if self.channel else "")
            + f", routerboard firmware {self.firmware or '?'}, serial {self.serial or '?'}"
        )


@dataclass(frozen=True, slots=True)
class Releases:
    switches: tuple[SwitchRelease, ...]
    unreadable: tuple[Unreadable, ...]


def parse(obs: Observations, ctx: Context) -> Releases:
    out: list[SwitchRelease] = []
    bad: list[Unreadable] = []
    for sw in ctx.switches:
        res, why, _ = rows(obs, sw, SW_RESOURCE)
        board, why2, _ = rows(obs, sw, SW_ROUTERBOARD)
        if why is not None:
            bad.append(why)
        if res is None or not res:
            continue
        r = res[0]
        b = board[0] if board else {}
        raw = r.get("version", "")
        m = re.match(r"^\s*(\S+)(?:\s+\((\w+)\))?", raw)
        version, channel = (m.group(1), m.group(2) or "") if m else (raw, "")
        out.append(
            SwitchRelease(
                sw,
                b.get("model") or r.get("board-name", "?"),
                version,
                channel,
                b.get("current-firmware", ""),
                b.get("upgrade-firmware", ""),
                b.get("serial-number", ""),
            )
        )
        if why2 is not None and not board:
            bad.append(why2)
    return Releases(tuple(out), tuple(bad))


def _in(version: str, releases: tuple[str, ...]) -> bool:
    return any(
        version == r or version.startswith((r + ".", r + "rc", r + "beta")) for r in releases
    )


def judge(r: Releases, ctx: Context) -> list[Verdict]:
    f = Finding(FAULT)
    for w in r.unreadable:
        f.cannot_tell(w, "the switch's RouterOS release")
    regressions = ctx.expectations.routeros_rdma_regressions
    for s in r.switches:
        note = ""
        if s.firmware and s.upgrade_firmware and s.firmware != s.upgrade_firmware:
            note = f"; routerboard firmware {s.firmware} lags {s.upgrade_firmware}"
        ev = Evidence(
            s.switch,
            "/system/resource print; /system/routerboard print",
            s.text + note,
            f"RouterOS outside {', '.join(regressions)} on a Marvell CRS",
        )
        if MARVELL.match(s.model) and _in(s.version, regressions):
            f.fail(ev, warn=True)
        else:
            f.ok(ev)
    v = f.verdict(
        ok="no switch runs a RouterOS release with a known RDMA regression",
        bad=f"RouterOS {', '.join(sorted({s.version for s in r.switches if s.switch in f.targets}))} "
        f"on {listing(f.targets)}: releases {', '.join(regressions)} broke RDMA on Marvell CRS "
        "switches; upgrade (/system/package/update install) before trusting a result",
    )
    if v.status is Status.PASS:
        return [v]
    recorded = tuple(e for e in f.good)
    return [Verdict(v.fault, v.status, v.summary, v.targets, (*v.evidence, *recorded))]


CHECK = Check(
    id=FAULT,
    title="Switch model, RouterOS release and firmware",
    description=__doc__ or "",
    faults=(FAULT,),
    step="preflight",
    probes=(SW_RESOURCE, SW_ROUTERBOARD),
    parse=parse,
    judge=judge,
)
