"""Host PCIe and firmware: does each ConnectX-7 half run at Gen5 x4 with known-good firmware?

Each CX7 half sits on a PCIe Gen5 x4 link; below that (e.g. x2 on an old BIOS) the half cannot
carry ~100 Gb/s (`host.pcie-width`: `lspci -vv` LnkSta). A CX7 firmware older than the cluster's
known-good version (or older than the rest of the cluster) is information, never a fault on its
own: seed 000 lists 28.45 vs 28.47 as a false trail. `host.cx7-throttled` needs the bandwidth
signature too (~12-13 Gb/s RDMA on links that look healthy, `--perf`), judged by the rail test.
A pasted `lspci -vv` or kernel log (mlx5 "available PCIe bandwidth") is judged for the width only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from flows import plans
from flows.base import Check, Context, Observations, PastedRule
from flows.checks._common import (
    ETHTOOL_I,
    LSPCI,
    PASTED,
    Finding,
    Unreadable,
    listing,
    node_rails,
    once_per_text,
    pasted_host,
    pasted_verdicts,
    read,
    sudo_command,
)
from wizard.errors import ParseError
from wizard.model import Evidence, FixPlan, Status, Verdict
from wizard.parsers.ethtool import parse_ethtool_driver
from wizard.parsers.kernel_log import parse_kernel_log
from wizard.parsers.lspci import parse_lspci


@dataclass(frozen=True, slots=True)
class PciFunction:
    node: str
    address: str
    speed: str | None
    width: int | None


@dataclass(frozen=True, slots=True)
class Firmware:
    node: str
    netdev: str
    version: str


@dataclass(frozen=True, slots=True)
class HostPcie:
    functions: tuple[PciFunction, ...]
    firmware: tuple[Firmware, ...]
    unreadable: tuple[Unreadable, ...]
    fw_unreadable: tuple[Unreadable, ...]


def parse(obs: Observations, ctx: Context) -> HostPcie:
    funcs: list[PciFunction] = []
    fws: list[Firmware] = []
    bad: list[Unreadable] = []
    fw_bad: list[Unreadable] = []
    # the same lspci and `ethtool -i` on most nodes of a fabric: each text is parsed once
    lspci, driver = once_per_text(parse_lspci), once_per_text(parse_ethtool_driver)
    for node in ctx.nodes:
        value, why, _ = read(obs, node, LSPCI, lspci)
        if why is not None:
            bad.append(why)
        if value is not None:
            for d in value.devices:
                # the probe lists Mellanox functions only; a pasted `lspci -vv` lists them all
                if d.lnksta is None or not (d.mellanox or d.description is None):
                    continue
                funcs.append(PciFunction(node, d.address or "?", d.lnksta.speed, d.lnksta.width))
        for rail in node_rails(ctx, node):
            drv, why2, _ = read(obs, node, ETHTOOL_I, driver, rail.netdev)
            if why2 is not None:
                fw_bad.append(why2)
            if drv is not None and drv.firmware_version:
                fws.append(Firmware(node, rail.netdev, drv.firmware_version))
    return HostPcie(tuple(funcs), tuple(fws), tuple(bad), tuple(fw_bad))


def version_key(v: str) -> tuple[int, ...]:
    out = []
    for part in v.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


def reference_firmware(h: HostPcie, ctx: Context) -> str | None:
    """The known-good firmware: the inventory's, else the newest seen when nodes disagree."""
    known = ctx.known_good_firmware or ctx.expectations.known_good_firmware
    if known:
        return known
    versions = {f.version for f in h.firmware}
    if len(versions) < 2:
        return None
    return max(versions, key=version_key)


def old_firmware_nodes(h: HostPcie, ctx: Context) -> dict[str, str]:
    ref = reference_firmware(h, ctx)
    if ref is None:
        return {}
    return {f.node: f.version for f in h.firmware if version_key(f.version) < version_key(ref)}


