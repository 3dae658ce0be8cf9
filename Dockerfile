# The ordering sandbox as a container (docs/docker.md).
#
#   docker build -t ordering-sandbox .
#   docker run --rm -p 8080:8080 ordering-sandbox
#
# Behind a proxy that intercepts TLS, give the build its CA (PEM); only the build stage
# sees it, and the image keeps neither the certificate nor the argument:
#
#   docker build --build-arg EXTRA_CA_CERTS="$(cat corp-ca.pem)" -t ordering-sandbox .
#
# tests/test_image.py builds this file unchanged with a real engine and runs the image.

# -- build: the README's install step, in a stage of its own -----------------------------
FROM python:3.11-slim AS build

WORKDIR /opt/ordering-sandbox
COPY pyproject.toml README.md ./
COPY mock_server ./mock_server

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
ARG EXTRA_CA_CERTS=""
# pip trusts the base's store plus EXTRA_CA_CERTS, when given; then the README's install
# step, verbatim (its "Start" section); then pip and setuptools leave the environment,
# which needs neither at run time.
RUN if [ -n "$EXTRA_CA_CERTS" ]; then \
        cat /etc/ssl/certs/ca-certificates.crt > /tmp/trusted.pem \
        && printf '%s\n' "$EXTRA_CA_CERTS" >> /tmp/trusted.pem \
        && export PIP_CERT=/tmp/trusted.pem; \
    fi \
    && python3 -m venv .venv && . .venv/bin/activate && pip install . \
    && pip uninstall --yes pip setuptools

# -- the image: the base, a user, and the environment built above ------------------------
FROM python:3.11-slim

# A non-root user (numeric below, so runAsNonRoot can check it) that owns nothing in
# the image but /data: the one folder the server may write (a MOCK_STATE file, a
# MOCK_TLS_CA_OUT certificate). A named volume mounted there starts owned by it.
RUN groupadd --system --gid 10001 sandbox \
    && useradd --system --no-log-init --no-create-home --shell /usr/sbin/nologin \
        --uid 10001 --gid sandbox sandbox \
    && mkdir /data && chown 10001:10001 /data

WORKDIR /opt/ordering-sandbox
# Only the virtual environment: no sources, no build/ or *.egg-info, no pip.
COPY --from=build /opt/ordering-sandbox/.venv ./.venv

# Every flag of `mock-server` has a MOCK_* variable (docs/docker.md lists them all). The
# image changes the bind address, so the published port is reachable, and names the
# file where the server writes the URL it serves, which the health check reads.
ENV PATH="/opt/ordering-sandbox/.venv/bin:$PATH" \
    PYTHONUNBUFFERED=1 \
    MOCK_HOST=0.0.0.0 \
    MOCK_PORT=8080 \
    MOCK_URL_FILE=/tmp/mock-server.url

USER 10001:10001
EXPOSE 8080

# Asks /_mock/health (open even with MOCK_ADMIN_TOKEN set) at the URL the server wrote
# to MOCK_URL_FILE: it follows the port and HTTPS however they were set, variables or
# flags after the image name. No curl in a slim image: the standard library asks.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["python", "-m", "mock_server.health"]

# Exec form: mock-server is PID 1 and receives SIGTERM itself (clean exit 0 within 1 s).
ENTRYPOINT ["mock-server"]
CMD ["serve"]
