"""The pytest plugin, tested the way its users run it: pytest inside pytest (pytester)."""

from __future__ import annotations

import pytest

# Imported here so every in-process inner run shares one `requests` (pytester restores
# sys.modules after each run; a second fresh import breaks requests' cookie jar checks).
import requests  # noqa: F401

from mock_server.config import Settings
from mock_server.testing import SandboxHandle, ServerThread

pytest_plugins = ["pytester"]

HELPERS = """
import requests

def login(server):
    response = requests.post(f"{server.url}/api/v1/auth/token/client",
                             json={"api_key": server.api_key})
    assert response.status_code == 200
    return {"Authorization": f"Bearer {response.json()['access_token']}"}

def create(server, auth, body, **headers):
    return requests.post(f"{server.url}/api/v1/orders", json=body, headers={**auth, **headers})
"""


@pytest.fixture
def suite(pytester):
    pytester.makepyfile(helpers=HELPERS)
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
    )
    return pytester


def test_sync_test_drives_an_order_to_completion(suite):
    suite.makepyfile(
        """
        from helpers import login, create

        def test_order(mock_server):
            auth = login(mock_server)
            order = create(mock_server, auth, {"item_id": 1001, "quantity": 2}).json()
            assert order["status"] == "pending"
            mock_server.advance(3)
            (settled,) = mock_server.orders()
            assert settled["status"] == "completed"
            assert len(settled["codes"]) == 2
            assert mock_server.now() == "2026-01-01T00:00:03.000Z"
        """
    )
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_async_test_with_an_aiohttp_client(suite):
    suite.makepyfile(
        """
        import aiohttp

        async def test_balance(mock_server):
            mock_server.set_balance(12.5)
            async with aiohttp.ClientSession() as session:
                token = await (await session.post(
                    f"{mock_server.url}/api/v1/auth/token/client",
                    json={"api_key": mock_server.api_key})).json()
                response = await session.get(
                    f"{mock_server.url}/api/v1/account/balance",
                    headers={"Authorization": f"Bearer {token['access_token']}"})
                assert await response.json() == {"balance": 12.5, "currency": "USD"}
        """
    )
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_each_test_gets_a_fresh_sandbox(suite):
    suite.makepyfile(
        """
        import pytest
        from helpers import login, create

        @pytest.mark.parametrize("run", [1, 2])
        def test_fresh(mock_server, run):
            assert mock_server.orders() == []
            create(mock_server, login(mock_server), {"item_id": 1001})
            assert len(mock_server.orders()) == 1
        """
    )
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_webhook_receiver_gets_verified_deliveries_and_can_fail_them(suite):
    suite.makepyfile(
        """
        from helpers import login, create

        def test_delivered(mock_server, webhook_receiver):
            order = create(mock_server, login(mock_server), {"item_id": 1001}).json()
            mock_server.advance(3)
            delivery = mock_server.wait_for_webhook(order["id"], status="completed")
            assert delivery["status"] == "delivered"
            assert delivery["attempts"][0]["status_code"] == 200
            assert mock_server.wait_for_webhook(order["id"], delivery="delivered") == delivery
            (event,) = webhook_receiver.events
            assert event.verified
            assert event.json["order_id"] == order["id"]
            assert event.headers["X-Signature"] == event.headers["X-Webhook-Signature"]

        def test_failing_receiver(mock_server, webhook_receiver):
            webhook_receiver.respond_with(500)
            order = create(mock_server, login(mock_server), {"item_id": 1001}).json()
            mock_server.advance(3 + 180)
            assert len(webhook_receiver.events) == 4
            assert mock_server.wait_for_webhook(order["id"])["status"] == "failed"
        """
    )
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_wait_for_webhook_under_manual_clock_says_to_advance(suite):
    suite.makepyfile(
        """
        import pytest
        from helpers import login, create

        def test_too_early(mock_server, webhook_receiver):
            order = create(mock_server, login(mock_server), {"item_id": 1001}).json()
            with pytest.raises(AssertionError, match="advance the clock"):
                mock_server.wait_for_webhook(order["id"], timeout=5)
        """
    )
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_wait_for_webhook_matches_the_order_status_the_event_carries(suite):
    suite.makepyfile(
        """
        import pytest
        from helpers import login, create

        def test_partial(mock_server, webhook_receiver):
            mock_server.use_scenario("timeout_partial")
            order = create(mock_server, login(mock_server), {"item_id": 1001, "quantity": 3})
            order = order.json()
            mock_server.advance(31)
            delivery = mock_server.wait_for_webhook(
                order["id"], status="partial", delivery="delivered"
            )
            assert '"status":"partial"' in delivery["body"]
            with pytest.raises(AssertionError, match="event partial, delivery delivered"):
                mock_server.wait_for_webhook(order["id"], status="completed")
            with pytest.raises(AssertionError, match="status='partial', delivery='failed'"):
                mock_server.wait_for_webhook(order["id"], status="partial", delivery="failed")

        def test_failing_receiver(mock_server, webhook_receiver):
            webhook_receiver.respond_with(500)
            order = create(mock_server, login(mock_server), {"item_id": 1001}).json()
            mock_server.advance(3)
            retrying = mock_server.wait_for_webhook(order["id"], status="completed")
            assert retrying["status"] == "retrying"
            mock_server.advance(180)
            failed = mock_server.wait_for_webhook(order["id"], "completed", delivery="failed")
            assert len(failed["attempts"]) == 4

        def test_dropped_is_never_sent(mock_server, webhook_receiver):
            mock_server.use_scenario("webhook_dropped")
            order = create(mock_server, login(mock_server), {"item_id": 1001}).json()
            mock_server.advance(3)
            with pytest.raises(AssertionError, match="delivery dropped, 0 attempt"):
                mock_server.wait_for_webhook(order["id"], status="completed")
            assert mock_server.wait_for_webhook(order["id"], delivery="dropped")

        @pytest.mark.parametrize(
            ("kwargs", "message"),
            [
                ({"status": "delivered"}, "status='delivered' is not one of completed, partial"),
                ({"delivery": "completed"}, "delivery='completed' is not one of pending, retrying"),
            ],
        )
        def test_unknown_values(mock_server, kwargs, message):
            with pytest.raises(ValueError, match=message):
                mock_server.wait_for_webhook("any", **kwargs)
        """
    )
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=5)


