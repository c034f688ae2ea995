"""A pipeline may end in a `while` loop, as in sh: the loop reads the pipeline's output, one
line per `read`; a body command that reads stdin takes what is left of it, one with
`</dev/null` leaves it; what the loop sets dies with its subshell; values read from a node are
data (never globbed, never parsed again). The sweep folds its per-rail probes into one script
with such a loop: the lab runs it as a node's sh would."""

from __future__ import annotations

import shlex

from tests.lab.shell_support import lab_host as _host
from tests.lab.shell_support import run_on as _run
from wizard.sweep_batch import Section, split_script_output

M = "@@M@@"
# healthy-2node-direct's spark1: (RDMA device, netdev) as ibdev2netdev lists them
RAILS = [
    ("rocep1s0f0", "enp1s0f0np0"),
    ("rocep1s0f1", "enp1s0f1np1"),
    ("roceP2p1s0f0", "enP2p1s0f0np0"),
    ("roceP2p1s0f1", "enP2p1s0f1np1"),
]
COUNTERS = (
    "/sys/class/infiniband/{rdma}/ports/1/hw_counters/* "
    "/sys/class/infiniband/{rdma}/ports/1/counters/*"
)


def _section(key: str, command: str) -> str:
    return (
        f'echo "{M} {key}:$netdev BEGIN"; {command} </dev/null 2>&1; '
        f'echo "{M} {key}:$netdev END $?"'
    )


RAIL_LOOP = (
    "ibdev2netdev 2>/dev/null | grep ' ==> ' | while read -r rdma _ _ _ netdev _; do\n  "
    + "\n  ".join(
        (
            _section("ethtool", 'ethtool "$netdev"'),
            _section("mlnx_qos", 'sudo -n mlnx_qos -i "$netdev"'),
            _section("hw_counters", "grep -H . " + COUNTERS.replace("{rdma}", '"$rdma"')),
        )
    )
    + "\ndone"
)


async def test_the_sweeps_rail_loop_prints_one_section_per_rail() -> None:
    host = _host()
    script = f"echo {M} head BEGIN; uname -r; echo {M} head END $?; " + RAIL_LOOP
    out, err, rc = await _run(host, "sh -c " + shlex.quote(script))
    assert (err, rc) == ("", 0)
    # each section is what the probe prints when run on its own
    want = f"{M} head BEGIN\n6.11.0-1016-nvidia\n{M} head END 0\n"
    sections = [Section("head", "uname -r")]
    for rdma, netdev in RAILS:
        for key, command in (
            ("ethtool", f"ethtool {netdev}"),
            ("mlnx_qos", f"sudo -n mlnx_qos -i {netdev}"),
            ("hw_counters", "grep -H . " + COUNTERS.format(rdma=rdma)),
        ):
            alone, alone_err, status = await _run(host, command)
            assert alone_err == "" and status == 0
            want += f"{M} {key}:{netdev} BEGIN\n{alone}{M} {key}:{netdev} END {status}\n"
            sections.append(Section(f"{key}:{netdev}", command))
    assert out == want
    # and the sweep's splitter cuts it back into the real outputs
    cut = split_script_output(out, sections, M, target="spark1", started=0.0, duration=0.0)
    assert [(k, r.exit_status, r.error) for k, r in cut.items()] == [
        (s.key, 0, None) for s in sections
    ]
    assert "\tSpeed: 200000Mb/s\n" in cut["ethtool:enp1s0f0np0"].stdout
    assert cut["ethtool:enp1s0f0np0"].stdout.endswith("\tLink detected: yes\n")
    assert cut["ethtool:enp1s0f1np1"].stdout.endswith("\tLink detected: no\n")
    assert cut["mlnx_qos:enP2p1s0f0np0"].stdout.startswith(
        "DCBX mode: OS controlled\nPriority trust state: dscp\n"
    )
    counters = cut["hw_counters:enP2p1s0f1np1"].stdout
    lines = counters.splitlines()
    assert len(lines) == 29 and all(
        x.startswith("/sys/class/infiniband/roceP2p1s0f1/ports/1/") for x in lines
    )
    assert "/sys/class/infiniband/roceP2p1s0f1/ports/1/counters/port_xmit_data:0" in lines


