"""Every check, in bisection order, and the lookups the engine and the CLI need.

`CHECKS` is the single list: `fabwiz check` runs all of them (the traffic ones with `--perf`),
the engine picks them per step, `by_fault` finds the check that judges a fault id.
`make_context` builds the judges' Context from a sweep and the inventory's settings.
`PASTED_RULES` are the checks' rules for one pasted output (`fabwiz analyze`), in the same order;
`PASTED_ONLY` the rules for outputs no check judges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict, Unpack

from flows.base import Check, Context, PastedRule
from flows.checks import (
    benign_iperf,
    benign_pcie27w,
    host_addressing,
    host_arp,
    host_links,
    host_pcie,
    host_pfc,
    nccl_config,
    nccl_job,
    perf_nccl,
    perf_rails,
    persist_host,
    preflight_mpirun_ssh,
    preflight_sudo,
    preflight_tools,
    process_drain,
    switch_link,
    switch_mtu,
    switch_offload,
    switch_qos,
    switch_release,
    switch_rstp,
)
from flows.expectations import DEFAULT, Expectations
from wizard.discovery import rails_from_observations
from wizard.model import Rail
from wizard.probes import Observations, Probe

CHECKS: tuple[Check, ...] = (
    switch_link.CHECK,
    host_links.CHECK,
    switch_rstp.CHECK,
    benign_pcie27w.CHECK,
    switch_release.CHECK,
    preflight_tools.CHECK,
    preflight_sudo.CHECK,
    preflight_mpirun_ssh.CHECK,
    host_pcie.CHECK,
    switch_offload.CHECK,
    switch_qos.CHECK,
    host_pfc.CHECK,
    host_addressing.CHECK,
    host_arp.CHECK,
    switch_mtu.CHECK,
    nccl_config.CHECK,
    process_drain.CHECK,
    persist_host.CHECK,
    perf_rails.CHECK,
    perf_nccl.CHECK,
    nccl_job.CHECK,  # after perf_nccl: the job's run is judged against the canonical one
)

# every check's rules for one pasted output, in bisection order
PASTED_RULES: tuple[tuple[Check, PastedRule], ...] = tuple(
    (c, rule) for c in CHECKS for rule in c.pasted
)
# fault id -> its rule, for pasted outputs that no check judges (the sweep makes no such run)
PASTED_ONLY: tuple[tuple[str, PastedRule], ...] = ((benign_iperf.FAULT, benign_iperf.RULE),)


def by_fault(fault: str) -> Check:
    """The check that reports `fault` (the config-side one when a traffic check also does)."""
    for c in CHECKS:
        if fault in c.faults:
            return c
    raise KeyError(fault)


def checks_for(*, traffic: bool) -> tuple[Check, ...]:
    return tuple(c for c in CHECKS if traffic or not c.needs_traffic)


def probes_of(checks: Sequence[Check]) -> list[Probe]:
    seen: dict[str, Probe] = {}
    for c in checks:
        for p in c.probes:
            seen.setdefault(p.name, p)
    return list(seen.values())


class ContextSettings(TypedDict, total=False):
    """What the judges' Context takes besides a sweep: the inventory's settings, and the rails
    the sweep already discovered from the same observations."""

    expectations: Expectations
    cabling: Mapping[str, tuple[str, str]] | None
    management: Mapping[str, tuple[str, ...]] | None
    addressing: Mapping[str, Any] | None
    known_good_firmware: str | None
    discovered: Mapping[str, tuple[Rail, ...]] | None
    nccl_devices: str | None


def make_context(
    obs: Observations,
    *,
    nodes: Sequence[str],
    switches: Sequence[str],
    **settings: Unpack[ContextSettings],
) -> Context:
    expectations = settings.get("expectations", DEFAULT)
    cabling = settings.get("cabling")
    rails = rails_from_observations(obs, cabling, settings.get("discovered"))
    every_cable = dict(cabling or {})
    for rs in rails.values():
        for r in rs:
            if r.switch and r.switch_port:
                every_cable.setdefault(r.key, (r.switch, r.switch_port))
    return Context(
        expectations=expectations,
        rails=rails,
        nodes=tuple(nodes),
        switches=tuple(switches),
        cabling=every_cable,
        management=dict(settings.get("management") or {}),
        addressing=dict(settings.get("addressing") or {}),
        known_good_firmware=settings.get("known_good_firmware") or expectations.known_good_firmware,
        nccl_devices=settings.get("nccl_devices"),
    )
