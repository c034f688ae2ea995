"""Reports for tickets: Markdown, HTML and JSON from a session log, optionally redacted."""

from __future__ import annotations

import dataclasses
import html
import json
import re
from pathlib import Path

import pytest
from session_helpers import EXPORT_TEXT, FIX_OFFLOAD, RAIL, fix_session

from wizard.events import ExportTaken, Note, SessionStarted
from wizard.redact import Redactor
from wizard.report import build_report, render, render_html, render_json, render_markdown
from wizard.session import LoadedSession, SessionLog, load_session

SENSITIVE = ["spark1", "spark2", "crs804", "10.9.1.1", "4c:bb:47:00:01:01", "192.168.88.1"]


@pytest.fixture
def loaded(tmp_path: Path) -> LoadedSession:
    log = SessionLog.create(tmp_path / "s")
    for ev in fix_session():
        log.write(ev)
    log.close()
    return load_session(log.folder)


def test_json_report_carries_the_numbers_faults_fixes_and_exports(loaded: LoadedSession) -> None:
    data = json.loads(render_json(loaded))
    s = data["session"]
    assert s["id"] == "20261130T000000Z-abcdef12" and s["command"] == "fix"
    assert s["outcome"] == "findings remain" and s["nodes"] == ["spark1", "spark2"]
    assert data["summary"]["verdicts"] == {"warn": 1, "pass": 1, "fail": 1}
    assert [f["fault"] for f in data["summary"]["findings"]] == [
        "switch.qos-pfc-stall",
        "host.duplicate-ip",
    ]
    assert data["summary"]["fixes"]["verified"] == 1
    assert data["summary"]["fixes"]["rolled_back"] == 1
    assert data["summary"]["undrained_nodes"] == ["spark2"]
    m = {x["target"]: x for x in data["measurements"]}
    assert (m[RAIL]["before"], m[RAIL]["after"]) == (9.42, 109.2)
    assert (m["cluster"]["before"], m["cluster"]["after"]) == (1.12, 23.31)
    assert m["cluster"]["kind"] == "nccl" and m["cluster"]["unit"] == "GB/s"
    assert data["invalid_measurements"][0]["reason"] == "process.undrained-measurement"
    fix = next(f for f in data["fixes"] if f["fix_id"] == FIX_OFFLOAD)
    assert fix["status"] == "verified" and fix["export"]["contents"] == EXPORT_TEXT
    assert fix["export"]["file"] == "fabwiz-pre-offload.rsc"
    qos = next(f for f in data["fixes"] if f["fault"] == "switch.qos-pfc-stall")
    assert qos["status"] == "rolled_back" and qos["export"] is None
    steps = [st["step"] for st in data["steps"]]
    assert steps == ["preflight", "offload", "qos", "halves", "drain"][: len(steps)]
    offload = next(st for st in data["steps"] if st["step"] == "offload")
    assert [v["status"] for v in offload["verdicts"]] == ["fail", "pass"]
    assert offload["probes"][0]["command"] == "/interface/bridge/port print"
    assert offload["verdicts"][0]["evidence"][0]["observed"].startswith("qsfp56-dd-1-2 in")


def test_markdown_report_for_a_ticket(loaded: LoadedSession) -> None:
    md = render_markdown(loaded)
    assert md.startswith("# fabwiz session report: 20261130T000000Z-abcdef12\n")
    assert "| Outcome | findings remain (switch.qos-pfc-stall remains) |" in md
    assert (
        f"| {RAIL} | rail | 9.42 Gb/s | 109.20 Gb/s (in offload, before the last fix) | — |" in md
    )
    assert "| cluster | NCCL busbw | 1.12 GB/s | 23.31 GB/s | +22.19 GB/s (+1981 %) |" in md
    assert "| FAIL | `switch.qos-pfc-stall` | crs804/qsfp56-dd-1-1 |" in md
    assert "**FAIL** `switch.offload-split-cage` on crs804:" in md
    assert "| 12.50 Gb/s | process.undrained-measurement |" in md
    # The fix names its export; the export itself sits verbatim, inside a fence, in the
    # appendix after everything else.
    assert (
        "- Export taken before the change: crs804 fabwiz-pre-offload.rsc (sha256 "
        "5555555555555555): raw-3 in the appendix" in md
    )
    appendix = md.split("## Appendix: raw outputs and exports", 1)[1]
    block = re.search(
        r"### raw-3: Export taken before the change: (.*?)\n(?=### |\Z)", appendix, re.S
    )
    assert block is not None
    assert "crs804 fabwiz-pre-offload.rsc (sha256 5555555555555555)" in block.group(1)
    assert "```routeros\n" + EXPORT_TEXT.rstrip("\n") + "\n```" in block.group(1)
    assert md.index("## Appendix: raw") > md.index("### Operator") > md.index("### Steps")
    assert "- Rolled back (confirmed restored): API session lost during the change" in md
    assert "| drain | ac_drain on spark1 by operator | spark1 back with a new boot_id |" in md
    assert "- error: spark2 unreachable for 12 s" in md
    assert "sweep done" not in md  # info notes are not report material


