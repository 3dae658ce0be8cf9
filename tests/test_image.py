"""The image, built from the repository's Dockerfile by a real engine and run (docs/docker.md).

Everything is asked from outside, as a container user would: through a port published
on 127.0.0.1, `docker logs`, `docker inspect`, `docker stop`/`restart`. When the base
cannot be pulled a stand-in of the same name is built (tests/container_engine.py); the
session's summary says which base was used. Without an engine these tests skip, saying
what is missing and how to get it; in CI (.ci/run) they fail instead (tests/services.py).
The checks of docs/docker.md's snippets need no engine and run anywhere.
"""

from __future__ import annotations

import os
import re
import ssl
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from mock_server.clock import parse_iso
from tests import container_engine as engine
from tests.container_engine import Container, call, docker, running, wait_for

DOCS = engine.ROOT / "docs" / "docker.md"
HEALTHY_WITHIN = 40.0  # the image checks every 10 s; three checks' worth, and start-up
STOP_WITHIN = 1.0  # docs/docker.md: `docker stop` ends it within a second, exit 0


@pytest.fixture(autouse=True)
def _note_the_image(request: pytest.FixtureRequest) -> Iterator[None]:
    """What the engine and the base were, on each report, for the session's summary
    (tests/conftest.py)."""
    yield
    for note in engine.NOTES:
        request.node.user_properties.append(("container image", note))


@pytest.fixture(scope="module")
def image() -> str:
    """Built once per session, beside the other tests (tests/conftest.py starts it);
    without an engine, every test asking for it skips (fails in CI: tests/services.py)."""
    return engine.prepared_image(engine.IMAGE_TAG)


@pytest.fixture(scope="module")
def default_container(image: str) -> Iterator[Container]:
    """The image as `docker run -p 8080:8080 IMAGE` starts it, nothing set."""
    with running(image) as container:
        yield container


@pytest.fixture(scope="module")
def port_flag_container(image: str) -> Iterator[Container]:
    """`serve --port 9001` after the image name: MOCK_PORT still says 8080."""
    with running(image, "serve", "--port", "9001", publish=(9001,)) as container:
        yield container


def test_the_listening_line_and_health_answer_through_the_published_port(default_container):
    assert engine.wait_listening(default_container) == "listening on http://0.0.0.0:8080"
    assert call(default_container.url() + "/_mock/health") == (200, {"status": "ok"})


def test_the_healthcheck_turns_healthy_by_itself(default_container, port_flag_container):
    # Both containers were started together: one wait covers both.
    for container in (default_container, port_flag_container):
        wait_for(lambda c=container: c.health() == "healthy", "healthy", HEALTHY_WITHIN)


def test_the_healthcheck_follows_a_port_given_as_a_flag(port_flag_container):
    assert engine.wait_listening(port_flag_container) == "listening on http://0.0.0.0:9001"
    wait_for(lambda: port_flag_container.health() == "healthy", "healthy", HEALTHY_WITHIN)
    assert call(port_flag_container.url(9001) + "/_mock/health") == (200, {"status": "ok"})


def test_the_server_runs_as_a_non_root_user(default_container):
    assert default_container.inspect()["Config"]["User"] == "10001:10001"
    status = docker("exec", default_container.id, "cat", "/proc/1/status").stdout
    uids = re.search(r"^Uid:\s+(.*)$", status, re.M)[1].split()
    assert set(uids) == {"10001"}, status


def test_the_image_keeps_no_build_leftovers_pip_or_extra_ca(image):
    listing = docker(
        "run",
        "--rm",
        "--entrypoint",
        "python",
        image,
        "-c",
        "import os, sys; print(os.listdir('/opt/ordering-sandbox')); print(sys.path)\n"
        "import importlib.util as u; print([m for m in ('pip', 'setuptools') if u.find_spec(m)])",
    ).stdout.splitlines()
    assert listing[0] == "['.venv']", listing
    assert listing[2] == "[]", f"pip or setuptools left in the environment: {listing[2]}"
    history = docker("history", "--no-trunc", image).stdout
    config = docker("inspect", image).stdout
    for text in (history, config):
        assert "EXTRA_CA_CERTS" not in text and "BEGIN CERTIFICATE" not in text


