"""Node readiness in preflight: tools and versions, `sudo -n`, mpirun's SSH; the sudoers drop-in.

The lab scenarios for a node without perftest, without nccl-tests, without passwordless sudo and
with broken mpirun SSH each give the finding and the command that fixes it; the drop-in passes
the real `visudo -c -f` where sudo is installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from flows import sudoers
from flows.base import Context
from flows.checks import preflight_mpirun_ssh, preflight_sudo, preflight_tools
from flows.expectations import DEFAULT
from flows.registry import CHECKS
from screens.commands.check import check
from screens.commands.setup import setup
from wizard import ncclrun, readiness
from wizard.model import ProbeResult, Rail, Status
from wizard.probes import HostProbe, Observations

ROOT = Path(__file__).resolve().parents[2]


def _check(name: str, *extra: str) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(
        check, ["--lab", name, "--json", "--time-scale", "1000", *extra], catch_exceptions=False
    )
    return result.exit_code, json.loads(result.stdout)


def _findings(report: dict[str, object]) -> dict[str, dict[str, object]]:
    found = report["findings"]
    assert isinstance(found, list)
    return {f["fault"]: f for f in found if f["status"] != "benign"}


@pytest.mark.lab
def test_node_without_perftest_names_the_package_to_install() -> None:
    code, report = _check("node-without-perftest")
    found = _findings(report)
    assert code == 1
    assert set(found) == {"preflight.tool-missing"}
    f = found["preflight.tool-missing"]
    assert f["status"] == "fail" and f["targets"] == ["spark2"]
    assert "ib_write_bw" in str(f["summary"]) and "sudo apt install perftest" in str(f["summary"])
    evidence = f["evidence"]
    assert isinstance(evidence, list)
    # the versions of every node are recorded beside the finding
    spark1 = next(e for e in evidence if e["target"] == "spark1")
    assert "DGX OS 7.2.3" in spark1["observed"] and "perftest 24.10.0" in spark1["observed"]
    assert "kernel 6.11.0-1016-nvidia" in spark1["observed"]
    assert spark1["observed"].startswith("platform NVIDIA DGX Spark; os DGX OS 7.2.3")


@pytest.mark.lab
def test_node_without_perftest_leaves_its_rail_tests_unknown_not_failed() -> None:
    _code, report = _check("node-without-perftest", "--perf")
    measurements = report["measurements"]
    assert isinstance(measurements, list)
    rails = [m for m in measurements if m["kind"] == "rail"]
    touching = [m for m in rails if "spark2/" in m["target"]]
    assert touching and all(not m["valid"] for m in touching)
    assert all("ib_write_bw is not installed on spark2" in m["reason"] for m in touching)
    others = [m for m in rails if "spark2/" not in m["target"]]
    assert others and all(m["valid"] and m["value"] > 100 for m in others)
    # nothing is known of the pairs that could not run: unknown, never a degraded CX7
    degraded = _findings(report)["host.cx7-degraded"]
    assert degraded["status"] == "unknown"
    assert all(str(t).count("spark2/") == 1 for t in degraded["targets"])  # type: ignore[union-attr]


@pytest.mark.lab
def test_node_without_nccl_tests_gives_the_playbook_build() -> None:
    _code, report = _check("node-without-nccl-tests", "--perf")
    found = _findings(report)
    f = found["preflight.tool-missing"]
    assert f["targets"] == ["spark3"]
    summary = str(f["summary"])
    assert "all_reduce_perf, sendrecv_perf missing on spark3" in summary
    assert "git clone https://github.com/NVIDIA/nccl-tests.git ~/nccl-tests/" in summary
    assert "make MPI=1" in summary
    nccl = [m for m in report["measurements"] if m["kind"] == "nccl"]  # type: ignore[union-attr]
    assert nccl and not nccl[0]["valid"]
    assert "all_reduce_perf is not installed on spark3" in nccl[0]["reason"]


@pytest.mark.lab
def test_node_without_passwordless_sudo_gives_the_sudoers_fix() -> None:
    _code, report = _check("node-without-passwordless-sudo")
    found = _findings(report)
    f = found["preflight.sudo"]
    assert f["status"] == "fail" and f["targets"] == ["spark2"]
    assert "fabwiz setup sudoers --user fabwiz" in str(f["summary"])
    evidence = f["evidence"]
    assert isinstance(evidence, list)
    [refusal] = [e for e in evidence if e["target"] == "spark2" and e["status"] == "fail"]
    # sudo's words, once for every command fabwiz runs as root (the netplan read is one of them)
    n = len(sudoers.SUDO_PROBES)  # derived from the checks' declared sudo probes
    assert n >= 12 and any("/proc/" in p.command for p in sudoers.SUDO_PROBES)
    assert refusal["observed"] == f"sudo: a password is required (all {n} commands)"
    assert (
        refusal["expected"]
        == "the drop-in of `fabwiz setup sudoers --user fabwiz` in /etc/sudoers.d"
    )
    # what needs sudo on that node cannot be judged: unknown, never pass
    assert found["host.pfc-enabled"]["status"] == "unknown"
    assert found["host.pcie-width"]["status"] == "unknown"
    assert all(str(t).startswith("spark2") for t in found["host.pfc-enabled"]["targets"])  # type: ignore[union-attr]


@pytest.mark.lab
def test_broken_mpirun_ssh_names_the_peer_and_the_key_to_copy() -> None:
    _code, report = _check("node-broken-mpirun-ssh", "--perf")
    found = _findings(report)
    f = found["preflight.mpirun-ssh"]
    assert f["targets"] == ["spark1->spark4"]
    assert "ssh-copy-id -i ~/.ssh/id_ed25519.pub 192.168.1.104" in str(f["summary"])
    ev = f["evidence"][0]  # type: ignore[index]
    assert ev["observed"] == "fabwiz@192.168.1.104: Permission denied (publickey,password)."
    assert ev["command"] == "ssh -o BatchMode=yes -o ConnectTimeout=5 192.168.1.104 true"
    # mpirun itself fails the same way: the run is no busbw, and says why
    nccl = next(m for m in report["measurements"] if m["target"] == "cluster")  # type: ignore[union-attr]
    assert nccl["value"] == 0.0


@pytest.mark.lab
def test_a_healthy_lab_passes_readiness() -> None:
    code, report = _check("healthy-4node-crs804")
    assert code == 0
    assert not {"preflight.tool-missing", "preflight.sudo", "preflight.mpirun-ssh"} & set(
        _findings(report)
    )


# --- pure parsing -------------------------------------------------------------------------------

TOOLS_OUT = """/usr/bin/ibdev2netdev
/usr/sbin/show_gids
/usr/bin/mlnx_qos
/usr/bin/mpirun
/home/nvidia/nccl-tests/build/all_reduce_perf
ls: cannot access '/home/nvidia/nccl-tests/build/sendrecv_perf': No such file or directory
/home/nvidia/nccl/build/lib/libnccl.so.2.28.3
"""


def test_parse_tools_reads_paths_and_the_playbook_nccl() -> None:
    t = readiness.parse_tools(TOOLS_OUT)
    assert t.paths["all_reduce_perf"] == "/home/nvidia/nccl-tests/build/all_reduce_perf"
    assert t.paths["show_gids"] == "/usr/sbin/show_gids"
    assert t.missing(["ib_write_bw", "sendrecv_perf", "mpirun"]) == ["ib_write_bw", "sendrecv_perf"]
    assert t.nccl_lib == "/home/nvidia/nccl/build/lib" and t.nccl_version == "2.28.3"


def test_inventory_tool_paths_are_looked_up_and_win() -> None:
    cmd = readiness.tools_command(["/opt/nccl tests/all_reduce_perf"])
    assert cmd.endswith("'/opt/nccl tests/all_reduce_perf'")
    t = readiness.parse_tools(
        "/opt/nt/all_reduce_perf\n/home/u/nccl-tests/build/all_reduce_perf\n",
        {"all_reduce_perf": "/opt/nt/all_reduce_perf"},
    )
    assert t.paths["all_reduce_perf"] == "/opt/nt/all_reduce_perf"


def test_management_is_the_default_route_interface() -> None:
    route = '[{"dst":"default","gateway":"10.0.0.1","dev":"enP7s7","prefsrc":"10.0.0.21"}]'
    addr = json.dumps(
        [
            {"ifname": "docker0", "addr_info": [{"family": "inet", "local": "172.17.0.1"}]},
            {"ifname": "enP7s7", "addr_info": [{"family": "inet", "local": "10.0.0.21"}]},
        ]
    )
    assert readiness.management(route, addr) == ("enP7s7", "10.0.0.21")
    assert readiness.management("[]", addr) is None
    assert readiness.management("not json", addr) is None


def test_versions_inbox_driver_and_dgx_os() -> None:
    v = readiness.parse_versions(
        {
            "kernel": "6.11.0-1016-nvidia\n",
            "os_release": 'DGX_OTA_VERSION="7.2.3"\nPRETTY_NAME="Ubuntu 24.04.3 LTS"\n',
            "fw_ver": "/sys/class/infiniband/rocep1s0f0/fw_ver:28.45.4028\n"
            "/sys/class/infiniband/roceP2p1s0f0/fw_ver:28.45.4028\n",
            "ofed": "bash: ofed_info: command not found\n",
            "mlx5_version": "",
            "packages": "perftest 24.10.0-0.66\nopenmpi-bin 4.1.6-7ubuntu2\n",
        }
    )
    assert v["os"] == "DGX OS 7.2.3, Ubuntu 24.04.3 LTS"
    assert v["cx7_firmware"] == "28.45.4028"
    assert v["driver"] == "inbox mlx5_core (kernel 6.11.0-1016-nvidia)"
    assert v["perftest"] == "24.10.0-0.66" and v["openmpi"] == "4.1.6-7ubuntu2"
    asus = readiness.parse_versions({"platform": "ASUSTeK COMPUTER INC.\nASUS Ascent GX10\n"})
    assert asus["platform"] == "ASUSTeK COMPUTER INC. ASUS Ascent GX10"
    ofed = readiness.parse_versions({"ofed": "MLNX_OFED_LINUX-24.10-1.1.4.0:\n"})
    assert ofed["driver"] == "MLNX_OFED_LINUX-24.10-1.1.4.0"


def test_every_tool_missing_is_named_with_its_fix() -> None:
    for t in readiness.TOOLS:
        assert t.fix.startswith(("sudo apt install ", "git clone "))
    assert preflight_tools.CHECK in CHECKS


# --- sudoers ------------------------------------------------------------------------------------


def test_every_sudo_probe_of_every_check_is_in_the_rules() -> None:
    used = {
        p.command.split()[0]
        for c in CHECKS
        for p in c.probes
        if isinstance(p, HostProbe) and p.sudo
    }
    assert used == {p.command.split()[0] for p in sudoers.sudo_probes()}
    for c in CHECKS:
        for p in c.probes:
            if isinstance(p, HostProbe) and p.sudo:
                cmd = "sudo -n " + p.command.replace("{netdev}", "enp1s0f0np0")
                assert sudoers.covered(cmd), cmd


def test_the_line_that_allows_one_command() -> None:
    line = sudoers.matching_line("ops", "sudo -n -l lspci -vv -d 15b3:")
    assert line == "ops ALL=(root) NOPASSWD: /usr/bin/lspci -vv -d 15b3\\:"
    rm = sudoers.matching_line("ops", "sudo -n rm -f /etc/nccl.conf.fabwiz-bak")
    assert rm == "ops ALL=(root) NOPASSWD: /usr/bin/rm -f /etc/nccl.conf.fabwiz-bak"


def test_covered_is_a_sudoers_glob_and_refuses_the_rest() -> None:
    assert sudoers.covered("sudo -n mlnx_qos -i enP2p1s0f1np1 --pfc 0,0,0,0,0,0,0,0")
    assert sudoers.covered("sudo -n dmesg")
    assert not sudoers.covered("sudo -n dmesg -C")  # "" means exactly no arguments
    assert not sudoers.covered("sudo -n tee /etc/shadow")
    assert not sudoers.covered("sudo -n bash")


def test_setup_sudoers_prints_the_drop_in_and_refuses_a_bad_user() -> None:
    out = CliRunner().invoke(setup, ["sudoers", "--user", "fabwiz"])
    assert out.exit_code == 0
    assert 'fabwiz ALL=(root) NOPASSWD: /usr/bin/dmesg "", \\\n' in out.output
    assert "    /usr/bin/grep -H . /etc/netplan/*.yaml, \\\n" in out.output
    assert "    /usr/bin/mlnx_qos -i *, \\\n" in out.output
    assert "/usr/bin/lspci -vv -d 15b3\\:" in out.output
    assert "/usr/sbin/netplan apply" in out.output
    ro = CliRunner().invoke(setup, ["sudoers", "--user", "fabwiz", "--read-only"])
    allowed = ro.output.split("NOPASSWD:")[1]
    assert "/usr/sbin/netplan" not in allowed and "/usr/bin/tee" not in allowed
    assert "/usr/bin/grep -H . /etc/netplan/*.yaml" in allowed  # reading is allowed
    bad = CliRunner().invoke(setup, ["sudoers", "--user", "root ALL"])
    assert bad.exit_code == 2 and "not a valid user name" in bad.output


@pytest.mark.parametrize("read_only", [False, True])
def test_the_drop_in_passes_the_real_visudo(tmp_path: Path, read_only: bool) -> None:
    visudo = shutil.which("visudo") or next(
        (p for p in ("/usr/sbin/visudo", "/sbin/visudo") if Path(p).exists()), None
    )
    if visudo is None:
        pytest.skip("visudo is not installed (apt-get install sudo provides it)")
    f = tmp_path / "fabwiz.sudoers"
    f.write_text(sudoers.sudoers("fabwiz", read_only=read_only))
    res = subprocess.run([visudo, "-c", "-f", str(f)], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "parsed OK" in res.stdout
    broken = tmp_path / "broken.sudoers"
    broken.write_text(f.read_text().replace("15b3\\:", "15b3:"))
    res = subprocess.run(
        [visudo, "-c", "-f", str(broken)], capture_output=True, text=True, check=False
    )
    assert res.returncode != 0  # the escaping is what makes it valid


def _obs(node: str, results: dict[str, tuple[str, int]]) -> Observations:
    return Observations(
        nodes={
            node: {
                k: ProbeResult(target=node, kind="ssh", command=k, stdout=out, exit_status=rc)
                for k, (out, rc) in results.items()
            }
        }
    )


def test_sudo_refusal_needs_sudo_own_words_and_a_missing_tool_is_not_a_refusal() -> None:
    answers = {
        p.name: ("/usr/bin/" + p.command.split(" ", 3)[3] + "\n", 0) for p in sudoers.SUDO_PROBES
    }
    answers["sudo_mlnx_qos"] = ("sudo: mlnx_qos: command not found\n", 1)
    answers["sudo_netplan"] = (
        "Sorry, user fabwiz is not allowed to execute '/usr/sbin/netplan apply' as root on spark1.\n",
        1,
    )
    answers["whoami"] = ("fabwiz\n", 0)
    ctx = Context(expectations=DEFAULT, nodes=("spark1",))
    [v] = preflight_sudo.CHECK.run(_obs("spark1", answers), ctx)
    assert v.status is Status.FAIL and v.targets == ("spark1",)
    assert "refuses netplan on spark1" in v.summary and "mlnx_qos" not in v.summary
    bad = next(e for e in v.evidence if e.status is Status.FAIL)
    assert bad.expected.endswith(": fabwiz ALL=(root) NOPASSWD: /usr/sbin/netplan apply")
    unknown = next(e for e in v.evidence if e.status is Status.UNKNOWN)
    assert "mlnx_qos" in unknown.command and "command not found" in unknown.observed


def test_mpirun_ssh_host_key_failure_gives_keyscan() -> None:
    res = {"mpirun_ssh:spark2": ("Host key verification failed.\n", 255)}
    obs = _obs("spark1", res)
    node = obs.nodes["spark1"]["mpirun_ssh:spark2"]
    obs = Observations(
        nodes={
            "spark1": {
                "mpirun_ssh:spark2": replace(node, command=readiness.peer_ssh_command("10.0.0.22"))
            }
        }
    )
    ctx = Context(expectations=DEFAULT, nodes=("spark1", "spark2", "spark3"))
    [v] = preflight_mpirun_ssh.CHECK.run(obs, ctx)
    assert v.status is Status.FAIL and v.targets == ("spark1->spark2",)
    assert "ssh-keyscan -H 10.0.0.22 >> ~/.ssh/known_hosts" in v.summary
    # spark3 was never tried (no management address): unknown for it, never a pass
    assert any(e.status is Status.UNKNOWN and e.target == "spark1->spark3" for e in v.evidence)


def test_inventory_tools_merge_defaults_and_refuse_unknown_names(tmp_path: Path) -> None:
    from wizard.errors import InventoryError
    from wizard.inventory import parse_inventory

    inv = parse_inventory(
        "defaults: {tools: {all_reduce_perf: /opt/nt/all_reduce_perf}}\n"
        "nodes: [{name: a, host: a.lab, tools: {mpirun: /opt/mpi/bin/mpirun}}, {name: b, host: b.lab}]\n",
        path=tmp_path / "f.yaml",
    )
    assert inv.nodes[0].tools == {
        "all_reduce_perf": "/opt/nt/all_reduce_perf",
        "mpirun": "/opt/mpi/bin/mpirun",
    }
    assert inv.nodes[1].tools == {"all_reduce_perf": "/opt/nt/all_reduce_perf"}
    with pytest.raises(InventoryError) as err:
        parse_inventory(
            "nodes: [{name: a, host: a.lab, tools: {mpirn: /x}}]\n", path=tmp_path / "f.yaml"
        )
    assert "unknown tool 'mpirn'" in str(err.value) and err.value.field == "nodes.0.tools"
    with pytest.raises(InventoryError) as err:
        parse_inventory(
            "nodes: [{name: a, host: a.lab, tools: {mpirun: bin/mpirun}}]\n",
            path=tmp_path / "f.yaml",
        )
    assert "not an absolute path" in str(err.value)


def _rail(node: str, rdma: str, half: str, port: int, up: bool = True) -> Rail:
    return Rail(
        node=node,
        rdma=rdma,
        netdev=f"n{rdma}",
        half=half,
        port=port,
        pci="0000:01:00.0",
        up=up,
        addresses=("10.9.0.1/24",) if up else (),
    )


def test_the_canonical_launch_and_what_stops_it() -> None:
    tools = {
        n: readiness.parse_tools("/usr/bin/mpirun\n/home/u/nccl-tests/build/all_reduce_perf\n")
        for n in ("a", "b")
    }
    mgmt = {"a": ("eno1", "10.0.0.1"), "b": ("eno1", "10.0.0.2")}
    rails = {n: (_rail(n, "mlx5_0", "A", 0), _rail(n, "mlx5_1", "B", 0, up=False)) for n in "ab"}
    ok = ncclrun.build(["a", "b"], tools=tools, mgmt=mgmt, rails=rails)
    assert not ok.cannot and ok.hostfile == "10.0.0.1 slots=1\n10.0.0.2 slots=1\n"
    argv = ncclrun.mpirun_argv(ok.command)
    assert "NCCL_IB_HCA==mlx5_0" in argv  # only the active device, exact match
    assert argv[argv.index("--hostfile") + 1] == ncclrun.HOSTFILE
    job = ncclrun.build(["a", "b"], tools=tools, mgmt=mgmt, rails=rails, mode="job")
    assert not any(
        w.startswith(("NCCL_IB_HCA", "NCCL_SOCKET_IFNAME"))
        for w in ncclrun.mpirun_argv(job.command)
    )
    no_sr = ncclrun.build(["a", "b"], tools=tools, mgmt=mgmt, rails=rails, op="sendrecv_perf")
    assert no_sr.cannot == "sendrecv_perf is not installed on a (preflight.tool-missing)"
    no_mgmt = ncclrun.build(["a", "b"], tools=tools, mgmt={"a": mgmt["a"]}, rails=rails)
    assert no_mgmt.cannot.startswith("b: no management address")
    mixed = ncclrun.build(
        ["a", "b"], tools=tools, mgmt={**mgmt, "b": ("enP7s7", "10.0.0.2")}, rails=rails
    )
    margv = ncclrun.mpirun_argv(mixed.command)
    assert "NCCL_SOCKET_IFNAME=eno1,enP7s7" in margv
    assert margv[margv.index("--mca") + 2] == "eno1,enP7s7"
    elsewhere = dict(tools, b=readiness.parse_tools("/usr/bin/mpirun\n/opt/x/all_reduce_perf\n"))
    moved = ncclrun.build(["a", "b"], tools=elsewhere, mgmt=mgmt, rails=rails)
    assert "mpirun runs the same path on every node" in moved.cannot


@pytest.mark.lab
def test_the_jobs_own_environment_shows_what_the_workload_gets() -> None:
    # NCCL_IB_HCA=rocep1s0f in the login environment: the job drives half A only
    _code, report = _check("nccl-hca-prefix", "--perf")
    runs = {m["target"]: m for m in report["measurements"] if m["kind"] == "nccl"}  # type: ignore[union-attr]
    proved, job = runs["cluster"]["value"], runs["cluster/job-env"]["value"]
    assert proved > 24 and job < 0.6 * proved  # the canonical launch names every device
    [warning] = [w for w in report["warnings"] if "job's own environment" in w]  # type: ignore[union-attr]
    assert f"{job:.2f} GB/s" in warning and f"{proved:.2f} GB/s" in warning
    assert 20 <= runs["spark1+spark2/sendrecv_perf"]["value"] <= 27


def test_nccl_and_nccl_tests_versions_from_a_real_run() -> None:
    fixture = ROOT.parent / "shared" / "fixtures" / "real" / "nccl-tests"
    if not fixture.is_dir():
        pytest.skip("the shared real fixtures are not beside the repository")
    text = (fixture / "allreduce-2gpu-socket-debug.txt").read_text()
    assert ncclrun.versions_in(text) == {
        "nccl_tests_version": "2.19.6",
        "nccl_version": "2.28.9+cuda13.0",
    }
