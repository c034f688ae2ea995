"""`--redact` leaves none of the session's sensitive values in any format of the report: host
names, IPv4/IPv6 (also inside GIDs and reverse DNS names), MACs, serial numbers, software ids,
license keys and user names, with the same placeholder everywhere."""

from __future__ import annotations

import json
from pathlib import Path

from session_helpers import fix_session

from wizard.events import ExportTaken, Note
from wizard.redact import Redactor
from wizard.report import render
from wizard.session import SessionLog, load_session

SENSITIVE = {
    "spark1",
    "spark2",
    "crs804",
    "10.9.1.1",
    "10.9.1.2",
    "fe80::4ebb:47ff:fe00:1",
    "4c:bb:47:00:00:01",
    "HGX09ABCDEF",
    "7XKQ-B1T9",
    "fabwiz-operator",
    "00:00:00:00:00:00:00:00:00:00:255:255:10:09:01:01",
    "1.1.9.10.in-addr.arpa",
    "abcDEF123secret",
}
RAW = """local address: LID 0000 QPN 0x0108 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:09:01:01
remote address: GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:09:01:02
# serial number = HGX09ABCDEF
# software id = 7XKQ-B1T9
serial-number: HGX09ABCDEF
login refused for user 'fabwiz-operator' at 10.9.1.1:8728
1.1.9.10.in-addr.arpa http://10.9.1.2:8080/ fe80::4ebb:47ff:fe00:1 4c:bb:47:00:00:01
-----BEGIN MIKROTIK SOFTWARE KEY-----
abcDEF123secret
-----END MIKROTIK SOFTWARE KEY-----
"""


def test_redactor_covers_every_kind_consistently() -> None:
    r = Redactor(nodes=["spark1", "spark2"], switches=["crs804"])
    first, second = r.redact(RAW), r.redact(RAW + "spark1 10.9.1.1")
    for value in SENSITIVE - {"spark1", "spark2", "crs804"}:
        assert value not in first, value
    assert "GID: gid-1" in first and "GID: gid-2" in first
    assert "# serial number = serial-1" in first and "serial-number: serial-1" in first
    assert "# software id = software-id-1" in first
    assert "user 'user-1'" in first and "license-1" in first
    assert second.endswith("node-1 ip-1")  # the same placeholders the second time


def test_every_redacted_artefact_is_free_of_every_original_value(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path / "s")
    for ev in fix_session():
        log.write(ev)
    log.write(
        ExportTaken(
            step="offload",
            switch="crs804",
            file="fabwiz-s-golden.rsc",
            contents=RAW,
            sha256="ab" * 32,
            purpose="golden",
        )
    )
    log.write(Note(level="warn", step="offload", text=RAW))
    log.close()
    loaded = load_session(log.folder)
    plain = render(loaded, "md")
    assert sorted(v for v in SENSITIVE if v not in plain) == []  # the report carries them all
    for fmt in ("md", "html", "json"):
        text = render(loaded, fmt, redact=True)  # type: ignore[arg-type]
        if fmt == "json":
            text = json.dumps(json.loads(text))
        found = sorted(v for v in SENSITIVE if v in text)
        assert found == [], (fmt, found)


def test_the_report_opens_like_a_ticket(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path / "s")
    for ev in fix_session():
        log.write(ev)
    log.close()
    loaded = load_session(log.folder)
    md = render(loaded, "md")
    lines = md.splitlines()
    assert lines[0].startswith("# fabwiz session report: ")
    assert lines[2].startswith("**") and "fault(s) found" in lines[2]
    faults = md.split("## Faults found", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in faults.splitlines() if "switch.offload-split-cage" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == "`switch.offload-split-cage`"
    assert cells[3].startswith("yes (export ")
    assert md.index("## Faults found") < md.index("## Summary")
    html = render(loaded, "html")
    assert '<p class="verdict bad"><strong>' in html and '<h2 id="faults">Faults found</h2>' in html