async def test_a_loop_status_ends_a_section_with_the_probes_status() -> None:
    host = _host()
    script = (
        "printf 'enp1s0f0np0\\nnosuchdev\\n' | while read -r netdev; do "
        'ethtool "$netdev" >/dev/null 2>&1; echo "$netdev $?"; done'
    )
    assert await _run(host, script) == ("enp1s0f0np0 0\nnosuchdev 1\n", "", 0)


async def test_a_body_command_reading_stdin_takes_the_rest_of_the_stream() -> None:
    host = _host()
    lines = "printf '1\\n2\\n3\\n' | "
    loop = 'while read -r x; do echo "got $x"; {}; done'
    # cat reads the loop's stdin to its end: one iteration
    assert await _run(host, lines + loop.format("cat")) == ("got 1\n2\n3\n", "", 0)
    assert await _run(host, lines + loop.format("grep 3")) == ("got 1\n3\n", "", 0)
    # `sh -s` runs the rest of it as its script
    script = "printf '1\\necho hi\\necho there\\n' | " + loop.format("sh -s")
    assert await _run(host, script) == ("got 1\nhi\nthere\n", "", 0)
    # with another stdin it leaves the stream to `read`
    want = ("got 1\ngot 2\ngot 3\n", "", 0)
    assert await _run(host, lines + loop.format("cat </dev/null")) == want
    # a command that does not read stdin leaves it
    assert await _run(host, lines + loop.format("ethtool -i enp1s0f0np0 >/dev/null")) == want
    host.node.files["/tmp/two"] = "x\ny\n"
    assert await _run(host, lines + loop.format("wc -l /tmp/two")) == (
        "got 1\n2 /tmp/two\ngot 2\n2 /tmp/two\ngot 3\n2 /tmp/two\n",
        "",
        0,
    )
    assert await _run(host, lines + loop.format("wc -l")) == ("got 1\n2\n", "", 0)
    # a nested shell shares it: its `read` takes the next line (and at the end, nothing)
    inner = "sh -c 'read -r y; echo \"inner $y\"'"
    want = ("got 1\ninner 2\ngot 3\ninner \n", "", 0)
    assert await _run(host, lines + loop.format(inner)) == want
    # `done < FILE` gives the whole loop a stdin
    host.node.files["/tmp/list"] = "a\nb\n"
    script = 'while read -r x; do echo "[$x]"; done </tmp/list; echo rc=$?'
    assert await _run(host, script) == ("[a]\n[b]\nrc=0\n", "", 0)


async def test_the_loop_may_feed_another_command_and_loops_nest() -> None:
    host = _host()
    script = (
        "printf 'a\\nb\\n' | while read -r x; do printf '1\\n2\\n' | while read -r y; "
        'do echo "$x$y"; done; done | grep -v a2'
    )
    assert await _run(host, script) == ("a1\nb1\nb2\n", "", 0)
    script = "printf 'a\\n' | while read -r l; do echo $l; done && echo yes || echo no"
    assert await _run(host, script) == ("a\nyes\n", "", 0)


async def test_what_a_piped_loop_sets_does_not_outlive_it() -> None:
    host = _host()
    script = 'printf "x\\n" | while read -r v; do echo "in [$v]"; done; echo "after [$v]"'
    assert await _run(host, script) == ("in [x]\nafter []\n", "", 0)
    assert await _run(host, 'echo x | read -r v; echo "[$v]"') == ("[]\n", "", 0)
    # the same read in the shell itself sets the shell's variable
    host.node.files["/tmp/v"] = "x\n"
    assert await _run(host, 'read -r v </tmp/v; echo "[$v]"') == ("[x]\n", "", 0)