def test_html_report_stands_alone_and_escapes_everything(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path / "s")
    events = fix_session()
    events.insert(-1, Note(level="warn", text="<script>alert('x')</script> & more"))
    for ev in events:
        log.write(ev)
    log.close()
    page = render_html(load_session(log.folder))
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</body></html>")
    assert "<style>" in page and "<link" not in page and "<script" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; more" in page
    assert '<td class="num">9.42 Gb/s</td>' in page
    assert "23.31 GB/s" in page and "switch.offload-split-cage" in page
    # The export text, escaped, in a <details> block.
    assert '<details id="raw-3"><summary>raw-3: Export taken before the change: crs804' in page
    assert '<a href="#raw-3">Export taken before the change: crs804' in page
    assert html.escape(EXPORT_TEXT, quote=True) in page
    assert "interface~&quot;qsfp56-dd&quot;" in page


def test_markdown_cells_and_fences_survive_hostile_text(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path / "s")
    for ev in fix_session():
        if isinstance(ev, ExportTaken):
            log.write(dataclasses.replace(ev, contents="a ``` fence\n| pipe |\n"))
        else:
            log.write(ev)
    log.write(Note(level="warn", text="x"))
    log.close()
    md = render_markdown(load_session(log.folder))
    assert "````routeros\na ``` fence\n| pipe |\n````" in md


def test_redaction_is_consistent_across_the_three_formats(loaded: LoadedSession) -> None:
    md = render(loaded, "md", redact=True)
    page = render(loaded, "html", redact=True)
    data = json.loads(render(loaded, "json", redact=True))
    for text in (md, page, json.dumps(data)):
        for value in SENSITIVE:
            assert value not in text, value
        assert "/home/alice" not in text
    assert data["session"]["nodes"] == ["node-1", "node-2"]
    assert data["session"]["switches"] == ["switch-1"]
    assert data["session"]["inventory"] == "fabric.yaml"
    # The duplicate address is still visibly the same address, in every format.
    dup = data["summary"]["findings"][1]
    assert dup["summary"] == "ip-1 on node-1 enp1s0f0np0 and enP2p1s0f0np0"
    assert dup["summary"] in md and dup["summary"] in page
    assert "enp1s0f0np0 ip-1/24 mac mac-1" in md and "enp1s0f0np0 ip-1/24 mac mac-1" in page
    assert "| node-1/enp1s0f0np0->node-2/enp1s0f0np0 | rail | 9.42 Gb/s |" in md
    # The export is redacted too, the same way.
    export = data["fixes"][0]["export"]["contents"]
    assert "add address=ip-2/24 interface=ether1 network=ip-3" in export
    assert "add address=ip-2/24 interface=ether1 network=ip-3" in md
    assert "add address=ip-2/24 interface=ether1 network=ip-3" in page
    # Numbers are not touched by redaction.
    assert data["measurements"][0]["after"] == 109.2


def test_report_without_an_end_says_not_finished_and_flags_a_torn_tail(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path / "s")
    for ev in fix_session()[:12]:
        log.write(ev)
    log.close()
    with log.path.open("ab") as fh:
        fh.write(b'{"seq": 13, "type": "fix_pre')
    loaded = load_session(log.folder)
    data = build_report(loaded)
    assert data["session"]["outcome"] == "not finished" and data["session"]["torn_tail"]
    assert "The log's last line was cut mid-write" in render_markdown(loaded)
    assert "cut mid-write" in render_html(loaded)


