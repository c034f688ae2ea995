"""Node readiness: the tools the walk runs, where they are, their versions, and the management
interface mpirun and NCCL's bootstrap use.

`TOOLS` is the one list of host tools fabwiz needs, each with what provides it and the exact
command that installs or builds it (NVIDIA's playbook builds nccl-tests under `~/nccl-tests/build/`
and NCCL under `~/nccl/build/`, neither on `PATH`). The probes here are read-only and run in
preflight with every other probe; `parse_tools` turns their output into `NodeTools` (tool ->
absolute path), which the traffic runner uses to launch the binaries where they really are, and
which the preflight checks judge (`preflight.tool-missing`).

    $ command -v ib_write_bw mpirun all_reduce_perf; ls -1d $HOME/nccl-tests/build/all_reduce_perf
    /usr/bin/ib_write_bw
    /usr/bin/mpirun
    /home/fabwiz/nccl-tests/build/all_reduce_perf
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from wizard.probes import HostProbe

__all__ = [
    "MGMT_ROUTE",
    "NCCL_TESTS_BUILD",
    "TOOLS",
    "TOOLS_PROBE",
    "VERSION_PROBES",
    "NodeTools",
    "Tool",
    "management",
    "parse_tools",
    "parse_versions",
    "tool",
    "tools_command",
]

NCCL_BUILD = (
    "sudo apt-get install -y libopenmpi-dev && "
    "git clone -b v2.28.9-1 https://github.com/NVIDIA/nccl.git ~/nccl/ && cd ~/nccl/ && "
    'make -j src.build NVCC_GENCODE="-gencode=arch=compute_121,code=sm_121"'
)
NCCL_TESTS_BUILD = (
    "git clone https://github.com/NVIDIA/nccl-tests.git ~/nccl-tests/ && cd ~/nccl-tests/ && "
    "make MPI=1 MPI_HOME=/usr/lib/aarch64-linux-gnu/openmpi NCCL_HOME=$HOME/nccl/build/ "
    "CUDA_HOME=/usr/local/cuda"
)


@dataclass(frozen=True, slots=True)
class Tool:
    """A host tool the walk runs: who provides it, how to get it, what needs it."""

    name: str
    package: str  # the Debian/Ubuntu package, or the source build
    fix: str  # the exact command that installs or builds it
    needed_for: str  # what in the walk cannot run without it
    playbook: tuple[str, ...] = ()  # where NVIDIA's playbook builds it ($HOME-relative)


TOOLS: tuple[Tool, ...] = (
    Tool("ibdev2netdev", "mlnx-tools", "sudo apt install mlnx-tools", "rail discovery"),
    Tool("show_gids", "mlnx-tools", "sudo apt install mlnx-tools", "RoCE v2 GID discovery"),
    Tool("mlnx_qos", "mlnx-tools", "sudo apt install mlnx-tools", "the host PFC check and fix"),
    Tool("ib_write_bw", "perftest", "sudo apt install perftest", "the per-rail bandwidth tests"),
    Tool("mpirun", "openmpi-bin", "sudo apt install openmpi-bin", "the NCCL runs"),
    Tool(
        "all_reduce_perf",
        "nccl-tests",
        NCCL_TESTS_BUILD,
        "the NCCL all-reduce run",
        playbook=("nccl-tests/build/all_reduce_perf",),
    ),
    Tool(
        "sendrecv_perf",
        "nccl-tests",
        NCCL_TESTS_BUILD,
        "the 2-node NCCL sendrecv run",
        playbook=("nccl-tests/build/sendrecv_perf",),
    ),
)
NCCL_LIB_GLOB = "nccl/build/lib/libnccl.so.2.*"  # NVIDIA's playbook build of NCCL ($HOME)


def tool(name: str) -> Tool:
    for t in TOOLS:
        if t.name == name:
            return t
    raise KeyError(name)


def with_mgmt_probes(probes: list[HostProbe]) -> list[HostProbe]:
    """The host probes of a sweep plus the management route when the readiness probes are in
    it (mpirun's hostfile and NCCL's bootstrap need the management interface)."""
    names = {p.name for p in probes}
    if "tools" in names and MGMT_ROUTE.name not in names:
        return [*probes, MGMT_ROUTE]
    return probes


def tools_command(extra_paths: Sequence[str] = ()) -> str:
    """`command -v` for every tool, then the playbook locations (and the inventory's paths)."""
    names = " ".join(t.name for t in TOOLS)
    where = [f"$HOME/{p}" for t in TOOLS for p in t.playbook] + [f"$HOME/{NCCL_LIB_GLOB}"]
    where += [shlex.quote(p) for p in extra_paths]
    return f"command -v {names}; ls -1d {' '.join(where)}"


TOOLS_PROBE = HostProbe("tools", tools_command())
MGMT_ROUTE = HostProbe("mgmt_route", "ip -j route show default")
KERNEL = HostProbe("kernel", "uname -r")
OS_RELEASE = HostProbe("os_release", "cat /etc/dgx-release /etc/os-release")
FW_VER = HostProbe("fw_ver", "grep -H . /sys/class/infiniband/*/fw_ver")
OFED = HostProbe("ofed", "ofed_info -s")
MLX5_VERSION = HostProbe("mlx5_version", "modinfo -F version mlx5_core")
PACKAGES = HostProbe(
    "packages",
    "dpkg-query -W -f '${Package} ${Version}\\n' perftest openmpi-bin mlnx-tools libnccl2",
)
PLATFORM = HostProbe("platform", "cat /sys/class/dmi/id/sys_vendor /sys/class/dmi/id/product_name")
VERSION_PROBES = (KERNEL, OS_RELEASE, FW_VER, OFED, MLX5_VERSION, PACKAGES, PLATFORM)


@dataclass(frozen=True, slots=True)
class NodeTools:
    """Where each tool is on one node (absolute paths), and NCCL's library directory."""

    paths: Mapping[str, str] = field(default_factory=dict)  # tool -> absolute path
    nccl_lib: str | None = None  # the directory of a playbook-built libnccl.so
    nccl_version: str | None = None  # from the playbook build's file name

    def missing(self, names: Sequence[str]) -> list[str]:
        return [n for n in names if n not in self.paths]


_NCCL_SO = re.compile(r"^(/\S+)/libnccl\.so\.(\d+\.\d+\.\d+)$")


def parse_tools(text: str, configured: Mapping[str, str] | None = None) -> NodeTools:
    """The `tools` probe's output: absolute paths, one a line (`command -v` prints the found
    ones; `ls -1d` the playbook locations that exist; its complaints are not paths). A path the
    inventory configured for a tool wins when the node has it."""
    paths: dict[str, str] = {}
    nccl_lib = nccl_version = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith("/") or " " in line:
            continue
        m = _NCCL_SO.match(line)
        if m:
            nccl_lib, nccl_version = m.group(1), m.group(2)
            continue
        base = line.rsplit("/", 1)[-1]
        if any(t.name == base for t in TOOLS):
            paths.setdefault(base, line)
    for name, path in (configured or {}).items():
        if any(raw.strip() == path for raw in text.splitlines()):
            paths[name] = path
    return NodeTools(paths, nccl_lib, nccl_version)


def management(route_json: str, addr_json: str) -> tuple[str, str] | None:
    """(netdev, IPv4) of the management network: the default route's interface and its
    address (`ip -j route show default`, `ip -j addr`), or None when there is no default route."""
    try:
        routes = json.loads(route_json or "[]")
        addrs = json.loads(addr_json or "[]")
    except json.JSONDecodeError:
        return None
    if not isinstance(routes, list) or not isinstance(addrs, list):
        return None
    for r in routes:
        if not isinstance(r, dict) or r.get("dst") != "default" or not r.get("dev"):
            continue
        dev = str(r["dev"])
        src = r.get("prefsrc")
        for a in addrs:
            if not isinstance(a, dict) or a.get("ifname") != dev:
                continue
            for info in a.get("addr_info", []):
                if info.get("family") == "inet" and (src is None or info.get("local") == src):
                    return dev, str(info["local"])
        if src:
            return dev, str(src)
    return None


def parse_versions(results: Mapping[str, str | None]) -> dict[str, str]:
    """What each version probe says, by component (`None` output: the probe did not answer).
    Keys: platform, kernel, os, cx7_firmware, driver, perftest, openmpi, mlnx-tools, nccl."""
    out: dict[str, str] = {}
    dmi = [ln.strip() for ln in (results.get(PLATFORM.name) or "").splitlines() if ln.strip()]
    if dmi and not any(ln.startswith("cat:") for ln in dmi):
        out["platform"] = " ".join(dict.fromkeys(dmi))  # e.g. "ASUSTeK COMPUTER INC. GX10"
    kernel = (results.get(KERNEL.name) or "").strip().splitlines()
    if kernel:
        out["kernel"] = kernel[0].strip()
    osr = results.get(OS_RELEASE.name) or ""
    kv = {
        k.strip(): v.strip().strip('"')
        for k, _, v in (ln.partition("=") for ln in osr.splitlines() if "=" in ln)
    }
    dgx = kv.get("DGX_OTA_VERSION") or kv.get("DGX_SWBUILD_VERSION")
    name = kv.get("DGX_PRETTY_NAME") or kv.get("DGX_NAME")
    if dgx:
        out["os"] = f"DGX OS {dgx}" + (f" ({name})" if name else "")
        if kv.get("PRETTY_NAME"):
            out["os"] += f", {kv['PRETTY_NAME']}"
    elif kv.get("PRETTY_NAME"):
        out["os"] = kv["PRETTY_NAME"]
    fw = sorted(
        {
            ln.split(":", 1)[1].strip()
            for ln in (results.get(FW_VER.name) or "").splitlines()
            if "/fw_ver:" in ln
        }
    )
    if fw:
        out["cx7_firmware"] = ", ".join(fw)
    ofed = (results.get(OFED.name) or "").strip()
    mlx5 = (results.get(MLX5_VERSION.name) or "").strip()
    if ofed.startswith(("MLNX_OFED", "OFED", "DOCA")):
        out["driver"] = ofed.rstrip(":")
    elif mlx5 and "not found" not in mlx5.lower():
        out["driver"] = f"mlx5_core {mlx5.splitlines()[0]}"
    elif "kernel" in out:
        out["driver"] = f"inbox mlx5_core (kernel {out['kernel']})"
    for line in (results.get(PACKAGES.name) or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("dpkg-query"):
            key = {"openmpi-bin": "openmpi", "libnccl2": "nccl"}.get(parts[0], parts[0])
            out[key] = parts[1]
    return out


# --- mpirun's own SSH: from the launch node to every other node, over management ---------------

MPIRUN_SSH = HostProbe(
    "mpirun_ssh",
    "ssh -o BatchMode=yes -o ConnectTimeout=5 {peer} true",
    timeout_s=15.0,
)


def peer_ssh_command(address: str) -> str:
    """What mpirun's rsh launcher needs: a non-interactive login to `address` (no password, a
    known host key)."""
    return MPIRUN_SSH.command.replace("{peer}", shlex.quote(address))


def ssh_fix(launch: str, peer: str, address: str, said: str) -> str:
    """The command that repairs mpirun's SSH from `launch` to `peer`, from what ssh said."""
    if "host key verification failed" in said.lower():
        return f"on {launch}: ssh-keyscan -H {address} >> ~/.ssh/known_hosts"
    if "could not resolve" in said.lower():
        return f"use {peer}'s management address; {address} does not resolve on {launch}"
    return (
        f"on {launch}: test -f ~/.ssh/id_ed25519 || ssh-keygen -t ed25519 -N '' -f "
        f"~/.ssh/id_ed25519; ssh-copy-id -i ~/.ssh/id_ed25519.pub {address}"
    )