def test_a_token_an_order_an_advance_and_the_order_is_completed(image):
    with running(image, options=("--env=MOCK_CLOCK=manual", "--env=MOCK_SEED=7")) as container:
        engine.wait_listening(container)
        base = container.url()
        status, token = call(
            base + "/api/v1/auth/token/client", "POST", {"api_key": "ak_test_default"}
        )
        assert status == 200, token
        auth = {"Authorization": f"Bearer {token['access_token']}"}
        status, order = call(
            base + "/api/v1/orders",
            "POST",
            {"item_id": 1001, "quantity": 2, "merchant_order_id": "docker-1"},
            auth,
        )
        assert (status, order["status"]) == (201, "pending"), order
        assert call(base + "/_mock/clock/advance", "POST", {"seconds": 5})[0] == 200
        status, settled = call(f"{base}/api/v1/orders/{order['id']}", headers=auth)
        assert status == 200
        assert settled["status"] == "completed"
        assert len(settled["codes"]) == 2 and settled["completed_at"]
        assert (
            call(base + "/api/v1/account/balance", headers=auth)[1]["balance"]
            == 1000.0 - (settled["price"])
        )


def test_mock_settings_take_effect_one_by_one(image, tmp_path):
    files = tmp_path / "sandbox"
    files.mkdir()
    (files / "catalog.yaml").write_text(
        "- {id: 5, name: Five, product_type: key, price: 500, base_price: 500,"
        " subscriber_price: 450, min_quantity: 1, max_quantity: 3, in_stock: true}\n"
    )
    (files / "accounts.yaml").write_text(
        "accounts:\n"
        "  - email: shop@example.com\n"
        "    api_key: ak_shop_1\n"
        "    balance: 25.00\n"
        "    webhook_secret: whsec_shop_1\n"
    )
    (files / "slow.yaml").write_text(
        "scenarios:\n  - name: docker_slow\n    steps:\n      - {after: 1m, status: completed}\n"
    )
    for path in (files, *files.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)  # the server runs as uid 10001
    settings = {
        "MOCK_CLOCK": "manual",
        "MOCK_START_TIME": "2026-03-01T10:00:00Z",
        "MOCK_SEED": "11",
        "MOCK_CATALOG": "/cfg/catalog.yaml",
        "MOCK_ACCOUNTS": "/cfg/accounts.yaml",
        "MOCK_SCENARIOS": "/cfg/slow.yaml",
        "MOCK_ADMIN_TOKEN": "adm",
        "MOCK_LOG_FORMAT": "json",
        "MOCK_CORS_ORIGIN": "https://shop.example",
        "MOCK_JOURNAL_SIZE": "2",
        "MOCK_MAX_SANDBOXES": "1",
        "MOCK_SANDBOX_TTL": "120",
        "MOCK_WEBHOOK_URL": "http://127.0.0.1:9/ignored",  # replaced by the accounts file
        "MOCK_LOOP": "asyncio",
    }
    options = (f"--volume={files}:/cfg:ro", *(f"--env={k}={v}" for k, v in settings.items()))
    with running(image, options=options) as container:
        engine.wait_listening(container)
        base, admin = container.url(), {"Authorization": "Bearer adm"}
        assert call(base + "/_mock/clock")[0] == 401  # MOCK_ADMIN_TOKEN
        assert call(base + "/_mock/health") == (200, {"status": "ok"})  # stays open
        assert call(base + "/_mock/clock", headers=admin)[1] == {
            "now": "2026-03-01T10:00:00.000Z",
            "mode": "manual",
            "time_scale": 1.0,
        }
        (item,) = call(base + "/_mock/catalog", headers=admin)[1]["items"]
        assert item["id"] == 5  # MOCK_CATALOG
        (account,) = call(base + "/_mock/accounts", headers=admin)[1]["accounts"]
        assert (account["email"], account["balance"]) == ("shop@example.com", 25.0)
        names = [s["name"] for s in call(base + "/_mock/scenarios", headers=admin)[1]["scenarios"]]
        assert "docker_slow" in names and "happy_path" in names  # MOCK_SCENARIOS adds
        token = call(base + "/api/v1/auth/token/client", "POST", {"api_key": "ak_shop_1"})[1]
        auth = {"Authorization": f"Bearer {token['access_token']}"}
        for _ in range(3):
            call(base + "/api/v1/account/balance", headers=auth)
        journal = call(base + "/_mock/requests", headers=admin)[1]["requests"]
        assert len(journal) == 2  # MOCK_JOURNAL_SIZE
        status, created = call(base + "/_mock/sandboxes", "POST", {}, admin)
        assert status == 201, created
        (entry,) = [
            entry
            for entry in call(base + "/_mock/sandboxes", headers=admin)[1]["sandboxes"]
            if entry["id"] == created["id"]
        ]
        idle = parse_iso(entry["expires_at"]) - parse_iso(entry["last_used_at"])
        assert idle == pytest.approx(120, abs=0.01)  # MOCK_SANDBOX_TTL, in wall seconds
        assert call(base + "/_mock/sandboxes", "POST", {}, admin)[0] >= 400  # MAX_SANDBOXES
        cors = _headers(base + "/_mock/health", {"Origin": "https://shop.example"})
        assert cors.get("Access-Control-Allow-Origin") == "https://shop.example"
        assert "loop         asyncio" in container.logs()[0]  # MOCK_LOOP
        wait_for(lambda: _json_access_line(container.logs()[1]), "a JSON access line", 10)


