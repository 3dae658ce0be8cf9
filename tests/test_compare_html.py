"""`mock-server compare --html PATH` (docs/recording.md, "The HTML report").

The recording is made as tests/test_compare.py makes its own (its production stand-in
`Session`, `record` and `standard_session`): production's orders take 30 s, not 3 s
(`SLOW_HAPPY_PATH`), so one outcome class is unexplained and one (the login top-up,
released with its code) is explained; and production's answers carry markup where a
recording may hold any string: a balance field named `<img ...>`, an order answer
echoing a `merchant_order_id` that is a `<script>`. The page is checked as text
(self-contained, what it lists, the escaping) and in a real browser, headless Chromium
driven as tests/test_dashboard.py drives it (Debian's package through `executable_path`;
skipped without it, failed in CI: tests/services.py): the SVG timelines drawn, no
request made and nothing run, and a screenshot (docs/screenshots/compare-report.png
with UPDATE_SCREENSHOTS=1: tests/dashboard_helpers.SCREENSHOTS).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Route, expect, sync_playwright

from mock_server.recording.analysis import compare
from mock_server.recording.analysis.html_report import first_difference_at
from tests import services
from tests.dashboard_helpers import (
    LAUNCH_ARGS,
    NARROW,
    Console,
    horizontal_overflow,
    screenshot,
)
from tests.test_compare import SLOW_HAPPY_PATH, record, run_compare, standard_session

FIELD = "<img src=x onerror=alert(1)>"
ECHO = '</code><script>alert("echo")</script>'
#: Where the browser is told the page is: every request is routed, and only this one
#: is answered (with the page).
PAGE_URL = "http://compare-report.test/report.html"


def markup_in_answers(method: str, path: str, answer: Any) -> Any:
    """Production as the stand-in answers, with markup in a new balance field and in
    the first order's echoed `merchant_order_id`."""
    if not isinstance(answer, dict):
        return answer
    if path == "/api/v1/account/balance" and "balance" in answer:
        return {**answer, FIELD: "present"}
    if (
        method == "POST"
        and path == "/api/v1/orders"
        and answer.get("merchant_order_id") == "shop-1"
    ):
        return {**answer, "merchant_order_id": ECHO}
    return answer


@dataclass
class Report:
    code: int
    out: str
    page: str
    path: Path
    recording: Path


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    folder = tmp_path_factory.mktemp("compare-html")
    slow = folder / "slow.yaml"
    slow.write_text(SLOW_HAPPY_PATH)
    session = record(
        folder, standard_session, scenario_files=(str(slow),), rewrite=markup_in_answers
    )
    recording = session.write("ci-2026-03.jsonl")
    page = folder / "report.html"
    # Run where the recording is, as a person would: the page names it as it was given.
    with contextlib.chdir(folder):
        code, out, err = run_compare(recording.name, "--html", page.name)
    assert page.exists(), err
    return Report(code, out, page.read_text(encoding="utf-8"), page, recording)


# -- the file -------------------------------------------------------------------------------


def test_html_leaves_the_usual_output_and_exit_status_as_they_are(
    report: Report, tmp_path: Path
) -> None:
    code, out, _ = run_compare(str(report.recording))
    assert (code, out) == (report.code, report.out) == (1, out)
    code, out, _ = run_compare(str(report.recording), "--json", "--html", str(tmp_path / "r.html"))
    assert code == 1 and json.loads(out)["exit"] == 1
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")


