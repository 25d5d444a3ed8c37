"""AWS KMS's JSON protocol at `POST /`, so that AWS's SDKs, the `aws` command and the AWS
Encryption SDK work unchanged with `endpoint_url` pointed at the service.

A request names its action in `X-Amz-Target: TrentService.<Action>`, carries its members as a
JSON object (`Content-Type: application/x-amz-json-1.1`) and is signed with SigV4
(`app.http.kms.sigv4`) by an AWS access key pair of a scoped token (`POST /v1/tokens` with
`aws_credentials`). What is checked, in order, and what a failure answers:

1. the Authorization header and X-Amz-Date (IncompleteSignatureException; a date more than
   five minutes away, InvalidSignatureException), before anything is read;
2. the access key id (UnrecognizedClientException; an expired token's, ExpiredTokenException);
3. the body, read within the JSON body limit, and the signature over it
   (InvalidSignatureException); failures of 2 and 3 count against the client's address as
   failed tokens do (ThrottlingException past them), and the token's rate is charged;
4. the action (UnknownOperationException) and its members (ValidationException);
5. the action itself (`app.ops.kms`): the token's scope, the key, the native verb.

Every answer is `application/x-amz-json-1.1`; an error is `{"__type", "message"}` with AWS's
status (400 for most, 403 MissingAuthenticationTokenException, 500 KMSInternalException, 503
DependencyTimeoutException). Each request
gets an audit record, as the native operation it ran with the action in its details.
"""

import hashlib
import json
from typing import Annotated, Any

from fastapi import APIRouter, Header, Request, Response, Security
from fastapi.security import APIKeyHeader
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Scope

from app.http.body import header
from app.http.deps import arrival, audit_note, client_address, services
from app.http.framework import HandlerRoute, takes_any_query
from app.http.kms import sigv4
from app.http.operation import operation_id
from app.http.problems import BodyMemoryFull, BodyTooLarge
from app.ops import Services
from app.ops.audit import AuditNote
from app.ops.errors import first_errors, unauthorized
from app.ops.kms.actions import NOT_SERVED, Action, KmsCall, declared
from app.ops.kms.errors import KmsError, access_denied, kms_error, unsupported, validation
from app.ops.work import compute, in_thread

AMZ_JSON = "application/x-amz-json-1.1"
TARGET_PREFIX = "TrentService."
_UNRECOGNIZED = "The security token included in the request is invalid."


class KmsRoute(HandlerRoute):
    """`POST /`: every KMS action. Its requests are audited though its path is not under /v1/,
    as `kms` until the action names its native operation."""

    audit_operation = "kms"


def _answer(status: int, body: dict[str, Any], request_id: str) -> Response:
    return Response(
        json.dumps(body, separators=(",", ":")),
        status_code=status,
        media_type=AMZ_JSON,
        headers={"x-amzn-RequestId": request_id},
    )


def error_answer(error: KmsError, note: AuditNote, request_id: str) -> Response:
    """An error as KMS answers it; its type is noted for the audit record."""
    note.problem = error.type
    response = _answer(error.status, {"__type": error.type, "message": error.message}, request_id)
    if error.retry_after is not None:
        response.headers["Retry-After"] = str(error.retry_after)
    return response


