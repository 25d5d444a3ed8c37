"""How Vault reads a request's path before any route: only the root namespace is here
(`X-Vault-Namespace`), and a path of Vault's that ends in '/' is a listing, or refused."""

import re

from starlette.types import ASGIApp, Receive, Scope, Send

from app.http.body import header
from app.http.vault import vault_error
from app.ops.errors import Problem

# What X-Vault-Namespace may say here: the root namespace, the only one this service has.
ROOT_NAMESPACES = ("", "/", "root", "root/")


class RootNamespaceOnly:
    """A request under /v1/ for a Vault namespace other than the root is 404, before anything
    else, as Vault answers a namespace it does not have: never run in the root namespace for
    a client that meant another, whose keys it would then use."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and str(scope["path"]).startswith("/v1/"):
            namespace = header(scope, b"x-vault-namespace")
            if namespace is not None and namespace.decode("latin-1").strip() not in ROOT_NAMESPACES:
                answer = vault_error(Problem(404, "not-found", "Not found", "namespace not found"))
                await answer(scope, receive, send)
                return
        await self.app(scope, receive, send)


def slash_refusal(scope: Scope) -> Problem | None:
    """Vault's reading of a path of its own that ends in '/': a listing (`LIST`, which the
    server reads as GET with list=true) is of the path without it, which the scope is given;
    a write is 400 and anything else 404, as OpenBao answers them (Starlette would redirect,
    and a client that follows would write at the other path)."""
    if scope["method"] in ("POST", "PUT", "PATCH"):
        return Problem(400, "invalid-request", "Invalid request", _WRITE_TO_SLASH)
    if scope["method"] == "GET" and _LISTING.search(scope.get("query_string", b"")):
        scope["path"] = str(scope["path"]).rstrip("/")
        scope["raw_path"] = scope["path"].encode()
        return None
    return Problem(404, "not-found", "Not found", "unsupported path")


_WRITE_TO_SLASH = "cannot write to a path ending in '/'"
_LISTING = re.compile(rb"(?:^|&)list=(?:true|1|t|T|TRUE|True)(?:&|$)")
