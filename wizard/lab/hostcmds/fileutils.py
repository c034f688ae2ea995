"""File coreutils that change the node's file system: `tee`, `cp`, `mv`, `rm`, `mkdir` (exclusive,
so a lock directory is an atomic test-and-set), `rmdir`, `ls`. Only root writes under /etc,
/usr, /lib, /opt, /var/lib and /run (but /run/lock).
"""

from __future__ import annotations

from wizard.lab.hostcmds.registry import Ctx, command
from wizard.lab.hostcmds.vfs import is_dir, read_file, vfs_paths


def _need_root(ctx: Ctx, what: str) -> bool:
    if ctx.root:
        return False
    ctx.err(f"{what}: Permission denied\n")
    return True


@command("tee")
async def _tee(ctx: Ctx, args: list[str]) -> int:
    append = "-a" in args
    paths = [a for a in args if not a.startswith("-")]
    for p in paths:
        if p.startswith(("/etc/", "/usr/", "/lib/")) and not ctx.root:
            ctx.err(f"tee: {p}: Permission denied\n")
            return 1
        ctx.node.files[p] = (ctx.node.files.get(p, "") if append else "") + ctx.stdin
    ctx.out(ctx.stdin)
    ctx.world.changed(f"file:{ctx.node.name}")
    return 0


@command("cp")
async def _cp(ctx: Ctx, args: list[str]) -> int:
    paths = [a for a in args if not a.startswith("-")]
    if len(paths) != 2:
        ctx.err("cp: missing destination file operand\n")
        return 1
    src, dst = paths
    content = read_file(ctx.host, src, ctx.root)
    if content is None:
        ctx.err(f"cp: cannot stat '{src}': No such file or directory\n")
        return 1
    if dst.startswith("/etc/") and _need_root(ctx, f"cp: cannot create regular file '{dst}'"):
        return 1
    ctx.node.files[dst] = content
    ctx.world.changed(f"file:{ctx.node.name}")
    return 0


@command("mv")
async def _mv(ctx: Ctx, args: list[str]) -> int:
    status = await _cp(ctx, args)
    if status == 0:
        ctx.node.files.pop(next(a for a in args if not a.startswith("-")), None)
    return status


@command("rm")
async def _rm(ctx: Ctx, args: list[str]) -> int:
    flags = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
    force, recursive = "f" in flags, "r" in flags or "R" in flags or "--recursive" in args
    status = 0
    for arg in (a for a in args if not a.startswith("-")):
        p = arg.rstrip("/") or "/"
        if p not in ctx.node.files and is_dir(ctx.host, p):
            if not recursive:
                ctx.err(f"rm: cannot remove '{p}': Is a directory\n")
                status = 1
                continue
            if _protected(p) and _need_root(ctx, f"rm: cannot remove '{p}'"):
                return 1
            _remove_tree(ctx, p)
            continue
        if p not in ctx.node.files:
            if not force:
                ctx.err(f"rm: cannot remove '{p}': No such file or directory\n")
                status = 1
            continue
        if p.startswith("/etc/") and _need_root(ctx, f"rm: cannot remove '{p}'"):
            return 1
        del ctx.node.files[p]
    ctx.world.changed(f"file:{ctx.node.name}")
    return status


def _protected(path: str) -> bool:
    """Where only root may create or remove (the sticky, world-writable /run/lock is not)."""
    if path.startswith("/run/"):
        return not path.startswith("/run/lock/")
    return path.startswith(("/etc/", "/usr/", "/lib/", "/opt/", "/var/lib/"))


def _remove_tree(ctx: Ctx, path: str) -> None:
    prefix = path + "/"
    for f in [f for f in ctx.node.files if f.startswith(prefix)]:
        del ctx.node.files[f]
    ctx.node.dirs -= {d for d in ctx.node.dirs if d == path or d.startswith(prefix)}


@command("mkdir")
async def _mkdir(ctx: Ctx, args: list[str]) -> int:
    """Exclusive like coreutils: an existing path fails (`File exists`, exit 1) unless `-p`,
    so `mkdir` of a lock directory is an atomic test-and-set."""
    parents, paths, it = False, [], iter(args)
    for a in it:
        if a in ("-m", "--mode"):
            next(it, None)
        elif a in ("-p", "--parents"):
            parents = True
        elif a.startswith("-") and len(a) > 1:
            parents = parents or "p" in a.lstrip("-").split("m", 1)[0]
        else:
            paths.append(a)
    if not paths:
        ctx.err("mkdir: missing operand\nTry 'mkdir --help' for more information.\n")
        return 1
    status = 0
    for p in paths:
        path = p.rstrip("/") or "/"
        exists = path in ctx.node.files or is_dir(ctx.host, path)
        if exists and (not parents or path in ctx.node.files):
            ctx.err(f"mkdir: cannot create directory '{p}': File exists\n")
            status = 1
            continue
        if exists:
            continue
        if _protected(path) and not ctx.root:
            ctx.err(f"mkdir: cannot create directory '{p}': Permission denied\n")
            status = 1
            continue
        ctx.node.dirs.add(path)
    ctx.world.changed(f"file:{ctx.node.name}")
    return status


@command("rmdir")
async def _rmdir(ctx: Ctx, args: list[str]) -> int:
    status = 0
    for p in (a for a in args if not a.startswith("-")):
        path = p.rstrip("/") or "/"
        if not is_dir(ctx.host, path):
            ctx.err(f"rmdir: failed to remove '{p}': No such file or directory\n")
            status = 1
        elif any(q.startswith(path + "/") for q in [*vfs_paths(ctx.host), *ctx.node.dirs]):
            ctx.err(f"rmdir: failed to remove '{p}': Directory not empty\n")
            status = 1
        elif _protected(path) and _need_root(ctx, f"rmdir: failed to remove '{p}'"):
            return 1
        else:
            ctx.node.dirs.discard(path)
    ctx.world.changed(f"file:{ctx.node.name}")
    return status


@command("ls")
async def _ls(ctx: Ctx, args: list[str]) -> int:
    paths = [a for a in args if not a.startswith("-")] or [f"/home/{ctx.host.user}"]
    status = 0
    for p in paths:
        if p in ctx.node.files or read_file(ctx.host, p, True) is not None:
            ctx.out(p + "\n")
            continue
        prefix = p.rstrip("/") + "/"
        names = sorted(
            {q[len(prefix) :].split("/")[0] for q in vfs_paths(ctx.host) if q.startswith(prefix)}
        )
        if not names:
            ctx.err(f"ls: cannot access '{p}': No such file or directory\n")
            status = 2
            continue
        ctx.out("".join(n + "\n" for n in names))
    return status
