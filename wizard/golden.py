"""Is the golden export still on the switch? `/file print` read back after the export.

The golden export is the known-good switch configuration the next ticket compares against. It
counts only when the switch lists the file with the size of what was read back (a file that a
full disk truncated, or that a reboot of a RAM-disk model lost, is not a golden export). Pure:
the engine lists `/file` and hands the rows here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

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
