"""Node readiness: can mpirun, on the launch node, log in to every other node over management?

mpirun starts its daemons on the other nodes with `ssh <host>` from the launch node (the first
node of the inventory), to the management addresses of the hostfile. A password prompt or an
unknown host key makes the NCCL run hang or die with "ORTE was unable to reliably start one or
more daemons". Each peer is tried the way mpirun does it, non-interactively
(`ssh -o BatchMode=yes <mgmt address> true`); a refusal is `preflight.mpirun-ssh` with the
command that fixes it (`ssh-copy-id`, `ssh-keyscan`). Good: every peer answers.
"""

from __future__ import annotations

from dataclasses import dataclass

from flows.base import Check, Context, Observations
from flows.checks._common import Finding, Unreadable, listing
from wizard.model import Evidence, Verdict
from wizard.readiness import MPIRUN_SSH, ssh_fix


@dataclass(frozen=True, slots=True)
class PeerLogin:
    launch: str
    peer: str
    address: str
    ok: bool
    said: str
    command: str


@dataclass(frozen=True, slots=True)
class MpirunSsh:
    logins: tuple[PeerLogin, ...]
    unreadable: tuple[Unreadable, ...]


def parse(obs: Observations, ctx: Context) -> MpirunSsh:
    if len(ctx.nodes) < 2:
        return MpirunSsh((), ())
    launch = ctx.nodes[0]
    if launch in obs.unreachable:
        return MpirunSsh((), ())
    out: list[PeerLogin] = []
    bad: list[Unreadable] = []
    for peer in ctx.nodes[1:]:
        res = obs.node(launch, MPIRUN_SSH.name, peer)
        if res is None:
            why = "not tried: the management address of the peer is unknown"
            if peer in obs.unreachable:
                why = f"not tried: {peer} is unreachable"
            bad.append(Unreadable(f"{launch}->{peer}", MPIRUN_SSH.command, why, ""))
            continue
        address = res.command.split()[-2] if len(res.command.split()) >= 2 else peer
        text = (res.stdout + res.stderr).strip()
        if res.exit_status is None:
            bad.append(Unreadable(f"{launch}->{peer}", res.command, res.error or "no answer", text))
            continue
        said = text.splitlines()[0] if text else f"exit status {res.exit_status}"
        out.append(PeerLogin(launch, peer, address, res.exit_status == 0, said, res.command))
    return MpirunSsh(tuple(out), tuple(bad))


def judge(m: MpirunSsh, ctx: Context) -> list[Verdict]:
    f = Finding("preflight.mpirun-ssh")
    for w in m.unreadable:
        f.cannot_tell(w, "a non-interactive SSH login, as mpirun makes it")
    for p in m.logins:
        target = f"{p.launch}->{p.peer}"
        if p.ok:
            f.ok(Evidence(target, p.command, "logged in", "a non-interactive login"))
        else:
            fix = ssh_fix(p.launch, p.peer, p.address, p.said)
            f.fail(Evidence(target, p.command, p.said, f"a non-interactive login; fix: {fix}"))
    if not m.logins and not m.unreadable:
        return []
    fixes = [e.expected.split("fix: ", 1)[1] for e in f.bad if "fix: " in e.expected]
    return [
        f.verdict(
            ok="mpirun's SSH from the launch node reaches every other node",
            bad=f"mpirun cannot log in over SSH for {listing(f.targets)}: the NCCL run cannot "
            f"start there. Fix: {' ; '.join(dict.fromkeys(fixes))}",
        )
    ]


CHECK = Check(
    id="preflight.mpirun-ssh",
    title="mpirun's SSH between the nodes",
    description=__doc__ or "",
    faults=("preflight.mpirun-ssh",),
    step="preflight",
    probes=(MPIRUN_SSH,),
    parse=parse,
    judge=judge,
)
