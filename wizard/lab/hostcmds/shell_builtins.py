"""Shell builtins and the small coreutils about the session: `true`, `false`, `exit`, `read`,
`break`, `continue`, `test`/`[`, `sleep` and `timeout` (on the lab clock), `hostname`,
`whoami`, `uname`, `date`, `env`, `sudo`, `bash -c`, `xargs`, `stdbuf`, and the no-ops
(`chmod`, `chown`, `sync`, `modprobe`).
"""

from __future__ import annotations

import re
import time

from wizard.lab import nodetools
from wizard.lab.hostcmds.registry import (
    COMMANDS,
    KERNEL,
    Ctx,
    Input,
    LoopControl,
    ShellExit,
    builtin,
    command,
)
from wizard.lab.hostcmds.vfs import is_dir, read_file


@command("true", ":")
async def _true(ctx: Ctx, args: list[str]) -> int:
    return 0


@command("false")
async def _false(ctx: Ctx, args: list[str]) -> int:
    return 1


@builtin("exit")
async def _exit(ctx: Ctx, args: list[str]) -> int:
    """`exit [N]`: the shell ends, with N (modulo 256) or the last command's status."""
    sh = ctx.shell
    assert sh is not None  # a builtin runs in its shell
    if not args:
        raise ShellExit(sh.status)
    if re.fullmatch(r"[-+]?[0-9]+", args[0]) is None:
        ctx.err(f"bash: line {sh.line}: exit: {args[0]}: numeric argument required\n")
        raise ShellExit(2)
    if len(args) > 1:
        ctx.err(f"bash: line {sh.line}: exit: too many arguments\n")
        raise ShellExit(1)
    raise ShellExit(int(args[0]) & 0xFF)


@builtin("break")
async def _break(ctx: Ctx, args: list[str]) -> int:
    return _jump(ctx, "break", args)


@builtin("continue")
async def _continue(ctx: Ctx, args: list[str]) -> int:
    return _jump(ctx, "continue", args)


def _jump(ctx: Ctx, kind: str, args: list[str]) -> int:
    """`break [N]` / `continue [N]`: out of (to the next iteration of) the Nth enclosing loop."""
    sh = ctx.shell
    assert sh is not None  # a builtin runs in its shell
    where = f"bash: line {sh.line}: {kind}"
    if sh.loops == 0:
        ctx.err(f"{where}: only meaningful in a `for', `while', or `until' loop\n")
        return 0
    if args and re.fullmatch(r"[-+]?[0-9]+", args[0]) is None:
        ctx.err(f"{where}: {args[0]}: numeric argument required\n")
        raise ShellExit(128)
    if len(args) > 1:
        ctx.err(f"{where}: too many arguments\n")
        raise ShellExit(1)
    count = int(args[0]) if args else 1
    sh.status = 0
    if count < 1:
        ctx.err(f"{where}: {args[0]}: loop count out of range\n")
        sh.status, count = 1, 1
    raise LoopControl(kind, min(count, sh.loops))


