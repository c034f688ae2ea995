"""Bench: `fabwiz check` against the fan-out tools a cluster engineer would use instead.

    .venv/bin/python bench/sweep.py [--sizes 8,16,32,64] [--runs 5] [--quick]

For labs of 8, 16, 32 and 64 nodes (CRS804-4DDQ switches in a chain, one cable per node; the lab
runs in a child process, so its servers use their own CPU as real nodes do), it times whole
commands, start-up and judging included, in alternating runs, and prints medians:

  fabwiz    `fabwiz check -i INVENTORY --json`: every read-only probe of every node and switch,
            then every verdict;
  clush     ClusterShell `clush -f 32` running the same node commands (the by-hand set for the
            same picture, batched as fabwiz batches them) over OpenSSH, host keys checked;
  pssh      parallel-ssh (libssh2) with a pool of 32, the same commands (it checks no host key);
  ansible   `ansible all -m raw -f 32`, the same commands, OpenSSH without ControlPersist.

The fan-out tools only run the node commands; fabwiz also reads every switch over its API and
judges. mpirun's login check is a real login in both: fabwiz's launch node logs in to each
peer; the tools' one command has each node log in to the launch node (as many logins). Each tool's output is checked to hold every node's every section before it counts.
Beside the medians it prints the ratio within each alternation (fabwiz and the tool timed back
to back): this machine's speed drifts between rounds, and a paired ratio is what that sways least.
They run from a bench-only virtualenv (`.venv-bench`, or $FABWIZ_BENCH_VENV):

    python3 -m venv .venv-bench && .venv-bench/bin/pip install clustershell parallel-ssh ansible-core

and a tool that is not installed is skipped with the reason. fabwiz's modules are compiled to
bytecode first, as an install does (`bench/_bytecode.py`). It also prints fabwiz's client CPU
(the whole command's user+system time, and per node: the slope between the smallest and the
largest lab) and the import time to the first useful work.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FORKS = 32


def scenario_text(nodes: int) -> str:
    """A chain of CRS804s just big enough: 8 legs alone, 7 at an end of a chain, 6 inside."""
    switches = 1 if nodes <= 8 else 2 + max(0, -(-(nodes - 14) // 6))
    models = ", ".join(["{model: CRS804-4DDQ}"] * switches)
    return (
        f"name: bench-{nodes}\ndescription: {nodes} nodes on {switches} CRS804\n"
        f"topology: {{nodes: {nodes}, switches: [{models}], cables_per_node: 1}}\nfaults: []\n"
    )


async def serve(nodes: int, time_scale: float = 1000.0) -> None:
    """Child mode: run the lab in this process, print the inventory path, wait for stdin EOF."""
    from wizard.lab import scenarios
    from wizard.lab.lab import Lab

    scen = scenarios.load_text(scenario_text(nodes), path=f"bench-{nodes}.yaml")
    async with Lab(scen, time_scale=time_scale) as lab:
        print(lab.inventory_path, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


# --- running a whole command ------------------------------------------------------------------


@dataclass
class Run:
    wall: float
    cpu: float  # user + system of the command and every child it waited for
    out: str
    rc: int


def run(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> Run:
    with tempfile.TemporaryFile("w+") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=cwd
        )
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return Run(wall, usage.ru_utime + usage.ru_stime, out.read(), proc.returncode)


# --- the same picture by hand ------------------------------------------------------------------


def node_script(inventory: Path) -> tuple[str, list[str], str]:
    """The node commands of `fabwiz check` (both phases, every rail), as one `sh -c` script, the
    keys of its sections, and its marker."""
    from flows.registry import checks_for, probes_of
    from wizard.discovery import DISCOVERY_HOST_PROBES
    from wizard.model import Rail
    from wizard.probes import HostProbe
    from wizard.sweep import Section, _fill, build_script

    probes = [p for p in probes_of(checks_for(traffic=False)) if isinstance(p, HostProbe)]
    names = {p.name for p in probes}
    probes += [p for p in DISCOVERY_HOST_PROBES if p.name not in names]
    check = run([str(ROOT / ".venv/bin/fabwiz"), "check", "-i", str(inventory), "--json"])
    first = json.loads(check.out[check.out.index("{") :])["nodes"][0]
    rails = [
        Rail(node=first["name"], netdev=r["netdev"], rdma=r["rdma"], port=r["port"], half=r["half"])
        for r in first["rails"]
    ]
    launch = asyncio.run(_management_address(inventory, first["name"]))
    sections = [Section(p.name, _by_hand(p, launch)) for p in probes if not p.per_rail]
    sections += [
        Section(f"{p.name}:{r.netdev}", _fill(p, r)) for r in rails for p in probes if p.per_rail
    ]
    marker = "@@BENCH@@"
    return build_script(sections, marker), [s.key for s in sections], marker


def _by_hand(probe: Any, launch: str) -> str:
    """A node-wide probe's command as the by-hand set runs it. mpirun's login check is a login
    from the launch node to each peer's management address (fabwiz runs those on the launch
    node); one command for every node cannot name a different peer on each, so each node logs
    in to the launch node instead: as many real logins, each a node's to another node."""
    from wizard import readiness
    from wizard.sweep import _fill

    if probe.name == readiness.MPIRUN_SSH.name:
        return readiness.peer_ssh_command(launch)
    return _fill(probe, None)


