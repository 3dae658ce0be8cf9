# The ordering sandbox as a container (DESIGN section 11, docs/docker.md).
#
#   docker build -t ordering-sandbox .
#   docker run --rm -p 8080:8080 ordering-sandbox
#
# No container engine runs on the development machines, so tests/test_container.py
# lints this file with hadolint, checks that the install step below is the README's,
# and runs the ENTRYPOINT + CMD with the ENV below as a subprocess.
FROM python:3.11-slim

# A non-root user (numeric below, so runAsNonRoot can check it) that owns nothing in
# the image but /data: the one folder the server may write (a MOCK_STATE file, a
# MOCK_TLS_CA_OUT certificate). A named volume mounted there starts owned by it.
RUN groupadd --system --gid 10001 sandbox \
    && useradd --system --no-log-init --no-create-home --shell /usr/sbin/nologin \
        --uid 10001 --gid sandbox sandbox \
    && mkdir /data && chown 10001:10001 /data

WORKDIR /opt/ordering-sandbox
COPY pyproject.toml README.md ./
COPY mock_server ./mock_server

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# The README's install step, verbatim (its "Start" section), run in WORKDIR.
RUN python3 -m venv .venv && . .venv/bin/activate && pip install .

# Every flag of `mock-server` has a MOCK_* variable (docs/docker.md lists them all);
# the image only changes the bind address, so the published port is reachable.
ENV PATH="/opt/ordering-sandbox/.venv/bin:$PATH" \
    PYTHONUNBUFFERED=1 \
    MOCK_HOST=0.0.0.0 \
    MOCK_PORT=8080

USER 10001:10001
EXPOSE 8080

# /_mock/health stays open when MOCK_ADMIN_TOKEN is set; no curl in a slim image.
# With MOCK_TLS or MOCK_TLS_CERT set it speaks HTTPS, without verifying: it only asks
# whether this very process answers on loopback (a given certificate may not name it).
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["python", "-c", "import os, ssl, urllib.request; tls = bool(os.environ.get('MOCK_TLS') or os.environ.get('MOCK_TLS_CERT')); urllib.request.urlopen(('https' if tls else 'http') + '://127.0.0.1:' + os.environ.get('MOCK_PORT', '8080') + '/_mock/health', timeout=2, context=ssl._create_unverified_context() if tls else None)"]

# Exec form: mock-server is PID 1 and receives SIGTERM itself (clean exit 0 within 1 s).
ENTRYPOINT ["mock-server"]
CMD ["serve"]
