"""Is the golden export still on the switch? `/file print` read back after the export.

The golden export is the known-good switch configuration the next ticket compares against. It
counts only when the switch lists the file with the size of what was read back (a file that a
full disk truncated, or that a reboot of a RAM-disk model lost, is not a golden export). Pure:
the engine lists `/file` and hands the rows here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from wizard.fixes import ExportStatus, RouterOsApi, _read_file, take_export
from wizard.model import Evidence, Status, Verdict

FAULT = "persist.golden-export"
COMMAND = "/file print"


def judge(
    switch: str, file: str, size: int, rows: Iterable[Mapping[str, str]] | None, error: str = ""
) -> Verdict:
    """One verdict: the file is listed with `size` bytes (pass), missing or another size (fail),
    or the listing could not be read (unknown)."""
    expected = f"{file} size={size}"
    if rows is None:
        ev = Evidence(switch, COMMAND, f"not readable: {error}", expected, Status.UNKNOWN)
        return Verdict(
            fault=FAULT,
            status=Status.UNKNOWN,
            summary=f"the golden export on {switch} could not be listed: {error}",
            targets=(switch,),
            evidence=(ev,),
            check=FAULT,
        )
    listed = [r for r in rows if r.get("name") == file]
    if not listed:
        observed = f"{file} not listed"
    else:
        got = str(listed[0].get("size") or "0").strip()
        observed = f"{file} size={got}"
        if got.isdigit() and int(got) == size:
            ev = Evidence(switch, COMMAND, observed, expected, Status.PASS)
            return Verdict(
                fault=FAULT,
                status=Status.PASS,
                summary=f"the golden export {file} is on {switch} ({size} bytes)",
                targets=(switch,),
                evidence=(ev,),
                check=FAULT,
            )
    ev = Evidence(switch, COMMAND, observed, expected, Status.FAIL)
    return Verdict(
        fault=FAULT,
        status=Status.FAIL,
        summary=(
            f"the golden export is not on {switch} as taken ({observed}, expected {size} bytes): "
            f"take it again with /export file={file.removesuffix('.rsc')} and check /file print"
        ),
        targets=(switch,),
        evidence=(ev,),
        check=FAULT,
    )


STALE_COMMAND = "/file print (golden) vs /export"


def _menus(text: str) -> dict[str, list[str]] | None:
    """An export as menu -> its items in a canonical form (sorted; the date header, comments,
    wrapping and fabwiz's own scheduler entries left out), or None when it does not parse."""
    from wizard.errors import ParseError
    from wizard.parsers.routeros import parse_export

    try:
        items = parse_export(text).export
    except ParseError:
        return None
    out: dict[str, list[str]] = {}
    for it in items:
        args = dict(it.args)
        if it.menu == "/system scheduler" and args.get("name", "").startswith("fabwiz-"):
            continue  # the session's lock and dead-man entries are not the configuration
        words = [it.command or "", it.target or ""]
        words += [f"{k}={v}" for k, v in sorted(args.items())]
        out.setdefault(it.menu, []).append(" ".join(w for w in words if w))
    return {menu: sorted(lines) for menu, lines in out.items()}


def differing_sections(stored: str, running: str) -> list[tuple[str, list[str], list[str]]] | None:
    """The menus whose items differ between the stored export and the running one, each with
    the items only the stored one has and the items only the running one has; None when either
    text does not parse as an export."""
    a, b = _menus(stored), _menus(running)
    if a is None or b is None:
        return None
    out: list[tuple[str, list[str], list[str]]] = []
    for menu in sorted(set(a) | set(b)):
        old, new = list(a.get(menu, [])), list(b.get(menu, []))
        only_old = [x for x in old if x not in new]
        only_new = [x for x in new if x not in old]
        if only_old or only_new or len(old) != len(new):
            out.append((menu, only_old, only_new))
    return out


def _short(items: Sequence[str], limit: int = 3) -> str:
    shown = "; ".join(items[:limit]) or "nothing"
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


def judge_current(
    switch: str, file: str, stored: str | None, running: str | None, error: str = ""
) -> Verdict:
    """Whether the golden export on the switch still describes its running configuration: the
    stored file (read back from the switch) against a fresh `/export`, item by item per menu.
    A difference fails with the differing menus; a side that could not be read is unknown."""
    if stored is None or running is None:
        what = "the stored golden export" if stored is None else "the running configuration"
        ev = Evidence(switch, STALE_COMMAND, f"{what} not readable: {error}", file, Status.UNKNOWN)
        return Verdict(
            fault=FAULT,
            status=Status.UNKNOWN,
            summary=f"the golden export {file} on {switch} could not be compared: {what} "
            f"not readable ({error})",
            targets=(switch,),
            evidence=(ev,),
            check=FAULT,
        )
    diff = differing_sections(stored, running)
    if diff is None:
        ev = Evidence(switch, STALE_COMMAND, "not an export (does not parse)", file, Status.UNKNOWN)
        return Verdict(
            fault=FAULT,
            status=Status.UNKNOWN,
            summary=f"the golden export {file} on {switch} could not be compared: it does not "
            "parse as a RouterOS export",
            targets=(switch,),
            evidence=(ev,),
            check=FAULT,
        )
    if not diff:
        ev = Evidence(
            switch, STALE_COMMAND, "every menu equal", f"{file} = running config", Status.PASS
        )
        return Verdict(
            fault=FAULT,
            status=Status.PASS,
            summary=f"the golden export {file} on {switch} equals its running configuration",
            targets=(switch,),
            evidence=(ev,),
            check=FAULT,
        )
    evidence = tuple(
        Evidence(
            switch,
            f"{STALE_COMMAND}: {menu}",
            f"running: {_short(new)}",
            f"{file}: {_short(old)}",
            Status.FAIL,
        )
        for menu, old, new in diff
    )
    menus = ", ".join(menu for menu, _, _ in diff)
    return Verdict(
        fault=FAULT,
        status=Status.FAIL,
        summary=(
            f"the golden export is stale: {menus} "
            f"{'differs' if len(diff) == 1 else 'differ'} between {file} and the running "
            f"configuration of {switch}; find what changed the switch, then take it again "
            f"with /export file={file.removesuffix('.rsc')}"
        ),
        targets=(switch,),
        evidence=evidence,
        check=FAULT,
    )


async def read_stored(api: RouterOsApi, file: str) -> str:
    """The golden export as stored on the switch, read the way the engine reads every export:
    `/file print` (its `contents`), or `/file read` in chunks when the listing leaves it out.
    Raises LookupError when the file is not listed."""
    rows = [r for r in await api.call("/file", "print") if r.get("name") == file]
    if not rows:
        raise LookupError(f"{file} is not listed by /file print")
    contents = rows[0].get("contents") or ""
    size = int(str(rows[0].get("size") or "0").strip() or 0)
    if size > 0 and not contents:
        contents = await _read_file(api, file, size)
    return contents


async def check_current(
    api: RouterOsApi, switch: str, file: str, name: str
) -> tuple[Verdict, ExportStatus | None]:
    """Compare the stored golden export `file` with the running configuration, exported now as
    `name`. Returns the verdict and the fresh export (None when it could not be taken)."""
    try:
        stored: str | None = await read_stored(api, file)
        error = ""
    except Exception as exc:  # transport errors arrive as many types: data here
        stored, error = None, str(exc)
    if stored is None:
        return judge_current(switch, file, None, "", error), None
    now = await take_export(api, switch, name)
    if not now.verified:
        return judge_current(switch, file, stored, None, now.error or "export failed"), None
    return judge_current(switch, file, stored, now.contents), now


def merge(verdicts: Sequence[Verdict]) -> list[Verdict]:
    """The golden-export verdicts of every switch (listing and comparison) as one verdict of
    the fault: the worst status, every switch's evidence, the findings' summaries (or, when all
    pass, every summary)."""
    if not verdicts:
        return []
    status = Status.worst([v.status for v in verdicts])
    said = [v.summary for v in verdicts if v.status == status] if status != Status.PASS else []
    summaries = said or [v.summary for v in verdicts]
    targets = tuple(dict.fromkeys(t for v in verdicts for t in v.targets))
    return [
        Verdict(
            fault=FAULT,
            status=status,
            summary="; ".join(dict.fromkeys(summaries)),
            targets=targets,
            evidence=tuple(e for v in verdicts for e in v.evidence),
            check=FAULT,
        )
    ]
