"""Where a node's tools live and what a node says about itself: `command -v`, `sudo -n` with its
real refusals, `ssh` to a peer as mpirun uses it, `dpkg-query`, `modinfo`, /etc/dgx-release.

The layout is DGX OS's: perftest, mlnx-tools and Open MPI from packages under /usr/bin; NCCL
and nccl-tests built per NVIDIA's playbook under ~/nccl/build and ~/nccl-tests/build (not on
PATH). A scenario's `facts.nodes.<node>` removes tools (`missing_tools`, a tool or a package
name), makes sudo ask for a password (`sudo: password`) and breaks SSH from the other nodes
(`peer_ssh: no-key | host-key`). A tool that is not installed answers like bash does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wizard.lab.facts import NodeFacts

if TYPE_CHECKING:
    from wizard.lab.hostcmds.interp import Host
    from wizard.lab.hostcmds.registry import Ctx
    from wizard.lab.world import NodeState, World

# tool -> (package, path); "~" is the user's home
LAYOUT: dict[str, tuple[str, str]] = {
    "ibdev2netdev": ("mlnx-tools", "/usr/bin/ibdev2netdev"),
    "mlnx_qos": ("mlnx-tools", "/usr/bin/mlnx_qos"),
    "show_gids": ("mlnx-tools", "/usr/sbin/show_gids"),
    "ib_write_bw": ("perftest", "/usr/bin/ib_write_bw"),
    "ib_read_bw": ("perftest", "/usr/bin/ib_read_bw"),
    "ib_send_bw": ("perftest", "/usr/bin/ib_send_bw"),
    "mpirun": ("openmpi-bin", "/usr/bin/mpirun"),
    "mpiexec": ("openmpi-bin", "/usr/bin/mpiexec"),
    "all_reduce_perf": ("nccl-tests", "~/nccl-tests/build/all_reduce_perf"),
    "sendrecv_perf": ("nccl-tests", "~/nccl-tests/build/sendrecv_perf"),
    "libnccl.so.2.28.9": ("nccl", "~/nccl/build/lib/libnccl.so.2.28.9"),
    "ssh": ("openssh-client", "/usr/bin/ssh"),
    "sudo": ("sudo", "/usr/bin/sudo"),
}
PACKAGES = {
    "perftest": "24.10.0-0.66.g1fd7c8c",
    "openmpi-bin": "4.1.6-7ubuntu2",
    "mlnx-tools": "24.10-0.2410068",
}
KNOWN = set(LAYOUT) | {p for p, _ in LAYOUT.values()}
DGX_RELEASE = (
    'DGX_NAME="DGX Spark"\nDGX_PRETTY_NAME="NVIDIA DGX Spark"\nDGX_SWBUILD_VERSION="7.2.3"\n'
    'DGX_OTA_VERSION="7.2.3"\n'
)
OS_RELEASE = 'PRETTY_NAME="Ubuntu 24.04.3 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\n'


# The GB10 family's DMI identity (/sys/class/dmi/id/sys_vendor, product_name): the same
# ConnectX-7 multi-host layout behind each, so nothing but this record tells them apart.
PLATFORMS: dict[str, tuple[str, str]] = {
    "dgx-spark": ("NVIDIA", "DGX Spark"),
    "asus-gx10": ("ASUSTeK COMPUTER INC.", "GX10"),
    "msi-edgexpert": ("Micro-Star International Co., Ltd.", "EdgeXpert MS-C931"),
    "dell-gb10": ("Dell Inc.", "Dell Pro Max with GB10"),
    "gigabyte-atom": ("GIGABYTE", "AI TOP ATOM"),
}


def facts(world: World, node: NodeState) -> NodeFacts:
    return world.facts.nodes.get(node.name) or NodeFacts()


def installed(world: World, node: NodeState, tool: str) -> bool:
    gone = set(facts(world, node).missing_tools)
    if tool not in LAYOUT:
        return True  # not a tool this layout places (coreutils, the lab's own commands)
    return tool not in gone and LAYOUT[tool][0] not in gone


def path_of(tool: str, user: str) -> str:
    return LAYOUT[tool][1].replace("~", f"/home/{user}", 1)


def files(host: Host) -> dict[str, str]:
    """The node's installed tool binaries and release files (read-only, not in node.files)."""
    out = {path_of(t, host.user): "\x7fELF" for t in LAYOUT if installed(host.world, host.node, t)}
    for r in host.node.rails:  # the CX7 firmware, as sysfs gives it per RDMA device
        out[f"/sys/class/infiniband/{r.rdma}/fw_ver"] = f"{host.node.firmware}\n"
    vendor, product = PLATFORMS[facts(host.world, host.node).platform]
    out["/sys/class/dmi/id/sys_vendor"] = f"{vendor}\n"
    out["/sys/class/dmi/id/product_name"] = f"{product}\n"
    out["/etc/dgx-release"] = DGX_RELEASE
    out["/etc/os-release"] = OS_RELEASE
    return out


