"""`docker` in the lab: the containers a scenario runs (`facts.containers`) and their environment.

Enough of the CLI for what fabwiz reads: `docker ps [-q] [--format '{{.Names}}']` and
`docker inspect [--format '{{.Name}} {{json .Config.Env}}'] NAME...`, failing as docker does on
a name that does not run ("Error: No such object: NAME", exit 1).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from wizard.lab.world import NodeState, World

BASE_ENV = ("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",)


def containers(world: World, node: NodeState) -> dict[str, list[str]]:
    """name -> environment (`K=V`) of the containers running on `node`."""
    fact = world.facts.containers.get(node.name)
    if fact is None or not node.powered:
        return {}
    return {fact.name: [*BASE_ENV, *(f"{k}={v}" for k, v in fact.env.items())]}


def _format_of(args: list[str]) -> tuple[str | None, list[str]]:
    fmt: str | None = None
    rest: list[str] = []
    it = iter(args)
    for a in it:
        if a in ("--format", "-f"):
            fmt = next(it, "")
        elif a.startswith("--format="):
            fmt = a.split("=", 1)[1]
        else:
            rest.append(a)
    return fmt, rest


def _render(fmt: str, name: str, env: list[str]) -> str:
    out = fmt.replace("{{.Names}}", name).replace("{{.Name}}", "/" + name)
    out = out.replace("{{json .Config.Env}}", json.dumps(env, separators=(",", ":")))
    return out.replace("{{.ID}}", _id(name))


def _id(name: str) -> str:
    return (name.encode().hex() * 12)[:12]


def run(
    world: World,
    node: NodeState,
    args: list[str],
    out: Callable[[str], None],
    err: Callable[[str], None],
) -> int:
    running = containers(world, node)
    if not args:
        err("Usage:  docker [OPTIONS] COMMAND\n")
        return 1
    verb, rest = args[0], args[1:]
    fmt, names = _format_of(rest)
    if verb == "ps":
        for name in running:
            if "-q" in names:
                out(_id(name) + "\n")
            else:
                out(_render(fmt or "{{.ID}}   {{.Names}}", name, running[name]) + "\n")
        return 0
    if verb == "inspect":
        if not names:
            err('"docker inspect" requires at least 1 argument.\n')
            return 1
        by_id = {_id(n): n for n in running}
        status = 0
        docs = []
        for ref in names:
            name = by_id.get(ref, ref.lstrip("/"))
            if name not in running:
                err(f"Error: No such object: {ref}\n")
                status = 1
                continue
            if fmt is not None:
                out(_render(fmt, name, running[name]) + "\n")
            else:
                docs.append({"Id": _id(name), "Name": "/" + name, "Config": {"Env": running[name]}})
        if fmt is None and docs:
            out(json.dumps(docs, indent=4) + "\n")
        return status
    err(f"docker: '{verb}' is not a docker command.\n")
    return 1
