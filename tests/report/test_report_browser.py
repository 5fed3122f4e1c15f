"""report.html opened in a real headless Chromium (Debian's ``chromium``): no console errors, no network,
every chart drawn, user strings inert, and a screenshot saved under ``test-artifacts/``.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: messages are
JSON ended by a NUL byte, on the child's file descriptors 3 and 4), so no driver package is needed.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpuplan.report import rebuild
from gpuplan.simulate import SimulateRequest, simulate

from builders import ROOT

ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TIMEOUT_S = 60.0

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)"
)


class Browser:
    """A headless Chromium with one page, spoken to over the DevTools pipe."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()

        def wire_pipes() -> None:  # in the child: the protocol's fds are 3 (commands in) and 4 (replies out)
            os.dup2(to_browser_read, 3)
            os.dup2(from_browser_write, 4)

        self.process = subprocess.Popen(
            [
                binary,
                "--headless",
                "--remote-debugging-pipe",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                f"--user-data-dir={profile}",
                "--window-size=1400,1000",
                "about:blank",
            ],
            pass_fds=(3, 4),
            preexec_fn=wire_pipes,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    def send(self, method: str, params: dict[str, Any] | None = None, *, page: bool = True) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if page and self.session is not None:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def wait_for(self, method: str) -> dict[str, Any]:
        seen = next((e for e in self.events if e.get("method") == method), None)
        while seen is None:
            event = self._receive()
            self.events.append(event)
            seen = event if event.get("method") == method else None
        return seen

    def _receive(self) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT_S
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([self._from_browser], [], [], max(remaining, 0))
            if not ready:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def open_page(self) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, page=False)
        attached = self.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, page=False
        )
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")

    def evaluate(self, expression: str) -> Any:
        reply = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
        if "exceptionDetails" in reply:
            raise RuntimeError(reply["exceptionDetails"])
        return reply["result"].get("value")

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.send("Browser.close", page=False)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions, error log entries, dialogs and requests off this machine."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Runtime.exceptionThrown":
                found.append(f"exception: {params['exceptionDetails'].get('text')}")
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                found.append(f"log: {params['entry'].get('text')}")
            elif method == "Page.javascriptDialogOpening":
                found.append(f"dialog: {params.get('message')}")
            elif method == "Network.requestWillBeSent":
                url = params["request"]["url"]
                if not url.startswith(("file:", "data:", "about:")):
                    found.append(f"network request: {url}")
        return found


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    assert CHROMIUM is not None
    started = Browser(CHROMIUM, tmp_path / "profile")
    try:
        started.open_page()
        yield started
    finally:
        started.close()


CHART_CHECK = """
(async () => {
  const charts = [...document.querySelectorAll('[data-chart]')];
  return charts.map(chart => ({
    id: chart.id,
    svg: chart.querySelectorAll('svg.main-svg').length,
    drawn: chart.querySelectorAll('.plot path, .plot rect, .barlayer path, .scatterlayer path').length,
    traces: (chart._fullData || []).length,
    height: chart.getBoundingClientRect().height,
  }));
})()
"""


def open_report(browser: Browser, report: Path) -> list[dict[str, Any]]:
    browser.send("Page.navigate", {"url": report.resolve().as_uri()})
    browser.wait_for("Page.loadEventFired")
    charts: list[dict[str, Any]] = browser.evaluate(CHART_CHECK)
    return charts


def screenshot(browser: Browser, path: Path) -> None:
    height = min(int(browser.evaluate("document.documentElement.scrollHeight")), 16000)
    browser.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1400, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )
    shot = browser.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))


def test_report_renders_every_chart_without_errors(browser: Browser, tmp_path: Path) -> None:
    results = tmp_path / "mixed"
    simulate(SimulateRequest(input=ROOT / "examples" / "mixed-org.yaml", out=results))
    rebuild(results)
    charts = open_report(browser, results / "report.html")
    expected = (results / "report.html").read_text().count("data-chart=")
    assert len(charts) == expected >= 8
    for chart in charts:
        assert chart["svg"] >= 1 and chart["drawn"] > 0 and chart["traces"] > 0, chart
        assert chart["height"] > 100, chart
    assert browser.problems() == []
    shot = ARTIFACTS / "report-mixed-org.png"
    screenshot(browser, shot)
    assert shot.stat().st_size > 50_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_script_in_names_stays_inert(browser: Browser, tmp_path: Path) -> None:
    results = tmp_path / "script"
    simulate(SimulateRequest(input=ROOT / "tests" / "data" / "report_script_names.yaml", out=results))
    rebuild(results)
    charts = open_report(browser, results / "report.html")
    assert charts and all(chart["traces"] > 0 for chart in charts)
    assert browser.problems() == []  # no alert() dialog, no error from an injected element
    assert browser.evaluate("document.title") == 'gpuplan report: <script>alert("name")</script>'
    assert browser.evaluate("document.querySelectorAll('img, iframe').length") == 0
    body = browser.evaluate("document.body.innerText")
    assert '<script>alert("name")</script>' in body and "<img src=x onerror=alert(1)>" in body
    chart_text = browser.evaluate(
        "[...document.querySelectorAll('svg text')].map(e => e.textContent).join('|')"
    )
    assert "Replicas vs demand: <img src=x onerror=alert(1)>" in chart_text  # Plotly shows it as text
    screenshot(browser, ARTIFACTS / "report-script-names.png")


HEADLINE_STYLE = """
(() => {
  const style = getComputedStyle(document.querySelector('p.headline'));
  return [style.backgroundColor, style.borderLeftStyle, style.color];
})()
"""


def test_a_headline_that_is_no_recommendation_looks_like_a_warning(browser: Browser, tmp_path: Path) -> None:
    """The headline's look follows the decision: plain for a recommendation, a warning (tinted box,
    left rule) when no model meets every target."""
    from gpuplan.inputs import load_input
    from gpuplan.report import build_report
    from gpuplan.report.results import read_recommendation

    scenario = ROOT / "examples" / "mixed-org.yaml"
    results = tmp_path / "mixed"
    simulate(SimulateRequest(input=scenario, out=results))
    rebuild(results)
    saved = read_recommendation(results / "recommendation.json")
    assert saved is not None
    looks, problems = {}, []
    for decision in ("clear", "no_model_meets_targets"):
        changed = saved.model_copy(update={"decision": decision})
        out = tmp_path / decision
        build_report(results, out=out, loaded=load_input(scenario), recommendation=changed)
        problems += browser.problems()
        browser.events.clear()  # wait for this page's load event, not the previous one's
        open_report(browser, out / "report.html")
        looks[decision] = browser.evaluate(HEADLINE_STYLE)
    plain, warning = looks["clear"], looks["no_model_meets_targets"]
    assert plain[0] == "rgba(0, 0, 0, 0)" and plain[1] == "none"
    assert warning[0] != "rgba(0, 0, 0, 0)" and warning[1] == "solid" and warning[2] != plain[2]
    assert problems + browser.problems() == []
    screenshot(browser, ARTIFACTS / "report-no-model-meets-targets.png")
