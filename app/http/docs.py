"""The documentation pages, /docs (Swagger UI) and /redoc, with their assets served from here.

FastAPI's own pages load their scripts, styles, fonts and favicon from CDNs and show nothing on a
machine without access to them; these take them from the `fastapi-offline` distribution, which
ships Swagger UI's and ReDoc's bundles, under /docs/assets.
"""

from importlib.resources import files

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.staticfiles import StaticFiles
from starlette.requests import Request
from starlette.responses import HTMLResponse

ASSETS = "/docs/assets"
# The pages may load only what the service serves: ReDoc's bundle still asks a CDN for a logo,
# and a policy is what keeps that request (and any a later bundle adds) from leaving the browser.
# Both bundles style elements inline, Swagger UI's page starts it inline, ReDoc searches in a
# worker made from a blob.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'"
)


def install_docs(app: FastAPI, openapi_url: str = "/openapi.json") -> None:
    """Add /docs, /redoc and their assets to `app` (made with docs_url=None, redoc_url=None)."""
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

    # Plain routes, as FastAPI's own documentation routes are: no dependencies, no schema.
    app.add_route("/docs", swagger_ui, include_in_schema=False)
    app.add_route("/redoc", redoc, include_in_schema=False)


def _restricted(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    return page
