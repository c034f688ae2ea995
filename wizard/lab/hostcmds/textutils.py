"""Text coreutils: `echo`, `printf`, `cat`, `grep`, `head`, `tail`, `wc`, reading the node's
file system with its permissions.
"""

from __future__ import annotations

import re

from wizard.lab import gids
from wizard.lab.hostcmds.registry import Ctx, command
from wizard.lab.hostcmds.vfs import denied, is_dir, read_file


@command("echo")
async def _echo(ctx: Ctx, args: list[str]) -> int:
    newline = True
    while args and args[0] in ("-n", "-e", "-E", "-ne", "-en"):
        if "n" in args[0]:
            newline = False
        args = args[1:]
    ctx.out(" ".join(args) + ("\n" if newline else ""))
    return 0


def _unescape(s: str) -> str:
    return s.replace("\\\\", "\x01").replace("\\n", "\n").replace("\\t", "\t").replace("\x01", "\\")


@command("printf")
async def _printf(ctx: Ctx, args: list[str]) -> int:
    if not args:
        ctx.err("printf: usage: printf [-v var] format [arguments]\n")
        return 2
    fmt, rest = _unescape(args[0]), args[1:]
    specs = re.findall(r"%[-0-9.]*[sdbf%]", fmt)
    n = len([s for s in specs if s != "%%"])
    first = True
    while first or rest:
        first = False
        chunk, rest = rest[:n], rest[n:]
        it = iter(chunk)

        def sub(m: re.Match[str], it: object = it) -> str:
            spec = m.group(0)
            if spec == "%%":
                return "%"
            v = str(next(it, ""))  # type: ignore[call-overload]
            if spec.endswith("d"):
                return (spec[:-1] + "d") % int(v or 0)
            if spec.endswith("f"):
                return spec % float(v or 0)
            if spec.endswith("b"):
                return _unescape(str(v))
            return (spec[:-1] + "s") % v

        ctx.out(re.sub(r"%[-0-9.]*[sdbf%]", sub, fmt))
        if n == 0:
            break
    return 0


@command("cat")
async def _cat(ctx: Ctx, args: list[str]) -> int:
    if not args or args == ["-"]:
        ctx.out(ctx.stdin)
        return 0
    status = 0
    for path in args:
        if path.startswith("-"):
            continue
        if denied(ctx.host, path, ctx.root):
            ctx.err(f"cat: {path}: Permission denied\n")
            status = 1
            continue
        content = read_file(ctx.host, path, ctx.root)
        if content is None and gids.sysfs_read(ctx.world, ctx.node, path) == "":
            ctx.err(f"cat: {path}: Invalid argument\n")
            status = 1
            continue
        if content is None:
            if is_dir(ctx.host, path):
                ctx.err(f"cat: {path}: Is a directory\n")
            else:
                ctx.err(f"cat: {path}: No such file or directory\n")
            status = 1
            continue
        ctx.out(content)
    return status


def _grep_args(args: list[str]) -> tuple[set[str], str | None, list[str]]:
    """grep's flags, its pattern and its files."""
    flags: set[str] = set()
    pattern: str | None = None
    files: list[str] = []
    it = iter(args)
    for a in it:
        if a == "-e":
            pattern = next(it, "")
        elif a.startswith("--"):
            flags.add(a)
        elif a.startswith("-") and len(a) > 1 and pattern is None:
            flags.update(a[1:])
        elif pattern is None:
            pattern = a
        else:
            files.append(a)
    return flags, pattern, files


def _grep_regex(pattern: str, flags: set[str]) -> re.Pattern[str] | None:
    """The pattern as grep reads it (-F fixed, -E extended, else basic), None when it is bad."""
    if "F" in flags:
        return re.compile(re.escape(pattern), re.I if "i" in flags else 0)
    pat = pattern if "E" in flags else pattern.replace(r"\|", "|").replace(r"\(", "(")
    pat = pat.replace(r"\)", ")")
    try:
        return re.compile(pat, re.I if "i" in flags else 0)
    except re.error:
        return None


