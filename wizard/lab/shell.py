"""A tiny sh: enough of the shell for the scripts fabwiz sends over SSH.

Supported: words with '...' and "..." quoting and backslash escapes, `$?` / `$VAR` / `${VAR}`
expansion, globs on unquoted words (against the node's virtual filesystem), `;`, newlines,
`&&`, `||`, pipes (`a | grep x`), redirections `2>&1`, `>&2`, `2>/dev/null`, `>/dev/null`,
`> FILE`, `>> FILE`, `< FILE`, `#` comments, and `while LIST; do LIST; done` loops (see
`split_loops`). Commands themselves live in `hostcmds/`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

OPS = ("&&", "||", ";", "|", "&", "\n")
STATUS = "\x00?\x00"  # `$?`, substituted when the command runs


@dataclass
class Word:
    text: str
    globbable: bool = False  # contains an unquoted * or ?
    tilde: bool = False  # starts with an unquoted ~ (home directory)
    quoted: bool = False  # has a quoted part: never a reserved word (`while`, `do`, `done`)


@dataclass
class Redirect:
    fd: int  # 1 or 2 (0 for input)
    target: str  # "&1", "&2", a path
    append: bool = False


@dataclass
class Command:
    words: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)


@dataclass
class Pipeline:
    commands: list[Command]
    connector: str = ";"  # how it joins the NEXT pipeline: ";", "&&", "||"


class ShellSyntaxError(Exception):
    pass


def tokenize(script: str, variables: dict[str, str]) -> list[Word | str]:
    """Words (already expanded) and operator strings."""
    return _Lexer(script, variables).run()


class _Lexer:
    """One pass over a script: quoting, `$` expansion, comments, redirections and operators."""

    def __init__(self, script: str, variables: dict[str, str]) -> None:
        self.script, self.n, self.variables = script, len(script), variables
        self.i = 0
        self.out: list[Word | str] = []
        self.cur: list[str] = []
        self.have = self.glob = self.tilde = self.quoted = False

    def run(self) -> list[Word | str]:
        script, n = self.script, self.n
        while self.i < n:
            c = script[self.i]
            if c in " \t":
                self.flush()
                self.i += 1
            elif c == "#" and not self.have:
                while self.i < n and script[self.i] != "\n":
                    self.i += 1
            elif c == "\\":
                self.backslash()
            elif c == "'":
                self.single_quoted()
            elif c == '"':
                self.double_quoted()
            elif c == "$":
                val, self.i = self.expand(self.i)
                self.cur.append(val)
                self.have = True
            elif c in "<>" or (
                c in "12" and self.i + 1 < n and script[self.i + 1] == ">" and not self.have
            ):
                self.redirection(c)
            elif script.startswith("&&", self.i) or script.startswith("||", self.i):
                self.flush()
                self.out.append(script[self.i : self.i + 2])
                self.i += 2
            elif c in ";|&\n":
                self.flush()
                self.out.append(c)
                self.i += 1
            else:
                self.plain(c)
        self.flush()
        return self.out

    def flush(self) -> None:
        if self.have:
            self.out.append(Word("".join(self.cur), self.glob, self.tilde, self.quoted))
        self.cur, self.have, self.glob, self.tilde, self.quoted = [], False, False, False, False

    def expand(self, j: int) -> tuple[str, int]:
        """`$?`, `${NAME}` or `$NAME` at `j` (script[j] == "$"): its value and where it ends."""
        script, n = self.script, self.n
        if j + 1 < n and script[j + 1] == "?":
            return STATUS, j + 2
        if j + 1 < n and script[j + 1] == "{":
            end = script.find("}", j)
            if end < 0:
                raise ShellSyntaxError("bad substitution")
            return self.variables.get(script[j + 2 : end], ""), end + 1
        k = j + 1
        while k < n and (script[k].isalnum() or script[k] == "_"):
            k += 1
        if k == j + 1:
            return "$", j + 1
        return self.variables.get(script[j + 1 : k], ""), k

    def backslash(self) -> None:
        script, i = self.script, self.i
        if i + 1 < self.n and script[i + 1] == "\n":
            self.i += 2  # a line continuation
            return
        if i + 1 < self.n:
            self.cur.append(script[i + 1])
            self.have = self.quoted = True
        self.i += 2

    def single_quoted(self) -> None:
        end = self.script.find("'", self.i + 1)
        if end < 0:
            raise ShellSyntaxError("unexpected EOF while looking for matching `''")
        self.cur.append(self.script[self.i + 1 : end])
        self.have = self.quoted = True
        self.i = end + 1

    def double_quoted(self) -> None:
        """`"..."`: `$` expands, a backslash escapes only `"`, `\\`, `$`, a backquote, a newline."""
        script, n = self.script, self.n
        self.i += 1
        self.have = self.quoted = True
        while True:
            if self.i >= n:
                raise ShellSyntaxError("unexpected EOF while looking for matching `\"'")
            ch = script[self.i]
            if ch == '"':
                self.i += 1
                return
            if ch == "\\" and self.i + 1 < n and script[self.i + 1] in '"\\$`\n':
                self.cur.append(script[self.i + 1])
                self.i += 2
                continue
            if ch == "$":
                val, self.i = self.expand(self.i)
                self.cur.append(val)
                continue
            self.cur.append(ch)
            self.i += 1

    def redirection(self, c: str) -> None:
        """`[n]>&m`, `[n]>file`, `>>`, `<`: the operator as `"<fd><op>"`."""
        self.flush()
        script, j = self.script, self.i
        fd = 1
        if c in "12":
            fd = int(c)
            j += 1
        if script[j] == "<":
            fd = 0
            j += 1
            op = "<"
        elif script.startswith(">>", j):
            j += 2
            op = ">>"
        else:
            j += 1
            op = ">"
        self.out.append(f"{fd}{op}")
        self.i = j

    def plain(self, c: str) -> None:
        if c in "*?":
            self.glob = True
        if c == "~" and not self.have:
            self.tilde = True
        self.cur.append(c)
        self.have = True
        self.i += 1


def parse(tokens: list[Word | str]) -> list[Pipeline]:
    pipelines: list[Pipeline] = []
    commands: list[Command] = []
    cmd = Command()
    k = 0
    while k < len(tokens):
        t = tokens[k]
        if isinstance(t, Word):
            cmd.words.append(t)
        elif t[0] in "012" and t[1:] in (">", ">>", "<"):
            k += 1
            if k >= len(tokens) or not isinstance(tokens[k], Word):
                # `2>&1` tokenizes as "2>" "&" "1"
                if k < len(tokens) and tokens[k] == "&" and k + 1 < len(tokens):
                    nxt = tokens[k + 1]
                    if isinstance(nxt, Word):
                        cmd.redirects.append(Redirect(int(t[0]), "&" + nxt.text))
                        k += 2
                        continue
                raise ShellSyntaxError("syntax error near unexpected token `newline'")
            target = tokens[k]
            assert isinstance(target, Word)
            cmd.redirects.append(Redirect(int(t[0]), target.text, append=t.endswith(">>")))
        elif t == "|":
            if not cmd.words:
                raise ShellSyntaxError("syntax error near unexpected token `|'")
            commands.append(cmd)
            cmd = Command()
        else:  # ; && || & newline
            if cmd.words or cmd.redirects:
                commands.append(cmd)
            elif t in ("&&", "||") or (commands and t == "|"):
                raise ShellSyntaxError(f"syntax error near unexpected token `{t}'")
            cmd = Command()
            if commands:
                pipelines.append(Pipeline(commands, ";" if t in ("\n", "&") else t))
                commands = []
        k += 1
    if cmd.words or cmd.redirects:
        commands.append(cmd)
    if commands:
        pipelines.append(Pipeline(commands, ";"))
    return pipelines


# --- while loops ----------------------------------------------------------------------------


@dataclass
class Loop:
    """`while COND; do BODY; done`: COND runs, and while it exits 0, BODY runs."""

    cond: list[Word | str]
    body: list[Word | str]


def _reserved(tokens: list[Word | str], k: int, word: str) -> bool:
    """tokens[k] is the unquoted reserved word `word` in command position."""
    t = tokens[k]
    if not isinstance(t, Word) or t.quoted or t.text != word:
        return False
    return k == 0 or tokens[k - 1] in (";", "\n", "&&", "||", "|", "&")


def split_loops(tokens: list[Word | str]) -> list[list[Word | str] | Loop]:
    """Cut a token list into plain runs and top-level `while` loops (nested loops stay inside
    their loop's body and are cut when it runs). A loop ends at its `done`, which must be
    followed by an operator or the end, as in sh."""
    out: list[list[Word | str] | Loop] = []
    plain: list[Word | str] = []
    k = 0
    while k < len(tokens):
        if _reserved(tokens, k, "do") or _reserved(tokens, k, "done"):
            word = tokens[k]
            assert isinstance(word, Word)
            raise ShellSyntaxError(f"syntax error near unexpected token `{word.text}'")
        if not _reserved(tokens, k, "while"):
            plain.append(tokens[k])
            k += 1
            continue
        depth, do_at, j = 0, -1, k
        while j < len(tokens):
            if _reserved(tokens, j, "while"):
                depth += 1
            elif _reserved(tokens, j, "do") and depth == 1 and do_at < 0:
                do_at = j
            elif _reserved(tokens, j, "done"):
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if do_at < 0 or j >= len(tokens):
            raise ShellSyntaxError(
                "syntax error: unexpected end of file (a `while` without `do ... done`)"
            )
        after = tokens[j + 1] if j + 1 < len(tokens) else None
        if isinstance(after, Word):
            raise ShellSyntaxError(f"syntax error near unexpected token `{after.text}'")
        cond, body = tokens[k + 1 : do_at], tokens[do_at + 1 : j]
        if not any(isinstance(t, Word) for t in cond) or not any(isinstance(t, Word) for t in body):
            raise ShellSyntaxError("syntax error near unexpected token `do'")
        if plain:
            out.append(plain)
            plain = []
        out.append(Loop(cond, body))
        k = j + 1
    if plain:
        out.append(plain)
    return out
