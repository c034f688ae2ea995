"""What every node command shares: its context (`Ctx`: the host, its output streams, stdin,
root or not), the registry mapping a command name to its handler (`COMMANDS`, filled by the
`@command` decorator of each tool family's module), and the node's fixed identity (management
interface, kernel release).

A handler is an async function `(ctx, args) -> exit status` writing to `ctx.out`/`ctx.err`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wizard.lab.world import (
    NodeState,
    World,
)

if TYPE_CHECKING:
    from wizard.lab.hostcmds.interp import Host


Write = Callable[[str], None]


MGMT_IF = "enP7s7"


MGMT_MAC = "4c:bb:47:2c:{:02x}:10"


KERNEL = "6.11.0-1016-nvidia"


@dataclass
class Ctx:
    host: Host
    out: Write
    err: Write
    stdin: str = ""
    root: bool = False
    login: bool = False

    @property
    def world(self) -> World:
        return self.host.world

    @property
    def node(self) -> NodeState:
        return self.host.node


Handler = Callable[[Ctx, list[str]], Awaitable[int]]


COMMANDS: dict[str, Handler] = {}


def command(*names: str) -> Callable[[Handler], Handler]:
    def deco(f: Handler) -> Handler:
        for n in names:
            COMMANDS[n] = f
        return f

    return deco
