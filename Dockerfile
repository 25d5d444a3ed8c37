# cipherd: the service image. Build:  docker build -t cipherd .
# Run:    docker run --init -p 8000:8000 -e CIPHERD_ADMIN_TOKEN=... -v cipherd-data:/data cipherd
# See docs/operations/docker.md; docker/compose.yaml runs it beside PostgreSQL.

# Build stage: compilers and headers live here only. scripts/install.sh (runtime mode, the same
# script as for a checkout) makes /opt/venv: the petrelic wheel, the dependencies, cipherd's
# client (client/, the `cipherd` command) and cipherd with its C extensions core.aez._aez,
# core.fe._pairing and core.fe._linalg.
FROM python:3.12-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
ENV PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
COPY . .
RUN CIPHERD_VENV=/opt/venv PYTHON=python3.12 scripts/install.sh \
 && cd / && /opt/venv/bin/python -c 'import core.aez._aez, core.fe._pairing, core.fe._linalg, core.fe' \
 && /opt/venv/bin/python -m pip uninstall -y -q pip setuptools wheel

# Final stage: the interpreter of the base image and the venv at the same path, nothing else.
FROM python:3.12-slim
RUN groupadd --gid 10001 cipherd \
 && useradd --uid 10001 --gid cipherd --no-create-home --home-dir /data \
      --shell /usr/sbin/nologin cipherd \
 && mkdir /data && chown cipherd:cipherd /data && chmod 700 /data
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    CIPHERD_DATA_DIR=/data
USER cipherd
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8000
# Probes the port given to `cipherd serve` (read from PID 1's command line, whether that is
# cipherd itself or the --init process in front of it), 8000 by default, over TLS when
# CIPHERD_TLS_CERT_FILE is set (app/server/probe.py).
HEALTHCHECK --interval=15s --timeout=4s --start-period=10s --retries=3 \
  CMD ["python", "-m", "app.server.probe", "/healthz"]
# uvicorn ends on SIGTERM within its 3 s graceful-shutdown limit.
STOPSIGNAL SIGTERM
ENTRYPOINT ["cipherd", "serve", "--host", "0.0.0.0"]
CMD ["--port", "8000"]
