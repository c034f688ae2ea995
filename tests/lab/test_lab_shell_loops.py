"""The lab's shell runs `while` loops as sh does: output streams per iteration, `sleep` takes
node time, the loop ends when its condition fails or its session goes away."""

from __future__ import annotations

import asyncio
import contextlib

from tests.lab.shell_support import lab_host as _host
from tests.lab.shell_support import run_on as _run


async def test_a_false_condition_runs_no_body_and_exits_0() -> None:
    host = _host()
    assert await _run(host, "while false; do echo never; done; echo after") == (
        "after\n",
        "",
        0,
    )


async def test_the_loop_ends_when_its_condition_fails() -> None:
    host = _host()
    host.node.files["/tmp/flag"] = "x"
    script = "while cat /tmp/flag >/dev/null; do echo tick; rm /tmp/flag; done; echo rc=$?"
    out, err, rc = await _run(host, script)
    assert (out, rc) == ("tick\nrc=0\n", 0)  # the loop's status is its last body's
    assert err == "cat: /tmp/flag: No such file or directory\n"  # the condition that failed


async def test_reserved_words_only_in_command_position_and_unquoted() -> None:
    host = _host()
    assert await _run(host, "echo while do done") == ("while do done\n", "", 0)
    assert await _run(host, "'while' true; do echo x; done") == (
        "",
        "bash: -c: line 1: syntax error near unexpected token `do'\n"
        "bash: -c: line 1: `'while' true; do echo x; done'\n",
        2,
    )
    assert await _run(host, "while true; echo x") == (
        "",
        "bash: -c: line 2: syntax error: unexpected end of file\n",
        2,
    )


async def test_a_sampling_loop_streams_each_iteration_until_cancelled() -> None:
    host = _host(time_scale=1000.0)  # `sleep 1` is a millisecond of wall time here
    lines: list[str] = []
    got_three = asyncio.Event()

    def out(text: str) -> None:
        lines.extend(text.splitlines())
        if lines.count("@@") >= 3:
            got_three.set()

    script = (
        "while :; do cat /proc/uptime; grep -H . "
        "/sys/class/infiniband/*/ports/1/counters/port_xmit_data; echo @@; sleep 1; done"
    )
    task = asyncio.ensure_future(host.run(script, out, lambda _e: None))
    await asyncio.wait_for(got_three.wait(), 10)
    assert not task.done()  # still looping: it streamed while running
    task.cancel()  # the session went away
    with contextlib.suppress(asyncio.CancelledError):
        await task
    blocks: list[list[str]] = []
    cur: list[str] = []
    for line in lines:
        if line == "@@":
            blocks.append(cur)
            cur = []
        else:
            cur.append(line)
    uptimes = [float(b[0].split()[0]) for b in blocks]
    assert uptimes == sorted(uptimes) and uptimes[1] - uptimes[0] >= 0.99  # node seconds
    counters = [x for x in blocks[0] if "port_xmit_data:" in x]
    assert len(counters) == 4 and all(c.startswith("/sys/class/infiniband/roce") for c in counters)


async def test_exit_ends_the_shell_and_a_piped_loop_only_its_subshell() -> None:
    host = _host()
    assert await _run(host, "echo a; exit 3; echo b") == ("a\n", "", 3)
    assert await _run(host, "false; exit") == ("", "", 1)
    assert await _run(host, "while :; do echo once; exit 5; done; echo never") == ("once\n", "", 5)
    script = "echo x | while read -r y; do exit 4; done; echo rc=$?"
    assert await _run(host, script) == ("rc=4\n", "", 0)
    assert await _run(host, "sh -c 'exit 7'; echo rc=$?") == ("rc=7\n", "", 0)
    assert await _run(host, "exit abc; echo b") == (
        "",
        "bash: line 1: exit: abc: numeric argument required\n",
        2,
    )
    assert await _run(host, "exit 1 2; echo b") == (
        "",
        "bash: line 1: exit: too many arguments\n",
        1,
    )
    assert await _run(host, "exit -1") == ("", "", 255)


async def test_until_negation_break_and_continue() -> None:
    host = _host()
    assert await _run(host, "! true; echo $?; ! false; echo $?; ! echo a | grep b; echo $?") == (
        "1\n0\n0\n",
        "",
        0,
    )
    assert await _run(host, "until true; do echo never; done; echo $?") == ("0\n", "", 0)
    script = "printf 'a\\nb\\n' | until ! read -r l; do echo \"[$l]\"; done"
    assert await _run(host, script) == ("[a]\n[b]\n", "", 0)
    script = "printf '1\\n2\\n3\\n' | while read -r x; do [ $x = 2 ] && continue; echo $x; done"
    assert await _run(host, script) == ("1\n3\n", "", 0)
    # `break 2` leaves both loops; `continue 2` goes on with the outer one
    script = "while :; do while :; do break 2; done; echo never; done; echo out $?"
    assert await _run(host, script) == ("out 0\n", "", 0)
    host.node.files["/tmp/ab"] = "a\nb\n"
    inner = 'while read -r y; do [ $y = b ] && continue 2; echo "$x$y"; done </tmp/ab'
    script = f"printf '1\\n2\\n' | while read -r x; do {inner}; echo never; done"
    assert await _run(host, script) == ("1a\n2a\n", "", 0)
    # a piped inner loop runs in a subshell: its `continue 2` cannot reach the outer loop
    inner = inner.replace(" </tmp/ab", "").replace("while", "cat /tmp/ab | while", 1)
    script = f"printf '1\\n2\\n' | while read -r x; do {inner}; echo next; done"
    assert await _run(host, script) == ("1a\nnext\n2a\nnext\n", "", 0)
    # `break` in a pipeline's subshell leaves the loop outside it be
    script = "while :; do echo | break; echo after; break; done"
    assert await _run(host, script) == ("after\n", "", 0)
    assert await _run(host, "break; echo $?") == (
        "0\n",
        "bash: line 1: break: only meaningful in a `for', `while', or `until' loop\n",
        0,
    )
    assert await _run(host, "while :; do break 0; echo in; done; echo $?") == (
        "1\n",
        "bash: line 1: break: 0: loop count out of range\n",
        0,
    )
    assert await _run(host, "while :; do break x; done; echo $?") == (
        "",
        "bash: line 1: break: x: numeric argument required\n",
        128,
    )
