"""Host persistence: will every host fix come back by itself after a reboot?

A fix applied at runtime and not written where the boot reads it returns as the same ticket after
the next power cycle. On every node this reads what the boot will apply and compares it with what
runs now:

- `persist.netplan-addresses`: every fabric address in `ip -j addr` is in a netplan file (an
  address added with `ip addr` is gone at reboot; NetworkManager strips it even sooner).
- `persist.nm-profile`: no NetworkManager profile of its own (`nmcli -t`, a profile not generated
  by netplan) autoconnects on a fabric netdev with other settings: at boot it can win over
  netplan's and take the rail's address away.
- `persist.sysctl`: the ARP sysctls of a multi-rail host are in /etc/sysctl.d with the values.
- `persist.pfc-unit`: the PFC oneshot unit is enabled (`systemctl is-enabled`) where it is
  installed or where this session turned host PFC off.

Good: every address from netplan, only netplan's profile on each rail, the sysctl.d values, the
unit enabled. Each missing piece is a finding with its fix.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

import yaml

from flows import netplan, plans
from flows.base import Check, Context, HostProbe, Observations
from flows.checks._common import (
    SYSCTL_ARP,
    Finding,
    Unreadable,
    configured,
    listing,
    node_rails,
    read,
)
from flows.netplan import PROBE as NETPLAN_FILES
from wizard.model import Evidence, FixPlan, HostChange, Status, Verdict
from wizard.parsers import nmcli
from wizard.parsers.sysctl import ARP_KEYS, parse_sysctl
from wizard.yamlload import safe_load

NM_LIST = HostProbe("nmcli_list", "nmcli -t -f " + ",".join(nmcli.LIST_FIELDS) + " connection show")
NM_PROFILES = HostProbe(
    "nmcli_profiles",
    "nmcli -t -f UUID connection show | xargs -r nmcli -t -f "
    + ",".join(nmcli.DETAIL_FIELDS)
    + " connection show",
)
SYSCTL_FILES = HostProbe("sysctl_d", "grep -H . /etc/sysctl.d/*.conf")
PFC_UNIT = HostProbe("pfc_unit", f"systemctl is-enabled {plans.PFC_UNIT}")
NETPLAN_GENERATED = "/run/NetworkManager/system-connections/netplan-"
FAULTS = ("persist.netplan-addresses", "persist.nm-profile", "persist.sysctl", "persist.pfc-unit")
_NO_FILE = re.compile(r"^grep: /etc/sysctl\.d/[^:]*: No such file or directory$")
_SYSCTL_LINE = re.compile(r"^(/etc/sysctl\.d/[^:\s]+\.conf):(.*)$")


@dataclass(frozen=True, slots=True)
class NodePersist:
    node: str
    netplan: dict[str, tuple[str, ...]] | None  # netdev -> addresses in netplan (None: unread)
    profiles: tuple[tuple[nmcli.Listed, nmcli.Profile], ...] | None  # None: unread
    nm_absent: bool  # nmcli is not installed
    sysctl: dict[str, tuple[str, str]] | None  # key -> (value, file) as the boot applies them
    runtime: dict[str, str] | None  # the ARP sysctls as they run now (None: unread)
    unit: str | None  # `systemctl is-enabled` answer


@dataclass(frozen=True, slots=True)
class HostPersist:
    nodes: tuple[NodePersist, ...]
    unreadable: dict[str, tuple[Unreadable, ...]]  # fault -> why


def netplan_addresses(files: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """netdev -> addresses, merged over the netplan files in name order (the last one wins)."""
    out: dict[str, tuple[str, ...]] = {}
    for path in sorted(files):
        try:
            doc = safe_load(files[path]) or {}
        except yaml.YAMLError:
            continue
        eths = (doc.get("network") or {}).get("ethernets") if isinstance(doc, dict) else None
        if isinstance(eths, dict):
            for name, cfg in eths.items():
                if isinstance(cfg, dict) and "addresses" in cfg:
                    out[str(name)] = tuple(str(a) for a in cfg.get("addresses") or ())
    return out


def parse_sysctl_files(text: str) -> dict[str, tuple[str, str]]:
    """`grep -H . /etc/sysctl.d/*.conf` -> key -> (value, file); later files win (sysctl
    --system reads them in name order). Raises ValueError on output that is not grep's."""
    out: dict[str, tuple[str, str]] = {}
    # no file at all: grep says so for the unexpanded glob (exit 2), which is an answer
    lines = [raw for raw in text.splitlines() if raw.strip() and not _NO_FILE.match(raw)]
    for raw in lines:
        m = _SYSCTL_LINE.match(raw)
        if not m:
            raise ValueError(f"not a `path:line` line of grep -H: {raw[:80]!r}")
    for raw in sorted(lines, key=lambda r: r.split(":", 1)[0]):
        m = _SYSCTL_LINE.match(raw)
        assert m is not None
        line = m.group(2).strip()
        if not line or line.startswith(("#", ";")) or "=" not in line:
            continue
        key, _, value = line.partition("=")
        out[key.strip().replace("/", ".")] = (value.strip(), m.group(1))
    return out