class Tags(HTMLParser):
    """Every element of a page (its tag and attributes) and its text, as a browser's
    parser sees them."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_the_page_is_self_contained(report: Report) -> None:
    tags = Tags(report.page)
    names = {tag for tag, _ in tags.elements}
    assert {"svg", "table", "details"} <= names
    assert not names & {"script", "link", "img", "iframe", "object", "embed", "base", "form"}
    for tag, attributes in tags.elements:
        for name, value in attributes.items():
            # No file or address outside the page: links only to its own parts.
            if name in ("src", "href", "xlink:href", "action", "data", "srcset", "poster"):
                assert (value or "").startswith("#"), (tag, name, value)
            assert not name.startswith("on"), (tag, name)
    assert not re.search(r"https?://", report.page)
    assert "url(" not in report.page and "@import" not in report.page
    assert "default-src 'none'" in report.page  # the browser is told to fetch nothing
    assert len(report.page.encode()) < 300_000


def test_the_page_shows_the_summary_the_classes_and_the_findings(report: Report) -> None:
    page = report.page
    assert "<h1>Compare report <small>ci-2026-03.jsonl</small></h1>" in page
    assert "Drift: 1 of 2 outcome classes unexplained" in page
    for name in ("recorded_completed", "recorded_completed_client_code"):
        assert f"</span> {name}</h3>" in page
    assert "Explained by <code>need_client_code</code> (1 of 1)" in page
    assert "No scenario produces this (3 played)" in page
    assert "not <code>happy_path</code>: processing at" in page
    assert "under its own choice (<code>happy_path</code>)" in page
    # Findings grouped as the text groups them: one row per line of the text's.
    text_rows = [line for line in report.out.splitlines() if re.match(r"  (seq|order) ", line)]
    section = page.split('<h2 id="findings">', 1)[1]
    assert section.count("<tr><td>") == len(text_rows) >= 2
    assert "(and 1 more)" in section


def test_recorded_markup_is_shown_as_text(report: Report) -> None:
    page = report.page
    text = "".join(Tags(page).text)
    for value in (FIELD, ECHO):
        assert value not in page and value in text
    assert "/&lt;img src=x onerror=alert(1)&gt;" in page
    assert "&lt;/code&gt;&lt;script&gt;alert(&quot;echo&quot;)&lt;/script&gt;" in page


def test_the_first_difference_is_where_the_judge_puts_it() -> None:
    rows = [
        {"at": 0.0, "recording": {"status": "pending", "source": "create"}, "sandbox": None},
        {"at": 30.0, "recording": {"status": "failed", "source": "poll"}, "sandbox": None},
        {"at": 31.0, "recording": None, "sandbox": {"status": "partial", "source": "entered"}},
    ]
    said = {
        "processing at 4.5 s (poll): the sandbox shows completed then (...)": 4.5,
        "webhook 2 (completed) at 90.0 s: the sandbox made 1 attempt(s)": 90.0,
        "the sandbox made 1 more webhook attempt(s) than recorded, the first at 3.0 s": 3.0,
        "ends failed, delivered none, refunded all; the sandbox: partial, ...": 30.0,
        "the sandbox refused the order: HTTP 409 out_of_stock": 0.0,
        "charged 44.00, recorded 40.00": 0.0,
    }
    for why_not, at in said.items():
        assert first_difference_at(why_not, rows) == at, why_not
    assert first_difference_at(None, rows) is None


def test_an_html_path_it_cannot_write_is_exit_2(report: Report, tmp_path: Path) -> None:
    missing = tmp_path / "no such folder" / "report.html"
    code, out, err = run_compare(str(report.recording), "--html", str(missing))
    assert code == 2 and out == report.out
    assert err.startswith(f"{missing}: cannot write it")


def test_help_names_the_flag() -> None:
    assert "--html PATH" in compare.build_parser().format_help()


# -- in a browser ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    services.require("chromium")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=services.CHROMIUM, args=LAUNCH_ARGS)
        yield browser
        browser.close()


def test_the_page_draws_each_timeline_and_asks_for_nothing(
    browser: Browser, report: Report
) -> None:
    context = browser.new_context()
    page = context.new_page()
    console = Console(page)
    requested: list[str] = []
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    def answer(route: Route) -> None:
        requested.append(route.request.url)
        if route.request.url == PAGE_URL:
            route.fulfill(body=report.page, content_type="text/html; charset=utf-8")
        else:
            route.abort()

    context.route("**/*", answer)
    try:
        page.goto(PAGE_URL)
        expect(page.locator("h1")).to_contain_text("Compare report")
        timelines = page.locator("figure.timeline svg[role=img]")
        expect(timelines).to_have_count(2)
        for index in range(2):
            svg = timelines.nth(index)
            # Two lives, each with its status spans and its marks.
            assert svg.locator("g.lane").count() == 2
            assert svg.locator("g.lane.recording g.span rect").count() >= 2
            assert svg.locator("g.lane.sandbox g.span rect").count() >= 2
            assert svg.locator("path.poll").count() >= 2
            webhooks = svg.locator("g.webhook")
            assert webhooks.count() >= 2
            expect(webhooks.first.locator("text")).to_have_text("200")
            # A text alternative: the drawing's title and description, and a table.
            labels = svg.get_attribute("aria-labelledby").split()
            for label in labels:
                assert page.locator(f"[id='{label}']").text_content().strip()
        unexplained = page.locator("section.class.unexplained")
        expect(unexplained).to_have_count(1)
        difference = unexplained.locator("g.first-difference")
        expect(difference).to_have_count(1)
        expect(difference.locator("text")).to_contain_text("first difference")
        box = difference.locator("path").bounding_box()
        assert box is not None and box["height"] > 60  # across both lives
        expect(unexplained.locator("g.lane.recording g.span text").first).to_have_text("processing")
        expect(page.locator("section.class.explained g.first-difference")).to_have_count(0)
        expect(page.locator("section.class.explained path.code")).to_have_count(2)
        # The recorded markup is text on the page, and nothing of it ran or loaded.
        expect(page.get_by_text(ECHO, exact=True)).to_be_visible()
        expect(page.get_by_text("/" + FIELD, exact=True)).to_be_visible()
        assert page.evaluate("document.querySelectorAll('script, img, b, iframe').length") == 0
        assert [h.text_content() for h in page.locator("h2").all()] == [
            "Summary",
            "Legend",
            "Outcome classes",
            "Findings",
        ]
        screenshot(page, "compare-report")
        page.set_viewport_size(NARROW)
        assert horizontal_overflow(page) == 0
    finally:
        context.close()
    assert requested == [PAGE_URL]
    assert dialogs == []
    assert console.unexpected() == []