_READ_USAGE = (
    "read: usage: read [-ers] [-a array] [-d delim] [-i text] [-n nchars] [-N nchars] "
    "[-p prompt] [-t timeout] [-u fd] [name ...]\n"
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BLANK = " \t\n"  # IFS's default


@builtin("read")
async def _read(ctx: Ctx, args: list[str]) -> int:
    """`read [-r] [NAME...]`: one line of stdin, split on blanks, a field per NAME, the last
    NAME taking the rest of the line (no NAME: `REPLY`, the whole line). Without `-r` a
    backslash quotes the next character and a backslash-newline continues the line. Exit 1 at
    the end of the input, even when a last line without a newline was read and assigned."""
    sh = ctx.shell
    assert sh is not None  # a builtin runs in its shell
    where = f"bash: line {sh.line}: read"
    raw, k = False, 0
    while k < len(args) and args[k].startswith("-") and args[k] != "-":
        k += 1
        if args[k - 1] == "--":
            break
        for flag in args[k - 1][1:]:
            if flag == "r":
                raw = True
            elif flag in "adeinNpstu":  # bash has it; the lab does not model it
                ctx.err(f"{where}: -{flag}: not modelled by the fabwiz lab\n")
                ctx.host.refuse(["read", *args])
                return 2
            else:
                ctx.err(f"{where}: -{flag}: invalid option\n{_READ_USAGE}")
                return 2
    names = args[k:]
    if names and not _NAME.fullmatch(names[0]):  # bash checks the first before reading
        ctx.err(f"{where}: `{names[0]}': not a valid identifier\n")
        return 1
    chars, quoted, complete = _read_line(ctx.stream, raw)
    values = _fields(chars, quoted, len(names)) if names else ["".join(chars)]
    for name, value in zip(names or ["REPLY"], values, strict=True):
        if not _NAME.fullmatch(name):
            ctx.err(f"{where}: `{name}': not a valid identifier\n")
            return 1
        sh.vars[name] = value
    return 0 if complete else 1


def _read_line(stream: Input, raw: bool) -> tuple[list[str], list[bool], bool]:
    """The characters of one logical line, whether each was quoted by a backslash, and whether
    the line ended with a newline (False: the input ended)."""
    chars: list[str] = []
    quoted: list[bool] = []
    while True:
        line = stream.readline()
        complete = line.endswith("\n")
        body = line[:-1] if complete else line
        if raw:
            return [*body], [False] * len(body), complete
        i, more = 0, False
        while i < len(body):
            if body[i] != "\\":
                chars.append(body[i])
                quoted.append(False)
            elif i + 1 < len(body):
                i += 1
                chars.append(body[i])
                quoted.append(True)
            else:  # a backslash ending the line: it continues on the next one
                more = complete
            i += 1
        if not more:
            return chars, quoted, complete


def _fields(chars: list[str], quoted: list[bool], count: int) -> list[str]:
    """`count` fields: blanks (not quoted) cut them, the last takes the rest of the line."""
    n = len(chars)

    def blank(j: int) -> bool:
        return not quoted[j] and chars[j] in _BLANK

    i = 0
    while i < n and blank(i):
        i += 1
    out: list[str] = []
    for _ in range(count - 1):
        start = i
        while i < n and not blank(i):
            i += 1
        out.append("".join(chars[start:i]))
        while i < n and blank(i):
            i += 1
    end = n
    while end > i and blank(end - 1):
        end -= 1
    out.append("".join(chars[i:end]))
    return out


@command("sleep")
async def _sleep(ctx: Ctx, args: list[str]) -> int:
    await ctx.world.sleep(float(args[0]) if args else 0.0)
    return 0


@command("timeout")
async def _timeout(ctx: Ctx, args: list[str]) -> int:
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        if opt in ("-s", "-k", "--signal", "--kill-after") and args:
            args.pop(0)
    if len(args) < 2:
        ctx.err("timeout: missing operand\n")
        return 125
    seconds = float(args[0].rstrip("s"))
    run = ctx.host.exec(
        args[1:],
        ctx.out,
        ctx.err,
        ctx.stream,
        login=ctx.login,
        root=ctx.root,
        stdout_mode=ctx.stdout_mode,  # its environment (`_STDBUF_O`) is the command's
    )
    try:
        return await ctx.world.clock.wait_for(run, seconds)
    except TimeoutError:
        return 124


_STDBUF_TRY = "Try 'stdbuf --help' for more information.\n"
_STDBUF_SIZE = re.compile(r"([0-9]+)(|[kKMGTPEZY]|[KMGTPEZY]B|[KMGTPEZY]iB)")
_STDBUF_UNITS = "KMGTPEZY"


def _stdbuf_mode(text: str) -> str | None:
    """A MODE of `stdbuf -i/-o/-e` as coreutils 9 reads it: L, or a size in bytes with an
    optional unit (K = KiB = 1024, KB = 1000; 0 means unbuffered); None when it is neither."""
    if text == "L":
        return text
    m = _STDBUF_SIZE.fullmatch(text)
    if m is None:
        return None
    unit = m.group(2)[:1].upper()
    base = 1000 if m.group(2).endswith("B") and not m.group(2).endswith("iB") else 1024
    power = _STDBUF_UNITS.index(unit) + 1 if unit else 0
    return str(int(m.group(1)) * base**power)


@command("stdbuf")
async def _stdbuf(ctx: Ctx, args: list[str]) -> int:
    """coreutils' `stdbuf OPTION... COMMAND`: runs COMMAND with its C library's stdio
    buffering set (`_STDBUF_O` and libstdbuf preloaded); only stdout's mode changes what the
    lab's commands do (`Ctx.stdout_mode`). Its refusals and exit statuses are coreutils' own
    (125 for its own errors, 127 for a command it cannot find)."""
    modes: dict[str, str] = {}
    longs = {"--input": "i", "--output": "o", "--error": "e"}
    rest = list(args)
    while rest and rest[0].startswith("-") and rest[0] != "-":
        opt = rest.pop(0)
        if opt == "--":
            break
        if opt.startswith("--"):
            name, eq, value = opt.partition("=")
            letter, given = longs.get(name, ""), bool(eq)
            unknown = f"unrecognized option '{opt}'"
            missing = f"option '{name}' requires an argument"
        else:
            letter, value = opt[1], opt[2:]
            letter, given = (letter if letter in "ioe" else ""), bool(value)
            unknown = f"invalid option -- '{opt[1]}'"
            missing = f"option requires an argument -- '{letter}'"
        if not letter or not (given or rest):
            ctx.err(f"stdbuf: {missing if letter else unknown}\n{_STDBUF_TRY}")
            return 125
        if not given:
            value = rest.pop(0)
        if letter == "i" and value.startswith("L"):
            ctx.err(f"stdbuf: line buffering stdin is meaningless\n{_STDBUF_TRY}")
            return 125
        mode = _stdbuf_mode(value)
        if mode is None:
            ctx.err(f"stdbuf: invalid mode \u2018{value}\u2019\n")
            return 125
        modes[letter] = mode
    if not rest:
        ctx.err(f"stdbuf: missing operand\n{_STDBUF_TRY}")
        return 125
    if not modes:
        ctx.err(f"stdbuf: you must specify a buffering mode option\n{_STDBUF_TRY}")
        return 125
    name = rest[0]
    if COMMANDS.get(name.rsplit("/", 1)[-1]) is None or nodetools.resolve(ctx.host, name):
        ctx.err(f"stdbuf: failed to run command \u2018{name}\u2019: No such file or directory\n")
        return 127
    return await ctx.host.exec(
        rest,
        ctx.out,
        ctx.err,
        ctx.stream,
        login=ctx.login,
        root=ctx.root,
        stdout_mode=modes.get("o", ctx.stdout_mode),
    )


@command("hostname")
async def _hostname(ctx: Ctx, args: list[str]) -> int:
    ctx.out(ctx.node.name + "\n")
    return 0


@command("whoami")
async def _whoami(ctx: Ctx, args: list[str]) -> int:
    ctx.out(("root" if ctx.root else ctx.host.user) + "\n")
    return 0


@command("uname")
async def _uname(ctx: Ctx, args: list[str]) -> int:
    if "-r" in args:
        ctx.out(KERNEL + "\n")
    elif "-a" in args:
        ctx.out(f"Linux {ctx.node.name} {KERNEL} #16-Ubuntu SMP aarch64 GNU/Linux\n")
    else:
        ctx.out("Linux\n")
    return 0


@command("date")
async def _date(ctx: Ctx, args: list[str]) -> int:
    if "+%s" in args:
        ctx.out(f"{int(ctx.world.now())}\n")
    else:
        ctx.out(time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(ctx.world.now())) + "\n")
    return 0


