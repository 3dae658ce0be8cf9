#!/usr/bin/env bash
# The sandbox's benchmarks in one command: installs wrk (Debian package) if missing,
# then runs bench/bench.py, which prints the table and writes bench/RESULTS.md.
#
#   bash bench/run.sh [bench.py options]      e.g. --duration 10 --runs 5, --no-write
#
# Uses $PYTHON if set, else the active virtual environment's python, else python3; it
# must be able to import mock_server (pip install -e . first).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v wrk >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    echo "installing wrk (apt-get) ..." >&2
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk >/dev/null 2>&1 || {
        $SUDO apt-get update -q >/dev/null
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk >/dev/null
    }
fi
if ! command -v taskset >/dev/null 2>&1; then
    echo "taskset not found (package util-linux): runs will not be pinned" >&2
fi

if [ -z "${PYTHON:-}" ]; then
    if [ -n "${VIRTUAL_ENV:-}" ]; then PYTHON="$VIRTUAL_ENV/bin/python"; else PYTHON=python3; fi
fi
if ! "$PYTHON" -c "import mock_server, aiohttp" 2>/dev/null; then
    echo "$PYTHON cannot import mock_server: activate the project's venv (pip install -e .)" >&2
    exit 2
fi
exec "$PYTHON" bench/bench.py "$@"