def _netplan(
    obs: Observations, node: str
) -> tuple[dict[str, tuple[str, ...]] | None, Unreadable | None]:
    result = obs.node(node, NETPLAN_FILES.name)
    value, why, _ = read(obs, node, NETPLAN_FILES, netplan.parse_files, ok_exit=(0, 1, 2))
    if value is None:
        return None, why
    if not value and result is not None and result.stdout.strip():
        return None, Unreadable(node, result.command, "not grep -H output", result.text)
    return netplan_addresses(value), None


def _profiles(
    obs: Observations, node: str
) -> tuple[tuple[tuple[nmcli.Listed, nmcli.Profile], ...] | None, bool, Unreadable | None]:
    listed_raw = obs.node(node, NM_LIST.name)
    if listed_raw is not None and listed_raw.exit_status == 127 and listed_raw.error is None:
        return None, True, None  # nmcli is not installed: no NetworkManager profile exists
    listed, why, _ = read(obs, node, NM_LIST, nmcli.parse_list)
    if listed is None:
        return None, False, why
    details, why, _ = read(obs, node, NM_PROFILES, nmcli.parse_details)
    if details is None:
        return None, False, why
    by_uuid = {p.uuid: p for p in details}
    missing = [r.uuid for r in listed if r.uuid not in by_uuid]
    if missing:
        res = obs.node(node, NM_PROFILES.name)
        why = Unreadable(
            node, NM_PROFILES.command, f"no details of {missing[0]}", res.text if res else ""
        )
        return None, False, why
    return tuple((r, by_uuid[r.uuid]) for r in listed), False, None


def parse(obs: Observations, ctx: Context) -> HostPersist:
    out: list[NodePersist] = []
    bad: dict[str, list[Unreadable]] = {f: [] for f in FAULTS}
    for node in ctx.nodes:
        if node in obs.unreachable:
            continue
        plan, why = _netplan(obs, node)
        if why:  # the profiles are still judged: any of its own on a rail fights netplan
            bad["persist.netplan-addresses"].append(why)
        profiles, absent, why = _profiles(obs, node)
        if why:
            bad["persist.nm-profile"].append(why)
        sysctl, why, res = read(obs, node, SYSCTL_FILES, _sysctl_or_none, ok_exit=(0, 1, 2))
        if why is None and sysctl is None and res is not None:
            why = Unreadable(node, res.command, "not the output of grep -H", res.text)
        if why:
            bad["persist.sysctl"].append(why)
        unit, why, _ = read(obs, node, PFC_UNIT, _unit_state, ok_exit=(0, 1, 4))
        if why:
            bad["persist.pfc-unit"].append(why)
        now, _, _ = read(obs, node, SYSCTL_ARP, parse_sysctl)
        runtime = dict(now.values) if now is not None else None
        out.append(NodePersist(node, plan, profiles, absent, sysctl, runtime, unit))
    return HostPersist(tuple(out), {f: tuple(w) for f, w in bad.items()})


def _sysctl_or_none(text: str) -> dict[str, tuple[str, str]] | None:
    try:
        return parse_sysctl_files(text)
    except ValueError:
        return None


_UNIT_STATES = ("enabled", "enabled-runtime", "static", "disabled", "masked", "not-found")


def _unit_state(text: str) -> str:
    """`systemctl is-enabled UNIT`: the state word, or `not-found` (older systemd says "Failed
    to get unit file state for UNIT: No such file or directory" on stderr)."""
    words = text.split()
    if not words or "No such file or directory" in text:
        return "not-found"
    if words[0] not in _UNIT_STATES and words[0] not in (
        "linked",
        "alias",
        "indirect",
        "generated",
    ):
        from wizard.errors import ParseError

        raise ParseError(f"{words[0]!r} is not a unit file state", tool="systemctl", raw=text)
    return words[0]