def _grep_sources(
    ctx: Ctx, files: list[str], flags: set[str]
) -> tuple[list[tuple[str, str]], bool]:
    """(name, content) of every readable input, and whether any could not be read."""
    sources: list[tuple[str, str]] = []
    status_err = False
    if not files:
        sources.append(("(standard input)", ctx.stdin))
    for f in files:
        if denied(ctx.host, f, ctx.root):
            if "s" not in flags:
                ctx.err(f"grep: {f}: Permission denied\n")
            status_err = True
            continue
        content = read_file(ctx.host, f, ctx.root)
        if content is None:
            if "s" not in flags:
                msg = "Is a directory" if is_dir(ctx.host, f) else "No such file or directory"
                ctx.err(f"grep: {f}: {msg}\n")
            status_err = True
            continue
        sources.append((f, content))
    return sources, status_err


def _grep_one(
    ctx: Ctx, rx: re.Pattern[str], flags: set[str], name: str, content: str, prefix: bool
) -> int:
    """Print what grep prints for one input; the number of selected records."""
    end = "\0" if "z" in flags else "\n"  # -z: NUL-terminated records in and out
    count = 0
    records = [r for r in content.split("\0") if r] if "z" in flags else content.splitlines()
    for line in records:
        hit = bool(rx.search(line))
        if hit != ("v" in flags):
            count += 1
            if "q" in flags or "c" in flags or "l" in flags:
                continue
            ctx.out(f"{name}:{line}{end}" if prefix else line + end)
    if "c" in flags:
        ctx.out(f"{name}:{count}\n" if prefix else f"{count}\n")
    if "l" in flags and count:
        ctx.out(name + "\n")
    return count


@command("grep", "egrep")
async def _grep(ctx: Ctx, args: list[str]) -> int:
    flags, pattern, files = _grep_args(args)
    if pattern is None:
        ctx.err("Usage: grep [OPTION]... PATTERNS [FILE]...\n")
        return 2
    rx = _grep_regex(pattern, flags)
    if rx is None:
        ctx.err("grep: Unmatched ( or \\(\n")
        return 2
    sources, status_err = _grep_sources(ctx, files, flags)
    prefix = ("H" in flags or len(files) > 1) and "h" not in flags
    found = sum(_grep_one(ctx, rx, flags, name, content, prefix) for name, content in sources)
    if status_err and not found:
        return 2
    return 0 if found else 1


def _lines_arg(args: list[str]) -> tuple[int, list[str], bool]:
    n, files, chars = 10, [], False
    it = iter(args)
    for a in it:
        if a in ("-n", "-c"):
            chars = a == "-c"
            n = int(next(it, "10"))
        elif re.fullmatch(r"-\d+", a):
            n = int(a[1:])
        else:
            files.append(a)
    return n, files, chars


@command("head")
async def _head(ctx: Ctx, args: list[str]) -> int:
    n, files, chars = _lines_arg(args)
    text = ctx.stdin if not files else (read_file(ctx.host, files[0], ctx.root) or "")
    ctx.out(text[:n] if chars else "".join(text.splitlines(keepends=True)[:n]))
    return 0


@command("tail")
async def _tail(ctx: Ctx, args: list[str]) -> int:
    n, files, chars = _lines_arg(args)
    text = ctx.stdin if not files else (read_file(ctx.host, files[0], ctx.root) or "")
    if n == 0:
        return 0
    ctx.out(text[-n:] if chars else "".join(text.splitlines(keepends=True)[-n:]))
    return 0


@command("wc")
async def _wc(ctx: Ctx, args: list[str]) -> int:
    """`wc -l [FILE...]`: the lines of each FILE (GNU's layout: several files are padded to
    the width of their total size and summed up), or of stdin when there is none (only then
    is stdin read)."""
    files = [a for a in args if not a.startswith("-")]
    if not files:
        ctx.out(f"{len(ctx.stdin.splitlines())}\n")
        return 0
    counts: list[tuple[int, str]] = []
    size, status = 0, 0
    for path in files:
        content = read_file(ctx.host, path, ctx.root)
        if content is None:
            ctx.err(f"wc: {path}: No such file or directory\n")
            status = 1
            continue
        counts.append((content.count("\n"), path))
        size += len(content.encode())
    if len(files) > 1:
        counts.append((sum(n for n, _ in counts), "total"))
    width = len(str(size)) if len(files) > 1 else 1
    ctx.out("".join(f"{n:>{width}} {name}\n" for n, name in counts))
    return status
