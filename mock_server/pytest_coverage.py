"""`--mock-server-coverage`: what a test session exercised of the contract
(docs/pytest.md, "Coverage of the contract").

Each `mock_server` fixture hands its sandbox's `GET /_mock/coverage` to this plugin at
teardown; the reports are merged (under pytest-xdist, each worker merges its own and
the controller merges the workers'). At the end of the session a short table is
printed, `--mock-server-coverage-html=PATH` writes the same as a page, and
`--mock-server-coverage-fail-under=PERCENT` fails the run below it.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest

from .domain.coverage import AREAS, merge

PLUGIN_NAME = "mock-server-coverage"
_WORKER_KEY = "mock_server_coverage"


def add_options(group: Any) -> None:
    group.addoption(
        "--mock-server-coverage",
        action="store_true",
        help="print what the tests exercised of the ordering contract",
    )
    group.addoption(
        "--mock-server-coverage-fail-under",
        type=float,
        default=None,
        metavar="PERCENT",
        help="fail the run when the contract coverage is below PERCENT",
    )
    group.addoption(
        "--mock-server-coverage-html",
        default=None,
        metavar="PATH",
        help="also write the coverage report as an HTML page",
    )


def configure(config: pytest.Config) -> None:
    options = config.option
    wanted = (
        options.mock_server_coverage
        or options.mock_server_coverage_fail_under is not None
        or options.mock_server_coverage_html
    )
    if wanted:
        config.pluginmanager.register(CoveragePlugin(config), PLUGIN_NAME)


def record(config: pytest.Config, fetch: Any) -> None:
    """Called by the fixture at teardown with a way to read its sandbox's report."""
    plugin = config.pluginmanager.get_plugin(PLUGIN_NAME)
    if plugin is not None:
        plugin.add(fetch())


class CoveragePlugin:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.report: dict[str, Any] | None = None

    def add(self, report: dict[str, Any]) -> None:
        self.report = report if self.report is None else merge([self.report, report])

    # -- pytest-xdist: workers send their merged report to the controller ---------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        raw = getattr(node, "workeroutput", {}).get(_WORKER_KEY)
        if raw:
            self.add(json.loads(raw))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:  # a worker: the controller reports
            if self.report is not None:
                workeroutput[_WORKER_KEY] = json.dumps(self.report)
            return
        threshold = self.config.option.mock_server_coverage_fail_under
        if threshold is not None and self.percent < threshold:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        path = self.config.option.mock_server_coverage_html
        if path and self.report is not None:
            Path(path).write_text(render_html(self.report), encoding="utf-8")

    @property
    def percent(self) -> float:
        return self.report["percent"] if self.report is not None else 0.0

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workeroutput"):
            return
        write = terminalreporter.write_line
        terminalreporter.section("ordering contract coverage")
        if self.report is None:
            write("no mock_server fixture ran: nothing measured")
        else:
            for line in render_table(self.report):
                write(line)
        threshold = self.config.option.mock_server_coverage_fail_under
        if threshold is not None:
            verdict = "reached" if self.percent >= threshold else "NOT reached: the run fails"
            write(f"required {threshold:g}%: {verdict}")


def _area_counts(report: dict[str, Any]) -> list[tuple[str, int, int, list[str]]]:
    """(area, exercised, total, never-exercised items) per area."""
    never: dict[str, list[str]] = {area: [] for area in AREAS}
    for entry in report["never"]:
        area, _, item = entry.partition(": ")
        never[area].append(item)
    rows = []
    for area in AREAS:
        done = len(report["exercised"][area])
        rows.append((area, done, done + len(never[area]), never[area]))
    return rows


def render_table(report: dict[str, Any]) -> list[str]:
    lines = [f"{'area':18} {'exercised':>9}  never exercised"]
    for area, done, total, missing in _area_counts(report):
        lines.append(f"{area:18} {done:>4}/{total:<4}  {', '.join(missing) or '-'}")
    lines.append(f"TOTAL {report['percent']:g}% of the contract exercised")
    return lines


def render_html(report: dict[str, Any]) -> str:
    rows = []
    for area, done, total, missing in _area_counts(report):
        counts = report["exercised"][area]
        seen = ", ".join(f"{html.escape(k)} ×{v}" for k, v in counts.items()) or "—"
        rows.append(
            f"<tr><th scope='row'>{html.escape(area)}</th><td>{done}/{total}</td>"
            f"<td>{seen}</td><td>{html.escape(', '.join(missing)) or '—'}</td></tr>"
        )
    return (
        "<!doctype html><html lang='en'><meta charset='utf-8'>"
        "<title>Ordering contract coverage</title>"
        f"<h1>Ordering contract coverage: {report['percent']:g}%</h1>"
        "<table><thead><tr><th>area</th><th>exercised</th><th>counts</th>"
        "<th>never exercised</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )
