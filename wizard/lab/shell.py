"""A tiny sh: enough of the shell for the scripts fabwiz sends over SSH.

Supported: words with '...' and "..." quoting and backslash escapes, `$?` / `$VAR` / `${VAR}`
expansion, globs on unquoted words (against the node's virtual filesystem), `;`, newlines,
`&&`, `||`, pipes (`a | grep x`), redirections `2>&1`, `>&2`, `2>/dev/null`, `>/dev/null`,
`> FILE`, `>> FILE`, `< FILE`, and `#` comments. Commands themselves live in `hostcmds.py`.
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

    def flush() -> None:
        nonlocal cur, have, glob, tilde
        if have:
            out.append(Word("".join(cur), glob, tilde))
        cur, have, glob, tilde = [], False, False, False

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
                have = True
            i += 2
            continue
        if c == "'":
            end = script.find("'", i + 1)
            if end < 0:
                raise ShellSyntaxError("unexpected EOF while looking for matching `''")
            cur.append(script[i + 1 : end])
            have = True
            i = end + 1
            continue
        if c == '"':
            i += 1
            have = True
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
