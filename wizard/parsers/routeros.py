"""RouterOS replies: API rows, raw API sentences, CLI `print` tables/detail/monitor, `/log`, `/export`.

Sample inputs it matches (real/routeros-api/, real/routeros-cli/, real/routeros-export/):

    {"data": [{".id": "*1", "name": "ether1", "running": false, "mtu": 1500}]}   librouteros rows
    !re / =.id=*1 / =running=yes / .tag=5 / !done                                  raw API words
    0 H ether2     bridge1  yes  none ...                                          v7 print table
     0  R  name="ether1" default-name="ether1" mtu=1500                            print detail
                      status: link-ok                                              monitor / resource
     07-10 06:42:50 bridge,info hardware offloading activated on bridge "bridge1"  /log print
    /interface ethernet switch qos port
    set qsfp28-1-1 egress-rate-queue3=100.0Gbps pfc=pfc-tc3 trust-l3=trust        /export

Values are typed the way librouteros does (tool-formats.md, "RouterOS"): `true`/`yes` -> True,
`false`/`no` -> False, digit strings -> int; `*HEX` ids stay strings. CLI numbers with space
thousands separators (`2 969 461 776 402`) become ints. Export items keep their raw strings.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from wizard.errors import ParseError
from wizard.parsers.common import lines

TOOL = "routeros"

RosValue = bool | int | str | None

_BOOLS = {"true": True, "yes": True, "false": False, "no": False}
_INT = re.compile(r"-?\d+$")
_SPACED_INT = re.compile(r"\d{1,3}(?: \d{3})+$")
_MENU_PROMPT = re.compile(r"^\[[^\]@]+@[^\]]+\]\s*(/[^>]*?)\s*>\s*(.*)$")
_PROMPT = re.compile(r"^\[[^\]@]+@[^\]]+\]\s*>?\s*(.*)$")


def typed_value(value: object) -> RosValue:
    """librouteros' typing of one API word value: bools, ints, everything else a string."""
    if value is None or isinstance(value, bool | int):
        return value
    text = str(value)
    if text in _BOOLS:
        return _BOOLS[text]
    if _INT.match(text) and len(text) < 30:
        return int(text)
    if _SPACED_INT.match(text):
        return int(text.replace(" ", ""))
    return text


def typed_row(row: Mapping[str, object]) -> dict[str, RosValue]:
    """An API reply row (strings from the wire, or librouteros' already typed values)."""
    return {str(k): typed_value(v) for k, v in row.items()}


def parse_api_rows(rows: Iterable[Mapping[str, object]]) -> tuple[dict[str, RosValue], ...]:
    return tuple(typed_row(r) for r in rows)


@dataclass(frozen=True, slots=True)
class RouterOsTrap:
    message: str
    category: int | None = None
    tag: str | None = None


@dataclass(frozen=True, slots=True)
class ExportItem:
    """One command of an export: `menu` like `/interface bridge port`, `command` like `add`."""

    menu: str
    command: str | None
    target: str | None = None  # `[ find default-name=qsfp28-1-1 ]` or a name (`set switch1 ...`)
    args: dict[str, str] = field(default_factory=dict)
    line: int = 0


@dataclass(frozen=True, slots=True)
class LogEntry:
    time: str
    topics: tuple[str, ...]
    message: str


@dataclass(frozen=True, slots=True)
class RouterOsResult:
    """`format`: api, api-sentences, cli-table, cli-detail, cli-monitor, log, export."""

    format: str
    path: str | None = None  # the menu the paste shows (`/interface/bridge/port`), if any
    rows: tuple[dict[str, RosValue], ...] = ()
    flags: tuple[tuple[str, ...], ...] = ()  # per row, CLI flag letters (H, D, X, R...)
    traps: tuple[RouterOsTrap, ...] = ()
    done: bool = False
    fatal: str | None = None
    log: tuple[LogEntry, ...] = ()
    export: tuple[ExportItem, ...] = ()
    header: dict[str, str] = field(default_factory=dict)  # export: version, model, ...

    def items(self, menu: str) -> tuple[ExportItem, ...]:
        """Export items of one menu, `/interface/bridge/port` or `/interface bridge port`."""
        want = _norm_menu(menu)
        return tuple(i for i in self.export if _norm_menu(i.menu) == want)