def test_the_real_clock_webhook_and_url_file_settings_take_effect(image):
    settings = {
        "MOCK_TIME_SCALE": "60",
        "MOCK_WEBHOOK_URL": "http://127.0.0.1:9/hooks",  # never called: nothing settles
        "MOCK_WEBHOOK_INSECURE": "1",
        "MOCK_URL_FILE": "/tmp/elsewhere.url",
    }
    with running(image, options=tuple(f"--env={k}={v}" for k, v in settings.items())) as c:
        engine.wait_listening(c)
        clock = call(c.url() + "/_mock/clock")[1]
        assert (clock["mode"], clock["time_scale"]) == ("real", 60.0)
        (account,) = call(c.url() + "/_mock/accounts")[1]["accounts"]
        assert account["webhook_url"] == "http://127.0.0.1:9/hooks"
        assert "--webhook-insecure" in c.logs()[0]  # the banner warns
        served = docker("exec", c.id, "cat", "/tmp/elsewhere.url").stdout
        assert served == "http://127.0.0.1:8080\n"


def _json_access_line(stderr: str) -> bool:
    """MOCK_LOG_FORMAT=json: request lines (written out every 0.2 s) are JSON objects."""
    return any(line.startswith("{") and '"status"' in line for line in stderr.splitlines())


def _headers(url: str, headers: dict[str, str]) -> dict[str, str]:
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
        return dict(r.headers)


def test_https_by_variables_and_the_healthcheck_follows_it(image):
    options = ("--env=MOCK_TLS=self-signed", "--env=MOCK_TLS_CA_OUT=/data/ca.pem")
    with running(image, options=options) as container:
        assert engine.wait_listening(container) == "listening on https://0.0.0.0:8080"
        ca = docker("exec", container.id, "cat", "/data/ca.pem").stdout
        context = ssl.create_default_context(cadata=ca)
        assert call(container.url(scheme="https") + "/_mock/health", context=context) == (
            200,
            {"status": "ok"},
        )
        check = docker("exec", container.id, "python", "-m", "mock_server.health", check=False)
        assert check.returncode == 0, check.stderr


def test_state_on_a_volume_survives_docker_restart(image):
    volume = f"ordering-sandbox-test-{uuid.uuid4().hex[:8]}"
    docker("volume", "create", volume)
    options = (
        f"--volume={volume}:/data",
        "--env=MOCK_STATE=/data/sandbox.db",
        "--env=MOCK_CLOCK=manual",
        "--env=MOCK_SEED=3",
    )
    try:
        with running(image, options=options) as container:
            engine.wait_listening(container)
            base = container.url()
            token = call(
                base + "/api/v1/auth/token/client", "POST", {"api_key": "ak_test_default"}
            )[1]["access_token"]
            auth = {"Authorization": f"Bearer {token}"}
            order = call(base + "/api/v1/orders", "POST", {"item_id": 1001}, auth)[1]
            before = call(base + "/_mock/orders")[1]
            balance = call(base + "/api/v1/account/balance", headers=auth)[1]
            docker("restart", "--time", "10", container.id)
            container.ports = {8080: engine.host_port(container.id, 8080)}
            wait_for(lambda: _answers(container.url()), "the restarted server", 30)
            base = container.url()
            assert call(base + "/_mock/orders")[1] == before
            assert call(f"{base}/api/v1/orders/{order['id']}", headers=auth)[1] == order
            assert call(base + "/api/v1/account/balance", headers=auth)[1] == balance
    finally:
        docker("volume", "rm", "--force", volume, check=False)