def test_tls_marker_serves_https_that_verifies_against_the_handles_ca(suite):
    suite.makepyfile(
        """
        import pytest
        import requests

        @pytest.mark.mock_server(tls=True)
        def test_https(mock_server, webhook_receiver):
            assert mock_server.url.startswith("https://127.0.0.1:")
            token = requests.post(f"{mock_server.url}/api/v1/auth/token/client",
                                  json={"api_key": mock_server.api_key},
                                  verify=mock_server.ca_path).json()["access_token"]
            order = requests.post(f"{mock_server.url}/api/v1/orders", json={"item_id": 1001},
                                  headers={"Authorization": f"Bearer {token}"},
                                  verify=mock_server.ca_path).json()
            mock_server.advance(3)  # the handle's own calls verify against the CA too
            assert mock_server.wait_for_webhook(order["id"], status="completed")
            with pytest.raises(requests.exceptions.SSLError):
                requests.get(f"{mock_server.url}/_mock/health")  # the system store: refused

        def test_plain(mock_server):
            assert mock_server.url.startswith("http://") and mock_server.ca_path is None
        """
    )
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_use_scenario_and_reset(suite):
    suite.makepyfile(
        """
        from helpers import login, create

        def test_scenario(mock_server):
            auth = login(mock_server)
            mock_server.use_scenario("timeout_partial")
            first = create(mock_server, auth, {"item_id": 1001, "quantity": 3}).json()
            second = create(mock_server, auth, {"item_id": 1001, "quantity": 3}).json()
            mock_server.advance(31)
            for order_id in (first["id"], second["id"]):
                detail = mock_server.order(order_id)
                assert detail["scenario"] == "timeout_partial"
                assert detail["order"]["error"] == "ORDER_TIMEOUT"
            mock_server.reset()
            assert mock_server.orders() == []
            again = create(mock_server, login(mock_server), {"item_id": 1001, "quantity": 3})
            assert again.json()["id"] == first["id"], "reset re-seeds ids"
        """
    )
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_marker_configures_catalog_scenarios_accounts_and_seed(suite):
    suite.makefile(
        ".yaml",
        accounts="accounts:\n  - email: shop@example.com\n    api_key: ak_shop\n"
        "    balance: 30\n    webhook_secret: whsec_shop\n",
        scenarios="name: instant\nsteps:\n  - status: completed\n",
    )
    suite.makepyfile(
        """
        import pytest
        from helpers import login, create

        ITEM = {"id": 7, "name": "Tiny key", "product_type": "key", "price": 1000,
                "min_quantity": 1, "max_quantity": 5, "in_stock": True}

        @pytest.mark.mock_server(catalog=[ITEM], scenarios="scenarios.yaml",
                                 accounts="accounts.yaml", seed=5)
        def test_configured(mock_server):
            assert mock_server.api_key == "ak_shop"
            assert mock_server.webhook_secret == "whsec_shop"
            auth = login(mock_server)
            order = create(mock_server, auth, {"item_id": 7, "quantity": 2},
                           **{"X-Mock-Scenario": "instant"}).json()
            mock_server.advance(0)
            assert mock_server.orders()[0]["status"] == "completed"
            refused = create(mock_server, auth, {"item_id": 7, "quantity": 2})
            assert refused.json()["code"] == "insufficient_balance"
        """
    )
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_marker_with_unknown_option_is_a_usage_error(suite):
    suite.makepyfile(
        """
        import pytest

        @pytest.mark.mock_server(catalogue="x.json")
        def test_typo(mock_server):
            pass
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*unknown mock_server marker option 'catalogue'*"])


@pytest.fixture
def running_sandbox():
    server = ServerThread(Settings(clock="manual", port=0, seed=1)).start()
    yield server
    server.stop()


def test_same_tests_run_against_a_running_instance(suite, running_sandbox):
    server = SandboxHandle(running_sandbox.url)
    default_now = server.now()
    suite.makepyfile(
        """
        import pytest
        from helpers import login, create

        @pytest.mark.parametrize("run", [1, 2])
        def test_remote(mock_server, run):
            assert "/_mock/sandboxes/sbx-" in mock_server.url, "a sandbox of its own"
            assert mock_server.orders() == []
            assert mock_server.now() == "2026-01-01T00:00:00.000Z"
            create(mock_server, login(mock_server), {"item_id": 1001})
            mock_server.advance(3)
            assert mock_server.orders()[0]["status"] == "completed"

        @pytest.mark.mock_server(catalog=[{"id": 9, "name": "Only", "product_type": "key",
                                           "price": 100, "in_stock": True}])
        def test_remote_catalog(mock_server):
            response = create(mock_server, login(mock_server), {"item_id": 1001})
            assert response.json()["detail"] == "Item 1001 does not exist"

        @pytest.mark.mock_server(clock="real", seed=3)
        def test_real_clock_of_its_own(mock_server):
            assert mock_server.clock_mode == "real"
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider", f"--mock-server-url={running_sandbox.url}")
    result.assert_outcomes(passed=4)
    assert [s["id"] for s in server.control("GET", "/_mock/sandboxes")["sandboxes"]] == [
        "default"
    ], "each test's sandbox is deleted at teardown"
    assert server.orders() == [] and server.now() == default_now, "the default is untouched"


def test_parallel_workers_share_one_server_safely(suite, running_sandbox):
    """pytest -n 4 against one server: every test advances its own clock and resets its
    own sandbox while the others run; none sees another's orders or time."""
    suite.makepyfile(
        """
        import pytest
        from helpers import login, create

        @pytest.mark.parametrize("run", range(12))
        def test_isolated(mock_server, run):
            auth = login(mock_server)
            for _ in range(run % 3 + 1):
                create(mock_server, auth, {"item_id": 1001})
            mock_server.advance(run + 1)
            assert mock_server.now() == f"2026-01-01T00:00:{run + 1:02d}.000Z"
            assert len(mock_server.orders()) == run % 3 + 1
            mock_server.reset()
            assert mock_server.orders() == []
        """
    )
    result = suite.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "4", f"--mock-server-url={running_sandbox.url}"
    )
    result.assert_outcomes(passed=12)


