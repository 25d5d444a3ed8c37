"""The FastAPI application: settings → store → services → routes.

`create_app` is what uvicorn's workers call (through `create_served_app`, factory mode). Every
worker opens the shared store and reads the root key and admin token from it or the data
directory; none generates key material of its own.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

from fastapi import FastAPI

from app import __version__
from app.http.docs import install_docs
from app.http.middleware import ObserveMiddleware
from app.http.operation import install_routes
from app.http.problems import install_handlers
from app.http.stack import ServiceApp
from app.ops import Services
from app.routers import aez, audit, ecies, fe, health, hmac, keys, random, sign, sys, tokens
from app.server.bootstrap import load_admin_token, root_key
from app.server.logs import capture_native_output, configure_logging
from app.settings import Settings, get_settings
from app.store import open_store


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    configure_logging(settings.log_format, settings.log_level)
    store = open_store(settings.resolved_database_url, partial(root_key, settings))
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
    )
    install_docs(app)
    app.state.services = services
    install_handlers(app)
    app.add_middleware(
        ObserveMiddleware,
        max_body_bytes=settings.max_body_bytes,
        max_json_body_bytes=settings.max_json_body_bytes,
        body_memory=settings.body_memory_bytes,
        audit=services.audit,
    )
    install_routes(
        app,
        [
            *(family.router for family in (ecies, aez, fe, hmac)),
            *sign.routers,
            *(family.router for family in (random, keys, tokens, sys, audit, health)),
        ],
    )
    return app


def create_served_app() -> FastAPI:
    """What `cipherd serve` runs in each worker (`app.main:create_served_app`): `create_app`,
    with whatever the C libraries write to stdout or stderr logged as JSON records rather than
    left between the log's lines."""
    settings = get_settings()
    if settings.log_format == "json":
        capture_native_output()
    return create_app(settings)