def _norm_menu(menu: str) -> str:
    return "/" + "/".join(p for p in re.split(r"[/ ]+", menu) if p)


# --- API -----------------------------------------------------------------------------------


def parse_api_json(text: str) -> RouterOsResult:
    """librouteros rows dumped as JSON: `{"data": [...]}` or a bare list of objects."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise ParseError("not valid JSON", tool=TOOL, raw=text) from None
    rows = data.get("data") if isinstance(data, dict) else data
    if isinstance(rows, dict):
        rows = [rows]
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ParseError('expected a list of row objects (or {"data": [...]})', tool=TOOL, raw=text)
    return RouterOsResult("api", rows=parse_api_rows(rows), done=True)


def parse_api_sentences(text: str) -> RouterOsResult:
    """Raw API sentences (`!re`, `=k=v`, `.tag=`, `!done`, `!trap`, `!fatal`), as printed by
    API clients (`>>> ` prefixes of replies are removed, `<<< ` request lines skipped); also a
    bare `key=value` word dump of one reply (continuation lines start with a space)."""
    rows: list[dict[str, RosValue]] = []
    traps: list[RouterOsTrap] = []
    done = False
    fatal: str | None = None
    cur: dict[str, str] | None = None
    kind: str | None = None
    tag: str | None = None
    last_key: str | None = None
    bare: dict[str, str] = {}

    def close() -> None:
        nonlocal cur, kind, tag
        if cur is not None and kind == "!re":
            rows.append(typed_row(cur))
        elif cur is not None and kind == "!trap":
            cat = cur.get("category")
            traps.append(
                RouterOsTrap(
                    cur.get("message", ""), int(cat) if cat and cat.isdigit() else None, tag
                )
            )
        cur, kind, tag = None, None, None

    for raw in lines(text):
        if raw.startswith("<<<"):
            continue
        line = re.sub(r"^>>>\s?", "", raw)  # \s also eats the NBSP some clients print
        if line in ("!re", "!done", "!trap", "!fatal", "!empty"):
            close()
            if line in {"!done", "!empty"}:
                done = True
            elif line == "!fatal":
                fatal = ""
            else:
                cur, kind = {}, line
            continue
        if cur is not None and line.startswith("="):
            k, _, v = line[1:].partition("=")
            cur[k] = v
            continue
        if line.startswith(".tag="):
            tag = line[5:]
            continue
        if fatal == "" and line.strip():
            fatal = line.strip()
            continue
        if cur is None and kind is None:
            last_key = _bare_word(line, bare, last_key)
    close()
    if bare and not rows:
        rows.append(typed_row(bare))
    if not rows and not traps and not done and fatal is None:
        raise ParseError("no API sentence (!re/!done/!trap) or key=value word", tool=TOOL, raw=text)
    return RouterOsResult(
        "api-sentences", rows=tuple(rows), traps=tuple(traps), done=done, fatal=fatal
    )


def _bare_word(line: str, bare: dict[str, str], last_key: str | None) -> str | None:
    """One line of a bare `key=value` dump into `bare` (a line starting with a space continues
    the last value); returns the key the next continuation belongs to."""
    m = re.match(r"^([a-z][a-z0-9.-]*)=(.*)$", line)
    if m and not line.startswith(" "):
        bare[m.group(1)] = m.group(2)
        return m.group(1)
    if last_key and line.startswith(" "):
        bare[last_key] += "\n" + line
    return last_key


def parse_api_python_repr(text: str) -> RouterOsResult:
    """A Python client's printed rows (`[{'id': '*27C', 'dynamic': 'true', ...}]`) and any
    `failure: ...` / `Error "..."` lines after them."""
    rows: list[dict[str, RosValue]] = []
    traps: list[RouterOsTrap] = []
    for raw in lines(text):
        line = raw.strip()
        if line.startswith("[{") or line.startswith("{"):
            try:
                value = ast.literal_eval(line)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            items = value if isinstance(value, list) else [value]
            rows.extend(typed_row(i) for i in items if isinstance(i, dict))
        elif m := re.search(r"(failure: [^'\"]+|Error \"[^\"]+\")", line):
            msg = m.group(1)
            if not any(t.message == msg for t in traps):
                traps.append(RouterOsTrap(msg))
    if not rows and not traps:
        raise ParseError("no printed row dict or failure line", tool=TOOL, raw=text)
    return RouterOsResult("api", rows=tuple(rows), traps=tuple(traps))


# --- CLI -----------------------------------------------------------------------------------


def _prompt_path(line: str) -> tuple[bool, str | None]:
    """(is a prompt line, menu path shown by it) for `[admin@X] /interface/bridge/port> pr`."""
    stripped = line.strip()
    m = _MENU_PROMPT.match(stripped)
    if m:
        menu, cmd = m.group(1).replace(" ", "/"), m.group(2)
        words = cmd.split()
        if words and not re.match(r"^(pr|print|mon|monitor|get|export)", words[0]):
            menu = f"{menu}/{words[0]}"
        return True, _norm_menu(menu)
    m = _PROMPT.match(stripped)
    if not m:
        return False, None
    cmd = m.group(1)
    if cmd.startswith("/"):
        path = cmd.split()[0]
    else:
        words = []
        for w in cmd.split():
            if (
                "=" in w
                or w.startswith("[")
                or w in ("print", "pr", "detail", "monitor", "stats", "where", "once")
            ):
                break
            words.append(w)
        path = "/" + "/".join(words)
    path = re.sub(r"/(print|monitor|getall|add|set|export|get)$", "", path)
    return True, (_norm_menu(path) if path.strip("/") else None)


_TOKEN = re.compile(r"\S+")


def _merge_numbers(tokens: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Join `2 969 461` (space thousands separators) into one token."""
    out: list[tuple[int, int, str]] = []
    for s, e, t in tokens:
        if (
            out
            and re.fullmatch(r"\d{3}", t)
            and s == out[-1][1] + 1
            and re.fullmatch(r"\d{1,3}(?: \d{3})*", out[-1][2])
        ):
            ps, _, pt = out[-1]
            out[-1] = (ps, e, f"{pt} {t}")
        else:
            out.append((s, e, t))
    return out