@command("env", "printenv")
async def _env(ctx: Ctx, args: list[str]) -> int:
    env = ctx.host.base_env(ctx.login)
    ctx.out("".join(f"{k}={v}\n" for k, v in env.items()))
    return 0


@command("sudo")
async def _sudo(ctx: Ctx, args: list[str]) -> int:
    opts: list[str] = []
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        opts.append(opt)
        if opt in ("-u", "-g"):
            args = args[1:]
    if not args:
        ctx.err("usage: sudo -h | -K | -k | -V\n")
        return 1
    refused = nodetools.sudo_refusal(ctx, opts, args)
    if refused is not None:
        ctx.err(refused[0])
        return refused[1]
    if "-l" in opts:
        return await nodetools.sudo_list(ctx, args)
    return await ctx.host.exec(args, ctx.out, ctx.err, ctx.stream, login=ctx.login, root=True)


@command("bash", "sh")
async def _bash(ctx: Ctx, args: list[str]) -> int:
    """`bash -c SCRIPT [NAME ARGS...]`, `bash FILE [ARGS...]`, `bash` / `bash -s` (the script
    is its stdin). The script's commands share the shell's stdin."""
    login = ctx.login
    script: str | None = None
    params = ["bash"]
    it = iter(args)
    for a in it:
        if a.startswith("-") and not a.startswith("--"):
            if "l" in a:
                login = True
            if "c" in a:
                script = next(it, "")
                params = list(it) or params
                break
        elif a == "--login":
            login = True
        else:
            content = read_file(ctx.host, a, ctx.root)
            if content is None:
                ctx.err(f"bash: {a}: No such file or directory\n")
                return 127
            script = content
            params = [a, *it]
            break
    if script is None:
        script = ctx.stdin
    return await ctx.host.run(
        script, ctx.out, ctx.err, stdin=ctx.stream, login=login, root=ctx.root, params=params
    )