def resolve(host: Host, name: str) -> str | None:
    """Why `name` cannot run on this node (bash's message), or None when it can: a placed tool
    runs only from its own path, or by its bare name when that path is on PATH."""
    base = name.rsplit("/", 1)[-1]
    if base not in LAYOUT:
        return None
    if not installed(host.world, host.node, base):
        return (
            f"bash: {name}: {'No such file or directory' if '/' in name else 'command not found'}\n"
        )
    where = path_of(base, host.user)
    if "/" in name:
        return None if name == where else f"bash: {name}: No such file or directory\n"
    on_path = where.rsplit("/", 1)[0] in host.base_env(False)["PATH"].split(":")
    return None if on_path else f"bash: {name}: command not found\n"


def sudo_refusal(ctx: Ctx, opts: list[str], argv: list[str]) -> tuple[str, int] | None:
    """sudo's own text when this node's policy refuses (`-n` and a password needed)."""
    if facts(ctx.world, ctx.node).sudo == "password" and not ctx.root:
        if "-n" in opts:
            return "sudo: a password is required\n", 1
        return (
            "sudo: a terminal is required to read the password; either use the -S option to "
            "read from standard input or configure an askpass helper\n"
            "sudo: a password is required\n",
            1,
        )
    return None


async def sudo_list(ctx: Ctx, argv: list[str]) -> int:
    """`sudo -l CMD ARGS`: the command's full path and arguments when allowed, else exit 1."""
    from wizard.lab.hostcmds.registry import COMMANDS

    name = argv[0]
    base = name.rsplit("/", 1)[-1]
    if base not in COMMANDS or not installed(ctx.world, ctx.node, base):
        ctx.err(f"sudo: {name}: command not found\n")
        return 1
    full = (
        name
        if "/" in name
        else (path_of(base, ctx.host.user) if base in LAYOUT else f"/usr/bin/{base}")
    )
    ctx.out(" ".join([full, *argv[1:]]) + "\n")
    return 0


def apply_naming(world: World) -> None:
    """Rename each node's devices as its facts say, in PCI order (the kernel's probe order):
    `rdma_naming: mlx5` gives mlx5_0..mlx5_3, `netdev_naming: eth` gives eth0..eth3 (and the
    netplan file follows). Nothing in a name then tells the PCIe half: only the PCI domain does."""
    from wizard.lab.world import NETPLAN_PATH

    for node in world.nodes.values():
        f = facts(world, node)
        order = sorted(node.rails, key=lambda r: r.pci)
        for k, r in enumerate(order):
            if f.rdma_naming == "mlx5":
                r.rdma = f"mlx5_{k}"
            if f.netdev_naming == "eth":
                old, r.netdev = r.netdev, f"eth{k}"
                text = node.files.get(NETPLAN_PATH, "")
                node.files[NETPLAN_PATH] = text.replace(f"{old}:", f"{r.netdev}:")