def judge(h: HostPcie, ctx: Context) -> list[Verdict]:
    e = ctx.expectations
    width = Finding("host.pcie-width")
    fw = Finding("host.cx7-throttled")
    want = f"LnkSta {e.pcie_speed} x{e.pcie_width}"
    for w in h.unreadable:
        width.cannot_tell(w, want)
    for p in h.functions:
        ev = Evidence(
            f"{p.node} {p.address}", sudo_command(LSPCI), f"LnkSta {p.speed} x{p.width}", want
        )
        if (p.width is not None and p.width < e.pcie_width) or (
            p.speed is not None and version_key(p.speed) < version_key(e.pcie_speed)
        ):
            width.fail(ev, target=p.node)
        else:
            width.ok(ev)
    ref = reference_firmware(h, ctx)
    old = old_firmware_nodes(h, ctx)
    for f in h.firmware:
        ev = Evidence(
            f"{f.node}/{f.netdev}",
            ETHTOOL_I.command.replace("{netdev}", f.netdev),
            f"firmware-version {f.version}",
            f"firmware >= {ref}" if ref else "the cluster's known-good firmware",
        )
        if f.node in old:
            # information: shown, never a verdict without the bandwidth signature
            fw.good.append(
                Evidence(
                    ev.target,
                    ev.command,
                    ev.observed + " (older: information, not a fault without ~12-13 Gb/s RDMA)",
                    ev.expected,
                    Status.BENIGN,
                )
            )
        else:
            fw.ok(ev)
    return [
        width.verdict(
            ok=f"every CX7 function links at {e.pcie_speed} x{e.pcie_width}",
            bad=f"CX7 PCIe link below {e.pcie_speed} x{e.pcie_width} on {listing(width.targets)}",
        ),
        fw.verdict(
            ok=(
                f"CX7 firmware older than {ref} on {listing(old)}: information only (a "
                "throttle needs the 8-25 Gb/s bandwidth signature, --perf)"
            )
            if old
            else "CX7 firmware is at the known-good version"
            if ref
            else "CX7 firmware is the same on every node",
            bad=f"CX7 firmware older than {ref} on {listing(fw.targets)}: the firmware power "
            "throttle caps RDMA near 12-13 Gb/s",
        ),
    ]


def judge_pasted_lspci(text: str, ctx: Context) -> list[Verdict]:
    """A pasted `lspci -vv`: the PCIe width of the CX7 functions it lists."""
    obs, one = pasted_host(text, ctx, LSPCI)
    return pasted_verdicts(CHECK.run(obs, one), ("host.pcie-width",))


def judge_pasted_kernel_log(text: str, ctx: Context) -> list[Verdict]:
    """A pasted kernel log: mlx5's "available PCIe bandwidth (<speed> x<width> link)" lines, as
    the functions' link, judged like LnkSta."""
    try:
        log = parse_kernel_log(text)
    except ParseError:
        return []
    funcs = []
    for e in log.of("pcie-bandwidth"):
        m = re.search(r"([\d.]+) GT/s x(\d+)", e.value or "")
        if e.text.startswith("mlx5_core") and m:
            funcs.append(PciFunction(PASTED, e.device or "?", f"{m.group(1)}GT/s", int(m.group(2))))
    if not funcs:
        return []
    parsed = HostPcie(tuple(funcs), (), (), ())
    one = replace(ctx, nodes=(PASTED,), switches=(), rails={})
    return [replace(v, check=CHECK.id) for v in judge(parsed, one) if v.fault == "host.pcie-width"]


def fix(h: HostPcie, verdict: Verdict, ctx: Context) -> FixPlan | None:
    return plans.firmware_plan(verdict, ctx, reference_firmware(h, ctx))


CHECK = Check(
    id="host.pcie-width",
    title="CX7 PCIe link and firmware",
    description=__doc__ or "",
    faults=("host.pcie-width", "host.cx7-throttled"),
    step="direct_connect",
    probes=(LSPCI, ETHTOOL_I),
    parse=parse,
    judge=judge,
    fix=fix,
    pasted=(
        PastedRule(("lspci",), judge_pasted_lspci),
        PastedRule(("kernel-log",), judge_pasted_kernel_log),
    ),
)
