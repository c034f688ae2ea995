"""The lab's `read` builtin does what bash's does with a line of stdin: fields split on
blanks, the last name taking the rest, backslashes quoting unless `-r`, exit 1 at the end of
the input (a last line without a newline still assigned), `REPLY` without a name, and bash's
errors. Variables expand when a command runs, so what `read` sets is what the next command
sees."""

from __future__ import annotations

from tests.lab.shell_support import lab_host as _host
from tests.lab.shell_support import run_on as _run


async def test_fields_split_on_blanks_and_the_last_name_takes_the_rest() -> None:
    host = _host()
    show = 'echo "rc=$? [$a] [$b] [$c]"'
    line = "  x \t y  z  w  \n"
    assert await _run(host, f"read -r a b c; {show}", line) == ("rc=0 [x] [y] [z  w]\n", "", 0)
    assert await _run(host, f"read -r a b c; {show}", "only\n") == ("rc=0 [only] [] []\n", "", 0)
    assert await _run(host, f"read -r a; {show}", line) == ("rc=0 [x \t y  z  w] [] []\n", "", 0)
    # no name: the whole line in REPLY, blanks and all
    assert await _run(host, 'read -r; echo "[$REPLY]"', line) == ("[  x \t y  z  w  ]\n", "", 0)
    assert await _run(host, 'read -r -- a; echo "[$a]"', "-r x\n") == ("[-r x]\n", "", 0)


async def test_backslashes_quote_without_r_and_stay_with_r() -> None:
    host = _host()
    show = 'echo "[$a] [$b]"'
    line = "a\\ b c\\  d\\tx\n"  # a\ b c\  d\tx
    assert await _run(host, f"read a b; {show}", line) == ("[a b] [c  dtx]\n", "", 0)
    assert await _run(host, f"read -r a b; {show}", line) == ("[a\\] [b c\\  d\\tx]\n", "", 0)
    # a backslash-newline continues the line; with -r it is a backslash at the end of a line
    two = "a\\\nb c\nnext\n"
    assert await _run(host, f"read a b; {show}", two) == ("[ab] [c]\n", "", 0)
    assert await _run(host, f"read -r a b; read -r c; {show} $c", two) == (
        "[a\\] [] b c\n",
        "",
        0,
    )


async def test_the_end_of_the_input() -> None:
    host = _host()
    # a last line without a newline is assigned, and read says the input ended
    assert await _run(host, 'read -r x; echo "rc=$? [$x]"', "last") == ("rc=1 [last]\n", "", 0)
    # nothing left: exit 1 and the names emptied
    script = 'read -r x; read -r x; echo "rc=$? [$x]"'
    assert await _run(host, script, "one\n") == ("rc=1 []\n", "", 0)
    assert await _run(host, 'read -r x </dev/null; echo "rc=$? [$x]"') == ("rc=1 []\n", "", 0)
    # so a `while read` loop has no iteration for the partial last line
    script = 'while read -r x; do echo "got $x"; done; echo "rc=$? [$x]"'
    assert await _run(host, script, "1\n2\nlast") == ("got 1\ngot 2\nrc=0 [last]\n", "", 0)


async def test_each_read_takes_one_line_of_a_shared_stdin() -> None:
    host = _host()
    script = 'read -r a; read -r b; echo "[$a] [$b]"; cat'
    assert await _run(host, script, "1\n2\n3\n4\n") == ("[1] [2]\n3\n4\n", "", 0)


async def test_bash_errors() -> None:
    host = _host()
    # a bad first name: nothing read (the next read gets the line)
    assert await _run(host, 'read 1x; echo "rc=$?"; read -r y; echo "[$y]"', "a\n") == (
        "rc=1\n[a]\n",
        "bash: line 1: read: `1x': not a valid identifier\n",
        0,
    )
    # a bad later name: the line is read, the names before it assigned
    assert await _run(host, 'read a 1b c; echo "rc=$? [$a]"; cat', "x y z\nw\n") == (
        "rc=1 [x]\nw\n",
        "bash: line 1: read: `1b': not a valid identifier\n",
        0,
    )
    usage = (
        "read: usage: read [-ers] [-a array] [-d delim] [-i text] [-n nchars] [-N nchars] "
        "[-p prompt] [-t timeout] [-u fd] [name ...]\n"
    )
    assert await _run(host, "echo x\nread -rz x") == (
        "x\n",
        "bash: line 2: read: -z: invalid option\n" + usage,
        2,
    )
    # an option bash has and the lab does not model is refused, not ignored
    out, err, rc = await _run(host, "read -t 5 x", "a\n")
    assert (out, err, rc) == ("", "bash: line 1: read: -t: not modelled by the fabwiz lab\n", 2)
    assert host.world.refused == [("spark1", "read -t 5 x")]


async def test_read_is_a_builtin_of_the_shell() -> None:
    host = _host()
    assert await _run(host, 'command read -r x; echo "[$x]"', "a b\n") == ("[a b]\n", "", 0)
    assert await _run(host, "command -v read") == ("read\n", "", 0)


async def test_expansion_happens_when_the_command_runs() -> None:
    host = _host()
    script = (
        'read -r f; echo "$f" ${f} "${f}x" $?; echo "$f" > "/tmp/$f"; '
        "read -r f; echo $f >> /tmp/one; cat /tmp/one"
    )
    assert await _run(host, script, "one\ntwo\n") == ("one one onex 0\none\ntwo\n", "", 0)
    # an unquoted expansion is split into fields; a quoted one is one word
    script = "read -r v; printf '<%s>' $v; echo; printf '<%s>' \"$v\"; echo"
    assert await _run(host, script, "  a  b  \n") == ("<a><b>\n<a  b>\n", "", 0)
    # an unquoted empty expansion is no word at all; a quoted one is an empty word
    script = "read -r v; printf '<%s>' x $v y; echo; printf '<%s>' x \"$v\" y; echo"
    assert await _run(host, script, "\n") == ("<x><y>\n<x><><y>\n", "", 0)


async def test_each_run_has_its_own_variables() -> None:
    """`Host` serves every SSH session of a node: what one run reads is not another's."""
    import asyncio

    host = _host()
    slow = _run(host, 'read -r v; sleep 1; echo "A=$v"', "a\n")
    fast = _run(host, 'read -r v; echo "B=$v"', "b\n")
    assert await asyncio.gather(slow, fast) == [("A=a\n", "", 0), ("B=b\n", "", 0)]
    assert await _run(host, 'echo "[$v] $?"') == ("[] 0\n", "", 0)
