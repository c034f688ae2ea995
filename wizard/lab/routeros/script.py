"""A RouterOS CLI subset: what scheduler `on-event` scripts and `/import` files run.

The engine arms a dead-man rollback as a scheduler entry holding the inverse commands, for
example `/interface bridge port add bridge=bridge interface=qsfp56-dd-1-2` or
`/interface bridge port set [find interface=qsfp56-dd-1-1] hw=yes`, and relies on it running
when due. Supported: menu paths (absolute or relative, also as a line of their own as in an
export), `add`/`set`/`unset`/`remove`/`enable`/`disable` with `key=value` arguments, item references
by id, name or `[ find <conditions> ]` (`=`, `!=`, `~`, `and`, `or`, `where`), `:delay`,
`:log`, `:put`, `:do { } on-error={ }`, `/system reboot`, `/import file-name=`, commands separated by `;` or newlines,
and `\\` line continuations. Anything else fails the script and is logged, as RouterOS does.
"""

from __future__ import annotations

import re

from wizard.lab.routeros.menus import PREFIXES, MenuError, find_menu
from wizard.lab.routeros.menus_base import Menu
from wizard.lab.routeros.query import normalise
from wizard.lab.routeros.switch import ScriptRun, SwitchState, parse_duration

__all__ = ["ScriptError", "resume", "run", "split_commands", "tokenize"]

VERBS = ("add", "set", "unset", "remove", "enable", "disable", "print", "reboot", "export", "find")
_ESCAPES = {
    "n": "\n",
    "r": "\r",
    "t": "\t",
    '"': '"',
    "\\": "\\",
    "$": "$",
    "?": "?",
    "_": " ",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
}


class ScriptError(Exception):
    """A script line RouterOS would refuse."""


def _skip_quoted(text: str, i: int) -> int:
    """Index just past the string that opens at `text[i] == '"'`."""
    i += 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i + 1
        i += 1
    raise ScriptError("syntax error (missing closing quote)")


def _skip_group(text: str, i: int) -> int:
    """Index just past the `[...]` or `{...}` that opens at `text[i]`, quotes respected."""
    pairs = {"[": "]", "{": "}"}
    stack = [pairs[text[i]]]
    i += 1
    while i < len(text) and stack:
        ch = text[i]
        if ch == '"':
            i = _skip_quoted(text, i)
            continue
        if ch in pairs:
            stack.append(pairs[ch])
        elif ch == stack[-1]:
            stack.pop()
        elif ch in "]}":
            raise ScriptError(f"syntax error (unexpected {ch})")
        i += 1
    if stack:
        raise ScriptError(f"syntax error (missing closing {stack[-1]})")
    return i


def split_commands(text: str) -> list[str]:
    """Split a script into commands at `;` and newlines outside quotes, brackets and braces, as
    RouterOS does: an unquoted `;` always ends a command."""
    text = re.sub(r"\\\r?\n[ \t]*", "", text)
    out: list[str] = []
    buf: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == '"' or ch in "[{":
            end = _skip_quoted(text, i) if ch == '"' else _skip_group(text, i)
            buf.append(text[i:end])
            i = end
            continue
        if ch in ";\n\r":
            out.append("".join(buf))
            buf = []
        elif ch == "#" and not "".join(buf).strip():
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            buf.append(ch)
        i += 1
    out.append("".join(buf))
    return [c.strip() for c in out if c.strip()]


def _variable(text: str, i: int) -> None:
    """`$` starts a variable substitution in RouterOS, inside quotes too: the lab's scripts
    define none, so a bare `$name` fails the script as an undefined variable would."""
    m = re.match(r"\$[\w(\[{]", text[i:])
    if m:
        raise ScriptError(f"undefined variable {text[i : i + 12]!r}")


def tokenize(command: str) -> list[str]:
    """Words of one command; quoted strings are unescaped (`\\XX` hex escapes too), `[...]` and
    `{...}` stay whole in their word."""
    tokens: list[str] = []
    i = 0
    n = len(command)
    while i < n:
        if command[i].isspace():
            i += 1
            continue
        buf: list[str] = []
        while i < n and not command[i].isspace():
            ch = command[i]
            if ch == '"':
                i += 1
                while i < n and command[i] != '"':
                    if command[i] == "\\" and i + 1 < n:
                        hexa = command[i + 1 : i + 3]
                        if re.fullmatch(r"[0-9A-F]{2}", hexa):
                            byte = int(hexa, 16)  # a byte: \C3\A9 is one UTF-8 `é`
                            buf.append(chr(byte) if byte < 0x80 else chr(0xDC00 + byte))
                            i += 3
                            continue
                        buf.append(_ESCAPES.get(command[i + 1], command[i + 1]))
                        i += 2
                        continue
                    if command[i] == "$":
                        _variable(command, i)
                    buf.append(command[i])
                    i += 1
                if i >= n:
                    raise ScriptError("syntax error (missing closing quote)")
                i += 1
                continue
            if ch in "[{":
                end = _skip_group(command, i)
                buf.append(command[i:end])
                i = end
                continue
            if ch == "$":
                _variable(command, i)
            buf.append(ch)
            i += 1
        word = "".join(buf)
        if any(0xDC80 <= ord(c) <= 0xDCFF for c in word):
            word = word.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        tokens.append(word)
    return tokens