def _judge_netplan(n: NodePersist, ctx: Context, f: Finding) -> None:
    if n.netplan is None:
        return
    cmd = NETPLAN_FILES.command
    for rail in node_rails(ctx, n.node):
        if not configured(rail):
            continue
        kept = n.netplan.get(rail.netdev, ())
        lost = [a for a in rail.addresses if a not in kept]
        observed = f"running {', '.join(rail.addresses)}; netplan: {', '.join(kept) or 'none'}"
        ev = Evidence(rail.key, cmd, observed, "every running fabric address in netplan")
        f.fail(ev) if lost else f.ok(ev)


def _fights(listed: nmcli.Listed, prof: nmcli.Profile, netdev: str, kept: tuple[str, ...]) -> bool:
    if listed.filename.startswith(NETPLAN_GENERATED) or not prof.autoconnect:
        return False
    if netdev not in (prof.interface, listed.device):
        return False
    return prof.method != "manual" or tuple(prof.addresses) != tuple(kept)


def _judge_nm(n: NodePersist, ctx: Context, f: Finding) -> None:
    cmd = NM_LIST.command
    if n.nm_absent:
        f.ok(Evidence(n.node, cmd, "nmcli: command not found", "no NetworkManager profile"))
        return
    if n.profiles is None:
        return
    for rail in node_rails(ctx, n.node):
        kept = (n.netplan or {}).get(rail.netdev, ())
        fighting = [(ls, p) for ls, p in n.profiles if _fights(ls, p, rail.netdev, kept)]
        for ls, p in fighting:
            observed = (
                f"profile {p.id!r} ({p.uuid}, {ls.filename or 'no file'}) autoconnects on "
                f"{rail.netdev}: ipv4.method {p.method or '?'} {', '.join(p.addresses)}".rstrip()
            )
            f.fail(Evidence(rail.key, cmd, observed, "only netplan's profile on the rail"))
        if not fighting:
            own = [p.id for ls, p in n.profiles if rail.netdev in (p.interface, ls.device)]
            observed = "profiles: " + (", ".join(own) or "none")
            f.ok(Evidence(rail.key, cmd, observed, "only netplan's profile on the rail"))


def _judge_sysctl(n: NodePersist, ctx: Context, f: Finding) -> None:
    if n.sysctl is None:
        return
    e = ctx.expectations
    want = dict(zip(ARP_KEYS, (e.arp_ignore, e.arp_announce, e.rp_filter), strict=True))
    if sum(1 for r in node_rails(ctx, n.node) if configured(r)) <= 1:
        f.ok(Evidence(n.node, SYSCTL_FILES.command, "single-rail host", "not needed"))
        return
    if n.runtime is not None and any(n.runtime.get(k) != str(v) for k, v in want.items()):
        # the running values are wrong: host.arp-sysctls reports it, and its fix writes the file
        observed = "running values differ: host.arp-sysctls owns the fix (sysctl.d)"
        f.ok(Evidence(n.node, SYSCTL_FILES.command, observed, "judged once they run"))
        return
    got = {k: n.sysctl.get(k, ("missing", "")) for k in ARP_KEYS}
    observed = " ".join(
        f"{k.rsplit('.', 1)[1]}={v}" + (f" ({src})" if src else "") for k, (v, src) in got.items()
    )
    expected = " ".join(f"{k.rsplit('.', 1)[1]}={v}" for k, v in want.items()) + " in sysctl.d"
    ev = Evidence(n.node, SYSCTL_FILES.command, observed, expected)
    bad = any(got[k][0] != str(v) for k, v in want.items())
    f.fail(ev) if bad else f.ok(ev)


def _judge_unit(n: NodePersist, ctx: Context, f: Finding) -> None:
    if n.unit is None:
        return
    fixed = "host.pfc-enabled" in ctx.fixed.get(n.node, ())
    needed = fixed or n.unit != "not-found"
    expected = f"{plans.PFC_UNIT} enabled" if needed else "no host PFC fix to persist"
    observed = n.unit + (" (host PFC was turned off in this session)" if fixed else "")
    ev = Evidence(n.node, PFC_UNIT.command, observed, expected)
    bad = needed and n.unit not in ("enabled", "enabled-runtime", "static", "linked")
    f.fail(ev) if bad else f.ok(ev)


