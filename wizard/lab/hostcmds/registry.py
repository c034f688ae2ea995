"""What every node command shares: its context (`Ctx`: the host, its output streams, its
standard input, root or not, the shell that runs it), the registry mapping a command name to
its handler (`COMMANDS`, filled by the `@command` decorator of each tool family's module; the
builtins that need the shell's own state are in `BUILTINS`, `@builtin`), and the node's fixed
identity (management interface, kernel release).

A handler is an async function `(ctx, args) -> exit status` writing to `ctx.out`/`ctx.err`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
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


class Input:
    """A standard input: one stream that the commands sharing it read in turn, each from
    where the one before stopped (the commands of a loop body read the loop's stdin)."""

    __slots__ = ("_pos", "_text")

    def __init__(self, text: str = "") -> None:
        self._text = text
        self._pos = 0

    def readline(self) -> str:
        """One line with its newline ("" at the end), as `read` takes it: byte by byte, never
        past the newline."""
        start = self._pos
        if start >= len(self._text):
            return ""
        end = self._text.find("\n", start)
        self._pos = len(self._text) if end < 0 else end + 1
        return self._text[start : self._pos]

    def read(self) -> str:
        """All that is left (a command that reads its stdin reads it to the end)."""
        rest = self._text[self._pos :]
        self._pos = len(self._text)
        return rest


@dataclass
class Shell:
    """One shell process's state: its variables (the environment it started with, plus what
    `read` set), `$?`, its positional parameters (`$0`, `$1`...), the line it is on. Each run
    of a script has its own (an SSH session, `sh -c`); a pipeline's commands run in copies
    (subshells), so what they set does not outlive the pipeline."""

    vars: dict[str, str]
    params: list[str] = field(default_factory=lambda: ["bash"])
    status: int = 0
    line: int = 1
    login: bool = False
    root: bool = False
    loops: int = 0  # how many loops the running command is in (`break` needs one)

    def subshell(self) -> Shell:
        return Shell(
            dict(self.vars),
            list(self.params),
            self.status,
            self.line,
            self.login,
            self.root,
            self.loops,
        )

    def param(self, name: str) -> str:
        """`$?`, `$#`, `$N`."""
        if name == "?":
            return str(self.status)
        if name == "#":
            return str(len(self.params) - 1)
        n = int(name)
        return self.params[n] if n < len(self.params) else ""


class ShellExit(Exception):
    """The shell running the command ends (`exit`, an expansion bash refuses), with `status`;
    in a pipeline, only the command's subshell ends."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class LoopControl(Exception):
    """`break N` / `continue N` (kind "break" or "continue"), unwinding to the Nth loop."""

    def __init__(self, kind: str, count: int) -> None:
        super().__init__(kind, count)
        self.kind, self.count = kind, count


@dataclass
class Ctx:
    host: Host
    out: Write
    err: Write
    stream: Input = field(default_factory=Input)
    root: bool = False
    login: bool = False
    shell: Shell | None = None  # the shell running the command (None: started by another tool)
    # how the C library buffers the command's stdout (`stdbuf -o`'s `_STDBUF_O`): "" is its
    # default for a pipe (an SSH exec's stdout), blocks of 4096 bytes; "L" by line, "0" none,
    # or a block size in bytes
    stdout_mode: str = ""
    _stdin: str | None = field(default=None, repr=False)

    @property
    def stdin(self) -> str:
        """The rest of standard input, read (so taken from the stream) the first time the
        command asks: a command that never reads its stdin leaves it to the next reader."""
        if self._stdin is None:
            self._stdin = self.stream.read()
        return self._stdin

    @property
    def world(self) -> World:
        return self.host.world

    @property
    def node(self) -> NodeState:
        return self.host.node


Handler = Callable[[Ctx, list[str]], Awaitable[int]]


COMMANDS: dict[str, Handler] = {}
BUILTINS: dict[str, Handler] = {}  # run only by the shell itself (they change its state)


def command(*names: str) -> Callable[[Handler], Handler]:
    def deco(f: Handler) -> Handler:
        for n in names:
            COMMANDS[n] = f
        return f

    return deco


def builtin(*names: str) -> Callable[[Handler], Handler]:
    def deco(f: Handler) -> Handler:
        for n in names:
            BUILTINS[n] = f
        return f

    return deco
