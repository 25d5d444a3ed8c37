"""The FastAPI application: settings → store → services → routes.

`create_app` is what uvicorn's workers call (through `create_served_app`, factory mode). Every
worker opens the shared store and reads the root key and admin token from it or the data
directory; none generates key material of its own.
"""

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from app import __version__
from app.http import kms
from app.http.budget import json_values
from app.http.console import install_console
from app.http.docs import install_docs
from app.http.framework import check_releases, install_routes
from app.http.middleware import ObserveMiddleware
from app.http.openapi import install_openapi
from app.http.problems import install_handlers
from app.http.stack import ServiceApp
from app.http.transit import native_segments
from app.ops import Services
from app.routers import (
    aead,
    aez,
    approle,
    audit,
    auth_cert,
    auth_jwt,
    ecies,
    fe,
    health,
    hmac,
    hpke,
    jwt,
    keys,
    policies,
    random,
    rsa,
    sign,
    sys,
    tokens,
    transit_crypto,
    transit_keys,
    vault_auth,
    vault_mounts,
    vault_policies,
    vault_tokens,
    vault_tools,
    vault_wrapping,
)
from app.server.bootstrap import load_admin_token, open_configured_store
from app.server.logs import capture_native_output, configure_logging
from app.settings import Settings, get_settings


def create_app(settings: Settings | None = None) -> FastAPI:
    check_releases()
    settings = settings or get_settings()
    configure_logging(settings.log_format, settings.log_level)
    store = open_configured_store(settings)
    services = Services.build(settings, store, load_admin_token(settings))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services.start()
        yield
        services.close()

    app = ServiceApp(
        title="cipherd",
        version=__version__,
        summary="ECIES, AEZ and pairing-based functional encryption with server-held keys",
        # Metrics go to Prometheus (/metrics); FastAPI's own OpenTelemetry hooks would only add
        # a check to every request.
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    install_docs(app)
    install_console(app, settings.documentation_url)
    app.state.services = services
    install_handlers(app)
    app.add_middleware(
        ObserveMiddleware,
        max_body_bytes=settings.max_body_bytes,
        max_json_body_bytes=settings.max_json_body_bytes,
        body_memory=settings.body_memory_bytes,
        audit=services.audit,
        max_json_values=json_values(settings.fe_max_dimension, settings.fe_max_request_work),
    )
    routes = install_routes(
        app,
        [
            *(family.router for family in (ecies, aez, aead, hpke, rsa, fe, hmac)),
            *sign.routers,
            jwt.router,
            *(family.router for family in (random, keys, tokens, policies, sys, audit, health)),
            vault_mounts.router,
            vault_auth.router,
            auth_jwt.router,
            auth_cert.router,
            approle.router,
            vault_policies.router,
            vault_tokens.router,
            vault_tokens.leases_router,
            vault_mounts.health_router,
            transit_keys.router,
            transit_crypto.router,
            vault_tools.router,
            vault_wrapping.router,
            kms.router,
        ],
    )
    services.mounts.reserved = native_segments(routes)
    install_openapi(app, routes)
    return app


def create_served_app() -> FastAPI:
    """What `cipherd serve` runs in each worker (`app.main:create_served_app`): `create_app`,
    with whatever the C libraries write to stdout or stderr logged as JSON records rather than
    left between the log's lines."""
    settings = get_settings()
    if settings.log_format == "json":
        capture_native_output()
    app = create_app(settings)
    # What is made so far (the modules, the app, its routes and models) lives as long as the
    # worker: frozen, it is left out of the collector's full passes, which would otherwise walk
    # it all (some 158,000 objects, 87-90 ms) while requests wait (docs/performance/choices.md).
    gc.collect()
    gc.freeze()
    return app
