"""The evidence bundle for a ticket: `fabwiz report ID --bundle ticket.tar.gz`.

One gzip'd tar with the report (Markdown, HTML, JSON), every raw probe output of the session
(host commands' stdout and stderr, RouterOS API rows), every switch export, and a
`manifest.json` listing each member with what it is, its size and sha256. With `redact`, one
`Redactor` covers every file, so a host has the same placeholder in the report and in the raw
outputs. Member names are built here from counters and the step ids of this build, never from a
value a target sent (a switch name or a probe target can carry `/` or `..`): no member can land
outside the folder it is extracted into. The archive is written private (0600).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard import safetext
from wizard.events import ExportTaken, ProbeAnswered
from wizard.report import build_report, html_from_data, markdown_from_data, redactor_for
from wizard.session import LoadedSession

_SLUG = re.compile(r"[^a-z0-9]+")
MANIFEST_VERSION = 1


def slug(text: str, limit: int = 32) -> str:
    """A member-name part made of [a-z0-9-] only (never empty, never a path)."""
    s = _SLUG.sub("-", text.lower()).strip("-")[:limit].strip("-")
    return s or "x"


@dataclass
class _Bundle:
    root: str
    mtime: float
    members: list[tuple[str, bytes]] = field(default_factory=list)
    manifest: list[dict[str, Any]] = field(default_factory=list)

    def add(self, name: str, data: bytes, **what: Any) -> None:
        self.members.append((f"{self.root}/{name}", data))
        self.manifest.append(
            {
                "name": name,
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
                **what,
            }
        )


def _probe_text(ev: ProbeAnswered) -> str:
    r = ev.result
    head = [
        f"# target: {r.target}",
        f"# command: {r.command}",
        f"# exit: {r.exit_status}" + (f"  error: {r.error}" if r.error else ""),
        f"# took: {r.duration_s:.3f} s",
    ]
    body = []
    if r.kind == "api":
        body = [json.dumps(row, ensure_ascii=False, sort_keys=True) for row in r.rows]
    else:
        body = [r.stdout.rstrip("\n")]
        if r.stderr:
            body += ["# stderr:", r.stderr.rstrip("\n")]
    return safetext.clean("\n".join(head + body)) + "\n"


def build_bundle(
    loaded: LoadedSession,
    *,
    redact: bool = False,
    ceilings: Mapping[str, float] | None = None,
    fabric_map: Mapping[str, Any] | None = None,
) -> bytes:
    """The bundle as bytes (a .tar.gz)."""
    redactor = redactor_for(loaded) if redact else None

    def r(text: str) -> str:
        return redactor.redact(text) if redactor is not None else text

    data = build_report(
        loaded, redact=redact, ceilings=ceilings, redactor=redactor, fabric_map=fabric_map
    )
    sid = slug(loaded.started.session_id, 48)
    b = _Bundle(root=f"fabwiz-{sid}", mtime=loaded.started.at)
    b.add("report.md", markdown_from_data(data).encode(), kind="report", format="md")
    b.add("report.html", html_from_data(data).encode(), kind="report", format="html")
    b.add(
        "report.json",
        (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode(),
        kind="report",
        format="json",
    )
    n_raw = n_exp = 0
    for ev in loaded.events:
        if isinstance(ev, ProbeAnswered):
            n_raw += 1
            name = f"raw/{n_raw:04d}-{slug(ev.step)}-{slug(ev.probe)}.txt"
            b.add(
                name,
                r(_probe_text(ev)).encode(),
                kind="raw output",
                step=ev.step,
                probe=r(ev.probe),
                target=r(ev.result.target),
                command=r(ev.result.command),
            )
        elif isinstance(ev, ExportTaken):
            n_exp += 1
            name = f"exports/{n_exp:03d}-{slug(ev.step)}-{slug(ev.purpose)}.rsc"
            b.add(
                name,
                r(safetext.clean(ev.contents)).encode(),
                kind="switch export",
                step=ev.step,
                purpose=ev.purpose,
                switch=r(ev.switch),
                file=r(ev.file),
                sha256_as_taken=ev.sha256,
            )
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "session": data["session"]["id"],
        "fabwiz_version": data["session"]["fabwiz_version"],
        "redacted": redact,
        "verdict_line": data["verdict_line"],
        "members": b.manifest,
    }
    b.members.insert(
        0,
        (
            f"{b.root}/manifest.json",
            (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode(),
        ),
    )
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name, payload in b.members:
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            info.mode = 0o600
            info.mtime = int(b.mtime)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(payload))
    return buf.getvalue()


def write_bundle(path: Path, payload: bytes) -> None:
    """Write the archive private from its first byte (0600, also over an existing file)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(payload)


__all__ = ["build_bundle", "slug", "write_bundle"]
