"""Vault's wire conventions, for the routes cipherd serves at Vault's paths (`/v1/transit/...`,
`/v1/sys/mounts`, `/v1/sys/health`, ...), so that Vault's clients (hvac, the `vault` and `bao`
commands) work unchanged:

* routes declared on a `vault_router` are `VaultRoute`s: their errors are `{"errors": [...]}`
  with Vault's statuses (a missing or invalid token is 403 `permission denied`, invalid input
  400), where the native API answers problem documents;
* the token comes in `X-Vault-Token`, or as the native API's `Authorization: Bearer`; the admin
  token acts as Vault's root token;
* an answer is Vault's envelope, `{"request_id", "lease_id", "renewable", "lease_duration",
  "data", "wrap_info", "warnings", "auth"}` (`answer`), or 204 without a body;
* Vault's `LIST` method is a GET with `list=true` (`listing`; the server reads the method LIST
  as that GET, `app.server.uvicorn_internals`), durations are seconds or Go durations
  (`"1h30m"`), and lists may be comma-separated strings.
"""

import functools
import heapq
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Query, Request, Response, Security
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.types import Scope

from app.http.body import EXTRA_SCHEMA_MODELS, JsonAnswer, body_bytes, header, invalid_request
from app.http.deps import admin_access, audit_note, bearer, bearer_token, principal_of, services
from app.http.framework import ROUTE, HandlerRoute
from app.ops.errors import Problem, invalid_input
from app.ops.grants import AdminOperation, Principal
from app.ops.vault_fields import form_as_json, is_form, nulls_as_zeros
from app.ops.work import compute

ModelT = TypeVar("ModelT", bound=BaseModel)
MountT = TypeVar("MountT")

# Paths whose unmatched requests (no route took them) are answered in Vault's shape.
VAULT_PREFIXES = (
    "/v1/sys/mounts",
    "/v1/sys/remount",
    "/v1/sys/health",
    "/v1/sys/seal-status",
    "/v1/sys/leader",
    "/v1/sys/init",
    "/v1/transit/",
    "/v1/sys/wrapping",
    "/v1/sys/auth",
    "/v1/sys/policies",
    "/v1/sys/policy",
    "/v1/sys/capabilities",
    "/v1/sys/capabilities-self",
    "/v1/sys/capabilities-accessor",
    "/v1/sys/leases",
    "/v1/sys/tools",
    "/v1/auth/",
)


class VaultRoute(APIRoute):
    """A route at one of Vault's paths, answered in Vault's shapes; a query parameter it does
    not take is named in the answer's warnings, as Vault names it, not refused."""

    ignores_unknown_query = True


class VaultHandlerRoute(HandlerRoute, VaultRoute):
    """A Vault route whose requests go to a handler of its own, without FastAPI's dependency
    solving: for the calls whose own work is a few microseconds (Transit's encrypt)."""


Handler = Callable[[Request], Awaitable[Response]]


def handled(
    router: APIRouter, path: str, summary: str, body: type[BaseModel]
) -> Callable[[Handler], Handler]:
    """Declare `async def handler(request) -> Response` as the POST route at `path` (its path
    parameters in `request.path_params`), documented with the JSON body `body`."""
    from app.http.operation import operation_id

    def declare(handler: Handler) -> Handler:
        async def endpoint(**_: str) -> None:
            """Never called: the route's handler serves it."""

        parameters = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=str)
            for name in re.findall(r"{(\w+)}", path)
        ]
        endpoint.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        endpoint.__doc__ = None
        route = VaultHandlerRoute(
            router.prefix + path,
            endpoint,
            handler,
            dependencies=list(router.dependencies),
            methods=["POST"],
            name=handler.__name__,
            summary=summary,
            tags=list(router.tags),
            openapi_extra=vault_body(body),
            generate_unique_id_function=operation_id,
        )
        router.routes.append(route)
        return handler

    return declare


# The OpenAPI document's scheme for Vault's token header (`vault_token` reads it).
_VAULT_TOKEN = APIKeyHeader(
    name="X-Vault-Token",
    scheme_name="VaultToken",
    auto_error=False,
    description="a token, as Vault's clients send it (the bearer scheme is taken too)",
)