async def _management_address(inventory: Path, node: str) -> str:
    """`node`'s management address, as fabwiz's sweep finds it (its default route's address)."""
    from wizard import readiness
    from wizard.inventory import load_inventory
    from wizard.transports.ssh import SshTarget, SshTransport

    inv = load_inventory(inventory)
    spec = next(n for n in inv.nodes if n.name == node)
    async with SshTransport([SshTarget.from_spec(spec)], ssh_config=None) as ssh:
        route = await ssh.run(node, readiness.MGMT_ROUTE.command)
        addr = await ssh.run(node, "ip -j addr")
    found = readiness.management(route.stdout, addr.stdout)
    if found is None:
        raise RuntimeError(f"{node} has no management address: {route.stdout!r}")
    return found[1]


@dataclass
class Tools:
    venv: Path
    work: Path
    nodes: list[dict[str, object]] = field(default_factory=list)
    key: str = ""
    known_hosts: str = ""
    user: str = ""

    def skipped(self) -> dict[str, str]:
        why: dict[str, str] = {}
        if not (self.venv / "bin/clush").exists():
            why["clush"] = f"ClusterShell not installed in {self.venv}"
        if shutil.which("ssh") is None:
            why["clush"] = why["ansible"] = "no OpenSSH client (ssh) on PATH"
        if run([str(self.venv / "bin/python"), "-c", "import pssh.clients"]).rc != 0:
            why["pssh"] = f"parallel-ssh not installed in {self.venv}"
        if not (self.venv / "bin/ansible").exists():
            why.setdefault("ansible", f"ansible-core not installed in {self.venv}")
        return why

    def setup(self, inventory: Path) -> None:
        import yaml

        inv = yaml.safe_load(inventory.read_text())
        base = inventory.parent
        self.nodes = inv["nodes"]
        self.key = str(base / inv["defaults"]["identity_file"])
        self.known_hosts = str(base / inv["defaults"]["known_hosts"])
        self.user = str(inv["defaults"]["user"])
        cfg = [
            f"Host {n['name']}\n  HostName 127.0.0.1\n  Port {n['port']}\n  User {self.user}\n"
            f"  IdentityFile {self.key}\n  IdentitiesOnly yes\n  UserKnownHostsFile "
            f"{self.known_hosts}\n  StrictHostKeyChecking yes\n  BatchMode yes\n"
            for n in self.nodes
        ]
        (self.work / "ssh_config").write_text("".join(cfg))
        lines = ["[all]"] + [
            f"{n['name']} ansible_host=127.0.0.1 ansible_port={n['port']}" for n in self.nodes
        ]
        lines += [
            "[all:vars]",
            f"ansible_user={self.user}",
            f"ansible_ssh_private_key_file={self.key}",
            f"ansible_ssh_common_args='-o UserKnownHostsFile={self.known_hosts} "
            "-o StrictHostKeyChecking=yes -o IdentitiesOnly=yes'",
        ]
        (self.work / "hosts.ini").write_text("\n".join(lines) + "\n")
        hosts = [("127.0.0.1", int(str(n["port"]))) for n in self.nodes]
        (self.work / "pssh.json").write_text(
            json.dumps({"hosts": hosts, "user": self.user, "key": self.key})
        )

    def clush(self, script: str) -> Run:
        names = ",".join(str(n["name"]) for n in self.nodes)
        return run(
            [
                str(self.venv / "bin/clush"),
                "-f",
                str(FORKS),
                "-w",
                names,
                "-o",
                f"-F {self.work / 'ssh_config'}",
                script,
            ]
        )

    def pssh(self, script: str) -> Run:
        return run(
            [
                str(self.venv / "bin/python"),
                str(ROOT / "bench/_pssh_run.py"),
                str(self.work / "pssh.json"),
                str(FORKS),
                script,
            ]
        )

    def _ansible_vars(self, script: str) -> Path:
        """The script as an unsafe (never templated) variable: it holds `{{...}}` (docker's
        --format), which ansible would otherwise take for a template."""
        path = self.work / "ansible-vars.yml"
        path.write_text("fabwiz_script: !unsafe " + json.dumps(script) + "\n")
        return path

    def ansible(self, script: str) -> Run:
        env = {
            **os.environ,
            "ANSIBLE_SSH_ARGS": "-o ControlMaster=no",
            "ANSIBLE_LOCAL_TEMP": str(self.work / "ansible-tmp"),
            "ANSIBLE_HOME": str(self.work / "ansible-home"),
            "ANSIBLE_HOST_KEY_CHECKING": "True",
            "ANSIBLE_PYTHON_INTERPRETER": "auto_silent",
        }
        return run(
            [
                str(self.venv / "bin/ansible"),
                "all",
                "-i",
                str(self.work / "hosts.ini"),
                "-m",
                "raw",
                "-a",
                " {{ fabwiz_script }}",  # a leading brace would be read as JSON
                "-e",
                f"@{self._ansible_vars(script)}",
                "-f",
                str(FORKS),
            ],
            env=env,
        )


