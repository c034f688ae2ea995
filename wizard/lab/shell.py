"""A tiny sh: enough of the shell for the scripts fabwiz sends over SSH. This module cuts a
script into words and operators; `wizard.lab.shellparse` reads their grammar (lists, `&&`,
`||`, pipelines, `while` loops, redirections) and `hostcmds/interp.py` runs them.

Words keep their quoting: a word is a list of parts, each a literal text, a variable
(`$NAME`, `${NAME}`) or a special parameter (`$?`, `$#`, `$0`..`$9`), quoted or not. Nothing
is expanded here: `hostcmds/expand.py` expands a command's words when it runs, from that run's
variables, so a loop body sees what `read` just set. Supported: '...' and "..." quoting,
backslash escapes and line continuations, `#` comments, `;`, newlines, `&`, `&&`, `||`, `|`,
and the redirections `< FILE`, `> FILE`, `>> FILE`, `N>&M`, `>&2`, `2>&1` (fd 0, 1 or 2).
"""

from __future__ import annotations

import re
from typing import NamedTuple

# what `${...}` may hold for the lab to expand it: a name or a special parameter it models
_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[?#]")
# a form bash expands that the lab does not (`${x:-y}`, `${#x}`, `${x%.*}`, `$$`...), as
# opposed to one bash refuses too (`${x y}`: bad substitution)
_UNMODELLED = re.compile(
    r"[#!]?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[?#@*$!-])"
    r"(?:(?::?[-=?+]|%%?|##?|//?|\^\^?|,,?|:|@).*)?",
    re.S,
)
_SPECIAL = "?#0123456789"  # `$X` the lab expands
_UNMODELLED_SPECIAL = "@*$!-"  # `$X` bash expands and the lab does not


class Part(NamedTuple):
    """One piece of a word. kind: "lit" (text), "var" (a variable's name), "param" (a special
    parameter: `?`, `#`, a digit), "bad" (a `${...}` bash refuses: bad substitution) or
    "unmodelled" (a form bash expands and the lab does not); text: what it holds (for the two
    last, the whole `${...}`)."""

    kind: str
    text: str
    quoted: bool


class Word(NamedTuple):
    parts: tuple[Part, ...]
    src: str  # the word as written (bash's messages quote it)
    line: int

    @property
    def plain(self) -> str | None:
        """The text of a word written without quotes or expansions (a reserved word, a
        redirection's fd number), else None."""
        if len(self.parts) == 1 and self.parts[0].kind == "lit" and not self.parts[0].quoted:
            return self.parts[0].text
        return None


class Op(NamedTuple):
    """An operator: "&&", "||", ";", ";;", "|", "&", "\\n", a redirection ("<", ">", ">>",
    ">&", "<&", with its fd), or "" for the end of the script (`error`: why the script ends
    early, a quote or a `${` that never closes)."""

    text: str
    line: int
    fd: int = -1
    error: str = ""

    @property
    def redirection(self) -> bool:
        return self.text in ("<", ">", ">>", ">&", "<&")


Token = Word | Op


def tokenize(script: str) -> list[Token]:
    """The script's words and operators, ending with an Op("") (the end, or a lexical error:
    the words before it still parse and run, as bash runs the lines before the error)."""
    return _Lexer(script).run()


class _Unclosed(Exception):
    """A quote or `${` the script never closes."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message, self.line = message, line


class _Lexer:
    def __init__(self, script: str) -> None:
        self.s, self.n = script, len(script)
        self.i = 0
        self.line = 1
        self.out: list[Token] = []
        self.parts: list[Part] = []
        self.start = -1  # where the current word starts (-1: no word)
        self.word_line = 1
        self.buf: list[str] = []  # the literal text being gathered, one part
        self.buf_quoted = False
        self.buf_open = False

    def run(self) -> list[Token]:
        s, n = self.s, self.n
        try:
            while self.i < n:
                c = s[self.i]
                if c in _STOPS or (self.start < 0 and self.word_start_special(c)):
                    self.step(c)
                    continue
                m = _RUN.match(s, self.i)  # plain characters, all at once
                assert m is not None
                self.lit(m.group(0), quoted=False)
                self.i = m.end()
        except _Unclosed as exc:
            self.out.append(Op("", exc.line, error=exc.message))
            return self.out
        self.flush()
        lines = len(s.splitlines())
        self.out.append(Op("", lines + 1))
        return self.out

    def word_start_special(self, c: str) -> bool:
        """A `#` (a comment) or the fd of a redirection (`2>`), where a word would start."""
        return c == "#" or (c in "012" and self.s[self.i + 1 : self.i + 2] in ("<", ">"))

    def step(self, c: str) -> None:
        s, i = self.s, self.i
        if c in " \t":
            self.flush()
            self.i += 1
            while self.i < self.n and s[self.i] in " \t":
                self.i += 1
        elif c == "#":
            while self.i < self.n and s[self.i] != "\n":
                self.i += 1
        elif c == "\\":
            self.backslash()
        elif c == "'":
            self.single_quoted()
        elif c == '"':
            self.double_quoted()
        elif c == "$":
            self.begin()
            self.dollar(quoted=False)
        elif c in "<>012":
            self.redirection()
        elif s.startswith(("&&", "||", ";;"), i):
            self.operator(s[i : i + 2])
        else:  # ; | & newline
            self.operator(c)

    # --- words ---------------------------------------------------------------------------

    def begin(self) -> None:
        if self.start < 0:
            self.start, self.word_line = self.i, self.line

    def lit(self, text: str, *, quoted: bool) -> None:
        """Literal text, gathered with the text of the same quoting next to it in one part."""
        self.begin()
        if self.buf_open and self.buf_quoted != quoted:
            self.seal()
        self.buf_open, self.buf_quoted = True, quoted
        self.buf.append(text)

    def seal(self) -> None:
        if self.buf_open:
            self.parts.append(Part("lit", "".join(self.buf), self.buf_quoted))
            self.buf, self.buf_open = [], False

    def flush(self) -> None:
        if self.start < 0:
            return
        self.seal()
        src = self.s[self.start : self.i]
        self.out.append(Word(tuple(self.parts), src, self.word_line))
        self.parts, self.start = [], -1

    def backslash(self) -> None:
        nxt = self.s[self.i + 1 : self.i + 2]
        if nxt == "\n":
            self.i += 2  # a line continuation
            self.line += 1
            return
        self.begin()
        if nxt:
            self.lit(nxt, quoted=True)
        self.i += 2

    def single_quoted(self) -> None:
        end = self.s.find("'", self.i + 1)
        if end < 0:
            raise _Unclosed("unexpected EOF while looking for matching `''", self.line)
        self.begin()
        text = self.s[self.i + 1 : end]
        self.lit(text, quoted=True)
        self.line += text.count("\n")
        self.i = end + 1

    def double_quoted(self) -> None:
        """`"..."`: `$` expands, a backslash escapes only `"`, `\\`, `$`, a backquote, a newline."""
        s, n = self.s, self.n
        opened = self.line
        self.begin()
        self.lit("", quoted=True)  # `""` is a word, an empty one
        self.i += 1
        while True:
            if self.i >= n:
                raise _Unclosed("unexpected EOF while looking for matching `\"'", opened)
            ch = s[self.i]
            if ch == '"':
                self.i += 1
                return
            if ch == "\\" and s[self.i + 1 : self.i + 2] in tuple('"\\$`\n'):
                if s[self.i + 1] == "\n":
                    self.line += 1
                else:
                    self.lit(s[self.i + 1], quoted=True)
                self.i += 2
                continue
            if ch == "$":
                try:
                    self.dollar(quoted=True)
                except _Unclosed as exc:  # bash reports the quote, not the brace
                    raise _Unclosed(
                        "unexpected EOF while looking for matching `\"'", opened
                    ) from exc
                continue
            if ch in "\n\\":  # a newline, a backslash that quotes nothing
                self.line += ch == "\n"
                self.lit(ch, quoted=True)
                self.i += 1
                continue
            m = _QUOTED_RUN.match(s, self.i)
            assert m is not None
            self.lit(m.group(0), quoted=True)
            self.i = m.end()

    def dollar(self, *, quoted: bool) -> None:
        """`$?`, `$#`, `$N`, `${...}` or `$NAME` at self.i (a `$` before anything else is a `$`)."""
        s, j = self.s, self.i
        nxt = s[j + 1 : j + 2]
        self.seal()
        if nxt == "{":
            end = s.find("}", j)
            if end < 0:
                raise _Unclosed("unexpected EOF while looking for matching `}'", self.line)
            inner = s[j + 2 : end]
            self.parts.append(_braced(inner, quoted))
            self.i = end + 1
            return
        if nxt and nxt in _SPECIAL:
            self.parts.append(Part("param", nxt, quoted))
            self.i = j + 2
            return
        if nxt and nxt in _UNMODELLED_SPECIAL:
            self.parts.append(Part("unmodelled", "$" + nxt, quoted))
            self.i = j + 2
            return
        m = _NAME.match(s, j + 1)
        if m is None:
            self.lit("$", quoted=quoted)
            self.i = j + 1
            return
        self.parts.append(Part("var", m.group(0), quoted))
        self.i = m.end()

    # --- operators -----------------------------------------------------------------------

    def operator(self, op: str) -> None:
        self.flush()
        self.out.append(Op(op, self.line))
        self.i += len(op)
        if op == "\n":
            self.line += 1

    def redirection(self) -> None:
        """`[n]<`, `[n]>`, `[n]>>`, `[n]>&`, `[n]<&` (the word after it is its target)."""
        self.flush()
        s, j = self.s, self.i
        fd = -1
        if s[j] in "012":
            fd = int(s[j])
            j += 1
        two = s[j : j + 2]
        if two in (">>", ">&", "<&"):
            op = two
        elif two == ">|":
            op = ">"
            j += 1
        else:
            op = s[j]
        if fd < 0:
            fd = 0 if op[0] == "<" else 1
        self.out.append(Op(op, self.line, fd))
        self.i = j + len(op)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STOPS = frozenset(" \t\\'\"$<>;|&\n")  # what a plain run of a word stops at
_RUN = re.compile(r"[^ \t\n'\"\\$<>;|&]+")  # plain characters of a word, at once
_QUOTED_RUN = re.compile(r'[^"\\$\n]+')  # plain characters inside "..."


def _braced(inner: str, quoted: bool) -> Part:
    if _PARAM.fullmatch(inner):
        kind = "var" if _NAME.fullmatch(inner) else "param"
        return Part(kind, inner, quoted)
    kind = "unmodelled" if _UNMODELLED.fullmatch(inner) else "bad"
    return Part(kind, "${" + inner + "}", quoted)