def judge(h: HostPersist, ctx: Context) -> list[Verdict]:
    findings = {fault: Finding(fault) for fault in FAULTS}
    for fault, whys in h.unreadable.items():
        for w in whys:
            findings[fault].cannot_tell(w, "readable")
    for n in h.nodes:
        _judge_netplan(n, ctx, findings["persist.netplan-addresses"])
        _judge_nm(n, ctx, findings["persist.nm-profile"])
        _judge_sysctl(n, ctx, findings["persist.sysctl"])
        _judge_unit(n, ctx, findings["persist.pfc-unit"])
    texts = {
        "persist.netplan-addresses": (
            "every running fabric address comes from netplan",
            "fabric addresses that a reboot loses (not in netplan)",
        ),
        "persist.nm-profile": (
            "no NetworkManager profile fights netplan on the rails",
            "NetworkManager profiles that fight netplan on the rails",
        ),
        "persist.sysctl": (
            "the ARP sysctls are in /etc/sysctl.d with the values",
            "ARP sysctls a reboot loses (not in /etc/sysctl.d)",
        ),
        "persist.pfc-unit": (
            f"the PFC oneshot unit {plans.PFC_UNIT} is enabled where it is needed",
            f"host PFC would come back at boot: {plans.PFC_UNIT} not enabled",
        ),
    }
    out = []
    for fault, f in findings.items():
        ok, bad = texts[fault]
        out.append(f.verdict(ok=ok, bad=f"{bad}: {listing(f.targets)}"))
    return out


def _nm_plan(h: HostPersist, verdict: Verdict, ctx: Context) -> FixPlan | None:
    targets = set(verdict.targets)
    changes: list[HostChange] = []
    for n in h.nodes:
        cmds: list[str] = []
        undo: list[str] = []
        for rail in node_rails(ctx, n.node):
            if rail.key not in targets or n.profiles is None:
                continue
            kept = (n.netplan or {}).get(rail.netdev, ())
            for ls, p in n.profiles:
                if _fights(ls, p, rail.netdev, kept):
                    uuid = shlex.quote(p.uuid)  # matched as a UUID by the parser
                    cmds.append(
                        f"sudo -n nmcli connection modify uuid {uuid} connection.autoconnect no"
                    )
                    undo.append(
                        f"sudo -n nmcli connection modify uuid {uuid} connection.autoconnect yes"
                    )
        if cmds:
            changes.append(
                HostChange(
                    node=n.node,
                    files=(),
                    commands=tuple(dict.fromkeys(cmds)),
                    rollback_commands=tuple(dict.fromkeys(undo)),
                )
            )
    if not changes:
        return None
    preview = "\n".join(f"{c.node}$ {cmd}" for c in changes for cmd in c.commands)
    return FixPlan(
        fault=verdict.fault,
        target=", ".join(c.node for c in changes),
        summary="stop the NetworkManager profiles that fight netplan from autoconnecting (kept, not deleted)",
        preview=preview,
        host_changes=tuple(changes),
        verify_checks=(verdict.fault,),
    )


def _unit_plan(h: HostPersist, verdict: Verdict, ctx: Context) -> FixPlan | None:
    """Enable an installed unit; install it (host.pfc-enabled's plan) where it is missing."""
    nodes = [n for n in h.nodes if n.node in {t.split("/")[0] for t in verdict.targets}]
    missing = [n.node for n in nodes if n.unit == "not-found"]
    if missing:
        return plans.host_pfc_plan(verdict, ctx)
    changes = tuple(
        HostChange(
            node=n.node,
            files=(),
            commands=(f"sudo -n systemctl enable {plans.PFC_UNIT}",),
            rollback_commands=(f"sudo -n systemctl disable {plans.PFC_UNIT}",),
        )
        for n in nodes
    )
    if not changes:
        return None
    return FixPlan(
        fault=verdict.fault,
        target=", ".join(c.node for c in changes),
        summary=f"enable {plans.PFC_UNIT} so that host PFC stays off after a reboot",
        preview="\n".join(f"{c.node}$ {cmd}" for c in changes for cmd in c.commands),
        host_changes=changes,
        verify_checks=(verdict.fault,),
    )


def fix(h: HostPersist, verdict: Verdict, ctx: Context) -> FixPlan | None:
    if verdict.status not in (Status.FAIL, Status.WARN):
        return None
    if verdict.fault == "persist.netplan-addresses":
        return plans.netplan_plan(verdict, ctx)
    if verdict.fault == "persist.nm-profile":
        return _nm_plan(h, verdict, ctx)
    if verdict.fault == "persist.sysctl":
        return plans.sysctl_plan(verdict, ctx)
    if verdict.fault == "persist.pfc-unit":
        return _unit_plan(h, verdict, ctx)
    return None


CHECK = Check(
    id="persist.netplan-addresses",
    title="Host fixes persisted for the next boot",
    description=__doc__ or "",
    faults=FAULTS,
    step="persist",
    probes=(NETPLAN_FILES, NM_LIST, NM_PROFILES, SYSCTL_FILES, SYSCTL_ARP, PFC_UNIT),
    parse=parse,
    judge=judge,
    fix=fix,
)