def complete(r: Run, keys: list[str], marker: str, nodes: int) -> bool:
    """Every node answered every section (an END line with its status)."""
    ends = sum(r.out.count(f"{marker} {k} END ") for k in keys)
    return ends >= nodes * len(keys)


def fabwiz_ok(r: Run, nodes: int) -> bool:
    try:
        doc = json.loads(r.out[r.out.index("{") :])
    except ValueError:
        return False
    return len(doc["nodes"]) == nodes and all(n["reachable"] for n in doc["nodes"])


# --- import time --------------------------------------------------------------------------------

IMPORT_PROBE = """
import os, sys, time
t0 = time.perf_counter()
sys.path[0] = os.path.dirname(sys.executable)  # as the console script's process has it
import screens.importcache
screens.importcache.install()  # as `fabwiz` (screens.boot) starts
import screens.cli, screens.codecache
screens.codecache.install()
screens.cli.pause_collector_for_startup()
import screens.commands.check, wizard.inventory
t1 = time.perf_counter()
import wizard.transports.ssh, wizard.transports.routeros
from wizard.transports.sshlib import load_asyncssh
load_asyncssh()
t2 = time.perf_counter()
import flows.probe_manifest, wizard.sweep
t3 = time.perf_counter()
import flows.registry
t4 = time.perf_counter()
print(t1 - t0, t2 - t0, t3 - t0, t4 - t0)
"""


def import_times(runs: int) -> tuple[float, float, float, float]:
    samples = []
    for _ in range(runs):
        r = run([str(ROOT / ".venv/bin/python"), "-c", IMPORT_PROBE], cwd=ROOT)
        samples.append([float(x) for x in r.out.split()])
    return tuple(statistics.median(s[i] for s in samples) for i in range(4))  # type: ignore[return-value]


# --- the bench ----------------------------------------------------------------------------------


def bench_size(
    n: int, tools: Tools, runs: int, skipped: dict[str, str]
) -> tuple[dict[str, float], float, dict[str, str]]:
    """Median wall time per tool, fabwiz's median CPU, and the tools whose output fell short."""
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(n)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    inventory = Path(child.stdout.readline().strip())
    times: dict[str, list[float]] = {}
    rounds: list[dict[str, float]] = []  # each alternation's times, for the paired ratios
    cpus: list[float] = []
    bad: dict[str, str] = {}
    try:
        tools.setup(inventory)
        script, keys, marker = node_script(inventory)
        fabwiz_cmd = [str(ROOT / ".venv/bin/fabwiz"), "check", "-i", str(inventory), "--json"]
        contenders: dict[str, Callable[[], Run]] = {
            "fabwiz": lambda: run(fabwiz_cmd),
            "clush": lambda: tools.clush(script),
            "pssh": lambda: tools.pssh(script),
            "ansible": lambda: tools.ansible(script),
        }
        for name in skipped:
            contenders.pop(name, None)
        times = {k: [] for k in contenders}
        for fn in contenders.values():
            fn()  # warm-up: caches, host keys, the lab's first answers
        for i in range(runs):
            order = list(contenders)
            if i % 2:
                order.reverse()
            this_round: dict[str, float] = {}
            for name in order:
                r = contenders[name]()
                ok = fabwiz_ok(r, n) if name == "fabwiz" else complete(r, keys, marker, n)
                if not ok:
                    bad[name] = r.out[-300:]
                    continue
                times[name].append(r.wall)
                this_round[name] = r.wall
                if name == "fabwiz":
                    cpus.append(r.cpu)
            rounds.append(this_round)
    finally:
        child.stdin.close()
        child.wait()
    med = {k: statistics.median(v) if v else float("nan") for k, v in times.items()}
    paired = {
        k: [r["fabwiz"] / r[k] for r in rounds if "fabwiz" in r and k in r]
        for k in times
        if k != "fabwiz"
    }
    return med, statistics.median(cpus) if cpus else float("nan"), bad, paired