def vault_router(prefix: str, tag: str, token: bool = True) -> APIRouter:
    """A router of Vault routes; documented as taking Vault's token header or the bearer one,
    unless `token` is false (Vault's health paths)."""
    # Imported here: the problem answers import this module, and the operations import them.
    from app.http.operation import operation_id

    return APIRouter(
        prefix=prefix,
        tags=[tag],
        route_class=VaultRoute,
        generate_unique_id_function=operation_id,
        dependencies=[Security(_VAULT_TOKEN), Security(bearer)] if token else [],
    )


def at_vault_path(path: str) -> bool:
    """Whether `path` is under one of Vault's (`/v1/sys/wrapping/...`, not
    `/v1/sys/wrapping-key`)."""
    return any(
        path.startswith(prefix)
        if prefix.endswith("/")
        else path in (prefix, prefix + "/") or path.startswith(prefix + "/")
        for prefix in VAULT_PREFIXES
    )


def speaks_vault(scope: Scope) -> bool:
    """Whether a request's errors are Vault's: its route is a VaultRoute, or, when no route
    took it, its path is under one of Vault's or it came with Vault's token header (a Vault
    client asking for a path this service does not serve: `bao read` then fails as on Vault)."""
    route = scope.get(ROUTE)
    if route is not None:
        return isinstance(route, VaultRoute)
    return at_vault_path(str(scope.get("path", ""))) or header(scope, b"x-vault-token") is not None


# A problem's status as Vault answers it.
_STATUS = {401: 403, 409: 400, 415: 400, 422: 400}


def vault_error(problem: Problem, headers: dict[str, str] | None = None) -> JsonAnswer:
    """A problem as Vault's error answer; one without words (a read of nothing) has none, as
    Vault's `{"errors": []}`."""
    status = _STATUS.get(problem.status, problem.status)
    denied = problem.status in (401, 403)
    errors = ["permission denied", problem.detail] if denied else [problem.detail]
    errors = [error for error in errors if error]
    headers = dict(headers or {})
    if problem.status in (429, 503):
        headers["Retry-After"] = str(problem.retry_after or 1)
    return JsonAnswer({"errors": errors}, status_code=status, headers=headers)


def vault_token(scope: Scope) -> str | None:
    """The token of a request at Vault's paths: `X-Vault-Token`, else `Authorization: Bearer`."""
    value = header(scope, b"x-vault-token")
    if value:
        return value.decode("latin-1").strip() or None
    return bearer_token(scope)


async def caller(request: Request) -> Principal:
    """Any valid token (as a dependency: `Annotated[Principal, Depends(caller)]`)."""
    return await principal_of(request.scope, services(request).auth, vault_token(request.scope))


async def vault_admin(
    request: Request,
    operations: AdminOperation | tuple[AdminOperation, ...],
    change: bool = False,
) -> Principal:
    """The caller by Vault's token header, if allowed one of the admin `operations` (403); for
    a `change`, only once the audit trail can take its record (503 otherwise)."""
    return await admin_access(request, operations, change, vault_token(request.scope))


async def read_body(request: Request, model: type[ModelT]) -> ModelT:
    """A Vault request's JSON body as `model` (an empty body, or `null` as `bao write -f` sends,
    is `{}`, as Vault takes it), or its form body (`curl -d a=1`) as Vault reads a form. As
    Vault, the answer will warn of the fields the route does not take and of those its path
    gives (`warnings`)."""
    body = await body_bytes(request)
    content = bytes(body.strip())
    if content == b"null":
        content = b""
    if is_form(request.headers.get("content-type", ""), content):
        try:
            content = await compute(len(content), form_as_json, content)
        except ValueError:
            raise invalid_input("error parsing form data") from None
    reader = _reader(model)
    try:
        # A large body is parsed in a thread, as `read_json` parses one: 32 MB of JSON takes
        # the better part of a second.
        if content:
            if b"null" in content:  # Vault reads a field's null as its zero value
                content = await compute(len(content), nulls_as_zeros, content, model)
            read = await compute(len(content), reader.model_validate_json, content)
        else:
            read = reader.model_validate({})
    except ValidationError as exc:
        raise invalid_request(exc, "body") from None
    extra = read.model_extra or {}
    given = read.model_fields_set  # the fields it takes and those it keeps
    if not extra and given.isdisjoint(request.path_params):
        return read  # no warning, and nothing kept that the route could see
    _note_ignored(request, given, model)
    values = {name: getattr(read, name) for name in model.model_fields}
    return model.model_construct(given - extra.keys(), **values)