async def _signed(request: Request, service: Services, note: AuditNote) -> tuple[KmsCall, bytes]:
    """The caller of a signed request and its body (steps 1 to 3 above)."""
    scope = request.scope
    authorization = header(scope, b"authorization")
    auth = sigv4.parse_authorization(
        None if authorization is None else authorization.decode("latin-1")
    )
    amz_date = header(scope, b"x-amz-date")
    signed_at = sigv4.check_date(
        auth, None if amz_date is None else amz_date.decode("latin-1"), service.store.clock.now()
    )
    authenticator = service.auth
    await authenticator.current_state(arrival(scope))
    cached = authenticator.cached_aws_credential(auth.access_key_id)
    found = (
        cached[0]
        if cached is not None
        else await in_thread(authenticator.aws_credential, auth.access_key_id)
    )
    if found is None:
        _refuse(request, KmsError("UnrecognizedClientException", _UNRECOGNIZED))
    assert found is not None
    credential, principal = found
    body = await request.body()
    try:
        canonical = sigv4.canonical_request(
            scope["method"],
            scope.get("raw_path", b"/").decode("latin-1"),
            scope.get("query_string", b"").decode("latin-1"),
            scope["headers"],
            auth.signed_headers,
            _payload_hash(scope, body),
        )
        sigv4.verify(credential.secret, auth, signed_at, canonical)
    except KmsError as error:
        _refuse(request, error)
    # Only now, the signature good: to others, an expired token's key is any unknown one.
    if not authenticator.alive(credential.token):
        raise KmsError(
            "ExpiredTokenException", "The security token included in the request is expired"
        )
    if not principal.reachable_from(client_address(scope)):
        raise access_denied("The token these credentials act for is bound to other addresses")
    if credential.token.uses_left is not None:
        await in_thread(authenticator.spend_use, credential.token)
    note.principal = principal.id
    authenticator.admit(principal)
    return KmsCall(service, principal, note, auth.region, ""), body


def _payload_hash(scope: Scope, body: bytes) -> str:
    """The body's SHA-256 in hex (a client's x-amz-content-sha256 must say the same: KMS signs
    every body, never S3's UNSIGNED-PAYLOAD)."""
    digest = hashlib.sha256(body).hexdigest()
    claimed = header(scope, b"x-amz-content-sha256")
    if claimed is not None and claimed.decode("latin-1") != digest:
        raise sigv4.invalid(
            "The provided 'x-amz-content-sha256' header does not match what was computed."
        )
    return digest


def _refuse(request: Request, error: KmsError) -> None:
    """Raise `error` for a request whose credentials failed; past the address's allowance of
    failures, ThrottlingException instead."""
    problem = services(request).auth.refusal(
        client_address(request.scope), unauthorized(error.message)
    )
    if problem.status == 429:
        throttled = KmsError("ThrottlingException", "Rate exceeded")
        throttled.retry_after = problem.retry_after or 1
        raise throttled
    raise error


def _action(request: Request, actions: dict[str, Action]) -> Action:
    target = (header(request.scope, b"x-amz-target") or b"").decode("latin-1")
    found = (
        actions.get(target.removeprefix(TARGET_PREFIX))
        if target.startswith(TARGET_PREFIX)
        else None
    )
    if found is None:
        why = NOT_SERVED.get(target.removeprefix(TARGET_PREFIX))
        if why is not None:
            raise unsupported(f"{target} is not supported by this service: {why}")
        raise KmsError("UnknownOperationException", f"Unknown operation {target[:128]!r}")
    media = (header(request.scope, b"content-type") or b"").decode("latin-1").split(";")[0].strip()
    if media not in (AMZ_JSON, "application/x-amz-json-1.0"):
        raise KmsError("UnknownOperationException", f"Content-Type {media[:64]!r}: send {AMZ_JSON}")
    return found


# Base64's own error names a symbol of the value and where it stands.
_BASE64 = "Member must be valid base64"


def _members(action: Action, body: bytes) -> Any:
    """The request's members as the action's request model (ValidationException, in AWS's
    words, naming the members but never their values)."""
    try:
        return action.request.model_validate_json(body or b"{}")
    except ValidationError as exc:
        described = "; ".join(
            f"Value at '{'.'.join(str(p) for p in e['loc']) or 'body'}' failed to satisfy "
            f"constraint: {_BASE64 if e['type'] == 'bytes_invalid_encoding' else e['msg']}"
            for e in first_errors(exc, 10)
        )
        count = exc.error_count()
        described = described or "too many to describe"
        raise validation(
            f"{count} validation error{'s' if count > 1 else ''} detected: {described}"
        ) from None


