"""The HTML report in a real headless browser (Chromium's `--dump-dom`), where one is installed.

The browser is shut off from every network: name resolution fails for every host and every
request goes to a closed proxy port on 127.0.0.1, so nothing leaves the machine whatever the
page asked for; the browser's net log then shows every URL the page requested, and there must be
none but the report's own file. A copy of the page with a measuring script added (the report
itself has no script) tells where the verdict line and the faults table landed at 1280x800.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from report_session import write_session

from screens.commands.session import report_ceilings
from wizard.report import render
from wizard.session import load_session

pytestmark = pytest.mark.slow

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome", "chrome-headless-shell")
ISOLATED = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-breakpad",
    "--no-pings",
    "--disable-features=Translate,OptimizationHints,MediaRouter,SpellCheck,"
    "AutofillServerCommunication,CertificateTransparencyComponentUpdater",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=127.0.0.1:9",
    "--window-size=1280,800",
)
PROBE = """<script>
const r = (q) => { const e = document.querySelector(q); return e ? e.getBoundingClientRect() : null; };
const v = r('.verdict'), f = r('#faults'), t = r('#faults + table');
document.body.setAttribute('data-probe', JSON.stringify({
  height: window.innerHeight, verdict_bottom: v && v.bottom, faults_top: f && f.top,
  table_top: t && t.top, svgs: document.querySelectorAll('svg').length,
  open_details: [...document.querySelectorAll('details')].filter((d) => d.open).length,
  details: document.querySelectorAll('details').length}));
</script>"""


def _browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(
        "no Chromium-family browser installed (chromium, google-chrome, chrome-headless-shell): "
        "Firefox has no --dump-dom"
    )


def _dump(browser: str, page: Path, tmp_path: Path) -> tuple[str, set[str]]:
    netlog = tmp_path / f"{page.stem}-netlog.json"
    proc = subprocess.run(
        [
            browser,
            *ISOLATED,
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--log-net-log={netlog}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, page_requests(netlog)


def page_requests(netlog: Path) -> set[str]:
    """Every URL a page asked the network stack for. The browser's own housekeeping requests
    (component updates, time, accounts: refused at the closed proxy) have no origin and are not
    the page's; a file:// page's requests carry its (opaque) origin."""
    log = json.loads(netlog.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    out = set()
    for e in log["events"]:
        params = e.get("params") or {}
        if e["type"] == start and "url" in params and params.get("initiator") != "not an origin":
            out.add(params["url"])
    return out


def test_the_html_report_renders_in_a_browser_with_no_external_request(tmp_path: Path) -> None:
    browser = _browser()
    loaded = load_session(write_session(tmp_path / "s"))
    html = render(loaded, "html", ceilings=report_ceilings(2))
    page = tmp_path / "report.html"
    page.write_text(html)
    dom, urls = _dump(browser, page, tmp_path)
    # the page asked the network for nothing
    assert urls == set(), urls
    # the browser parsed and laid out the content
    assert "<h1>fabwiz session report: 20261130T000000Z-abcdef12</h1>" in dom
    assert "Not healthy; 3 fault(s) found, 1 fixed" in dom
    assert "switch.offload-split-cage" in dom and "Raw outputs and exports" in dom
    assert dom.count("<svg") == 2 and "<polyline" in dom
    # measured by a copy with a script: the summary is on the first screen, raw output closed
    probe = tmp_path / "probe.html"
    probe.write_text(html.replace("</body>", PROBE + "</body>"))
    dom, _ = _dump(browser, probe, tmp_path)
    found = re.search(r'data-probe="([^"]+)"', dom)
    assert found is not None, dom[-500:]
    box = json.loads(found.group(1).replace("&quot;", '"'))
    assert box["verdict_bottom"] < box["height"]
    assert box["faults_top"] < box["height"] and box["table_top"] < box["height"], box
    assert box["svgs"] == 2
    assert box["details"] >= 3 and box["open_details"] == 0


def test_the_request_check_sees_a_page_that_asks_for_something(tmp_path: Path) -> None:
    """The check above is not blind: an image and a stylesheet from elsewhere are seen (and
    refused at the closed proxy: nothing leaves the machine)."""
    browser = _browser()
    page = tmp_path / "bad.html"
    page.write_text(
        '<!DOCTYPE html><html><head><link rel="stylesheet" href="http://styles.invalid/a.css">'
        '</head><body><img src="http://images.invalid/x.png"></body></html>'
    )
    _dom, urls = _dump(browser, page, tmp_path)
    assert urls == {"http://styles.invalid/a.css", "http://images.invalid/x.png"}, urls
