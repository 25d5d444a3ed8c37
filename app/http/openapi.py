"""The OpenAPI document: FastAPI's, plus what clients generated from it need (the models the
key operations read themselves, every problem answer, a server, request defaults they can
leave out).

`openapi.yaml` at the top of the repository is this document as YAML (`cipherd openapi`); a
test fails when the file and the code disagree.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic.json_schema import models_json_schema
from starlette.routing import BaseRoute

from app.http.body import EXTRA_SCHEMA_MODELS, OCTET_STREAM
from app.http.problems import PROBLEM_JSON
from app.http.vault import at_vault_path


def install_openapi(app: FastAPI, routes: Sequence[BaseRoute]) -> None:
    """The document of `routes`, in the order given: by family, whatever order the app tries
    them in."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title,
                version=app.version,
                summary=app.summary,
                description=DESCRIPTION,
                routes=list(routes),
                servers=SERVERS,
            )
            _, extra = models_json_schema(
                [(model, "validation") for model in EXTRA_SCHEMA_MODELS],
                ref_template="#/components/schemas/{model}",
            )
            schemas = document.setdefault("components", {}).setdefault("schemas", {})
            for name, schema in extra.get("$defs", {}).items():
                schemas.setdefault(name, schema)
            _document_problems(document)
            _request_defaults(document)
            _links(document)
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _document_problems(document: dict[str, Any]) -> None:
    """Declare every error an operation can answer, as the problem document it really is.

    FastAPI documents its own validation error (a JSON `HTTPValidationError`) and lists the
    `application/problem+json` of declared errors without a schema; the service answers every
    4xx with a `ProblemDetail` as `application/problem+json`. Generated clients and contract
    tests need the document to say so, and to list the 400/401/403/404/413 that any operation
    with a body, a token or a key name can give, the 409 of a key pending deletion, the 422 of
    any (a query parameter it does not take), and the 429 and 503 of any operation that takes a
    token (the throttles of failed authentications and of a token's rate; the store).
    """
    for path, operations in document["paths"].items():
        for operation in operations.values():
            responses = operation["responses"]
            if operation.get("tags") == ["kms"]:  # AWS's errors, which its route declares
                responses.pop("422", None)  # FastAPI's, for the header it documents
                for response in responses.values():
                    response.setdefault("headers", {}).update(_header("X-Request-ID"))
                continue
            body = operation.get("requestBody", {}).get("content", {})
            if at_vault_path(path):
                _document_vault_errors(operation, bool(body), "{" in path)
                continue
            needed = {
                "400": bool(body),
                "401": bool(operation.get("security")),
                "403": bool(operation.get("security")),
                "404": "{" in path,
                "409": "{name}" in path,
                "413": bool(body),
                "422": True,
                "429": bool(operation.get("security")),
                "503": bool(operation.get("security")),
            }
            for status, applies in needed.items():
                if applies and status not in responses:
                    responses[status] = {"description": PROBLEM_DESCRIPTIONS[status]}
            for status, response in responses.items():
                store_unavailable = status == "503" and needed["503"]
                if status.startswith("4") or store_unavailable:
                    if response.get("description") == "Validation Error":
                        response["description"] = PROBLEM_DESCRIPTIONS[status]
                    response["content"] = {PROBLEM_JSON: {"schema": dict(PROBLEM_SCHEMA)}}
                headers = response.setdefault("headers", {})
                headers.update(_header("X-Request-ID"))
                if status == "401":
                    headers.update(_header("WWW-Authenticate"))
                if store_unavailable or status == "429":
                    headers.update(_header("Retry-After"))
            operation["responses"] = dict(sorted(responses.items()))
    document["components"]["headers"] = RESPONSE_HEADERS
    if any(at_vault_path(path) for path in document["paths"]):
        document["components"]["schemas"]["VaultErrors"] = VAULT_ERRORS_SCHEMA
    schemas = document["components"]["schemas"]
    text = repr(document["paths"])
    for unused in ("HTTPValidationError", "ValidationError"):
        if f"#/components/schemas/{unused}'" not in text:
            schemas.pop(unused, None)


def _document_vault_errors(operation: dict[str, Any], body: bool, named: bool) -> None:
    """Declare the errors of an operation at Vault's paths as Vault answers them: `{"errors":
    [...]}` as `application/json`, with Vault's statuses (`app.http.vault.vault_error`: a
    missing or refused token is 403, an invalid request 400 whatever its cause)."""
    secured = bool(operation.get("security"))
    needed = {
        "400": True,
        "403": secured,
        "404": named,
        "405": any(parameter["name"] == "list" for parameter in operation.get("parameters", [])),
        "413": body,
        "429": secured,
        "503": secured,
    }
    responses = {
        status: response
        for status, response in operation["responses"].items()
        if not status.startswith("4")
    }
    for status, applies in needed.items():
        if applies:
            responses[status] = {"description": VAULT_ERROR_DESCRIPTIONS[status]}
    for status, response in responses.items():
        if status.startswith("4") or status == "503":
            response["content"] = {"application/json": {"schema": dict(VAULT_ERRORS_REF)}}
        headers = response.setdefault("headers", {})
        headers.update(_header("X-Request-ID"))
        if status in ("429", "503"):
            headers.update(_header("Retry-After"))
    operation["responses"] = dict(sorted(responses.items()))