def _assign(tokens: list[tuple[int, int, str]], cols: list[tuple[int, int]]) -> list[list[str]]:
    cells: list[list[str]] = [[] for _ in cols]
    for s, e, t in tokens:
        best, best_score = 0, None
        for i, (cs, ce) in enumerate(cols):
            overlap = min(e, ce) - max(s, cs)
            score = overlap if overlap > 0 else -min(abs(s - ce), abs(cs - e))
            if best_score is None or score > best_score:
                best, best_score = i, score
        cells[best].append(t)
    return cells


def _table(
    block: list[str], header_idx: int
) -> tuple[list[dict[str, RosValue]], list[tuple[str, ...]]]:
    header = block[header_idx]
    hcols = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(header)]
    names = [h[2] for h in hcols if h[2] != "#"]
    spans = [(h[0], h[1]) for h in hcols if h[2] != "#"]
    first_start = spans[0][0] if spans else 0
    rows: list[dict[str, RosValue]] = []
    flags: list[tuple[str, ...]] = []
    for line in block[header_idx + 1 :]:
        if not line.strip() or line.lstrip().startswith(";;;"):
            continue
        toks = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(line)]
        if not toks or not toks[0][2].isdigit():
            continue
        toks = toks[1:]
        row_flags = [t for t in toks if t[1] <= first_start and re.fullmatch(r"[A-Z]+", t[2])]
        toks = [t for t in toks if t not in row_flags]
        cells = _assign(_merge_numbers(toks), spans)
        row = {
            n.lower(): typed_value(" ".join(c)) if c else None
            for n, c in zip(names, cells, strict=True)
        }
        rows.append(row)
        flags.append(tuple("".join(t[2] for t in row_flags)))
    return rows, flags


