"""How the sweep's probes travel: one `sh -c` script per node, each section framed by marker
lines that carry its exit status, cut back into one ProbeResult per section; the per-rail probes
run in a loop over the node's own ibdev2netdev in the same script (`rail_loop`). Every
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
from wizard.parsers.ibdev2netdev import Ibdev2NetdevResult
from wizard.probes import HostProbe, SwitchProbe
from wizard.transports.capped import OutputWatch
from wizard.transports.ssh import sudo_error

__all__ = [
    "HostRunner",
    "Section",
    "SwitchApi",
    "answered",
    "build_script",
    "fill",
    "rail_loop",
    "rail_names",
    "rail_results",
    "split_script_output",
    "switch_probes",
]


class HostRunner(Protocol):
    """What the sweep needs from SSH (wizard.transports.ssh.SshTransport provides it)."""

    async def run(
        self,
        name: str,
        command: str,
        *,
        timeout: float | None = None,
        stdin: str | None = None,
        watch: OutputWatch | None = None,
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


def build_script(sections: Sequence[Section], marker: str, tail: str | None = None) -> str:
    """One `sh -c` script running each section between marker lines that carry its exit status
    (and `tail`, a part of the script that frames its own sections: `rail_loop`)."""
    parts = []
    for s in sections:
        tag = shlex.quote(f"{marker} {s.key}")
        parts.append(f"echo {tag} BEGIN; {s.command} 2>&1; echo {tag} END $?")
    if tail:
        parts.append(tail)
    return "sh -c " + shlex.quote("; ".join(parts))


# the loop's variables, for a per-rail probe's {netdev} and {rdma}
_LOOP_VALUES = {"{netdev}": '"$netdev"', "{rdma}": '"$rdma"'}
_PROBE_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def rail_loop(probes: Sequence[HostProbe], marker: str, ibdev: str = "ibdev2netdev") -> str:
    """The per-rail probes as one loop on the node over ibdev2netdev's `<rdma> port <n> ==>
    <netdev> (Up|Down)` lines: for each, every probe in a section keyed `name:<netdev>`. The
    rails are not known before this script runs, so they are not a second round trip: the
    client keeps the sections of the rails its own reading of that ibdev2netdev finds
    (`split_script_output`'s `loose`), and the command each ran is written out with the rail's
    names (`fill`). The names reach the commands as double-quoted variables, never as script
    text; each command's stdin is /dev/null (the loop reads ibdev2netdev's lines from it)."""
    body = []
    for p in probes:
        if not _PROBE_NAME.fullmatch(p.name):
            raise ValueError(f"a probe name must be a plain word: {p.name!r}")
        command = p.command
        for key, value in _LOOP_VALUES.items():
            command = command.replace(key, value)
        if p.sudo:
            command = f"sudo -n {command}"
        # printf, not echo: dash's echo would read backslashes in a name as escapes
        tag = f"printf '%s\\n' \"{marker} {p.name}:$netdev"
        body.append(f'{tag} BEGIN"; {command} </dev/null 2>&1; {tag} END $?"')
    return (
        f"{ibdev} 2>/dev/null | grep ' ==> ' | while read -r rdma _ _ _ netdev _; "
        f"do {'; '.join(body)}; done"
    )


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
    loose: dict[str, tuple[str, int | None]] | None = None,
) -> dict[str, ProbeResult]:
    """Cut a batched run's stdout back into one ProbeResult per section. Only the lines that
    hold the marker move the cut; a section's output is the slice of lines between its marker
    lines, joined once. The sections the script framed itself (`rail_loop`) go to `loose` when
    given, as key -> (output, exit status; None when the output was cut short)."""
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
            body = "".join(lines[start:i]) + end[0]
            if s is not None:
                out[current] = _section_result(s, body, end[2], target, started, duration)
            elif loose is not None:
                loose[current] = (body, end[2])
            current = None
        # any other marker line is output of the section it is in
    if current is not None and current not in by_key and loose is not None:
        loose[current] = ("".join(lines[start:]), None)
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


def rail_results(
    target: str,
    rails: Sequence[Rail],
    probes: Sequence[HostProbe],
    loose: dict[str, tuple[str, int | None]],
    *,
    started: float,
    duration: float,
) -> dict[str, ProbeResult]:
    """One ProbeResult per rail and per-rail probe, from the sections `rail_loop` framed on
    the node (`loose`), each with the command as it ran on that rail. A rail of the client's
    own reading of ibdev2netdev without its section is an error (never a pass); a section of a
    rail that reading does not know is left out."""
    out: dict[str, ProbeResult] = {}
    for r in rails:
        for p in probes:
            s = Section(f"{p.name}:{r.netdev}", fill(p, r))
            body, status = loose.get(s.key, ("", None))
            if status is not None:
                out[s.key] = _section_result(s, body, status, target, started, duration)
                continue
            why = (
                "was cut short (no end marker)"
                if s.key in loose
                else f"gave no answer: the node's loop over ibdev2netdev did not reach {r.netdev}"
            )
            out[s.key] = ProbeResult(
                target=target,
                kind="ssh",
                command=s.command,
                stdout=body,
                error=f"{target}: the output of `{s.command}` {why}",
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


def answered(
    answers: Sequence[tuple[str, dict[str, ProbeResult], str | None]],
) -> tuple[dict[str, dict[str, ProbeResult]], dict[str, str]]:
    """(results by target, errors by target) of targets' (name, results, error) answers."""
    found: dict[str, dict[str, ProbeResult]] = {}
    errors: dict[str, str] = {}
    for name, res, err in answers:
        if err is not None:
            errors[name] = err
        else:
            found[name] = res
    return found, errors


def rail_names(node: str, mapping: Ibdev2NetdevResult | None) -> tuple[Rail, ...]:
    """The netdev/RDMA pairs of the node's ibdev2netdev, enough to name the per-rail probes'
    sections and commands (the rest of each rail is worked out once, from every output)."""
    if mapping is None:
        return ()
    return tuple(
        Rail(node=node, netdev=m.netdev, rdma=m.rdma, port=0, half="A") for m in mapping.mappings
    )
