"""The FastAPI application: settings → store → auth → routers.

`create_app` is what uvicorn's workers call (`app.main:create_app`, factory mode). Every worker
opens the shared store and reads the root key and admin token from it or the data directory;
none generates key material of its own.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from app import __version__
from app.auth import Authenticator
from app.bootstrap import load_admin_token, load_root_key
from app.errors import Problem, install_handlers, problem_response
from app.fe_cache import FeCaches
from app.keyring import Keyring
from app.keystore import KeyWrapper, open_store
from app.logs import configure_logging
from app.middleware import BodyTooLarge, ObserveMiddleware
from app.openapi import install_openapi
from app.routers import aez, ecies, fe, health, keys, tokens
from app.settings import Settings, get_settings


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    configure_logging(settings.log_format, settings.log_level)
    store = open_store(settings.resolved_database_url, KeyWrapper(load_root_key(settings)))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        store.close()

    app = FastAPI(
        title="cipherd",
        version=__version__,
        summary="ECIES, AEZ and pairing-based functional encryption with server-held keys",
        # Metrics go to Prometheus (/metrics); FastAPI's own OpenTelemetry hooks would only add
        # a check to every request.
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.keyring = Keyring(store, settings.key_cache_seconds)
    app.state.fe_caches = FeCaches(
        settings.fe_table_cache_bytes, settings.fe_prepared_cache_entries
    )
    app.state.auth = Authenticator(store, load_admin_token(settings), settings.token_cache_seconds)

    install_handlers(app)

    @app.exception_handler(BodyTooLarge)
    async def _too_large(request: Request, exc: BodyTooLarge) -> JSONResponse:
        return problem_response(Problem(413, "body-too-large", "Body too large", exc.detail))

    app.add_middleware(
        ObserveMiddleware,
        max_body_bytes=settings.max_body_bytes,
        max_json_body_bytes=settings.max_json_body_bytes,
    )
    # The routes join the app's own table. `include_router` would keep each router as a node
    # that FastAPI (0.137 and later) searches on every request, twice for the router that
    # matches: ~20 µs per request to reach the last router's routes here. Routes are tried in
    # order, about 0.6 µs each, so the hot crypto routes come first and the documentation
    # routes FastAPI put in the table (/openapi.json, /docs, /redoc) go last. First of all the
    # single ECIES and AEZ calls, whose work is a few microseconds; batches, whose work dwarfs
    # the matching, after them.
    documentation = list(app.router.routes)
    routers = (ecies.router, aez.router, fe.router, keys.router, tokens.router, health.router)
    routes = [route for router in routers for route in router.routes]
    singles = [
        route
        for router in (ecies.router, aez.router)
        for route in router.routes
        if isinstance(route, APIRoute) and route.path.endswith(("{name}/encrypt", "{name}/decrypt"))
    ]
    app.router.routes[:] = singles + [route for route in routes if route not in singles]
    app.router.routes.extend(documentation)
    install_openapi(app, routes + documentation)
    return app