def _request_defaults(document: dict[str, Any]) -> None:
    """Say the defaults of request fields in their descriptions, not as `default`.

    openapi-typescript makes every property with a `default` required in a schema it reaches
    through `$ref` (it reads the default as what the answer will always carry), so a client had
    to send every optional field of a request. The service applies the defaults itself.
    """
    schemas = document["components"]["schemas"]
    pending = [
        content["schema"]
        for operations in document["paths"].values()
        for operation in operations.values()
        for content in operation.get("requestBody", {}).get("content", {}).values()
    ]
    seen: set[str] = set()
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            pending.extend(node)
        elif isinstance(node, dict):
            reference = node.get("$ref", "")
            if reference.startswith("#/components/schemas/") and reference not in seen:
                seen.add(reference)
                pending.append(schemas[reference.rsplit("/", 1)[1]])
            for field in node.get("properties", {}).values():
                if "default" in field:
                    default = field.pop("default")
                    if default is not None:
                        described = field.get("description")
                        said = f"default: {json.dumps(default)}"
                        field["description"] = f"{described}; {said}" if described else said
            pending.extend(node.values())


@dataclass(frozen=True)
class _Operation:
    """What `_links` reads of an operation."""

    path: str
    operation: dict[str, Any]
    path_parameters: tuple[str, ...]
    query_parameters: frozenset[str]
    answers: dict[str, set[str]]  # the JSON properties of each 2xx answer
    takes: set[str]  # the JSON request body's properties
    needs: set[str]  # the required ones among them
    raw_answer: bool
    raw_body: bool

    @property
    def family(self) -> str:
        """The path up to its first parameter: `/v1/ecies/` of `/v1/ecies/{name}/encrypt`."""
        return self.path.split("{", 1)[0]

    @property
    def id(self) -> str:
        return str(self.operation["operationId"])


def _operations(document: dict[str, Any]) -> list[_Operation]:
    schemas = document["components"]["schemas"]

    def resolved(schema: dict[str, Any]) -> dict[str, Any]:
        reference = schema.get("$ref", "")
        return schemas[reference.rsplit("/", 1)[1]] if reference else schema

    found = []
    for path, operations in document["paths"].items():
        for operation in operations.values():
            parameters = operation.get("parameters", [])
            body = operation.get("requestBody", {}).get("content", {})
            taken = resolved(body.get("application/json", {}).get("schema", {}))
            answers = {
                status: set(resolved(answer["schema"]).get("properties", {}))
                for status, response in operation["responses"].items()
                if status.startswith("2")
                and (answer := response.get("content", {}).get("application/json"))
            }
            ok = operation["responses"].get("200", {}).get("content", {})
            found.append(
                _Operation(
                    path,
                    operation,
                    tuple(p["name"] for p in parameters if p["in"] == "path"),
                    frozenset(p["name"] for p in parameters if p["in"] == "query"),
                    answers,
                    set(taken.get("properties", {})),
                    set(taken.get("required", [])),
                    OCTET_STREAM in ok,
                    OCTET_STREAM in body,
                )
            )
    return found