def test_redactor_placeholders() -> None:
    r = Redactor(nodes=["spark1", "spark2"], switches=["crs804"])
    text = (
        "spark1 spark10 spark2:port0 crs804/qsfp56-dd-1-1 CRS804-4DDQ "
        "fe80::4ebb:47ff:fe00:1%enp1s0f0np0 0000:01:00.0 12:34:56 7.20.3 "
        "10.9.1.1/24, 4C:BB:47:00:00:01 and 4c-bb-47-00-00-01; 10.9.1.1."
    )
    assert r.redact(text) == (
        "node-1 spark10 node-2:port0 switch-1/qsfp56-dd-1-1 CRS804-4DDQ "
        "ip6-1%enp1s0f0np0 0000:01:00.0 12:34:56 7.20.3 "
        "ip-1/24, mac-1 and mac-1; ip-1."
    )
    assert r.redact_json({"spark2": ["10.9.2.2", 3.5, None]}) == {"node-2": ["ip-2", 3.5, None]}


def test_session_started_fields_used_by_the_report_exist() -> None:
    # The report reads these names; keep them in step with wizard.events.
    fields = set(SessionStarted.__dataclass_fields__)
    assert {"nodes", "switches", "inventory_path", "inventory_digest", "scenario"} <= fields


def test_html_report_tags_are_balanced(loaded: LoadedSession) -> None:
    from html.parser import HTMLParser

    void = {"meta", "br", "hr", "img", "link", "input"}

    class Balance(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.stack: list[str] = []
            self.errors: list[str] = []

        def handle_starttag(self, tag: str, attrs: object) -> None:
            if tag not in void:
                self.stack.append(tag)

        def handle_endtag(self, tag: str) -> None:
            if not self.stack or self.stack[-1] != tag:
                self.errors.append(f"</{tag}> closes {self.stack[-1:]}")
            else:
                self.stack.pop()

    for redact in (False, True):
        b = Balance()
        b.feed(render_html(loaded, redact=redact))
        assert b.errors == [] and b.stack == []


def test_a_fault_is_shown_proven_by_what_the_fabric_did(tmp_path: Path) -> None:
    """Preflight sees the QoS settings; the QoS step sees a rail test stall. The report's proof
    is the stall (the last failing verdict, the one the fix was applied on); where it was first
    found stays preflight."""
    from session_helpers import T0

    from wizard.events import StepChanged, VerdictReached
    from wizard.model import Evidence, Status, Verdict

    ports = Evidence(
        "crs804/qsfp56-dd-1-1",
        "/interface/ethernet/switch/qos/port print",
        "trust-l3=keep pfc=pfc-tc3",
        "trust-l3=ignore pfc=disabled",
        Status.FAIL,
    )
    stall = Evidence(
        "spark1/enp1s0f0np0->spark2/enp1s0f0np0",
        "counters read while the test's data moved",
        "sender local_ack_timeout_err +7; receiver rx_packets_phy +0",
        "receiver counts what the sender sends",
        Status.FAIL,
    )

    def verdict(*evidence: Evidence) -> Verdict:
        return Verdict("switch.qos-pfc-stall", Status.FAIL, "lossless QoS", ("crs804",), evidence)

    log = SessionLog.create(tmp_path / "s")
    log.write(
        SessionStarted(at=T0, session_id="s1", fabwiz_version="0.1.0", log_version=1, command="fix")
    )
    log.write(StepChanged(step="preflight", phase="verdict"))
    log.write(VerdictReached(step="preflight", verdict=verdict(ports)))
    log.write(StepChanged(step="qos", phase="verdict"))
    log.write(VerdictReached(step="qos", verdict=verdict(stall, ports)))
    log.close()
    data = json.loads(render_json(load_session(log.folder)))
    (fault,) = data["faults"]
    assert fault["step"] == "preflight"
    assert fault["proof"].startswith("spark1/enp1s0f0np0->spark2/enp1s0f0np0: counters read")
    assert "local_ack_timeout_err +7" in fault["proof"]