# A login's body holds a role id and a secret id, a certificate rule's name or a JWT (at most
# 16 KiB): anyone may send one, without a token, so it is held to far less than the JSON limit
# (29 MB of fields a login does not take held a worker for 4 s and 600 MB).
LOGIN_BODY_BYTES = 64 * 1024


async def read_login(request: Request, model: type[ModelT]) -> ModelT:
    """A login's body, as `read_body` reads it, of at most LOGIN_BODY_BYTES (413)."""
    request.state.body_budget.restrict(LOGIN_BODY_BYTES)
    return await read_body(request, model)


@functools.cache
def _reader(model: type[ModelT]) -> type[ModelT]:
    """`model` keeping the fields it does not take, which the answer's warnings name: one parse
    both validates a body and finds them (a second parse of 30 MB of JSON held the event loop
    for seconds). Its fields have no aliases: a client sends them by their names."""
    assert all(field.alias is None for field in model.model_fields.values()), model
    config = ConfigDict(extra="allow")  # the rest of model's configuration is inherited
    return type(model.__name__, (model,), {"model_config": config, "__module__": model.__module__})


# The most names a warning lists: a body may carry a million fields no route takes.
MAX_WARNED_NAMES = 100


def _names(names: set[str]) -> str:
    shown = " ".join(heapq.nsmallest(MAX_WARNED_NAMES, names))  # not all sorted: a million took 2 s
    more = len(names) - MAX_WARNED_NAMES
    return f"[{shown}] and {more:,} more" if more > 0 else f"[{shown}]"


def _note_ignored(request: Request, given: set[str], model: type[BaseModel]) -> None:
    from_path = given & set(request.path_params)
    ignored = given - model.model_fields.keys() - set(request.path_params)
    notes = []
    if from_path:
        notes.append(
            "Endpoint replaced the value of these parameters with the values captured from "
            f"the endpoint's path: {_names(from_path)}"
        )
    if ignored:
        notes.append(f"Endpoint ignored these unrecognized parameters: {_names(ignored)}")
    if notes:
        request.state.vault_warnings = notes


def envelope(
    request: Request,
    data: dict[str, Any] | None = None,
    auth: dict[str, Any] | None = None,
    warnings: list[str] | None = None,
    wrap_info: dict[str, Any] | None = None,
) -> dict[str, Any]:
    # The request's state as the dict it is: Starlette's attribute view raises and catches an
    # AttributeError for a name not set, most requests' case.
    state = request.scope["state"]
    noted = [*(warnings or []), *(state.get("vault_warnings") or [])]
    if "ignored_query" in state:
        names = _names(set(state["ignored_query"]))
        noted.append(f"Endpoint ignored these unrecognized parameters: {names}")
    return {
        "request_id": state["request_id"],
        "lease_id": "",
        "renewable": False,
        "lease_duration": 0,
        "data": data,
        "wrap_info": wrap_info,
        "warnings": noted or None,
        "auth": auth,
    }


async def answer(
    request: Request,
    data: dict[str, Any] | None = None,
    auth: dict[str, Any] | None = None,
    warnings: list[str] | None = None,
) -> Response:
    """Vault's envelope around `data` (and a login's or a token creation's `auth`)."""
    return JsonAnswer(envelope(request, data, auth, warnings))


def tidied(request: Request, removed: int, what: str) -> Response:
    """Vault's answer to a tidy (`auth/token/tidy`, AppRole's `tidy/secret-id`): 202, with a
    warning that says what was done, now rather than in the background."""
    audit_note(request.scope).details.update(removed=removed)
    done = f"Tidy done: {removed:,} expired {what} removed (the service also removes them itself)"
    return JsonAnswer(envelope(request, warnings=[done]), status_code=202)


def mount_table(
    request: Request, table: Mapping[str, MountT], entry: Callable[[MountT], dict[str, Any]]
) -> Response:
    """A table of mounts (`sys/mounts`, `sys/auth`), each path's `entry`."""
    return doubled(request, {f"{path}/": entry(mount) for path, mount in table.items()})


# A mount's lease times as Vault's `tune` gives them: its defaults (32 days); this service's
# mounts issue no leases, so there is nothing to tune.
_LEASE_DEFAULTS = {"default_lease_ttl": 2_764_800, "max_lease_ttl": 2_764_800}


def tuning(request: Request, description: str, **extra: Any) -> Response:
    """A mount's `tune` as Vault answers it (read by hvac's `read_mount_configuration`)."""
    fields = {**_LEASE_DEFAULTS, "force_no_cache": False, "description": description, **extra}
    return doubled(request, fields)