def _cond(row: dict[str, str], expr: str) -> bool:
    m = re.fullmatch(r"([\w.-]+)\s*(!=|=|~)(.*)", expr, flags=re.S)
    if not m:
        negate = expr.startswith("!")
        name = expr.lstrip("!")
        return (row.get(name) == "true") != negate
    name, op, value = m.group(1), m.group(2), m.group(3)
    have = row.get(name)
    if op == "~":
        return have is not None and re.search(value, have) is not None
    equal = have is not None and normalise(have) == normalise(value)
    return equal if op == "=" else not equal


def _find(sw: SwitchState, path: tuple[str, ...], expr: str) -> list[str]:
    inner = tokenize(expr.strip()[1:-1].strip())
    sub = list(path)
    while inner and inner[0] != "find":
        word = inner.pop(0)
        if word.startswith("/"):
            sub = [w for w in word.split("/") if w]
        else:
            sub.append(word)
    if not inner:
        raise ScriptError(f"unsupported expression {expr}")
    inner.pop(0)
    if inner and inner[0] == "where":
        inner.pop(0)
    menu = find_menu(tuple(sub))
    if menu is None:
        raise ScriptError(f"no such command or directory ({'/'.join(sub)})")
    ids = []
    with sw.reading():
        rows = menu.rows(sw)
    for row in rows:
        result: bool | None = None
        pending = "and"
        for tok in inner:
            if tok in ("and", "&&"):
                pending = "and"
                continue
            if tok in ("or", "||"):
                pending = "or"
                continue
            value = _cond(row, tok)
            if result is None:
                result = value
            elif pending == "and":
                result = result and value
            else:
                result = result or value
        if result is None or result:
            ids.append(row.get(".id", ""))
    return ids


def _split_args(
    sw: SwitchState, path: tuple[str, ...], words: list[str]
) -> tuple[str | None, dict[str, str]]:
    refs: list[str] = []
    attrs: dict[str, str] = {}
    for word in words:
        if word.startswith("["):
            refs.extend(_find(sw, path, word))
        elif "=" in word and not word.startswith("="):
            key, value = word.split("=", 1)
            if key == "numbers":
                refs.extend(value.split(","))
            else:
                attrs[key] = value
        else:
            refs.extend(word.split(","))
    return (",".join(refs) if refs or any(w.startswith("[") for w in words) else None), attrs


def _execute(
    sw: SwitchState, path: tuple[str, ...], command: str, owner: str
) -> tuple[tuple[str, ...], float]:
    """Run one command; return the current path after it and a delay in seconds (0 = none)."""
    words = tokenize(command)
    if not words:
        return path, 0.0
    if words[0].startswith(":"):
        return _builtin(sw, path, words, owner)
    new_path, words = _walk(path, words)
    if not words:
        return new_path, 0.0
    verb, rest = words[0], words[1:]
    if new_path == ("system",) and verb == "reboot":
        sw.reboot()
        return new_path, 0.0
    if verb in ("print", "export"):
        return new_path, 0.0
    menu = find_menu(new_path)
    if menu is None:
        raise ScriptError(f"no such command or directory ({'/'.join(new_path)})")
    if verb == "unset":
        _unset(sw, menu, new_path, rest)
    else:
        _edit(sw, menu, new_path, verb, rest)
    return new_path, 0.0


def _builtin(
    sw: SwitchState, path: tuple[str, ...], words: list[str], owner: str
) -> tuple[tuple[str, ...], float]:
    """`:delay`, `:log`, `:put` and `:do`."""
    head = words[0]
    if head == ":delay":
        return path, parse_duration(words[1] if len(words) > 1 else "1s")
    if head == ":log":
        level = words[1] if len(words) > 1 else "info"
        sw.log(f"script,{level}", " ".join(words[2:]))
        return path, 0.0
    if head == ":put":
        return path, 0.0
    if head == ":do":
        return _do(sw, path, words[1:], owner)
    raise ScriptError(f"unsupported command {head}")


