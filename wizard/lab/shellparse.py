"""The grammar of the lab's tiny sh (its words and operators come from `wizard.lab.shell`):

    complete_command := list (NEWLINE | end)
    list     := and_or ((';' | '&') and_or)* [';' | '&']
    and_or   := pipeline (('&&' | '||') linebreak pipeline)*
    pipeline := ['!'] command ('|' linebreak command)*
    command  := simple | ('while' | 'until') compound 'do' compound 'done' redirection*
    simple   := (word | redirection)+

A script is read one complete command at a time (`Parser.next`), as bash reads a `-c` string:
the commands before a line with a syntax error run, then bash stops at the error. Errors are
worded as bash words them (`ShellSyntaxError.render`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wizard.lab.shell import Op, Token, Word

RESERVED = ("while", "until", "do", "done", "!")


class ShellSyntaxError(Exception):
    def __init__(self, message: str, line: int, source: str | None = None) -> None:
        super().__init__(message)
        self.message, self.line, self.source = message, line, source

    def render(self) -> str:
        """bash's words: the error, then (for an unexpected token) the line it is on."""
        text = f"bash: -c: line {self.line}: {self.message}\n"
        if self.source is not None:
            text += f"bash: -c: line {self.line}: `{self.source}'\n"
        return text


@dataclass(frozen=True, slots=True)
class Redirect:
    fd: int  # 0, 1 or 2
    op: str  # "<", ">", ">>", ">&", "<&"
    target: Word


@dataclass(slots=True)
class Simple:
    words: list[Word]
    redirects: list[Redirect]
    line: int


@dataclass(slots=True)
class While:
    """`while COND; do BODY; done`: COND runs, and while it exits 0, BODY runs (`until`:
    while it does not)."""

    cond: list[AndOr]
    body: list[AndOr]
    redirects: list[Redirect]
    line: int
    until: bool = False


@dataclass(slots=True)
class Pipeline:
    commands: list[Simple | While]
    negated: bool = False  # `! PIPELINE`: its status inverted


@dataclass(slots=True)
class AndOr:
    """A pipeline, then (`&&` or `||`, pipeline) pairs read left to right."""

    first: Pipeline
    rest: list[tuple[str, Pipeline]] = field(default_factory=list)


CommandList = list[AndOr]


class Parser:
    def __init__(self, tokens: list[Token], script: str) -> None:
        self.toks = tokens
        self.k = 0
        self.lines = script.split("\n")

    def next(self) -> CommandList | None:
        """The next complete command, or None at the end of the script."""
        self._linebreak()
        t = self._peek()
        if isinstance(t, Op) and t.text == "":
            if t.error:
                raise ShellSyntaxError(t.error, t.line)
            return None
        items: CommandList = []
        while True:
            items.append(self._and_or())
            t = self._peek()
            if isinstance(t, Op) and t.text in (";", "&"):
                self.k += 1
                t = self._peek()
                if not (isinstance(t, Op) and t.text in ("\n", "")):
                    continue
            if isinstance(t, Op) and t.text == "\n":
                self.k += 1
                return items
            if isinstance(t, Op) and t.text == "" and not t.error:
                return items
            raise self._unexpected(t)

    # --- helpers -------------------------------------------------------------------------

    def _peek(self) -> Token:
        return self.toks[self.k]

    def _linebreak(self) -> None:
        while isinstance(t := self._peek(), Op) and t.text == "\n":
            self.k += 1

    def _reserved(self, word: str) -> bool:
        t = self._peek()
        return isinstance(t, Word) and t.plain == word

    def _unexpected(self, t: Token, *, end_is_newline: bool = False) -> ShellSyntaxError:
        if isinstance(t, Op) and t.text == "":
            if t.error:
                return ShellSyntaxError(t.error, t.line)
            if not end_is_newline:
                return ShellSyntaxError("syntax error: unexpected end of file", t.line)
            line = max(1, t.line - 1)
            return self._near("newline", line)
        if isinstance(t, Word):
            return self._near(t.src, t.line)
        if t.text == "\n":
            return self._near("newline", t.line)
        text = t.text if t.fd < 0 or t.fd == (0 if t.text[0] == "<" else 1) else f"{t.fd}{t.text}"
        return self._near(text, t.line)

    def _near(self, token: str, line: int) -> ShellSyntaxError:
        source = self.lines[line - 1] if line <= len(self.lines) else ""
        return ShellSyntaxError(f"syntax error near unexpected token `{token}'", line, source)

    # --- grammar -------------------------------------------------------------------------

    def _and_or(self) -> AndOr:
        node = AndOr(self._pipeline())
        while isinstance(t := self._peek(), Op) and t.text in ("&&", "||"):
            self.k += 1
            self._linebreak()
            node.rest.append((t.text, self._pipeline()))
        return node

    def _pipeline(self) -> Pipeline:
        negated = False
        while self._reserved("!"):
            self.k += 1
            negated = not negated
        t = self._peek()
        if negated and isinstance(t, Op) and t.text in (";", "&", "\n", "") and not t.error:
            return Pipeline([], negated)  # a lone `!`: exit 1
        commands = [self._command()]
        while isinstance(t := self._peek(), Op) and t.text == "|":
            self.k += 1
            self._linebreak()
            commands.append(self._command())
        return Pipeline(commands, negated)

    def _command(self) -> Simple | While:
        t = self._peek()
        if isinstance(t, Word):
            if t.plain in ("while", "until"):
                return self._while(t)
            if t.plain in RESERVED:
                raise self._unexpected(t)
            return self._simple(t.line)
        if t.redirection:
            return self._simple(t.line)
        raise self._unexpected(t)

    def _simple(self, line: int) -> Simple:
        cmd = Simple([], [], line)
        while True:
            t = self._peek()
            if isinstance(t, Word):
                cmd.words.append(t)
                self.k += 1
            elif t.redirection:
                cmd.redirects.append(self._redirect())
            else:
                return cmd

    def _redirect(self) -> Redirect:
        op = self._peek()
        assert isinstance(op, Op)
        self.k += 1
        target = self._peek()
        if not isinstance(target, Word):
            raise self._unexpected(target, end_is_newline=True)
        self.k += 1
        return Redirect(op.fd, op.text, target)

    def _while(self, keyword: Word) -> While:
        self.k += 1
        cond = self._compound("do")
        self.k += 1
        body = self._compound("done")
        self.k += 1
        loop = While(cond, body, [], keyword.line, until=keyword.plain == "until")
        while isinstance(t := self._peek(), Op) and t.redirection:
            loop.redirects.append(self._redirect())
        t = self._peek()
        if isinstance(t, Word):
            raise self._unexpected(t)
        return loop

    def _compound(self, stop: str) -> CommandList:
        """A command list inside a loop, up to the reserved word `stop` (not consumed)."""
        items: CommandList = []
        while True:
            self._linebreak()
            if self._reserved(stop):
                if not items:
                    raise self._unexpected(self._peek())
                return items
            items.append(self._and_or())
            t = self._peek()
            if not (isinstance(t, Op) and t.text in (";", "&", "\n")):
                raise self._unexpected(t)
            self.k += 1