def _answers(url: str) -> bool:
    try:
        return call(url + "/_mock/health")[0] == 200
    except OSError:
        return False


def test_a_bad_config_file_gives_file_line_and_a_non_zero_exit(image, tmp_path):
    (tmp_path / "catalog.yaml").write_text(
        "items:\n  - id: 1\n    name: Broken\n    product_type: gadget\n    price: 100\n"
    )
    tmp_path.chmod(0o755)
    (tmp_path / "catalog.yaml").chmod(0o644)
    completed = docker(
        "run",
        "--rm",
        f"--volume={tmp_path}:/cfg:ro",
        "--env=MOCK_CATALOG=/cfg/catalog.yaml",
        image,
        check=False,
        timeout=60,
    )
    assert completed.returncode == 1, completed
    assert re.search(r"^/cfg/catalog\.yaml:4: .*product_type", completed.stderr, re.M), (
        completed.stderr
    )
    assert "Traceback" not in completed.stderr
    assert "listening" not in completed.stdout


def test_docker_stop_ends_it_with_exit_0_within_a_second(image):
    with running(image) as container:
        engine.wait_listening(container)
        started = time.monotonic()
        docker("stop", "--time", "10", container.id)
        took = time.monotonic() - started
        state = container.inspect()["State"]
        _, err = container.logs()
    assert state["ExitCode"] == 0, err
    assert took < STOP_WITHIN, f"docker stop took {took:.2f} s"
    assert "Traceback" not in err


# -- the snippets of docs/docker.md -------------------------------------------------------


def _snippet(heading: str, language: str) -> str:
    """The first ```language block under the docs' heading `heading`."""
    text = DOCS.read_text("utf-8")
    section = text.split(f"\n### {heading}\n", 1)
    assert len(section) == 2, f"docs/docker.md has no '### {heading}'"
    found = re.search(rf"```{language}\n(.*?)```", section[1], re.S)
    assert found, f"no ```{language} block under '{heading}'"
    return found[1]


def test_the_testcontainers_python_snippet_runs_against_the_image(image, tmp_path):
    snippet = _snippet("Testcontainers for Python", "python")
    assert '"ordering-sandbox"' in snippet
    test_file = tmp_path / "test_snippet.py"
    test_file.write_text(snippet.replace('"ordering-sandbox"', f'"{image}"'))
    # Ryuk, Testcontainers' reaper, is an image of its own that registries must serve;
    # the snippet's `with` removes its container anyway.
    env = {**os.environ, "TESTCONTAINERS_RYUK_DISABLED": "true"}
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    assert re.search(r"\b2 passed\b", completed.stdout), completed.stdout


@pytest.mark.parametrize("heading", ["GitHub Actions", "GitLab CI"])
def test_the_ci_snippets_are_valid_yaml_with_the_image_as_a_service(heading):
    snippet = _snippet(heading, "yaml")
    assert isinstance(yaml.safe_load(snippet), dict)
    assert "ordering-sandbox" in snippet
    assert "--mock-server-url" in snippet  # the pytest plugin against the service
    assert "/_mock/health" in snippet  # waited on before the tests


@pytest.mark.parametrize("heading", ["Testcontainers for Java", "Testcontainers for Node"])
def test_the_other_testcontainers_snippets_wait_on_health(heading):
    language = {"Testcontainers for Java": "java", "Testcontainers for Node": "javascript"}
    snippet = _snippet(heading, language[heading])
    assert "ordering-sandbox" in snippet and "/_mock/health" in snippet
    assert "8080" in snippet


def test_the_docs_build_command_is_the_one_the_tests_use():
    text = DOCS.read_text("utf-8")
    assert "docker build -t ordering-sandbox ." in text
    assert '--build-arg EXTRA_CA_CERTS="$(cat' in text
    assert Path(engine.DOCKERFILE).read_text("utf-8").count("ARG EXTRA_CA_CERTS") == 1
