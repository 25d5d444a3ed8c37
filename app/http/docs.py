"""The documentation pages, /docs (Swagger UI) and /redoc, with their assets served from here,
and the OpenAPI document they show, /openapi.json and /openapi.yaml.

FastAPI's own pages load their scripts, styles, fonts and favicon from CDNs and show nothing on a
machine without access to them; these take them from the `fastapi-offline` distribution, which
ships Swagger UI's and ReDoc's bundles, under /docs/assets.

The served document names the address the request came to as its server, so that "Try it out"
calls this service whatever its host and port; `openapi.yaml` in the repository (`cipherd
openapi`) keeps the default address.
"""

from functools import cache
from importlib.resources import files
from typing import Any

import yaml
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.staticfiles import StaticFiles
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

ASSETS = "/docs/assets"
# The pages may load only what the service serves: ReDoc's bundle still asks a CDN for a logo,
# and a policy is what keeps that request (and any a later bundle adds) from leaving the browser.
# Both bundles style elements inline, Swagger UI's page starts it inline, ReDoc searches in a
# worker made from a blob.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'"
)


def openapi_yaml(document: dict[str, Any]) -> str:
    """An OpenAPI document as the YAML of `openapi.yaml` (libyaml's emitter where there is one:
    the same text, six times as fast)."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(document, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100)


def install_docs(app: FastAPI, openapi_url: str = "/openapi.json") -> None:
    """Add /docs, /redoc, their assets and the OpenAPI document to `app` (made with
    docs_url=None, redoc_url=None, openapi_url=None)."""
    assets = files("fastapi_offline") / "static"
    app.mount(ASSETS, StaticFiles(directory=str(assets)), name="docs-assets")
    favicon = f"{ASSETS}/favicon.png"

    async def swagger_ui(request: Request) -> HTMLResponse:
        return _restricted(
            get_swagger_ui_html(
                openapi_url=openapi_url,
                title=f"{app.title} API",
                swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
                swagger_css_url=f"{ASSETS}/swagger-ui.css",
                swagger_favicon_url=favicon,
                # Swagger UI would otherwise send the document to an online validator for a badge.
                swagger_ui_parameters={"validatorUrl": None},
            )
        )

    async def redoc(request: Request) -> HTMLResponse:
        return _restricted(
            get_redoc_html(
                openapi_url=openapi_url,
                title=f"{app.title} API",
                redoc_js_url=f"{ASSETS}/redoc.standalone.js",
                redoc_favicon_url=favicon,
                with_google_fonts=False,
            )
        )

    def document(request: Request) -> JSONResponse:
        return JSONResponse({**app.openapi(), "servers": _servers(request)})

    @cache
    def yaml_around_servers() -> tuple[str, str]:
        """The YAML before and after the document's servers, made once."""
        whole = app.openapi()
        keys = list(whole)
        place = keys.index("servers")
        before = {key: whole[key] for key in keys[:place]}
        after = {key: whole[key] for key in keys[place + 1 :]}
        return openapi_yaml(before), openapi_yaml(after)

    def document_yaml(request: Request) -> Response:
        before, after = yaml_around_servers()
        servers = openapi_yaml({"servers": _servers(request)})
        return Response(before + servers + after, media_type="application/yaml")

    # Plain routes, as FastAPI's own documentation routes are: no dependencies, no schema.
    app.add_route("/docs", swagger_ui, include_in_schema=False)
    app.add_route("/redoc", redoc, include_in_schema=False)
    app.add_route(openapi_url, document, include_in_schema=False)
    app.add_route("/openapi.yaml", document_yaml, include_in_schema=False)


def _servers(request: Request) -> list[dict[str, str]]:
    """The address `request` came to, as the document's only server."""
    return [{"url": str(request.base_url).rstrip("/"), "description": "this service"}]


def _restricted(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    return page
