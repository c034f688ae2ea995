"""The versions a session ran against, as one structured record (the report's "Versions").

Preflight reads, per node, the DMI platform, DGX OS, kernel, driver, CX7 firmware and the
packages (perftest, Open MPI, mlnx-tools, NCCL), and per switch the model, RouterOS, routerboard
firmware and serial; the NCCL run prints the nccl-tests and NCCL versions it used. `Versions`
gathers what has been read so far; the sweep emits a `VersionsRecorded` event each time the
record changes, so the latest one in the session log is the whole record. A value nobody read
is absent (never guessed).

Node keys: platform, dgx_os, os, kernel, driver, cx7_firmware, perftest, openmpi, mlnx_tools,
nccl, nccl_tests. Switch keys: model, routeros, channel, firmware, upgrade_firmware, serial.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from wizard import readiness
from wizard.events import Event, VersionsRecorded
from wizard.model import ProbeResult

__all__ = ["NODE_KEYS", "SWITCH_KEYS", "Versions", "latest", "node_versions", "switch_identity"]

NODE_KEYS = (
    "platform",
    "dgx_os",
    "os",
    "kernel",
    "driver",
    "cx7_firmware",
    "perftest",
    "openmpi",
    "mlnx_tools",
    "nccl",
    "nccl_tests",
)
SWITCH_KEYS = ("model", "routeros", "channel", "firmware", "upgrade_firmware", "serial")
_VERSION_PROBES = {p.name for p in readiness.VERSION_PROBES}


def node_versions(out: Mapping[str, ProbeResult]) -> dict[str, str]:
    """The versions one node's preflight batch shows (empty when it ran no version probe)."""
    if not _VERSION_PROBES & set(out):
        return {}
    texts = {
        name: (r.stdout if r.error is None else None)
        for name, r in out.items()
        if name in _VERSION_PROBES
    }
    found = readiness.parse_versions(texts)
    rec: dict[str, str] = {}
    for key in ("platform", "kernel", "driver", "cx7_firmware", "perftest", "openmpi", "nccl"):
        if found.get(key):
            rec[key] = found[key]
    if found.get("mlnx-tools"):
        rec["mlnx_tools"] = found["mlnx-tools"]
    kv = _os_release(texts.get(readiness.OS_RELEASE.name) or "")
    dgx = kv.get("DGX_OTA_VERSION") or kv.get("DGX_SWBUILD_VERSION")
    if dgx:
        rec["dgx_os"] = dgx
    if kv.get("PRETTY_NAME"):
        rec["os"] = kv["PRETTY_NAME"]
    tools = out.get(readiness.TOOLS_PROBE.name)
    if "nccl" not in rec and tools is not None and tools.error is None:
        lib = readiness.parse_tools(tools.stdout).nccl_version
        if lib:
            rec["nccl"] = lib  # NVIDIA's playbook build under ~/nccl (no package)
    return rec


def _os_release(text: str) -> dict[str, str]:
    return {
        k.strip(): v.strip().strip('"')
        for k, _, v in (ln.partition("=") for ln in text.splitlines() if "=" in ln)
    }


def switch_identity(out: Mapping[str, ProbeResult]) -> dict[str, str]:
    """Model, RouterOS and routerboard firmware/serial from `/system/resource` and
    `/system/routerboard` (empty when neither was read)."""
    res = out.get("resource")
    board = out.get("routerboard")
    r = res.rows[0] if res is not None and res.error is None and res.rows else {}
    b = board.rows[0] if board is not None and board.error is None and board.rows else {}
    rec: dict[str, str] = {}
    model = b.get("model") or r.get("board-name")
    if model:
        rec["model"] = model
    m = re.match(r"^\s*(\S+)(?:\s+\((\w+)\))?", r.get("version", ""))
    if m:
        rec["routeros"] = m.group(1)
        if m.group(2):
            rec["channel"] = m.group(2)
    for key, name in (
        ("firmware", "current-firmware"),
        ("upgrade_firmware", "upgrade-firmware"),
        ("serial", "serial-number"),
    ):
        if b.get(name):
            rec[key] = b[name]
    return rec


@dataclass(slots=True)
class Versions:
    """What has been read so far; `update*` return True when the record changed."""

    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    switches: dict[str, dict[str, str]] = field(default_factory=dict)

    def update(
        self,
        nodes: Mapping[str, Mapping[str, ProbeResult]],
        switches: Mapping[str, Mapping[str, ProbeResult]],
    ) -> bool:
        changed = False
        for group, results, read in (
            (self.nodes, nodes, node_versions),
            (self.switches, switches, switch_identity),
        ):
            for name, out in results.items():
                got = read(out)
                merged = {**group.get(name, {}), **got}
                if got and merged != group.get(name):
                    group[name] = merged
                    changed = True
        return changed

    def update_nccl(self, nodes: Iterable[str], extra: Mapping[str, object]) -> bool:
        """The versions an NCCL run printed (`nccl-tests version`, `NCCL version`), on its nodes."""
        got = {
            k: str(extra[src])
            for k, src in (("nccl_tests", "nccl_tests_version"), ("nccl", "nccl_version"))
            if extra.get(src)
        }
        changed = False
        for n in nodes:
            merged = {**self.nodes.get(n, {}), **got}
            if got and merged != self.nodes.get(n):
                self.nodes[n] = merged
                changed = True
        return changed

    def event(self, step: str = "") -> VersionsRecorded:
        return VersionsRecorded(
            step=step,
            nodes={n: dict(v) for n, v in sorted(self.nodes.items())},
            switches={s: dict(v) for s, v in sorted(self.switches.items())},
        )


def latest(events: Iterable[Event]) -> VersionsRecorded | None:
    """The session's version record: its last `VersionsRecorded` event."""
    found = None
    for ev in events:
        if isinstance(ev, VersionsRecorded):
            found = ev
    return found