_KEY = re.compile(r"(?:^|(?<=\s))([a-z][a-z0-9.-]*)=")


def _kv_pairs(body: str) -> dict[str, RosValue]:
    """`name="ether1" last-link-up-time=sep/25/2018 06:30:04 link-downs=0`: a value runs to
    the next ` key=` (unquoted values may hold spaces in detail prints)."""
    keys = list(_KEY.finditer(body))
    out: dict[str, RosValue] = {}
    for i, m in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(body)
        out[m.group(1)] = typed_value(_unquote(body[m.end() : end].strip()))
    return out


_ESCAPED = {"n": "\n", "r": "\r", "t": "\t", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "_": " "}


def _unquote(value: str) -> str:
    """A RouterOS string's value: `\\n`-style escapes, and `\\XX` hex escapes read as bytes
    (RouterOS text is 7-bit: `\\1B` is ESC, `\\C3\\A9` is the UTF-8 of `é`)."""
    if not (len(value) >= 2 and value[0] == value[-1] == '"'):
        return value
    body = value[1:-1]
    if "\\" not in body:
        return body
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            hexa = body[i + 1 : i + 3]
            if re.fullmatch(r"[0-9A-F]{2}", hexa):  # RouterOS: capital hex digits only
                out.append(int(hexa, 16))
                i += 3
                continue
            out += _ESCAPED.get(body[i + 1], body[i + 1]).encode()
            i += 2
            continue
        out += ch.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "replace")


def _detail(block: list[str]) -> tuple[list[dict[str, RosValue]], list[tuple[str, ...]]]:
    records: list[tuple[tuple[str, ...], str]] = []
    for line in block:
        if not line.strip() or line.startswith(("Flags:", "Columns:")):
            continue
        m = re.match(r"^\s*(\d+)\s+((?:[A-Z]+\s+)*)(.*)$", line)
        if m and "=" in m.group(3):
            records.append((tuple("".join(m.group(2).split())), m.group(3)))
        elif records:
            records[-1] = (records[-1][0], records[-1][1] + " " + line.strip())
    rows = [_kv_pairs(body) for _, body in records]
    return rows, [f for f, _ in records]


def _monitor(block: list[str]) -> list[dict[str, RosValue]]:
    entries: list[tuple[str, int, str]] = []  # key, value column offset, value text
    for line in block:
        m = re.match(r"^(\s*)([a-z][a-z0-9-]*):(\s*)(.*?)\s*$", line)
        if m:
            entries.append((m.group(2), m.end(3), line[m.end(3) :].rstrip()))
        elif entries and line.startswith(" " * 8) and line.strip():
            k, off, v = entries[-1]
            entries[-1] = (k, off, v + line.strip())
    if not entries:
        return []
    first_tokens = [
        (m.start() + entries[0][1], m.end() + entries[0][1], m.group())
        for m in _TOKEN.finditer(entries[0][2])
    ]
    if len(first_tokens) <= 1 or entries[0][0] not in ("name", "interface"):
        return [{k: typed_value(_unquote(v)) if v else None for k, _, v in entries}]
    spans = [(s, e) for s, e, _ in first_tokens]
    rows: list[dict[str, RosValue]] = [{} for _ in spans]
    for key, off, value in entries:
        toks = [(m.start() + off, m.end() + off, m.group()) for m in _TOKEN.finditer(value)]
        cells = _assign(_merge_numbers(toks), spans)
        for row, cell in zip(rows, cells, strict=True):
            row[key] = typed_value(" ".join(cell)) if cell else None
    return rows


_LOG = re.compile(
    r"^\s*((?:\d{4}-\d{2}-\d{2} |\d{2}-\d{2} |[a-z]{3}/\d{2}(?:/\d{4})? )?"
    r"\d{2}:\d{2}:\d{2})\s+([a-z0-9_-]+(?:,[a-z0-9_-]+)*)\s+(.*)$"
)