async def test_values_read_from_a_node_stay_literal_text() -> None:
    host = _host()
    hostile = "$(reboot)\n`id`\n; rm -rf /\n*\n$HOME\n/sys/class/infiniband/*\n\"q\" 'q'\n"
    script = "while read -r v; do echo \"[$v]\"; printf '<%s>' $v; echo; done"
    out, err, rc = await _run(host, script, hostile)
    assert (out, err, rc) == (
        "[$(reboot)]\n<$(reboot)>\n"
        "[`id`]\n<`id`>\n"
        "[; rm -rf /]\n<;><rm><-rf></>\n"
        "[*]\n<*>\n"
        "[$HOME]\n<$HOME>\n"
        "[/sys/class/infiniband/*]\n</sys/class/infiniband/*>\n"
        "[\"q\" 'q']\n<\"q\"><'q'>\n",
        "",
        0,
    )
    assert host.node.powered and host.world.refused == []
    # in a path, a `*` from a value is a character, the `*` of the script a glob
    stdin = "*\nrocep1s0f0\n"
    script = (
        'while read -r r; do echo /sys/class/infiniband/"$r"/ports/1/counters/port_*_data; done'
    )
    assert await _run(host, script, stdin) == (
        "/sys/class/infiniband/*/ports/1/counters/port_*_data\n"
        "/sys/class/infiniband/rocep1s0f0/ports/1/counters/port_rcv_data "
        "/sys/class/infiniband/rocep1s0f0/ports/1/counters/port_xmit_data\n",
        "",
        0,
    )
    out, err, rc = await _run(
        host, 'read -r r; cat /sys/class/infiniband/"$r"/ports/1/state', stdin
    )
    assert (out, err, rc) == (
        "",
        "cat: /sys/class/infiniband/*/ports/1/state: No such file or directory\n",
        1,
    )


async def test_syntax_errors_in_bashs_words() -> None:
    host = _host()

    def near(token: str, line: int, text: str) -> str:
        return (
            f"bash: -c: line {line}: syntax error near unexpected token `{token}'\n"
            f"bash: -c: line {line}: `{text}'\n"
        )

    eof = "bash: -c: line {}: syntax error: unexpected end of file\n"
    cases = [
        ("echo a | while read x; do echo $x", "", eof.format(2)),
        ("echo a |", "", eof.format(2)),
        ("while read x\ndo\n", "", eof.format(3)),
        (
            "echo a | while read x; do echo $x; done done",
            "",
            near("done", 1, "echo a | while read x; do echo $x; done done"),
        ),
        ("while true; do done", "", near("done", 1, "while true; do done")),
        ("echo; done", "", near("done", 1, "echo; done")),
        ("do echo", "", near("do", 1, "do echo")),
        ("while ; do echo; done", "", near(";", 1, "while ; do echo; done")),
        ("echo a | | b", "", near("|", 1, "echo a | | b")),
        ("echo >", "", near("newline", 1, "echo >")),
        # the lines before the error run, as bash runs a -c string line by line
        ("echo a\nwhile true; do\necho\ndone done", "a\n", near("done", 4, "done done")),
        (
            'echo a\necho "b',
            "a\n",
            "bash: -c: line 2: unexpected EOF while looking for matching `\"'\n",
        ),
        ("echo ${x", "", "bash: -c: line 1: unexpected EOF while looking for matching `}'\n"),
    ]
    for script, out, err in cases:
        assert await _run(host, script) == (out, err, 2), script
    # newlines may follow `|`, `&&` and `||`
    assert await _run(host, "echo a |\ncat &&\n\necho b") == ("a\nb\n", "", 0)


async def test_expansion_errors_stop_the_shell() -> None:
    host = _host()
    assert await _run(host, "echo a; echo ${x y}; echo b") == (
        "a\n",
        "bash: line 1: ${x y}: bad substitution\n",
        1,
    )
    # a form bash expands that the lab does not is refused, never guessed
    assert await _run(host, "echo ${x:-d}; echo b") == (
        "",
        "bash: line 1: ${x:-d}: not modelled by the fabwiz lab\n",
        1,
    )
    assert host.world.refused == [("spark1", "echo '${x:-d}'")]
    # in a piped loop it stops the loop's subshell only
    script = "echo a | while read -r x; do echo ${x y}; done; echo rc=$?"
    assert await _run(host, script) == ("rc=1\n", "bash: line 1: ${x y}: bad substitution\n", 0)
    assert await _run(host, "read -r f; echo x > $f; echo rc=$?", "\n") == (
        "rc=1\n",
        "bash: line 1: $f: ambiguous redirect\n",
        0,
    )
