"""`fabwiz report ID --bundle ticket.tar.gz`: the report in every format, the raw outputs and the
exports, a manifest that lists each with its sha256, safe member names, written 0600; with
`--redact` no original value from the session is left in any member."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import stat
import tarfile
from pathlib import Path

from click.testing import CliRunner
from session_helpers import fix_session
from test_session_redact_all import RAW, SENSITIVE

from screens.cli import cli
from wizard.events import ExportTaken, ProbeAnswered
from wizard.session import SessionLog


def _session(tmp_path: Path, *, hostile: bool = False) -> Path:
    log = SessionLog.create(tmp_path / "s")
    for original in fix_session():
        ev = original
        if hostile and isinstance(ev, ProbeAnswered):
            # a probe named like a path, an export named like one
            ev = dataclasses.replace(
                ev,
                probe="../../etc/passwd",
                result=dataclasses.replace(ev.result, stdout=ev.result.stdout + "\n" + RAW),
            )
        if hostile and isinstance(ev, ExportTaken):
            ev = dataclasses.replace(ev, file="../../evil.rsc", switch="/abs/crs804")
        log.write(ev)
    log.write(
        ExportTaken(
            step="persist",
            switch="crs804",
            file="fabwiz-golden.rsc",
            contents=RAW,
            sha256="ab" * 32,
            purpose="golden",
        )
    )
    log.close()
    return log.folder


def _members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        out = {}
        for m in tar.getmembers():
            assert m.isfile() and m.mode == 0o600, m.name
            f = tar.extractfile(m)
            assert f is not None
            out[m.name] = f.read()
        return out


def test_the_bundle_holds_the_report_raw_outputs_exports_and_a_manifest(tmp_path: Path) -> None:
    folder = _session(tmp_path)
    out = tmp_path / "ticket.tar.gz"
    res = CliRunner().invoke(cli, ["report", str(folder), "--bundle", str(out)])
    assert res.exit_code == 0, res.output
    assert "evidence bundle written to" in res.output
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    members = _members(out)
    root = "fabwiz-20261130t000000z-abcdef12"
    assert all(name.startswith(root + "/") for name in members)
    manifest = json.loads(members[f"{root}/manifest.json"])
    assert manifest["session"] == "20261130T000000Z-abcdef12" and manifest["redacted"] is False
    listed = {m["name"]: m for m in manifest["members"]}
    # every member but the manifest is listed, with its real size and digest
    assert set(listed) == {n.removeprefix(root + "/") for n in members} - {"manifest.json"}
    for name, m in listed.items():
        payload = members[f"{root}/{name}"]
        assert m["bytes"] == len(payload)
        assert m["sha256"] == hashlib.sha256(payload).hexdigest()
    assert {"report.md", "report.html", "report.json"} <= set(listed)
    assert members[f"{root}/report.md"].startswith(b"# fabwiz session report: ")
    raws = sorted(n for n in listed if n.startswith("raw/"))
    assert raws == ["raw/0001-preflight-ip-addr.txt", "raw/0002-offload-bridge-port.txt"]
    first = members[f"{root}/{raws[0]}"].decode()
    assert "# command: ip -j addr show" in first and "# target: spark1" in first
    exports = sorted(n for n in listed if n.startswith("exports/"))
    assert exports == ["exports/001-offload-pre-fix.rsc", "exports/002-persist-golden.rsc"]
    assert listed[exports[0]]["switch"] == "crs804"
    assert listed[exports[0]]["file"] == "fabwiz-pre-offload.rsc"
    assert b"add bridge=mgmt interface=qsfp56-dd-1-2" in members[f"{root}/{exports[0]}"]


def test_member_names_never_come_from_a_target(tmp_path: Path) -> None:
    folder = _session(tmp_path, hostile=True)
    out = tmp_path / "ticket.tar.gz"
    res = CliRunner().invoke(cli, ["report", str(folder), "--bundle", str(out)])
    assert res.exit_code == 0, res.output
    names = list(_members(out))
    for name in names:
        parts = name.split("/")
        assert ".." not in parts and not name.startswith("/"), name
        assert all(p and all(c.isalnum() or c in "-._" for c in p) for p in parts), name
    assert any(n.endswith("/raw/0001-preflight-etc-passwd.txt") for n in names), names
    # the hostile names are kept as data in the manifest, not as paths
    manifest = json.loads(next(v for k, v in _members(out).items() if k.endswith("manifest.json")))
    files = {m.get("file") for m in manifest["members"]}
    assert "../../evil.rsc" in files


def test_a_redacted_bundle_has_no_original_value_in_any_member(tmp_path: Path) -> None:
    folder = _session(tmp_path, hostile=True)
    plain, red = tmp_path / "plain.tar.gz", tmp_path / "red.tar.gz"
    for path, extra in ((plain, []), (red, ["--redact"])):
        res = CliRunner().invoke(cli, ["report", str(folder), "--bundle", str(path), *extra])
        assert res.exit_code == 0, res.output
    everything = b"".join(_members(plain).values()).decode()
    assert sorted(v for v in SENSITIVE if v not in everything) == []  # all there unredacted
    members = _members(red)
    for name, payload in members.items():
        text = payload.decode()
        found = sorted(v for v in SENSITIVE if v in text)
        assert found == [], (name, found)
    # one redactor for every file: spark1 is the same placeholder in the report and raw output
    root = next(iter(members)).split("/")[0]
    raw = members[f"{root}/raw/0001-preflight-etc-passwd.txt"].decode()
    report = members[f"{root}/report.md"].decode()
    assert "# target: node-1" in raw and "node-1" in report
    manifest = json.loads(members[f"{root}/manifest.json"])
    assert manifest["redacted"] is True