def parse_log(text: str) -> RouterOsResult:
    """`/log print`: ` 07-10 06:42:50 bridge,info message` (also `dec/28 02:56:00`, no date)."""
    entries: list[LogEntry] = []
    path = None
    for raw in lines(text):
        is_prompt, p = _prompt_path(raw)
        if is_prompt:
            path = p or path
            continue
        m = _LOG.match(raw)
        if m:
            entries.append(LogEntry(m.group(1), tuple(m.group(2).split(",")), m.group(3)))
        elif entries and raw.startswith(" " * 4) and raw.strip():
            last = entries[-1]
            entries[-1] = LogEntry(last.time, last.topics, last.message + " " + raw.strip())
    if not entries:
        raise ParseError("no `hh:mm:ss topics message` log line", tool=TOOL, raw=text)
    return RouterOsResult("log", path=path or "/log", log=tuple(entries))


def parse_cli(text: str) -> RouterOsResult:
    """A RouterOS CLI `print` (table, detail/terse `key=value`, or vertical `key: value`)."""
    path: str | None = None
    block: list[str] = []
    for raw in lines(text):
        is_prompt, p = _prompt_path(raw)
        if is_prompt:
            path = p or path
            continue
        if raw.strip() in ("...",):
            continue
        block.append(raw.rstrip())
    body = [b for b in block if b.strip()]
    if not body:
        raise ParseError("no RouterOS print output", tool=TOOL, raw=text)
    header_idx = next(
        (
            i
            for i, b in enumerate(block)
            if re.match(r"^\s*#\s+[A-Z]", b) or re.match(r"^\s*(CPU|NAME)\s+[A-Z]", b)
        ),
        None,
    )
    if header_idx is not None and not any(re.match(r"^\s*\d+\s.*=", b) for b in block):
        if block[header_idx].lstrip().startswith("#"):
            rows, flags = _table(block, header_idx)
        else:  # old `/system resource cpu print`: `CPU LOAD IRQ DISK` without `#`
            names = block[header_idx].split()
            rows = [
                {
                    n.lower(): typed_value(v.rstrip("%"))
                    for n, v in zip(names, b.split(), strict=False)
                }
                for b in block[header_idx + 1 :]
                if b.strip() and b.split()[0].isdigit()
            ]
            flags = [() for _ in rows]
        if rows:
            return RouterOsResult("cli-table", path=path, rows=tuple(rows), flags=tuple(flags))
    if any(re.match(r"^\s*\d+\s+(?:[A-Z]+\s+)*[a-z][a-z0-9-]*=", b) for b in block):
        rows, flags = _detail(block)
        if rows:
            return RouterOsResult("cli-detail", path=path, rows=tuple(rows), flags=tuple(flags))
    mon = _monitor(block)
    if mon and any(mon):
        return RouterOsResult("cli-monitor", path=path, rows=tuple(mon))
    try:
        return parse_log(text)
    except ParseError:
        pass
    raise ParseError("no RouterOS table, detail or key: value output", tool=TOOL, raw=text)


# --- export --------------------------------------------------------------------------------

_VERBS = {
    "add",
    "set",
    "remove",
    "enable",
    "disable",
    "print",
    "export",
    "move",
    "unset",
    "edit",
    "reset",
    "comment",
}
_EXPORT_HEADER = re.compile(
    r"^#\s*(?:(?P<date>\S+ \S+) by RouterOS (?P<version>\S+)|"
    r"(?P<key>software id|model|serial number)\s*=\s*(?P<val>.*))\s*$"
)


def _split_args(text: str) -> list[str]:
    return re.findall(
        r'\[[^\]]*\]|[^\s"=]+="(?:[^"\\]|\\.)*"|[^\s=]+=\S*|"(?:[^"\\]|\\.)*"|\S+', text
    )


