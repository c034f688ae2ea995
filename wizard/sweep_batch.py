"""How the sweep's probes travel: one `sh -c` script per node and phase, each section framed
by marker lines that carry its exit status, cut back into one ProbeResult per section. Every
interpolated value is shell-quoted. Also what the sweep needs of SSH and of a switch's API.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from wizard.events import Event, ProbeAnswered, ProbeSent
from wizard.model import ProbeResult, Rail
from wizard.probes import HostProbe, SwitchProbe
from wizard.transports.ssh import sudo_error

__all__ = [
    "HostRunner",
    "Section",
    "SwitchApi",
    "build_script",
    "fill",
    "split_script_output",
    "switch_probes",
]


class HostRunner(Protocol):
    """What the sweep needs from SSH (wizard.transports.ssh.SshTransport provides it)."""

    async def run(
        self, name: str, command: str, *, timeout: float | None = None, stdin: str | None = None
    ) -> ProbeResult: ...

    async def connect(self, name: str) -> str | None: ...


class SwitchApi(Protocol):
    """What the sweep needs from one switch (wizard.transports.routeros.RouterOsTransport)."""

    async def connect(self) -> str | None: ...

    async def call(
        self, path: str, verb: str, *, timeout: float | None = None, **args: str
    ) -> ProbeResult: ...

    async def monitor_once(
        self, ports: Sequence[str], *, timeout: float | None = None
    ) -> ProbeResult: ...


@dataclass(frozen=True, slots=True)
class Section:
    key: str  # the Observations key: probe name, or name:netdev
    command: str  # the command as run (what the session log shows)


def fill(probe: HostProbe, rail: Rail | None) -> str:
    cmd = probe.command
    if rail is not None:
        cmd = cmd.replace("{netdev}", shlex.quote(rail.netdev)).replace(
            "{rdma}", shlex.quote(rail.rdma)
        )
    return f"sudo -n {cmd}" if probe.sudo else cmd


def build_script(sections: Sequence[Section], marker: str) -> str:
    """One `sh -c` script running each section between marker lines that carry its exit status."""
    parts = []
    for s in sections:
        tag = shlex.quote(f"{marker} {s.key}")
        parts.append(f"echo {tag} BEGIN; {s.command} 2>&1; echo {tag} END $?")
    return "sh -c " + shlex.quote("; ".join(parts))


# the rest of a marker line after the marker (the marker itself is random per batch, so
# these are compiled once and matched from where the marker ends)
_BEGIN_REST = re.compile(r" (\S+) BEGIN")
_END_REST = re.compile(r" (\S+) END (\d+)", re.S)


def _begin_key(stripped: str, marker: str) -> str | None:
    """The key of a `MARKER KEY BEGIN` line."""
    if not stripped.startswith(marker):
        return None
    m = _BEGIN_REST.fullmatch(stripped, len(marker))
    return m.group(1) if m else None


def _end_mark(stripped: str, marker: str) -> tuple[str, str, int] | None:
    """(output before the marker, key, status) of a line ending `MARKER KEY END STATUS`: output
    that does not end in a newline (a NUL-separated /proc file, a file without a last newline)
    puts the end marker on its last line, and what comes before it is output. The first marker
    on the line that the rest fits is the one."""
    i = stripped.find(marker)
    while i >= 0:
        m = _END_REST.fullmatch(stripped, i + len(marker))
        if m:
            return stripped[:i], m.group(1), int(m.group(2))
        i = stripped.find(marker, i + 1)
    return None


def split_script_output(
    text: str,
    sections: Sequence[Section],
    marker: str,
    *,
    target: str,
    started: float,
    duration: float,
) -> dict[str, ProbeResult]:
    """Cut a batched run's stdout back into one ProbeResult per section. Only the lines that
    hold the marker move the cut; a section's output is the slice of lines between its marker
    lines, joined once."""
    out: dict[str, ProbeResult] = {}
    by_key = {s.key: s for s in sections}
    current: str | None = None
    lines = text.splitlines(keepends=True)
    start = 0  # where the current section's output begins
    for i in [i for i, line in enumerate(lines) if marker in line]:
        stripped = lines[i].rstrip("\r\n")
        key = _begin_key(stripped, marker)
        if key is not None:
            current, start = key, i + 1
            continue
        end = _end_mark(stripped, marker)
        if end is not None and current is not None and current == end[1]:
            s = by_key.get(current)
            if s is not None:
                body = "".join(lines[start:i]) + end[0]
                out[current] = _section_result(s, body, end[2], target, started, duration)
            current = None
        # any other marker line is output of the section it is in
    buf = lines[start:] if current is not None else []
    for s in sections:
        if s.key not in out:
            out[s.key] = ProbeResult(
                target=target,
                kind="ssh",
                command=s.command,
                stdout="".join(buf) if current == s.key else "",
                error=f"{target}: the output of `{s.command}` was cut short (no end marker)",
                started_at=started,
                duration_s=duration,
            )
    return out


def _section_result(
    s: Section, body: str, status: int, target: str, started: float, duration: float
) -> ProbeResult:
    err = sudo_error(target, s.command, body) if s.command.startswith("sudo -n") else None
    return ProbeResult(
        target=target,
        kind="ssh",
        command=s.command,
        stdout=body,
        exit_status=status,
        error=err,
        started_at=started,
        duration_s=duration,
    )


async def switch_probes(
    api: SwitchApi,
    name: str,
    probes: Sequence[SwitchProbe],
    emit: Callable[[Event], None],
    step: str,
) -> dict[str, ProbeResult]:
    """Every probe of one switch on its API session: the plain ones sent together (tagged,
    when the session can: `call_many`), then a per-port probe (`per_fabric_port`) once for
    every fabric port (the non-`ether` ones)."""
    out: dict[str, ProbeResult] = {}
    plain = [p for p in probes if not p.per_fabric_port]
    ports_probes = [p for p in probes if p.per_fabric_port]
    for p in plain:
        emit(ProbeSent(step=step, target=name, command=f"{p.path} {p.verb}"))
    many = getattr(api, "call_many", None)
    if many is not None and len(plain) > 1:
        # all at once on the session, each tagged: one round trip (RouterOsTransport.call_many)
        timeout = max(p.timeout_s for p in plain)
        answers = await many([(p.path, p.verb, dict(p.args)) for p in plain], timeout=timeout)
    else:
        answers = [
            await api.call(p.path, p.verb, timeout=p.timeout_s, **dict(p.args)) for p in plain
        ]
    for p, res in zip(plain, answers, strict=True):
        out[p.name] = res
        emit(ProbeAnswered(step=step, probe=p.name, result=res))
    if ports_probes:
        eth = out.get("ethernet")
        if eth is None or eth.error is not None:
            eth = await api.call("/interface/ethernet", "print")
            out.setdefault("ethernet", eth)
        fabric = [
            r.get("name", "")
            for r in eth.rows
            if not (r.get("default-name") or r.get("name", "")).startswith("ether")
        ]
        for p in ports_probes:
            emit(ProbeSent(step=step, target=name, command=f"{p.path} {p.verb}"))
            if p.verb == "monitor":
                res = await api.monitor_once(fabric, timeout=p.timeout_s)
            else:
                res = await api.call(
                    p.path,
                    p.verb,
                    timeout=p.timeout_s,
                    numbers=",".join(fabric),
                    **dict(p.args),
                )
            out[p.name] = res
            emit(ProbeAnswered(step=step, probe=p.name, result=res))
    return out
