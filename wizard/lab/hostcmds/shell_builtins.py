"""Shell builtins and the small coreutils about the session: `true`, `false`, `exit`,
`test`/`[`, `sleep` and `timeout` (on the lab clock), `hostname`, `whoami`, `uname`, `date`,
`env`, `sudo`, `bash -c`, `xargs`, and the no-ops (`chmod`, `chown`, `sync`, `modprobe`).
"""

from __future__ import annotations

import time

from wizard.lab import nodetools
from wizard.lab.hostcmds.registry import COMMANDS, KERNEL, Ctx, command
from wizard.lab.hostcmds.vfs import is_dir, read_file


@command("true", ":")
async def _true(ctx: Ctx, args: list[str]) -> int:
    return 0


@command("false")
async def _false(ctx: Ctx, args: list[str]) -> int:
    return 1


@command("exit")
async def _exit(ctx: Ctx, args: list[str]) -> int:
    return int(args[0]) if args else (ctx.shell.status if ctx.shell is not None else 0)


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
    run = ctx.host.exec(args[1:], ctx.out, ctx.err, ctx.stream, login=ctx.login, root=ctx.root)
    try:
        return await ctx.world.clock.wait_for(run, seconds)
    except TimeoutError:
        return 124


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
