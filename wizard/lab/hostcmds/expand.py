"""A command's words expanded when it runs, from its shell's variables: parameters (`$NAME`,
`${NAME}`, `$?`...), field splitting of an unquoted expansion on blanks (IFS's default), `~`,
and globs of the unquoted `*`/`?` written in the script, matched against the node's file system.

What an expansion yields is data: it is never globbed and never parsed again, so a value like
`$(reboot)`, `` `id` ``, `; rm -rf /` or `*` read from a node stays that text. (sh would glob
an unquoted `$x` holding `*`; the lab does not, and the client quotes its expansions anyway.)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from wizard.lab.hostcmds.registry import Shell
from wizard.lab.hostcmds.vfs import glob_match, vfs_paths
from wizard.lab.shell import Part, Word

if TYPE_CHECKING:
    from wizard.lab.hostcmds.interp import Host

_BLANKS = re.compile(r"[ \t\n]+")
_GLOB_ESCAPE = str.maketrans({"*": "[*]", "?": "[?]", "[": "[[]"})

Segment = tuple[str, bool]  # text, whether its `*` and `?` are glob characters


class ExpansionError(Exception):
    """A word bash refuses to expand (bad substitution) or the lab does not model: bash's
    message, after which a non-interactive shell stops."""

    def __init__(self, word: str, message: str) -> None:
        super().__init__(f"{word}: {message}")
        self.word, self.message = word, message


def argv(host: Host, sh: Shell, words: list[Word]) -> list[str]:
    out: list[str] = []
    for w in words:
        text = _literal(w)
        if text is not None:
            out.append(text)
            continue
        for segments in _fields(host, sh, w):
            out.extend(_glob(host, segments))
    return out


def _literal(word: Word) -> str | None:
    """The word's text when it is one literal with nothing to expand (most words are)."""
    if len(word.parts) != 1:
        return None
    part = word.parts[0]
    if part.kind != "lit":
        return None
    if part.quoted:
        return part.text
    text = part.text
    return None if "*" in text or "?" in text or text.startswith("~") else text


def target(host: Host, sh: Shell, word: Word) -> str | None:
    """A redirection's file (no glob), or None when the word is not exactly one field (bash:
    ambiguous redirect)."""
    fields = _fields(host, sh, word)
    if len(fields) != 1:
        return None
    return "".join(text for text, _ in fields[0])


def _value(sh: Shell, part: Part) -> str:
    if part.kind == "var":
        return sh.vars.get(part.text, "")
    if part.kind == "param":
        return sh.param(part.text)
    if part.kind == "bad":
        raise ExpansionError(part.text, "bad substitution")
    raise ExpansionError(part.text, "not modelled by the fabwiz lab")


class _Fields:
    """The fields a word expands to, built part by part."""

    def __init__(self) -> None:
        self.done: list[list[Segment]] = []
        self.cur: list[Segment] = []
        self.open = False  # the current field exists (even empty: `""`)

    def add(self, text: str, glob: bool) -> None:
        self.cur.append((text, glob))
        self.open = True

    def cut(self) -> None:
        if self.open:
            self.done.append(self.cur)
        self.cur, self.open = [], False

    def split(self, value: str) -> None:
        """An unquoted expansion: cut on blanks, nothing of it globbed."""
        if not value:
            return
        pieces = [p for p in _BLANKS.split(value) if p]
        if value[0] in " \t\n":
            self.cut()
        for k, piece in enumerate(pieces):
            if k:
                self.cut()
            self.add(piece, False)
        if value[-1] in " \t\n":
            self.cut()


def _fields(host: Host, sh: Shell, word: Word) -> list[list[Segment]]:
    f = _Fields()
    for k, part in enumerate(word.parts):
        if part.kind == "lit":
            text = part.text
            if k == 0 and not part.quoted and _tilde(text, len(word.parts)):
                f.add(f"/home/{host.user}", False)
                text = text[1:]
            f.add(text, not part.quoted)
        elif part.quoted:
            f.add(_value(sh, part), False)
        else:
            f.split(_value(sh, part))
    f.cut()
    return f.done


def _tilde(text: str, parts: int) -> bool:
    """A leading unquoted `~` that names the home directory (`~` alone or `~/...`)."""
    return text.startswith("~/") or (text == "~" and parts == 1)


def _glob(host: Host, segments: list[Segment]) -> list[str]:
    text = "".join(t for t, _ in segments)
    if not any(glob and ("*" in t or "?" in t) for t, glob in segments):
        return [text]
    pattern = "".join(t if glob else t.translate(_GLOB_ESCAPE) for t, glob in segments)
    return glob_match(vfs_paths(host, pattern), pattern) or [text]
