"""Node readiness: does `sudo -n` allow exactly the commands fabwiz runs as root?

fabwiz never types a password: it runs `sudo -n`, and a command that would ask for one fails.
Each command of `flows.sudoers.RULES` (the read-only probes: `mlnx_qos`, `lspci`, `dmesg`; the
fixes: `netplan apply`, `sysctl --system`, `systemctl`, `systemd-run`, `tee`/`cp`/`rm` of the
files a fix writes, `sh -c` for its revert) is asked with `sudo -n -l CMD ARGS`, which runs
nothing. A refusal is `preflight.sudo` with the sudoers drop-in that allows exactly those
(`fabwiz setup sudoers --user NAME`). Good: every command allowed on every node.
"""

from __future__ import annotations

from dataclasses import dataclass

from flows.base import Check, Context, Observations
from flows.checks._common import Finding, Unreadable, listing
from flows.sudoers import SUDO_PROBES, matching_line
from wizard.model import Evidence, Verdict
from wizard.probes import HostProbe

WHOAMI = HostProbe("whoami", "whoami")


@dataclass(frozen=True, slots=True)
class SudoAnswer:
    node: str
    command: str  # the probe's `sudo -n -l ...` line
    allowed: bool
    said: str  # what sudo said (first line)


@dataclass(frozen=True, slots=True)
class SudoState:
    answers: tuple[SudoAnswer, ...]
    unreadable: tuple[Unreadable, ...]
    user: dict[str, str]


def parse(obs: Observations, ctx: Context) -> SudoState:
    out: list[SudoAnswer] = []
    bad: list[Unreadable] = []
    for node in ctx.nodes:
        if node in obs.unreachable:
            continue
        for p in SUDO_PROBES:
            res = obs.node(node, p.name)
            if res is None:
                bad.append(Unreadable(node, p.command, "not probed", ""))
                continue
            text = (res.stdout + res.stderr).strip()
            if res.exit_status is None:
                bad.append(Unreadable(node, p.command, res.error or "no answer", text))
                continue
            allowed = res.exit_status == 0 and text.startswith("/")
            first = text.splitlines()[0] if text else f"exit status {res.exit_status}"
            if "command not found" in first:
                # the tool is not installed: preflight.tool-missing says so; sudo is not judged
                bad.append(Unreadable(node, p.command, first, text))
                continue
            out.append(SudoAnswer(node, p.command, allowed, first))
    users: dict[str, str] = {}
    for node in ctx.nodes:
        res = obs.node(node, WHOAMI.name)
        if res is not None and res.ok and res.stdout.strip():
            users[node] = res.stdout.strip().splitlines()[0]
    return SudoState(tuple(out), tuple(bad), users)


def judge(s: SudoState, ctx: Context) -> list[Verdict]:
    f = Finding("preflight.sudo")
    for w in s.unreadable:
        f.cannot_tell(w, "sudo -n allows the command")
    by_node: dict[str, list[SudoAnswer]] = {}
    for a in s.answers:
        by_node.setdefault(a.node, []).append(a)
    for node, answers in by_node.items():
        user = s.user.get(node, "<user>")
        refused = [a for a in answers if not a.allowed]
        if len(refused) == len(answers) > 1 and len({a.said for a in refused}) == 1:
            # one refusal for everything (no sudo rule at all): one line says it
            f.fail(
                Evidence(
                    node,
                    f"sudo -n -l <each of {len(answers)} commands>",
                    f"{refused[0].said} (all {len(answers)} commands)",
                    f"the drop-in of `fabwiz setup sudoers --user {user}` in /etc/sudoers.d",
                )
            )
            continue
        for a in answers:
            ev = Evidence(
                a.node,
                a.command,
                a.said,
                f"allowed without a password: {matching_line(user, a.command)}",
            )
            if a.allowed:
                f.ok(ev)
            else:
                f.fail(ev)
    refused_tools = sorted(
        {a.command.split()[3] for a in s.answers if not a.allowed and len(a.command.split()) > 3}
    )
    user = next((s.user[t] for t in f.targets if t in s.user), "<user>")
    return [
        f.verdict(
            ok="sudo -n allows every command fabwiz runs as root",
            bad=f"sudo -n refuses {', '.join(refused_tools)} on {listing(f.targets)}: fabwiz cannot "
            f"read or fix what needs root there. Fix: `fabwiz setup sudoers --user {user} > "
            "fabwiz.sudoers`, then on the node `sudo visudo -c -f fabwiz.sudoers && sudo install "
            "-m 0440 fabwiz.sudoers /etc/sudoers.d/fabwiz`",
        )
    ]


CHECK = Check(
    id="preflight.sudo",
    title="Passwordless sudo for fabwiz's commands",
    description=__doc__ or "",
    faults=("preflight.sudo",),
    step="preflight",
    probes=(*SUDO_PROBES, WHOAMI),
    parse=parse,
    judge=judge,
)
