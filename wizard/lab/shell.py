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
    out: list[Word | str] = []
    i, n = 0, len(script)
    cur: list[str] = []
    have = False
    glob = False
    tilde = False
    quoted = False

    def flush() -> None:
        nonlocal cur, have, glob, tilde, quoted
        if have:
            out.append(Word("".join(cur), glob, tilde, quoted))
        cur, have, glob, tilde, quoted = [], False, False, False, False

    def expand(j: int) -> tuple[str, int]:
        # script[j] == "$"
        if j + 1 < n and script[j + 1] == "?":
            return STATUS, j + 2
        if j + 1 < n and script[j + 1] == "{":
            end = script.find("}", j)
            if end < 0:
                raise ShellSyntaxError("bad substitution")
            return variables.get(script[j + 2 : end], ""), end + 1
        k = j + 1
        while k < n and (script[k].isalnum() or script[k] == "_"):
            k += 1
        if k == j + 1:
            return "$", j + 1
        return variables.get(script[j + 1 : k], ""), k

    while i < n:
        c = script[i]
        if c in " \t":
            flush()
            i += 1
            continue
        if c == "#" and not have:
            while i < n and script[i] != "\n":
                i += 1
            continue
        if c == "\\":
            if i + 1 < n and script[i + 1] == "\n":
                i += 2
                continue
            if i + 1 < n:
                cur.append(script[i + 1])
                have = quoted = True
            i += 2
            continue
        if c == "'":
            end = script.find("'", i + 1)
            if end < 0:
                raise ShellSyntaxError("unexpected EOF while looking for matching `''")
            cur.append(script[i + 1 : end])
            have = quoted = True
            i = end + 1
            continue
        if c == '"':
            i += 1
            have = quoted = True
            while True:
                if i >= n:
                    raise ShellSyntaxError("unexpected EOF while looking for matching `\"'")
                ch = script[i]
                if ch == '"':
                    i += 1
                    break
                if ch == "\\" and i + 1 < n and script[i + 1] in '"\\$`\n':
                    cur.append(script[i + 1])
                    i += 2
                    continue
                if ch == "$":
                    val, i = expand(i)
                    cur.append(val)
                    continue
                cur.append(ch)
                i += 1
            continue
        if c == "$":
            val, i = expand(i)
            cur.append(val)
            have = True
            continue
        # redirections: [n]>&m, [n]>file, >>, <
        if c in "<>" or (c in "12" and i + 1 < n and script[i + 1] == ">" and not have):
            flush()
            j = i
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
            out.append(f"{fd}{op}")
            i = j
            continue
        if script.startswith("&&", i) or script.startswith("||", i):
            flush()
            out.append(script[i : i + 2])
            i += 2
            continue
        if c in ";|&\n":
            flush()
            out.append(c)
            i += 1
            continue
        if c in "*?":
            glob = True
        if c == "~" and not have:
            tilde = True
        cur.append(c)
        have = True
        i += 1
    flush()
    return out


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