def _walk(path: tuple[str, ...], words: list[str]) -> tuple[tuple[str, ...], list[str]]:
    """The menu path a command names (absolute `/a/b` or relative words) and the words left
    from its verb on."""
    cur = list(path)
    head = words[0]
    if head.startswith("/"):
        cur = [w for w in head.split("/") if w]
        words = words[1:]
        if cur and cur[-1] in VERBS:  # `/interface/bridge/port/add ...`
            words.insert(0, cur.pop())
    while words and words[0] not in VERBS:
        nxt = (*cur, words[0])
        if nxt not in PREFIXES:
            raise ScriptError(f"bad command name {words[0]} (line 1 column 1)")
        cur.append(words.pop(0))
    return tuple(cur), words


def _unset(sw: SwitchState, menu: Menu, path: tuple[str, ...], rest: list[str]) -> None:
    """`unset [find ...] path-cost` or `unset numbers=X value-name=path-cost`."""
    ids = [i for w in rest if w.startswith("[") for i in _find(sw, path, w)]
    words = [w for w in rest if not w.startswith("[")]
    names = [w.split("=", 1)[1] if w.startswith("value-name=") else w for w in words]
    if not any(w.startswith("[") for w in rest) and names:
        ids, names = names[0].removeprefix("numbers=").split(","), names[1:]
    if ids:
        menu.unset(sw, ",".join(ids), names)


def _edit(sw: SwitchState, menu: Menu, path: tuple[str, ...], verb: str, rest: list[str]) -> None:
    """`add`, `set`, `remove`, `enable`, `disable` on a menu."""
    refs, attrs = _split_args(sw, path, rest)
    if verb == "add":
        if refs is not None:
            raise ScriptError(f"expected end of command (near {refs.split(',')[0][:20]!r})")
        menu.add(sw, attrs)
    elif verb == "set":
        menu.set(sw, refs or "", attrs)
    elif verb == "remove":
        if refs:
            menu.remove(sw, refs)
    elif verb in ("enable", "disable"):
        if refs:
            menu.set(sw, refs, {"disabled": "yes" if verb == "disable" else "no"})
    else:
        raise ScriptError(f"unsupported command {verb}")


def _block(text: str) -> str:
    if not (text.startswith("{") and text.endswith("}")):
        raise ScriptError(f"syntax error (expected a {{ }} block near {text[:20]!r})")
    return text[1:-1]


def _do(
    sw: SwitchState, path: tuple[str, ...], words: list[str], owner: str
) -> tuple[tuple[str, ...], float]:
    """`:do { ... } on-error={ ... }`: run the block; when a command in it fails, run the
    on-error block instead of failing the script."""
    if not words:
        raise ScriptError("syntax error (:do without a block)")
    body = _block(words[0])
    handler: str | None = None
    for word in words[1:]:
        if word.startswith("on-error="):
            handler = _block(word[len("on-error=") :])
        else:
            raise ScriptError(f"unsupported :do argument {word[:20]!r}")
    try:
        _run_block(sw, path, body, owner)
    except (ScriptError, MenuError, ValueError, KeyError, IndexError):
        if handler is None:
            raise
        _run_block(sw, path, handler, owner)
    return path, 0.0


def _run_block(sw: SwitchState, path: tuple[str, ...], text: str, owner: str) -> None:
    cur = path
    for command in split_commands(text):
        cur, delay = _execute(sw, cur, command, owner)
        if delay > 0:
            raise ScriptError(":delay inside a block is not supported by the lab")


def _import(sw: SwitchState, words: list[str], owner: str, now: float) -> None:
    name = next((w.split("=", 1)[1] for w in words if w.startswith("file-name=")), "")
    files = [f for f in sw.tables["file"] if f["name"] == name]
    if not files:
        raise ScriptError(f"no such file {name}")
    run(sw, files[0].get("contents", ""), owner=owner, now=now)


def _go(
    sw: SwitchState, commands: list[str], owner: str, now: float, path: tuple[str, ...] = ()
) -> None:
    for index, command in enumerate(commands):
        try:
            words = tokenize(command)
            if words[:1] in (["/import"], ["import"]) and path in ((), ("system",)):
                _import(sw, words[1:], owner, now)
                continue
            path, delay = _execute(sw, path, command, owner)
        except (ScriptError, MenuError, ValueError, KeyError, IndexError) as exc:
            sw.log(
                "script,error",
                f"executing script from scheduler ({owner}) failed, "
                f"please check it manually: {exc}",
            )
            return
        if delay > 0:
            rest = commands[index + 1 :]
            if rest:
                context = "/" + " ".join(path) if path else "/"
                sw.suspend(ScriptRun(owner, [context, *rest], now + delay))
            return


def run(sw: SwitchState, text: str, *, owner: str, now: float) -> None:
    """Run a script now; a `:delay` suspends it until `SwitchState.tick` passes the delay."""
    _go(sw, split_commands(text), owner, now)


def resume(sw: SwitchState, run_: ScriptRun, now: float) -> None:
    _go(sw, run_.commands, run_.owner, now)