def _joined(text: str) -> list[tuple[int, str]]:
    """(first line number, logical line): continuation lines (`\\` at the end) joined."""
    joined: list[tuple[int, str]] = []
    buf = ""
    start = 0
    for n, raw in enumerate(lines(text), start=1):
        if not buf:
            start = n
            buf = raw.rstrip()
        else:
            buf += raw.strip()
        if buf.endswith("\\"):
            buf = buf[:-1]
            continue
        joined.append((start, buf))
        buf = ""
    if buf:
        joined.append((start, buf))
    return joined


def _header_line(s: str, header: dict[str, str]) -> None:
    """A `# ... by RouterOS <version>` or `# model = ...` comment into `header`."""
    m = _EXPORT_HEADER.match(s)
    if m and m.group("version"):
        header["date"], header["version"] = m.group("date"), m.group("version")
    elif m and m.group("key"):
        header[m.group("key").replace(" ", "_")] = m.group("val").strip()


def _menu_line(s: str) -> tuple[str, list[str]]:
    """`/interface bridge port add ...`: the menu, and the command words after it."""
    words = _split_args(s)
    path: list[str] = []
    rest: list[str] = []
    for i, w in enumerate(words):
        if w in _VERBS or "=" in w or w.startswith(("[", '"')):
            rest = words[i:]
            break
        path.append(w.lstrip("/"))
    return "/" + " ".join(p for p in path if p), rest


def _item(menu: str, words: list[str], n: int) -> ExportItem:
    command = words[0] if words and words[0] in _VERBS else None
    args_words = words[1:] if command else words
    target: str | None = None
    args: dict[str, str] = {}
    for w in args_words:
        if "=" in w and not w.startswith(("[", '"')):
            k, _, v = w.partition("=")
            args[k] = _unquote(v)
        elif target is None:
            target = w
    return ExportItem(menu, command, target, args, n)


def parse_export(text: str) -> RouterOsResult:
    """`/export` (compact or `terse`) into (menu, command, target, args) items.

    Continuation lines (`\\` at the end of a line) are joined; comments, including the ones
    RouterOS inserts inside a group, are skipped without leaving the current menu."""
    header: dict[str, str] = {}
    items: list[ExportItem] = []
    menu: str | None = None
    for n, line in _joined(text):
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            _header_line(s, header)
            continue
        if s.startswith("/"):
            menu, words = _menu_line(s)
            if not words:
                continue
        elif menu is None:
            raise ParseError(f"line {n}: command before any /menu line", tool=TOOL, raw=text)
        else:
            words = _split_args(s)
        items.append(_item(menu, words, n))
    if not items and "version" not in header:
        raise ParseError("no /menu command or `by RouterOS` header", tool=TOOL, raw=text)
    return RouterOsResult("export", rows=(), export=tuple(items), header=header)


# --- dispatcher ----------------------------------------------------------------------------


def parse_routeros(text: str) -> RouterOsResult:
    """Any RouterOS text above, chosen by shape."""
    s = text.lstrip()
    if s.startswith(("{", "[{", "[ {")) and not s.startswith("[admin"):
        if s.startswith("[{") and "'" in s.split("\n", 1)[0]:
            return parse_api_python_repr(text)
        return parse_api_json(text)
    first = [line.strip() for line in lines(text) if line.strip()]
    if any(line.startswith(("# ", "#\t")) and "by RouterOS" in line for line in first[:3]) or (
        first
        and re.match(r"^/[a-z]", first[0])
        and not first[0].startswith("/log")
        and any(re.match(r"^(add|set|remove) ", line) for line in first)
    ):
        return parse_export(text)
    if any(
        line.lstrip(">< \xa0").startswith(("!re", "!done", "!trap", "!fatal")) for line in first
    ):
        return parse_api_sentences(text)
    if first and first[0].startswith("[{"):
        return parse_api_python_repr(text)
    if first and re.match(r"^[a-z][a-z0-9.-]*=", first[0]) and not first[0].startswith("/"):
        return parse_api_sentences(text)
    if any(_LOG.match(line) for line in first[:3]) or (
        len(first) > 1 and _LOG.match(first[1]) and _prompt_path(first[0])[0]
    ):
        return parse_log(text)
    return parse_cli(text)
