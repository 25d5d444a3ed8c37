"""The web console at /ui, and the front page at / that points to it and to the documentation.

The console is a single page of plain ES modules on Preact and htm (vendored under
`static/vendor`, recorded in VENDORED.md) that speaks to the service only through the public API,
with the token its user enters: it holds no privilege of its own, and this side of it only
serves files. Every file comes from here, so the console works without a network, and its pages
forbid the browser anything else (`PAGE_POLICY`).

The files are read once, at start-up, and served from memory under a path that carries a digest
of them all (`/ui/static/<digest>/...`): a browser may keep them a year, and a new release, with
a new digest, is fetched afresh. The pages themselves are never cached, so they always name the
current digest.
"""

import hashlib
from dataclasses import dataclass
from html import escape
from importlib.resources import files
from importlib.resources.abc import Traversable
from string import Template

from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.responses import RedirectResponse, Response

# Only what the service serves, no inline script or style, no eval, and no string may become
# markup (Trusted Types): the console has every file it needs, and a page that tried anything
# else would show the refusal in the browser's console.
PAGE_POLICY = (
    "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'"
)
_PAGE_HEADERS = {
    "Content-Security-Policy": PAGE_POLICY,
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cross-Origin-Opener-Policy": "same-origin",
}
_ASSET_HEADERS = {
    "Cache-Control": "public, max-age=31536000, immutable",
    "X-Content-Type-Options": "nosniff",
}
# Each kind of file the console ships, with the type it is served as; a file of any other kind
# stops the start-up rather than be served as something the browser guesses.
_MEDIA_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    "": "text/plain; charset=utf-8",  # the vendored libraries' LICENSE files
}
_DOCUMENTATION = "quick start, concepts, configuration, operations"


@dataclass(frozen=True)
class Asset:
    body: bytes
    media_type: str


def _walk(folder: Traversable, prefix: str = "") -> dict[str, Asset]:
    found: dict[str, Asset] = {}
    for entry in folder.iterdir():
        path = f"{prefix}{entry.name}"
        if entry.is_dir():
            found |= _walk(entry, f"{path}/")
            continue
        suffix = "." + entry.name.rsplit(".", 1)[1] if "." in entry.name else ""
        if suffix not in _MEDIA_TYPES:
            raise ValueError(f"the console has a file of no known type: {path}")
        found[path] = Asset(entry.read_bytes(), _MEDIA_TYPES[suffix])
    return found


def digest_of(assets: dict[str, Asset]) -> str:
    """16 hex digits of SHA-256 over every file's path and content."""
    hashed = hashlib.sha256()
    for path in sorted(assets):
        hashed.update(f"{path}\0{len(assets[path].body)}\0".encode())
        hashed.update(assets[path].body)
    return hashed.hexdigest()[:16]


@dataclass(frozen=True)
class Console:
    """The console's files, their digest, and its two pages with the digest in their links."""

    assets: dict[str, Asset]
    digest: str
    shell: bytes
    front: bytes

    @classmethod
    def load(cls, documentation_url: str | None = None) -> "Console":
        """The files from the package; `documentation_url` is the documentation site's, for the
        front page to link to (CIPHERD_DOCUMENTATION_URL)."""
        package = files(__name__)
        assets = _walk(package / "static")
        digest = digest_of(assets)

        def page(name: str, **values: str) -> bytes:
            template = Template((package / name).read_text(encoding="utf-8"))
            return template.substitute(values).encode()

        if documentation_url is None:
            documentation = (
                f"<strong>Documentation</strong> <span>{_DOCUMENTATION}: the site is built "
                "from docs/ with MkDocs; CIPHERD_DOCUMENTATION_URL names where it is served</span>"
            )
        else:
            address = escape(documentation_url, quote=True)
            documentation = f'<a href="{address}">Documentation</a> <span>{_DOCUMENTATION}</span>'
        return cls(
            assets,
            digest,
            shell=page("console.html", static=f"static/{digest}"),
            front=page("front.html", static=f"ui/static/{digest}", documentation=documentation),
        )


def install_console(app: FastAPI, documentation_url: str | None) -> None:
    """Add /, /ui and the console's files to `app`."""
    console = Console.load(documentation_url)
    # FastAPI's routes rather than Starlette's: they name their template to the access log and
    # the metrics, so a request for a file counts under its route, not as an unmatched path.
    page = app.get  # GET, and HEAD through the middleware

    @page("/", include_in_schema=False)
    async def front() -> Response:
        return Response(console.front, media_type="text/html", headers=_PAGE_HEADERS)

    @page("/ui", include_in_schema=False)
    async def to_shell() -> Response:
        # Relative, so that the console works under whatever prefix a proxy serves it from; its
        # own links are relative to /ui/ in turn.
        return RedirectResponse("ui/", status_code=308)

    @page("/ui/", include_in_schema=False)
    async def shell() -> Response:
        return Response(console.shell, media_type="text/html", headers=_PAGE_HEADERS)

    @page("/ui/static/{digest}/{path:path}", include_in_schema=False)
    async def asset(digest: str, path: str) -> Response:
        found = console.assets.get(path)
        if digest != console.digest or found is None:
            # An old digest is a page from another release: its files are not these.
            raise HTTPException(404, "no such file of this release's console")
        return Response(found.body, media_type=found.media_type, headers=_ASSET_HEADERS)
