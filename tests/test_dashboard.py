"""The dashboard (docs/dashboard.md) in a real browser.

Headless Chromium (Debian's package) driven by Playwright's sync API against an
in-process sandbox on the manual clock. Nothing here waits on wall time: Playwright's
expectations retry until the page shows what the test asks for, and virtual time moves
only when the test (or the page's own buttons) advance it. Each test gets a fresh
sandbox and browser context; every console error fails the test (see `Console`).

Without Chromium (Debian's package) these tests skip, saying what is missing and how to
get it; in CI (.ci/run sets MOCK_SERVER_TEST_SERVICES=required) they fail instead, so CI
cannot pass without having driven the page (tests/services.py). A Chromium that is there
but does not launch fails them everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from mock_server.clock import parse_iso
from mock_server.config import Settings
from mock_server.testing import SandboxHandle, ServerThread, WebhookReceiver
from tests import services
from tests.dashboard_helpers import (
    DESKTOP,
    LAUNCH_ARGS,
    NARROW,
    Console,
    Merchant,
    horizontal_overflow,
    screenshot,
)
from tests.steady_network import interfaces_steady

START = "2026-01-01T00:00:00Z"
SETTINGS = Settings(clock="manual", port=0, seed=1, start_time=parse_iso(START))
VIEWS = ("orders", "place", "accounts", "catalog", "scenarios", "faults", "journal")
#: What each view shows once its data has arrived.
FILLED = {
    "orders": "table.orders tbody tr",
    "place": "#place-item option",
    "accounts": "#ledger-conserved",
    "catalog": "tr[data-item]",
    "scenarios": "article.scenario",
    "faults": "main tbody tr",
    "journal": "table.journal tbody tr",
}


@dataclass
class Dashboard:
    page: Page
    console: Console
    sandbox: SandboxHandle

    def open(self, view: str = "orders", *, base: str = "") -> Page:
        """Open the page on `view` and wait until the live stream is connected."""
        self.page.goto(f"{self.sandbox.url}{base}/_mock/ui/#/{view}")
        expect(self.page.locator("#live")).to_have_text("live")
        return self.page


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    services.require("chromium")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=services.CHROMIUM, args=LAUNCH_ARGS)
        yield browser
        browser.close()


def _serve(settings: Settings) -> Iterator[SandboxHandle]:
    server = ServerThread(settings).start()
    try:
        yield SandboxHandle(server.url, admin_token=settings.admin_token)
    finally:
        server.stop()


@pytest.fixture
def sandbox() -> Iterator[SandboxHandle]:
    yield from _serve(SETTINGS)


def _dashboard(browser: Browser, sandbox: SandboxHandle) -> Iterator[Dashboard]:
    with interfaces_steady():  # no container starts or goes meanwhile
        context = browser.new_context(viewport=DESKTOP)
        page = context.new_page()
        page.set_default_timeout(10_000)
        console = Console(page)
        try:
            yield Dashboard(page, console, sandbox)
        finally:
            context.close()
    assert console.unexpected() == [], "the page logged errors"


@pytest.fixture
def dashboard(browser: Browser, sandbox: SandboxHandle) -> Iterator[Dashboard]:
    yield from _dashboard(browser, sandbox)


def order_row(page: Page, merchant_order_id: str):
    return page.locator("table.orders tbody tr").filter(has_text=merchant_order_id)


# -- loading ------------------------------------------------------------------------------


def test_the_page_loads_every_view_without_a_console_error(dashboard):
    page = dashboard.open()
    expect(page.locator("#clock-now")).to_have_text("2026-01-01T00:00:00.000Z")
    expect(page.locator("#clock-mode")).to_have_text("manual clock")
    for view in VIEWS:
        page.get_by_role("navigation", name="Views").locator(f'a[data-view="{view}"]').click()
        expect(page.locator("main h2").first).to_be_visible()
        expect(page.locator(f'#nav a[data-view="{view}"]')).to_have_attribute(
            "aria-current", "page"
        )
    expect(page.locator(".notice.error:visible")).to_have_count(0)


# -- orders, live -------------------------------------------------------------------------


def test_an_order_placed_from_the_form_appears_live_and_completes_as_the_clock_advances(
    dashboard, browser
):
    watcher = dashboard.open("orders")  # this tab only watches: no reload, no click on it
    watcher.evaluate("window.notReloaded = true")
    form = dashboard.page.context.new_page()
    form.goto(f"{dashboard.sandbox.url}/_mock/ui/#/place")
    form_console = Console(form)
    form.get_by_label("Item", exact=True).select_option("1001")
    form.get_by_label("Quantity", exact=True).fill("2")
    form.get_by_label("merchant_order_id").fill("shop-1")
    form.get_by_label("Price guard").fill("40.00")
    form.get_by_role("button", name="Place order").click()
    expect(form.locator("#place-status")).to_have_text("HTTP 201")
    expect(form.locator("#place-curl")).to_contain_text(
        """-d '{"item_id":1001,"quantity":2,"merchant_order_id":"shop-1","price":40}'"""
    )
    expect(form.locator("#place-answer")).to_contain_text('"status": "pending"')
    screenshot(form, "place-order")

    row = order_row(watcher, "shop-1")
    expect(row).to_contain_text("pending")
    expect(row).to_contain_text("40.00")
    expect(watcher.locator("#orders-summary")).to_have_text("Showing 1–1 of 1 orders")
    watcher.get_by_role("button", name="+1 s").click()
    expect(row).to_contain_text("processing")
    watcher.get_by_role("button", name="To the next event").click()
    expect(row).to_contain_text("completed")
    expect(watcher.locator("#clock-now")).to_have_text("2026-01-01T00:00:03.000Z")
    assert watcher.evaluate("window.notReloaded") is True
    [order] = dashboard.sandbox.orders(merchant_order_id="shop-1")
    assert order["status"] == "completed"
    screenshot(watcher, "orders")
    assert form_console.unexpected() == []


def test_the_clock_panel_lists_upcoming_events_and_advances_by_a_typed_duration(dashboard):
    Merchant(dashboard.sandbox).create({"item_id": 1001, "merchant_order_id": "slow-1"})
    page = dashboard.open()
    upcoming = page.locator("#upcoming li")
    expect(upcoming.first).to_contain_text("2026-01-01T00:00:01.000Z")
    expect(upcoming.first).to_contain_text("step 1 → processing")
    page.get_by_label("Advance by").fill("1h30m")
    page.get_by_label("Advance by").press("Enter")
    expect(page.locator("#clock-now")).to_have_text("2026-01-01T01:30:00.000Z")
    expect(upcoming.first).to_have_text("Nothing is scheduled.")
    page.get_by_label("Advance by").fill("soon")
    page.get_by_label("Advance by").press("Enter")
    expect(page.locator("#clock-notice")).to_contain_text("Type a duration")


# -- an order's page ------------------------------------------------------------------------


def test_a_receiver_answering_500_shows_four_attempts_60s_apart_and_redeliver_adds_one(
    dashboard,
):
    receiver = WebhookReceiver()
    receiver.respond_with(500)
    try:
        dashboard.sandbox.set_webhook_url(receiver.url)
        order = Merchant(dashboard.sandbox).create({"item_id": 1001, "quantity": 2})
        page = dashboard.open(f"orders/{order['id']}")
        expect(page.locator("#order-scenario")).to_have_text("happy_path")
        expect(page.locator("#order-scenario-source")).to_have_text("default")
        next_event = page.get_by_role("button", name="To the next event")
        next_event.click()  # processing at 1 s
        expect(page.locator(".timeline li")).to_have_count(2)
        next_event.click()  # completed at 3 s: the first attempt
        for _ in range(3):  # the three retries, one virtual minute apart
            page.get_by_role("button", name="+1 min").click()
        attempts = page.locator("table.attempts tbody tr")
        expect(attempts).to_have_count(4)
        expect(page.locator(".delivery-head .badge")).to_have_text("failed")
        for number, at in enumerate(("00:00:03", "00:01:03", "00:02:03", "00:03:03")):
            row = attempts.nth(number)
            expect(row.locator("td").nth(1)).to_have_text(f"2026-01-01T{at}.000Z")
            expect(row.locator("td").nth(2)).to_have_text("+1 min" if number else "")
            expect(row.locator("td").nth(3)).to_have_text("500")
        expect(page.locator(".timeline li")).to_have_count(3)
        page.locator(".delivery summary").click()
        expect(page.locator(".delivery .facts").nth(1)).to_contain_text("X-Webhook-Signature")
        page.evaluate("document.getElementById('order-life-title').scrollIntoView()")
        screenshot(page, "order")

        receiver.respond_with(200)
        page.get_by_role("button", name="Redeliver now").click()
        expect(attempts).to_have_count(5)
        expect(attempts.nth(4)).to_contain_text("manual")
        expect(attempts.nth(4).locator("td").nth(3)).to_have_text("200")
        expect(page.locator(".delivery-head .badge")).to_have_text("delivered")
        assert len(receiver.events) == 5
    finally:
        receiver.close()


def test_an_order_waiting_for_a_client_code_takes_one_from_its_page(dashboard):
    order = Merchant(dashboard.sandbox).create(
        {"item_id": 2002, "quantity": 1, "fields": {"login_email": "p@example.com", "server": 2}}
    )
    dashboard.sandbox.advance(5)
    page = dashboard.open(f"orders/{order['id']}")
    expect(page.locator("#order-scenario-source")).to_have_text("client_code")
    page.get_by_label("Client code", exact=True).fill("123456")
    page.get_by_label("Client code", exact=True).press("Enter")
    expect(page.locator("form .notice.ok")).to_have_text("Accepted: the order is processing again.")
    expect(page.locator(".facts .badge").first).to_have_text("processing")


# -- scenarios ----------------------------------------------------------------------------


def test_a_scenario_with_a_mistake_shows_the_loaders_line_and_reason(dashboard):
    dashboard.console.expect_status(400)
    page = dashboard.open("scenarios")
    yaml_text = page.get_by_label("Scenario document")
    yaml_text.fill("name: broken\nsteps:\n  - after: 1s\n    status: pending\n")
    page.get_by_role("button", name="Load", exact=True).click()
    problem = page.locator("#scenario-errors li")
    expect(problem).to_have_text("line 4: a step never returns to pending (spec 3.2 rule 1)")
    expect(yaml_text).to_have_attribute("aria-invalid", "true")
    problem.get_by_role("button", name="line 4").click()
    assert page.evaluate(
        "(() => { const t = document.getElementById('scenario-yaml');"
        " return t.value.slice(t.selectionStart, t.selectionEnd); })()"
    ) == ("    status: pending")

    yaml_text.fill(
        "name: fast_fail\nsteps:\n  - after: 500ms\n    status: failed\n    error: PROVIDER_DOWN\n"
    )
    page.get_by_role("button", name="Load", exact=True).click()
    expect(page.locator("#scenario-errors li")).to_have_count(0)
    card = page.locator('article[data-scenario="fast_fail"]')
    expect(card).to_contain_text("PROVIDER_DOWN")
    page.get_by_label("Scenario", exact=True).select_option("fast_fail")
    page.get_by_role("button", name="Queue").click()
    expect(page.locator("#queue tbody tr")).to_contain_text("fast_fail")
    page.locator("#scenario-list-title").scroll_into_view_if_needed()
    page.evaluate("document.getElementById('scenario-list-title').scrollIntoView()")
    screenshot(page, "scenarios")


# -- accounts and catalog -----------------------------------------------------------------


def test_accounts_show_the_ledger_check_and_the_catalog_is_editable(dashboard):
    Merchant(dashboard.sandbox).create({"item_id": 1001, "quantity": 3})
    page = dashboard.open("accounts")
    expect(page.locator("#ledger-conserved")).to_have_text("conserved")
    expect(page.locator("#ledger-balance")).to_have_text("940.00")
    page.get_by_role("form", name="Change the account").get_by_label("Balance").fill("750")
    page.get_by_label("Webhook URL").fill("http://127.0.0.1:9/hooks")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator("#ledger-balance")).to_have_text("750.00")
    expect(page.locator("table.ledger tbody tr").first).to_contain_text("adjustment")
    expect(page.locator("#ledger-conserved")).to_have_text("conserved")
    page.get_by_role("button", name="Issue a key").click()
    expect(page.locator("ul.keys li")).to_have_count(2)
    account = dashboard.sandbox.control("GET", f"/_mock/accounts/{dashboard.sandbox.account_id}")
    assert account["balance"] == 750.0
    assert account["webhook_url"] == "http://127.0.0.1:9/hooks"
    screenshot(page, "accounts")

    page.locator('#nav a[data-view="catalog"]').click()
    page.get_by_label("Price of Steam Wallet Gift Card $20 (US)").fill("25.00")
    page.locator("#item-1001-save").click()
    expect(page.locator('tr[data-item="1001"] .notice')).to_have_text("saved")
    items = dashboard.sandbox.control("GET", "/_mock/catalog")["items"]
    assert next(item for item in items if item["id"] == 1001)["price"] == 2500
    screenshot(page, "catalog")


# -- scale, narrow windows, sandboxes, the admin token --------------------------------------


def test_ten_thousand_orders_are_shown_a_page_at_a_time_and_stay_live(dashboard):
    dashboard.sandbox.set_balance(1_000_000)
    Merchant(dashboard.sandbox).create_many(10_000)
    page = dashboard.open("orders")
    summary = page.locator("#orders-summary")
    expect(summary).to_have_text("Showing 1–50 of 10,000 orders")
    expect(page.locator("table.orders tbody tr")).to_have_count(50)
    page.get_by_role("button", name="Older →").click()
    expect(summary).to_have_text("Showing 51–100 of 10,000 orders")
    page.get_by_role("button", name="← Newer").click()
    # One advance moves all 10,000 to processing: more events than a reader's buffer, so
    # the stream overflows and the page reconnects and re-reads; either way it keeps up.
    page.get_by_role("button", name="+1 s").click()
    expect(page.locator("table.orders tbody tr").first).to_contain_text("processing")
    expect(page.locator("table.orders tbody tr").last).to_contain_text("processing")
    expect(page.locator("table.orders tbody tr")).to_have_count(50)
    page.get_by_label("merchant_order_id").fill("bulk-1234")
    page.get_by_label("merchant_order_id").press("Enter")
    expect(summary).to_have_text("Showing 1–1 of 1 orders")
    page.get_by_label("Status", exact=True).select_option("completed")
    expect(summary).to_have_text("No orders match.")


def test_a_narrow_window_never_scrolls_sideways(dashboard):
    receiver = WebhookReceiver()
    receiver.respond_with(500)
    try:
        dashboard.sandbox.set_webhook_url(receiver.url)
        order = Merchant(dashboard.sandbox).create({"item_id": 1001, "merchant_order_id": "n-1"})
        dashboard.sandbox.advance(3)
        page = dashboard.page
        page.set_viewport_size(NARROW)
        for view, filled in (*FILLED.items(), (f"orders/{order['id']}", "table.attempts td")):
            dashboard.open(view)
            expect(page.locator(filled).first).to_be_attached()  # the data is on screen
            assert horizontal_overflow(page) <= 0, view
    finally:
        receiver.close()


def test_the_switcher_shows_one_sandbox_at_a_time(dashboard):
    created = dashboard.sandbox.control(
        "POST", "/_mock/sandboxes", {"clock": "manual", "start_time": "2030-05-01T00:00:00Z"}
    )
    Merchant(dashboard.sandbox).create({"item_id": 1001, "merchant_order_id": "in-default"})
    page = dashboard.open()
    expect(order_row(page, "in-default")).to_have_count(1)
    page.get_by_label("Sandbox", exact=True).select_option(created["id"])
    expect(page).to_have_url(
        f"{dashboard.sandbox.url}/_mock/sandboxes/{created['id']}/_mock/ui/#/orders"
    )
    expect(page.locator("#clock-now")).to_have_text("2030-05-01T00:00:00.000Z")
    expect(page.locator("#orders-summary")).to_have_text("No orders match.")
    page.get_by_role("button", name="+1 h").click()
    expect(page.locator("#clock-now")).to_have_text("2030-05-01T01:00:00.000Z")
    assert dashboard.sandbox.now() == "2026-01-01T00:00:00.000Z"  # the default did not move


@pytest.fixture
def guarded_sandbox() -> Iterator[SandboxHandle]:
    yield from _serve(replace(SETTINGS, admin_token="s3cret"))


@pytest.fixture
def guarded_dashboard(browser: Browser, guarded_sandbox: SandboxHandle) -> Iterator[Dashboard]:
    yield from _dashboard(browser, guarded_sandbox)


def test_with_an_admin_token_the_page_asks_once_and_keeps_it_for_the_tab(
    browser, guarded_dashboard
):
    dashboard = guarded_dashboard
    guarded_sandbox = dashboard.sandbox
    dashboard.console.expect_status(401)
    page = dashboard.page
    page.goto(f"{guarded_sandbox.url}/_mock/ui/")
    dialog = page.get_by_role("dialog", name="Admin token")
    expect(dialog).to_be_visible()
    page.locator("#token-input").fill("wrong")
    page.locator("#token-input").press("Enter")
    expect(dialog).to_contain_text("That token was refused")
    page.locator("#token-input").fill("s3cret")
    page.get_by_role("button", name="Use this token").click()
    expect(dialog).to_be_hidden()
    expect(page.locator("#live")).to_have_text("live")
    expect(page.locator("#clock-now")).to_have_text("2026-01-01T00:00:00.000Z")
    assert "s3cret" not in page.url
    assert page.evaluate("sessionStorage.getItem('ordering-sandbox.admin-token')") == "s3cret"

    page.reload()  # the same tab keeps it: no question
    expect(page.locator("#live")).to_have_text("live")
    expect(page.locator("#clock-now")).to_have_text("2026-01-01T00:00:00.000Z")
    expect(dialog).to_be_hidden()

    other = browser.new_context().new_page()  # another tab (session) asks again
    try:
        other.goto(f"{guarded_sandbox.url}/_mock/ui/")
        # As long as `_dashboard`'s pages wait: a fresh context loads every script anew.
        expect(other.get_by_role("dialog", name="Admin token")).to_be_visible(timeout=10_000)
    finally:
        other.context.close()
