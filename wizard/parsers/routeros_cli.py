"""RouterOS CLI output: `print` tables, detail/terse `key=value`, vertical `key: value`
(monitor, resource) and `/log print`, with or without the shell prompt line."""

from __future__ import annotations

import re

from wizard.errors import ParseError
from wizard.parsers.common import lines
from wizard.parsers.routeros_values import (
    TOOL,
    LogEntry,
    RosValue,
    RouterOsResult,
    norm_menu,
    typed_value,
    unquote,
)

__all__ = ["LOG_LINE", "parse_cli", "parse_log", "prompt_path"]

_MENU_PROMPT = re.compile(r"^\[[^\]@]+@[^\]]+\]\s*(/[^>]*?)\s*>\s*(.*)$")
_PROMPT = re.compile(r"^\[[^\]@]+@[^\]]+\]\s*>?\s*(.*)$")


def prompt_path(line: str) -> tuple[bool, str | None]:
    """(is a prompt line, menu path shown by it) for `[admin@X] /interface/bridge/port> pr`."""
    stripped = line.strip()
    m = _MENU_PROMPT.match(stripped)
    if m:
        menu, cmd = m.group(1).replace(" ", "/"), m.group(2)
        words = cmd.split()
        if words and not re.match(r"^(pr|print|mon|monitor|get|export)", words[0]):
            menu = f"{menu}/{words[0]}"
        return True, norm_menu(menu)
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
    return True, (norm_menu(path) if path.strip("/") else None)


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
        out[m.group(1)] = typed_value(unquote(body[m.end() : end].strip()))
    return out


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
        return [{k: typed_value(unquote(v)) if v else None for k, _, v in entries}]
    spans = [(s, e) for s, e, _ in first_tokens]
    rows: list[dict[str, RosValue]] = [{} for _ in spans]
    for key, off, value in entries:
        toks = [(m.start() + off, m.end() + off, m.group()) for m in _TOKEN.finditer(value)]
        cells = _assign(_merge_numbers(toks), spans)
        for row, cell in zip(rows, cells, strict=True):
            row[key] = typed_value(" ".join(cell)) if cell else None
    return rows


LOG_LINE = re.compile(
    r"^\s*((?:\d{4}-\d{2}-\d{2} |\d{2}-\d{2} |[a-z]{3}/\d{2}(?:/\d{4})? )?"
    r"\d{2}:\d{2}:\d{2})\s+([a-z0-9_-]+(?:,[a-z0-9_-]+)*)\s+(.*)$"
)


def parse_log(text: str) -> RouterOsResult:
    """`/log print`: ` 07-10 06:42:50 bridge,info message` (also `dec/28 02:56:00`, no date)."""
    entries: list[LogEntry] = []
    path = None
    for raw in lines(text):
        is_prompt, p = prompt_path(raw)
        if is_prompt:
            path = p or path
            continue
        m = LOG_LINE.match(raw)
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
        is_prompt, p = prompt_path(raw)
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