# The OpenAPI document's scheme for SigV4's Authorization header.
_SIGV4 = APIKeyHeader(
    name="Authorization",
    scheme_name="AwsSigV4",
    auto_error=False,
    description="AWS Signature Version 4: AWS4-HMAC-SHA256 Credential=<access key id>/<date>/"
    "<region>/kms/aws4_request, SignedHeaders=..., Signature=...; with X-Amz-Date",
)
_MEMBERS = {"type": "object", "additionalProperties": True}
_ERROR = {
    "type": "object",
    "required": ["__type", "message"],
    "properties": {
        "__type": {"type": "string", "examples": ["NotFoundException"]},
        "message": {"type": "string"},
    },
}
_OPENAPI: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {AMZ_JSON: {"schema": _MEMBERS}},
        "description": "the action's request members, as AWS's API reference lists them",
    },
    "responses": {
        "200": {
            "description": "the action's answer members",
            "content": {AMZ_JSON: {"schema": _MEMBERS}},
        },
        "400": {
            "description": "AWS's error of the action or of the signature",
            "content": {AMZ_JSON: {"schema": _ERROR}},
        },
        "403": {
            "description": "MissingAuthenticationTokenException: no Authorization header",
            "content": {AMZ_JSON: {"schema": _ERROR}},
        },
        "500": {"description": "KMSInternalException", "content": {AMZ_JSON: {"schema": _ERROR}}},
        "503": {
            "description": "DependencyTimeoutException: the store is unavailable; retry",
            "content": {AMZ_JSON: {"schema": _ERROR}},
        },
    },
}
_Target = Annotated[
    str, Header(alias="X-Amz-Target", description="TrentService.<Action>: TrentService.Encrypt")
]


def router_for(actions: dict[str, Action]) -> APIRouter:
    """The router of `POST /`, serving `actions`."""

    async def handle(request: Request) -> Response:
        note = audit_note(request.scope)
        request_id = request.state.request_id
        try:
            call, body = await _signed(request, services(request), note)
            action = _action(request, actions)
            call.action = note.details["action"] = action.name
            answer = await action.run(call, await compute(len(body), _members, action, body))
        except BodyTooLarge as exc:
            return error_answer(KmsError("ValidationException", exc.detail, 413), note, request_id)
        except BodyMemoryFull as exc:
            throttled = KmsError("ThrottlingException", exc.detail)
            throttled.retry_after = 1
            return error_answer(throttled, note, request_id)
        except Exception as exc:
            error = None if isinstance(exc, StarletteHTTPException) else kms_error(exc)
            if error is None:  # a bug, or the server's own refusal: answered as it answers them
                raise
            return error_answer(error, note, request_id)
        return _answer(200, answer, request_id)

    # A query is AWS's to ignore: SigV4 signs it, and a presigned one lacks the Authorization
    # header (MissingAuthenticationTokenException), either answered in AWS's shape.
    @takes_any_query
    async def kms(x_amz_target: _Target) -> None:
        pass

    kms.__doc__ = None  # the route's description is its own
    router = APIRouter(tags=["kms"], generate_unique_id_function=operation_id)
    router.routes.append(
        KmsRoute(
            "/",
            kms,
            handle,
            methods=["POST"],
            name="kms",
            summary="AWS KMS's API: the action in X-Amz-Target, signed with SigV4",
            description="Every action of AWS KMS's JSON protocol (docs/api/kms.md lists them): "
            "its request members as a JSON object, its answer's members as one, as AWS "
            "documents them. Signed with AWS Signature Version 4 (service kms, any region) by "
            "the AWS key pair of a scoped token (POST /v1/tokens with aws_credentials).",
            tags=["kms"],
            response_class=Response,
            dependencies=[Security(_SIGV4)],
            openapi_extra=_OPENAPI,
            generate_unique_id_function=operation_id,
        )
    )
    return router


router = router_for(declared())