def test_remote_mode_creates_its_sandboxes_with_the_admin_token(suite):
    server = ServerThread(Settings(clock="manual", port=0, seed=1, admin_token="s3cret")).start()
    try:
        suite.makepyfile(
            """
            def test_guarded(mock_server):
                assert mock_server.orders() == []
            """
        )
        url = f"--mock-server-url={server.url}"
        denied = suite.runpytest("-p", "no:cacheprovider", url)
        denied.assert_outcomes(errors=1)
        denied.stdout.fnmatch_lines(["*401*admin token*"])
        allowed = suite.runpytest("-p", "no:cacheprovider", url, "--mock-server-admin-token=s3cret")
        allowed.assert_outcomes(passed=1)
    finally:
        server.stop()


def test_a_crashed_background_job_fails_the_test(suite):
    suite.makepyfile(
        """
        from helpers import login, create

        def test_crash(mock_server, monkeypatch):
            def broken(self, count):
                raise RuntimeError("code generator exploded")

            monkeypatch.setattr("mock_server.domain.randomness.Randomness.codes", broken)
            create(mock_server, login(mock_server), {"item_id": 1001})
            mock_server.advance(3)
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)  # the test body passed; teardown reports
    result.stdout.fnmatch_lines(["*background jobs failed*code generator exploded*"])


# -- a user's project: pytest-asyncio's fixture loop scope (docs/pytest.md) ----------------

ASYNCIO_WARNING = 'The configuration option "asyncio_default_fixture_loop_scope" is unset'
USER_TESTS = """
import asyncio

import pytest
import pytest_asyncio
import requests


def test_order(mock_server):
    token = requests.post(f"{mock_server.url}/api/v1/auth/token/client",
                          json={"api_key": mock_server.api_key}).json()["access_token"]
    assert token


# An async fixture wider than a test, as a user's project may have. With the option
# unset its loop is as wide as its scope; a narrower default ("function") would fail its
# set-up with a ScopeMismatch.
@pytest_asyncio.fixture(scope="module")
async def module_loop():
    return asyncio.get_running_loop()


@pytest.mark.asyncio
async def test_first(module_loop):
    assert isinstance(module_loop, asyncio.AbstractEventLoop)


@pytest.mark.asyncio
async def test_second(module_loop):
    assert not module_loop.is_closed()  # the module's loop lives on for the module
"""


@pytest.fixture
def user_project(pytester):
    """A user's project: the package installed, an ini file without any asyncio option
    (the project's own pyproject.toml sets them, which hid the warning from this suite)."""
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_user=USER_TESTS)
    return pytester


def test_a_users_run_shows_no_pytest_asyncio_warning_and_runs_as_before(user_project):
    result = user_project.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    output = "\n".join([*result.outlines, *result.errlines])
    assert ASYNCIO_WARNING not in output
    assert "PytestDeprecationWarning" not in output
    result.stdout.fnmatch_lines(["asyncio: *asyncio_default_fixture_loop_scope=fixture-scope*"])


def test_the_warning_is_pytest_asyncios_own_without_this_plugin(user_project):
    """What the plugin's default removes: the same project with the plugin disabled."""
    result = user_project.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:mock_server")
    assert ASYNCIO_WARNING in "\n".join([*result.outlines, *result.errlines])


@pytest.mark.parametrize(
    ("ini", "option", "shown"),
    [
        ("asyncio_default_fixture_loop_scope = function\n", (), "function"),
        ("", ("-o", "asyncio_default_fixture_loop_scope=session"), "session"),
    ],
    ids=["ini-file", "override"],
)
def test_a_value_the_user_sets_is_the_one_used(pytester, ini, option, shown):
    pytester.makeini(f"[pytest]\n{ini}")
    pytester.makepyfile(test_user="def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *option)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"asyncio: *asyncio_default_fixture_loop_scope={shown},*"])
    assert ASYNCIO_WARNING not in "\n".join([*result.outlines, *result.errlines])