def paired_line(n: int, paired: dict[str, list[float]]) -> str:
    """The ratio within each alternation (both tools timed back to back, so a machine that
    speeds up or slows down between rounds sways both): median, range, rounds fabwiz won."""
    parts = []
    for k, rs in paired.items():
        if rs:
            won = sum(r <= 1.0 for r in rs)
            parts.append(
                f"fw/{k} {statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f}, "
                f"{won}/{len(rs)} rounds <= 1)"
            )
    return f"  {n} nodes, ratio per round: " + "; ".join(parts)


def row(n: int, med: dict[str, float], cpu: float) -> str:
    def cell(k: str, width: int) -> str:
        return f"{med[k]:>{width}.2f}" if k in med else f"{'-':>{width}}"

    def ratio(k: str, width: int) -> str:
        return f"{med['fabwiz'] / med[k]:>{width}.2f}" if k in med else f"{'-':>{width}}"

    return (
        f"{n:>5} {med['fabwiz']:>8.2f} {cell('clush', 8)} {cell('pssh', 7)} "
        f"{cell('ansible', 9)} {ratio('clush', 8)} {ratio('pssh', 7)} {ratio('ansible', 7)} "
        f"{cpu:>8.2f} {cpu / n * 1000:>11.1f}"
    )


def fitted_slope(cpu_by_size: dict[int, float]) -> float:
    """The least-squares slope of CPU seconds against node count."""
    xs, ys = list(cpu_by_size), list(cpu_by_size.values())
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def bench(sizes: list[int], runs: int, venv: Path) -> None:
    from _bytecode import compile_fabwiz
    from _machine import describe

    compile_fabwiz()
    print(describe())
    work = Path(tempfile.mkdtemp(prefix="fabwiz-bench-"))
    tools = Tools(venv=venv, work=work)
    skipped = tools.skipped()
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    first, handshake, sweep, checks = import_times(max(runs, 5))
    print(
        f"import: {first:.3f} s to the first useful work (command parsed, inventory loader "
        f"ready); {handshake:.3f} s to the first handshake (the transports and asyncssh); "
        f"{sweep:.3f} s to the first command (the sweep and its probe manifest); "
        f"{checks:.3f} s with every check (loaded while the sweep's commands run)"
    )
    print(f"alternating runs, medians of {runs}; forks {FORKS}; lab in a child process")
    head = (
        f"{'nodes':>5} {'fabwiz s':>8} {'clush s':>8} {'pssh s':>7} {'ansible s':>9} "
        f"{'fw/clush':>8} {'fw/pssh':>7} {'fw/ans':>7} {'fw cpu s':>8} {'cpu/node ms':>11}"
    )
    print(head)
    cpu_by_size: dict[int, float] = {}
    per_round: list[str] = []
    for n in sizes:
        med, cpu, bad, paired = bench_size(n, tools, runs, skipped)
        for name, tail in bad.items():
            print(f"  {name} at {n} nodes: incomplete output in some runs: {tail!r}")
        cpu_by_size[n] = cpu
        print(row(n, med, cpu), flush=True)
        per_round.append(paired_line(n, paired))
    for line in per_round:
        print(line)
    if len(cpu_by_size) >= 2:
        lo, hi = min(cpu_by_size), max(cpu_by_size)
        slope = (cpu_by_size[hi] - cpu_by_size[lo]) / (hi - lo) * 1000
        print(
            f"fabwiz client CPU per node: {slope:.1f} ms (slope of the command's CPU from {lo} to "
            f"{hi} nodes; the fixed part is start-up and imports)"
        )
    if len(cpu_by_size) >= 3:
        print(
            f"  least-squares slope over every size: {fitted_slope(cpu_by_size) * 1000:.1f} ms "
            "per node (less swayed by one noisy size)"
        )
    print("ratios are fabwiz time / tool time: below 1.00 fabwiz is faster")
    shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="8,16,32,64", help="comma-separated node counts")
    ap.add_argument("--runs", type=int, default=5, help="alternating runs per tool and size")
    ap.add_argument("--quick", action="store_true", help="8 and 16 nodes, 3 runs")
    ap.add_argument(
        "--venv",
        default=os.environ.get("FABWIZ_BENCH_VENV", str(ROOT / ".venv-bench")),
        help="the virtualenv holding clush, parallel-ssh and ansible",
    )
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--serve-time-scale", type=float, default=1000.0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve, args.serve_time_scale))
        return
    sizes = [8, 16] if args.quick else [int(x) for x in args.sizes.split(",")]
    bench(sizes, 3 if args.quick else args.runs, Path(args.venv))


if __name__ == "__main__":
    main()
