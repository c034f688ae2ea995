"""The per-rail probes run in the node's own loop over its ibdev2netdev, in the sweep's one
script: held against the real `sh` of this machine (dash on Debian and Ubuntu, as on the
nodes), with stand-ins for the node's tools, and cut back into one result per rail."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from flows.checks._common import HW_COUNTERS, MLNX_QOS
from wizard.discovery import ETHTOOL, ETHTOOL_I
from wizard.model import Rail
from wizard.sweep_batch import Section, build_script, rail_loop, rail_results, split_script_output

PROBES = [ETHTOOL, ETHTOOL_I, MLNX_QOS, HW_COUNTERS]
MARKER = "@@FABWIZ-0a1b2c3d@@"
HOSTILE = "$(touch${IFS}pwned)"
BACKSLASH = "tab\\tname"  # dash's echo would read the backslash as an escape

# stand-ins for the node's tools: each says how it was called; ethtool also reads a line of
# its stdin, to show it gets none of the loop's input (a real tool that read stdin would eat
# the rest of ibdev2netdev's lines)
TOOLS = {
    "ibdev2netdev": (
        "#!/bin/sh\n"
        "echo 'rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)'\n"
        "echo 'a warning line the loop must skip'\n"
        f"echo 'roceP2p1s0f0 port 1 ==> {HOSTILE} (Down)'\n"
        f"printf '%s\\n' 'mlx5_9 port 1 ==> {BACKSLASH} (Up)'\n"
        "printf 'rocep1s0f1 port 1 ==> enp1s0f1np1 (Up)'\n"  # no last newline
    ),
    "ethtool": (
        '#!/bin/sh\nprintf \'%s\\n\' "ethtool [$*]"\nread line && echo "stdin: $line"\nexit 0\n'
    ),
    "mlnx_qos": "#!/bin/sh\nprintf '%s\\n' \"mlnx_qos [$*]\"\n",
    "sudo": '#!/bin/sh\n[ "$1" = -n ] && shift\nexec "$@"\n',
}


def _run_on_a_real_shell(tmp_path: Path, script: str) -> str:
    sh = shutil.which("sh")
    if sh is None:
        pytest.skip("no sh on this machine")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in TOOLS.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    inner = shlex.split(script)
    assert inner[:2] == ["sh", "-c"] and len(inner) == 3
    proc = subprocess.run(
        [sh, "-c", inner[2]],
        cwd=tmp_path,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "LC_ALL": "C"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_loop_runs_every_probe_on_every_rail_in_one_script(tmp_path: Path) -> None:
    sections = [Section("ibdev2netdev", "ibdev2netdev")]
    script = build_script(sections, MARKER, rail_loop(PROBES, MARKER))
    text = _run_on_a_real_shell(tmp_path, script)
    assert not (tmp_path / "pwned").exists()  # a name from the node is never run as script
    loose: dict[str, tuple[str, int | None]] = {}
    out = split_script_output(
        text, sections, MARKER, target="spark1", started=1.0, duration=0.2, loose=loose
    )
    assert out["ibdev2netdev"].exit_status == 0
    assert out["ibdev2netdev"].stdout.count("==>") == 4
    # every probe on every mapping line, and only those (the warning line ran nothing)
    assert sorted(loose) == sorted(
        f"{p.name}:{netdev}"
        for p in PROBES
        for netdev in ("enp1s0f0np0", HOSTILE, BACKSLASH, "enp1s0f1np1")  # last: no newline
    )
    assert loose["ethtool:enp1s0f0np0"] == ("ethtool [enp1s0f0np0]\n", 0)  # no stdin stolen
    assert loose["ethtool_i:enp1s0f1np1"] == ("ethtool [-i enp1s0f1np1]\n", 0)
    assert loose["mlnx_qos:enp1s0f0np0"] == ("mlnx_qos [-i enp1s0f0np0]\n", 0)
    assert loose[f"ethtool:{HOSTILE}"] == (f"ethtool [{HOSTILE}]\n", 0)  # literal, as read
    assert loose[f"ethtool:{BACKSLASH}"] == (f"ethtool [{BACKSLASH}]\n", 0)
    body, status = loose["hw_counters:enp1s0f1np1"]
    assert status == 2 and "/sys/class/infiniband/rocep1s0f1/ports/1/counters/*" in body


def test_results_per_rail_name_the_command_as_it_ran_and_never_pass_a_missing_rail() -> None:
    rails = [
        Rail(node="spark1", netdev="enp1s0f0np0", rdma="rocep1s0f0", port=0, half="A"),
        Rail(node="spark1", netdev="enP2p1s0f0np0", rdma="roceP2p1s0f0", port=0, half="B"),
    ]
    loose: dict[str, tuple[str, int | None]] = {
        "ethtool:enp1s0f0np0": ("Speed: 200000Mb/s\n", 0),
        "mlnx_qos:enp1s0f0np0": ("sudo: a password is required\n", 1),
        "ethtool:enP2p1s0f0np0": ("Settings for enP2p1s0f0np0:\n", None),  # cut short
        "ethtool:eth9": ("a rail the client does not know\n", 0),
    }
    res = rail_results("spark1", rails, [ETHTOOL, MLNX_QOS], loose, started=1.0, duration=0.2)
    assert set(res) == {
        "ethtool:enp1s0f0np0",
        "mlnx_qos:enp1s0f0np0",
        "ethtool:enP2p1s0f0np0",
        "mlnx_qos:enP2p1s0f0np0",
    }  # eth9 is not one of the node's rails: left out
    ok = res["ethtool:enp1s0f0np0"]
    assert (ok.command, ok.stdout, ok.exit_status, ok.error) == (
        "ethtool enp1s0f0np0",
        "Speed: 200000Mb/s\n",
        0,
        None,
    )
    sudo = res["mlnx_qos:enp1s0f0np0"]
    assert sudo.command == "sudo -n mlnx_qos -i enp1s0f0np0"
    assert sudo.error is not None and "sudo needs a password to run mlnx_qos" in sudo.error
    cut = res["ethtool:enP2p1s0f0np0"]
    assert cut.exit_status is None and cut.error == (
        "spark1: the output of `ethtool enP2p1s0f0np0` was cut short (no end marker)"
    )
    missing = res["mlnx_qos:enP2p1s0f0np0"]
    assert missing.exit_status is None and missing.error == (
        "spark1: the output of `sudo -n mlnx_qos -i enP2p1s0f0np0` gave no answer: the node's "
        "loop over ibdev2netdev did not reach enP2p1s0f0np0"
    )


def test_a_probe_name_that_is_not_a_plain_word_is_refused() -> None:
    from wizard.probes import HostProbe

    with pytest.raises(ValueError, match="plain word"):
        rail_loop([HostProbe("eth tool", "ethtool {netdev}", per_rail=True)], MARKER)
