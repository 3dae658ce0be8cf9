"""The event loop: uvloop by default where installed, `--loop`/`MOCK_LOOP` to choose."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request

import pytest

from mock_server import loops
from mock_server.cli import parse_serve
from mock_server.config import Settings
from mock_server.testing import ServerThread

needs_uvloop = pytest.mark.skipif(not loops.uvloop_available(), reason="uvloop not installed")


def _banner(*args: str, env: dict[str, str] | None = None) -> str:
    """Start the CLI, read its banner up to the loop line, stop it."""
    argv = [sys.executable, "-m", "mock_server", "--port", "0", "--clock", "manual", *args]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {})},
    )
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.strip().startswith("loop"):
                break
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return "".join(lines)


@needs_uvloop
def test_auto_serves_on_uvloop_when_installed(monkeypatch):
    monkeypatch.delenv("MOCK_LOOP", raising=False)
    assert parse_serve([])[1] == "uvloop"
    assert "  loop         uvloop\n" in _banner()


def test_loop_asyncio_flag_is_said_in_the_banner():
    assert "  loop         asyncio\n" in _banner("--loop", "asyncio")


def test_mock_loop_variable_chooses_the_loop(monkeypatch):
    monkeypatch.setenv("MOCK_LOOP", "asyncio")
    assert parse_serve([])[1] == "asyncio"
    assert "  loop         asyncio\n" in _banner(env={"MOCK_LOOP": "asyncio"})


def test_flag_beats_the_variable(monkeypatch):
    monkeypatch.setenv("MOCK_LOOP", "uvloop" if loops.uvloop_available() else "auto")
    assert parse_serve(["--loop", "asyncio"])[1] == "asyncio"


@pytest.mark.parametrize("how", ["flag", "env"])
def test_unknown_loop_is_refused_with_exit_2(how, monkeypatch, capsys):
    if how == "flag":
        argv = ["--loop", "trio"]
    else:
        argv = []
        monkeypatch.setenv("MOCK_LOOP", "trio")
    with pytest.raises(SystemExit) as exit_info:
        parse_serve(argv)
    assert exit_info.value.code == 2
    assert "--loop must be one of auto, uvloop, asyncio, got 'trio'" in capsys.readouterr().err


def test_uvloop_asked_for_but_missing_is_refused(monkeypatch, capsys):
    monkeypatch.setattr(loops, "uvloop_available", lambda: False)
    assert parse_serve([])[1] == "asyncio"  # auto falls back
    with pytest.raises(SystemExit) as exit_info:
        parse_serve(["--loop", "uvloop"])
    assert exit_info.value.code == 2
    assert "uvloop is not installed" in capsys.readouterr().err


def _serves(server: ServerThread) -> bool:
    with urllib.request.urlopen(server.url + "/_mock/health", timeout=5) as response:
        return response.status == 200


@needs_uvloop
def test_server_thread_runs_on_uvloop_when_installed():
    server = ServerThread(Settings(clock="manual", port=0, seed=1)).start()
    try:
        assert server.loop_name == "uvloop"
        assert type(server._loop).__module__.startswith("uvloop")
        assert _serves(server)
    finally:
        server.stop()


def test_server_thread_can_be_forced_onto_asyncio():
    server = ServerThread(Settings(clock="manual", port=0, seed=1), loop="asyncio").start()
    try:
        assert server.loop_name == "asyncio"
        assert not type(server._loop).__module__.startswith("uvloop")
        assert _serves(server)
    finally:
        server.stop()