def mount_reads(
    router: APIRouter,
    prefix: str,
    entry: Callable[[Request, str], Awaitable[dict[str, Any]]],
    *,
    what: str,
    name: str,
    **tuned: Any,
) -> None:
    """Declare Vault's reads of one mount under `prefix` (`/mounts`, `/auth`), `entry(request,
    path)` being how `sys/mounts` or `sys/auth` shows it: `{path}` (named `read_<name>`), and
    `{path}/tune`, declared first, as `{path}` would take `transit/tune` for a mount's path.
    Reading its tuning gives Vault's lease defaults (and `tuned`); tuning it, which would
    change nothing (no leases; a description is set when it is enabled), is refused."""

    async def read_tuning(request: Request, path: str) -> Response:
        return tuning(request, (await entry(request, path))["description"], **tuned)

    async def tune(request: Request, path: str) -> Response:
        await entry(request, path)
        raise invalid_input(
            "this service's mounts take no tuning: they issue no leases, and a description is "
            "set when the mount is enabled"
        )

    async def read(request: Request, path: str) -> Response:
        return doubled(request, await entry(request, path))

    at = f"{prefix}/{{path:path}}"
    router.add_api_route(
        f"{at}/tune",
        read_tuning,
        methods=["GET"],
        name=f"read_{name}_tuning",
        summary=f"{what}'s tuning: Vault's lease defaults",
    )
    router.add_api_route(
        f"{at}/tune",
        tune,
        methods=["POST"],
        name=f"tune_{name}",
        summary=f"Tune {what.lower()}: refused, there is nothing to tune",
    )
    router.add_api_route(
        at, read, methods=["GET"], name=f"read_{name}", summary=f"{what}'s settings"
    )


def doubled(request: Request, data: dict[str, Any]) -> Response:
    """Vault's answer at its older system paths (`sys/mounts`, `sys/auth`, `sys/policy`,
    `sys/capabilities`): `data` both at the top level and under `data`."""
    return JsonAnswer({**data, **envelope(request, data)})


def no_content() -> Response:
    return Response(status_code=204)


_ListFlag = Annotated[bool, Query(description="true: list (Vault's method LIST)")]


def listing(
    router: APIRouter, path: str, summary: str, name: str | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a Vault list, `GET path?list=true`, named `name` (else its function's name).
    Vault's clients send the method LIST, which the server reads as this GET
    (`app.server.uvicorn_internals`)."""

    def declare(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        async def get(**arguments: Any) -> Any:
            if not arguments.pop("list"):
                request = arguments.get("request")
                if isinstance(request, Request):
                    await caller(request)  # a valid token before anything else is said
                raise Problem(405, "unsupported", "Unsupported operation", "use list=true")
            return await function(**arguments)

        signature = inspect.signature(function)
        flag = inspect.Parameter(
            "list", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=_ListFlag
        )
        get.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[*signature.parameters.values(), flag]
        )
        declared = router.get(
            path, name=name, summary=f"{summary} (the method LIST, or GET with list=true)"
        )
        declared(get)
        return get

    return declare


def written(
    router: APIRouter,
    path: str,
    endpoint: Callable[..., Awaitable[Response]],
    *,
    methods: Sequence[str],
    summary: str,
    name: str,
    body: type[BaseModel],
) -> None:
    """Declare `endpoint` as a write answered 204 at `path`, once for each of `methods` (Vault's
    clients write with PUT or POST), named `<name>_<method>`."""
    for method in methods:
        router.add_api_route(
            path,
            endpoint,
            methods=[method],
            status_code=204,
            summary=summary,
            name=f"{name}_{method.lower()}",
            openapi_extra=vault_body(body),
        )


def keys_of(names: Sequence[str]) -> dict[str, Any]:
    """A Vault list's data; a list with nothing in it is Vault's 404."""
    if not names:
        raise Problem(404, "not-found", "Not found", "nothing to list")
    return {"keys": list(names)}


def vault_body(model: type[BaseModel]) -> dict[str, Any]:
    """`openapi_extra` declaring the JSON body a Vault route reads with `read_body` (optional:
    Vault takes an empty body as `{}`)."""
    EXTRA_SCHEMA_MODELS.append(model)
    schema = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": False, "content": {"application/json": {"schema": schema}}}}