def _links(document: dict[str, Any]) -> None:
    """OpenAPI links: how one answer feeds the next request, for stateful clients and fuzzers.

    Derived from the operations themselves, so every route gets them:
    * a creation (a 201) gives each operation with a path parameter its value: the property of
      that name in the answer (a key's `name`), or its `id` when the parameter names an item
      of the created thing's collection (`/v1/tokens/{token_id}`); an answer about an item
      does the same for the operations below the item's path (a scheduled deletion's `name`
      into its restore);
    * on one resource of one family (`/v1/fe/{name}/...`), an answer whose properties another
      operation's body takes, one of which it requires, is that body (an encryption's
      `ciphertext` and `key_version` its decryption's, a keygen's `functional_key` and an
      encryption's `ciphertext` FE decryption's, the other fields left to the caller), with
      the path and the shared query parameters of the request that got the answer; a raw
      answer is the raw body of the same family's other raw operations.

    A link's `requestBody` is one runtime expression: openapi-generator refuses a document
    whose links map body fields one by one.
    """
    operations = _operations(document)
    paths = document["paths"]
    for source in operations:
        for status, properties in source.answers.items():
            links: dict[str, Any] = {}
            for target in operations:
                if target is source:
                    continue
                if status == "201" or target.path.startswith(source.path):
                    creates = {
                        p: p if p in properties else "id"
                        for p in target.path_parameters
                        if p in properties
                        or ("id" in properties and f"{source.path}/{{{p}}}" in paths)
                    }
                    if creates and len(creates) == len(target.path_parameters):
                        links[target.id] = {
                            "operationId": target.id,
                            "parameters": {p: f"$response.body#/{f}" for p, f in creates.items()},
                        }
                    continue
                if target.family != source.family or not source.path_parameters:
                    continue
                if not set(target.path_parameters) <= set(source.path_parameters):
                    continue
                if properties & target.needs and properties <= target.takes:
                    links[target.id] = {
                        "operationId": target.id,
                        "parameters": _passed_on(source, target),
                        "requestBody": "$response.body",
                    }
            if links:
                source.operation["responses"][status]["links"] = links
        if source.raw_answer:
            raw = {
                target.id: {
                    "operationId": target.id,
                    "parameters": _passed_on(source, target),
                    "requestBody": "$response.body",
                }
                for target in operations
                if target is not source
                and target.raw_body
                and target.family == source.family
                and set(target.path_parameters) <= set(source.path_parameters)
            }
            if raw:
                source.operation["responses"]["200"]["links"] = raw


def _passed_on(source: _Operation, target: _Operation) -> dict[str, str]:
    """The target's parameters that the source's request had: its path, shared query."""
    passed = {p: f"$request.path.{p}" for p in target.path_parameters}
    for q in sorted(source.query_parameters & target.query_parameters):
        passed[q] = f"$request.query.{q}"
    return passed


def _header(name: str) -> dict[str, Any]:
    return {name: {"$ref": f"#/components/headers/{name}"}}


RESPONSE_HEADERS = {
    "X-Request-ID": {
        "description": "the request's id, on every log line about it: the client's own "
        "X-Request-ID when that is 1 to 64 characters of A-Z a-z 0-9 . _ : -, else a new one",
        "schema": {"type": "string"},
    },
    "WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}},
    "Retry-After": {"description": "seconds to wait", "schema": {"type": "integer"}},
}
PROBLEM_SCHEMA = {"$ref": "#/components/schemas/ProblemDetail"}
PROBLEM_DESCRIPTIONS = {
    "400": "the body could not be read",
    "401": "missing or invalid token",
    "403": "the token's scope does not allow this",
    "404": "no such key, version or token",
    "409": "the key is pending deletion (POST /v1/keys/{name}/restore cancels it)",
    "413": "the body is over the size limit",
    "422": "the request is invalid",
    "429": "too many requests: failed authentications from this address, or over the token's "
    "rate_per_second; retry after Retry-After seconds",
    "503": "the key store is not answering, or the service stopped first; retry after "
    "Retry-After seconds",
}

VAULT_ERRORS_REF = {"$ref": "#/components/schemas/VaultErrors"}
VAULT_ERRORS_SCHEMA = {
    "title": "VaultErrors",
    "description": "an error at Vault's paths, as Vault answers it",
    "type": "object",
    "properties": {"errors": {"type": "array", "items": {"type": "string"}}},
    "required": ["errors"],
}
VAULT_ERROR_DESCRIPTIONS = {
    "400": "the request is invalid, or its body could not be read",
    "403": "missing or invalid token, or its policies do not allow this",
    "404": "no such key, mount, role or token",
    "405": "a listing asked for without list=true (or the LIST method)",
    "413": "the body is over the size limit",
    "429": PROBLEM_DESCRIPTIONS["429"],
    "503": PROBLEM_DESCRIPTIONS["503"],
}

# The address `cipherd serve` listens on by default: generated clients take it as their default.
SERVERS = [{"url": "http://127.0.0.1:8000", "description": "`cipherd serve` by default"}]


DESCRIPTION = """\
cipherd holds master keys server-side and performs ECIES (secp256k1, x25519, ed25519;
byte-compatible with eciespy and eciesjs), AEZ v5 and pairing-based functional encryption.

Every key-using call carries `Authorization: Bearer <token>`: the admin token, or a scoped token
issued by `POST /v1/tokens` for key-name patterns and operations. Binary fields are base64.
ECIES and AEZ also take raw `application/octet-stream` bodies, with the parameters in the query,
at the same path with `/raw` after it (`POST /v1/ecies/{name}/encrypt/raw`).
Errors are `application/problem+json` (RFC 9457) with a stable `type`. A 503
`store-unavailable`, with `Retry-After`, means the key store did not answer: retry the call.
Every answer carries `X-Request-ID`: the request's own when it sent one of 1 to 64 characters of
A-Z a-z 0-9 . _ : -, else a new one; the service's log lines about the request carry it too.
"""