@command("chmod", "chown", "sync", "modprobe")
async def _noop(ctx: Ctx, args: list[str]) -> int:
    return 0


@command("test", "[")
async def _test(ctx: Ctx, args: list[str]) -> int:
    """`test EXPR` / `[ EXPR ]`: -e/-f/-d/-s PATH, -n/-z STR, STR = STR, STR != STR, ! EXPR."""
    words = list(args)
    if words and words[-1] == "]":
        words = words[:-1]
    negate = False
    while words and words[0] == "!":
        negate = not negate
        words = words[1:]
    result = False
    if len(words) == 2 and words[0] in ("-e", "-f", "-d", "-s", "-r"):
        path = words[1]
        content = read_file(ctx.host, path, True)
        if words[0] == "-d":
            result = is_dir(ctx.host, path)
        elif words[0] == "-s":
            result = bool(content)
        else:
            result = content is not None or (words[0] == "-e" and is_dir(ctx.host, path))
    elif len(words) == 2 and words[0] in ("-n", "-z"):
        result = bool(words[1]) if words[0] == "-n" else not words[1]
    elif len(words) == 3 and words[1] in ("=", "==", "!="):
        result = (words[0] == words[2]) == (words[1] != "!=")
    elif len(words) == 1:
        result = bool(words[0])
    elif words:
        ctx.err(f"bash: test: {words[0]}: unary operator expected\n")
        return 2
    return 0 if result != negate else 1


@command("xargs")
async def _xargs(ctx: Ctx, args: list[str]) -> int:
    """`xargs [-r] COMMAND ARGS...`: COMMAND with the words of standard input appended."""
    no_run_if_empty = "-r" in args or "--no-run-if-empty" in args
    rest = [a for a in args if a not in ("-r", "--no-run-if-empty")]
    words = ctx.stdin.split()
    if not words and no_run_if_empty:
        return 0
    cmd = rest or ["echo"]
    handler = COMMANDS.get(cmd[0])
    if handler is None:
        ctx.err(f"xargs: {cmd[0]}: No such file or directory\n")
        return 127
    return await handler(ctx, [*cmd[1:], *words])
