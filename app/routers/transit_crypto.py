"""Transit's data paths (`encrypt`, `decrypt`, `rewrap`, `datakey`, `hmac`, `sign`, `verify`;
`hash` and `random` come from `app.routers.vault_tools`) in Vault's shapes: each the native
family's verb on the key, with the native operation's scope and audit record; `batch_input` runs
it on every item, a single call on one.
"""

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import Request, Response
from pydantic import Field

from app.http.batch import check_batch_size
from app.http.body import JsonAnswer
from app.http.deps import audit_note
from app.http.transit import TransitCall, transit_call
from app.http.vault import envelope, handled, read_body, vault_body, vault_router
from app.ops.grants import Operation
from app.ops.hpke import HpkeKey
from app.ops.rsa import RsaKey
from app.ops.transit import batches, crypto, keys, signing
from app.ops.transit.crypto import TransitItem
from app.ops.transit.keys import TransitKeyCreate
from app.ops.vault_fields import VaultBool, VaultInt
from app.ops.versioned import VersionedKey
from app.ops.work import compute, in_thread
from app.routers.transit_keys import TransitName
from app.routers.vault_tools import add_tools
from app.settings import MAX_BATCH_ITEMS

router = vault_router("/v1/transit", "transit")
# An item's fields whose size decides whether a single call runs on the event loop.
_CARRIED = ("plaintext", "ciphertext", "input", "hmac", "signature")
# Vault's words for a key that does not exist, where it encrypts, decrypts or HMACs (a 400).
_NO_ENCRYPTION_KEY = "encryption key not found"
# OpenBao's warning when it does not take a `partial_failure_response_code`.
_PARTIAL_FAILURE_REVERTED = (
    "invalid HTTP response code override from partial_failure_response_code, reverting to 400"
)


class TransitDataRequest(TransitItem):
    """A data verb's body: one item's fields, or `batch_input`, and the verb's options."""

    # Bounded in the schema by the most any CIPHERD_MAX_BATCH_ITEMS allows: validation stops
    # there, where a million items cost 3.5 s of the event loop and 600 MB before the count
    # was checked (`_items` checks the configured limit, which is lower).
    batch_input: list[TransitItem] | None = Field(None, max_length=MAX_BATCH_ITEMS)
    key_version: VaultInt | None = None
    type: str | None = None
    convergent_encryption: VaultBool = False
    partial_failure_response_code: VaultInt | None = None
    bits: VaultInt = 256
    algorithm: str | None = None
    hash_algorithm: str | None = None
    prehashed: VaultBool = False
    signature_algorithm: str | None = None
    marshaling_algorithm: str = "asn1"
    salt_length: str | int | None = None


def _refused(body: TransitDataRequest, shape: batches.BatchShape) -> None:
    """What Vault refuses of a body before it touches a key (so encryption creates none): an
    empty batch, and, where `shape` says, items that carry a context only in part."""
    if body.batch_input is not None and not body.batch_input:
        raise crypto.user_error("missing batch input to process")
    items = body.batch_input or [body]
    if shape.contexts_all_or_none and len({not item.context for item in items}) > 1:
        raise crypto.user_error("context should be set either in all the request blocks or in none")


async def _items(call: TransitCall, body: TransitDataRequest) -> list[TransitItem]:
    items: list[TransitItem] = body.batch_input if body.batch_input is not None else [body]
    check_batch_size(len(items), call.services.settings.max_batch_items)
    call.services.auth.admit_batch(call.principal, len(items))
    return items


async def _run(
    request: Request,
    call: TransitCall,
    body: TransitDataRequest,
    key: VersionedKey,
    run: Any,
    single_fields: tuple[str, ...],
    shape: batches.BatchShape,
) -> Response:
    """`run(item)` on the body's items: a batch's `batch_results` in a thread, written and
    answered as `shape` says (400 if an item failed, or `partial_failure_response_code` when
    some did not, where Vault refuses such a batch), a single call's fields on the event loop
    when small, its key version fetched first."""
    _refused(body, shape)
    items = await _items(call, body)
    if body.batch_input is None:
        await call.services.transit.warm(key, body)
        results, failed = await compute(_carried_bytes(body), crypto.run_items, items, run)
    else:
        results, failed = await in_thread(crypto.run_items, items, run)
    note_versions(request, results)
    if body.batch_input is not None:
        status, warnings = 200, None
        if failed and shape.refused_if_failed:
            status = 400
            code = body.partial_failure_response_code
            if code is not None and any("error" not in r for r in results):
                if carries_a_body(code):
                    status = code
                else:
                    warnings = [_PARTIAL_FAILURE_REVERTED]
        data = {"batch_results": [shape.entry(r, i) for r, i in zip(results, items, strict=True)]}
        return JsonAnswer(envelope(request, data, warnings=warnings), status_code=status)
    result = results[0]
    if "error" in result:
        raise crypto.user_error(result["error"])
    return JsonAnswer(envelope(request, {f: result[f] for f in single_fields if f in result}))


def carries_a_body(status: int) -> bool:
    """Whether an answer of `status` may carry the batch's results. OpenBao takes any code from
    1 to 599, but HTTP gives 1xx, 204, 205 and 304 no body: such an answer loses the results or
    breaks the connection, so such a code falls back to 400, with OpenBao's warning for a code
    it does not take."""
    return 200 <= status <= 599 and status not in (204, 205, 304)


def _carried_bytes(item: TransitItem) -> int:
    return sum(len(getattr(item, field) or "") for field in _CARRIED)


def note_versions(request: Request, results: list[dict[str, Any]]) -> None:
    audit_note(request.scope).versions([r.get("key_version") for r in results])


# The types an encryption creates a missing key of, as Transit's.
UPSERTED_TYPES = ("aes128-gcm96", "aes256-gcm96", "chacha20-poly1305", "xchacha20-poly1305")


async def _upserted(request: Request, call: TransitCall, body: TransitDataRequest) -> VersionedKey:
    """The key that encrypts. Transit creates a missing key on its first encryption, for a
    caller who may create keys (the admin token) unless the mount's `config/keys` disables it:
    of the body's `type`, derived when the items carry a context."""
    services = call.services
    key = await services.transit.found(call.name, sealing=True)
    if key is not None:
        return _named_for(request, key, "encrypt")
    items = body.batch_input if body.batch_input is not None else [body]
    key_type = body.type or "aes256-gcm96"
    if key_type not in UPSERTED_TYPES:
        raise crypto.user_error(
            f"key type {key_type} not supported for this operation"
            if key_type.startswith("ecdsa-")
            else f"unknown key type {key_type}"
        )
    create = TransitKeyCreate(
        type=key_type,
        derived=bool(items and items[0].context),
        convergent_encryption=body.convergent_encryption,
    )
    if call.principal.admin:
        await services.audit.admit_change(audit_note(request.scope))
    await in_thread(
        keys.upsert,
        services.store,
        call.mount,
        call.name,
        create,
        call.principal.admin,
        services.settings,
    )
    return await _sealing_key(request, call, "encrypt")


async def _sealing_key(request: Request, call: TransitCall, operation: str) -> VersionedKey:
    """The key that encrypts."""
    key = await call.services.transit.key(call.name, sealing=True, missing=_NO_ENCRYPTION_KEY)
    return _named_for(request, key, operation)


def _named_for(request: Request, key: VersionedKey, operation: str) -> VersionedKey:
    """`key`; for an RSA or HPKE key, the record names that family's own operation (rewrap,
    which neither has natively, keeps its name)."""
    if isinstance(key, RsaKey | HpkeKey) and operation:
        family = "rsa" if isinstance(key, RsaKey) else "hpke"
        audit_note(request.scope).operation = f"{family}_{operation}"
    return key


@handled(
    router,
    "/encrypt/{name}",
    "Encrypt (Transit): vault:v<N>: and the base64 of nonce, ciphertext and tag",
    TransitDataRequest,
)
async def encrypt(request: Request) -> Response:
    name = request.path_params["name"]
    call = await transit_call(request, "aead_encrypt", Operation.ENCRYPT, name)
    body = await read_body(request, TransitDataRequest)
    _refused(body, batches.ENCRYPTED)
    key = await _upserted(request, call, body)
    return await _run(
        request,
        call,
        body,
        key,
        lambda item: crypto.encrypt(key, item),
        ("ciphertext", "key_version"),
        batches.ENCRYPTED,
    )


@handled(router, "/decrypt/{name}", "Decrypt (Transit)", TransitDataRequest)
async def decrypt(request: Request) -> Response:
    name = request.path_params["name"]
    call = await transit_call(request, "aead_decrypt", Operation.DECRYPT, name)
    body = await read_body(request, TransitDataRequest)
    key = await _sealing_key(request, call, "decrypt")
    return await _run(
        request,
        call,
        body,
        key,
        lambda item: crypto.decrypt(key, item),
        ("plaintext",),
        batches.DECRYPTED,
    )


@router.post(
    "/rewrap/{name}",
    summary="Rewrap under the latest version (Transit)",
    openapi_extra=vault_body(TransitDataRequest),
)
async def rewrap(request: Request, name: TransitName) -> Response:
    access = (Operation.DECRYPT, Operation.ENCRYPT)
    call = await transit_call(request, "aead_rewrap", access, name)
    body = await read_body(request, TransitDataRequest)
    key = await _sealing_key(request, call, "")
    return await _run(
        request,
        call,
        body,
        key,
        lambda item: crypto.rewrap(key, item),
        ("ciphertext", "key_version"),
        batches.REWRAPPED,
    )


async def _datakey(request: Request, kind: str, name: str, bits: int | None) -> Response:
    call = await transit_call(request, "aead_datakey", Operation.ENCRYPT, name)
    body = await read_body(request, TransitDataRequest)
    if kind not in ("plaintext", "wrapped"):
        raise crypto.user_error(f"invalid type {kind}")
    key = await call.services.transit.key(call.name, sealing=True, missing=_NO_ENCRYPTION_KEY)
    size = bits or body.bits
    fields = ("ciphertext", "key_version", "plaintext")
    body.batch_input = None
    return await _run(
        request,
        call,
        body,
        key,
        lambda item: crypto.datakey(key, item, size, kind == "plaintext"),
        fields,
        batches.ENCRYPTED,  # never a batch: Vault's datakey takes none
    )


@router.post(
    "/datakey/{kind}/{name}",
    summary="A data key, with its plaintext or wrapped only (Transit)",
    openapi_extra=vault_body(TransitDataRequest),
)
async def datakey(request: Request, kind: str, name: TransitName) -> Response:
    return await _datakey(request, kind, name, None)


def _hash_in_body_or_path(
    verb: str,
    run: Callable[[Request, str, str | None], Awaitable[Response]],
    summary: str,
    summary_with: str,
) -> None:
    """Declare the data verb `run(request, name, algorithm)` at `/<verb>/{name}`, the hash named
    in the body (`algorithm` None), and at `/<verb>/{name}/{algorithm}`, as Vault's paths have
    it; the routes are named `<verb>` and `<verb>_with`."""

    @router.post(
        f"/{verb}/{{name}}",
        name=verb,
        summary=summary,
        openapi_extra=vault_body(TransitDataRequest),
    )
    async def hash_in_body(request: Request, name: TransitName) -> Response:
        return await run(request, name, None)

    @router.post(
        f"/{verb}/{{name}}/{{algorithm}}",
        name=f"{verb}_with",
        summary=summary_with,
        openapi_extra=vault_body(TransitDataRequest),
    )
    async def hash_in_path(request: Request, name: TransitName, algorithm: str) -> Response:
        return await run(request, name, algorithm)


async def _hmac(request: Request, name: str, algorithm: str | None) -> Response:
    call = await transit_call(request, "hmac_hmac", Operation.HMAC, name)
    body = await read_body(request, TransitDataRequest)
    chosen = crypto.algorithm_of(algorithm or body.algorithm)
    key = await call.services.transit.key(call.name, any_type=True, missing=_NO_ENCRYPTION_KEY)
    assert isinstance(key, crypto.TransitKey)
    return await _run(
        request,
        call,
        body,
        key,
        lambda item: crypto.hmac_item(key, item, chosen),
        ("hmac", "key_version"),
        batches.HMACS,
    )


_hash_in_body_or_path(
    "hmac", _hmac, "HMAC (Transit)", "HMAC with a hash named in the path (Transit)"
)


def _with_input(body: TransitDataRequest) -> TransitDataRequest:
    """The body, with a single call's missing `input` empty, as Transit signs and verifies it
    (a batch entry without one is refused)."""
    if body.batch_input is None and body.input is None:
        body.input = ""
    return body


async def _sign(request: Request, name: str, algorithm: str | None) -> Response:
    call = await transit_call(request, "sign_sign", Operation.SIGN, name)
    body = _with_input(await read_body(request, TransitDataRequest))
    key = signing.as_signer(
        await call.services.transit.key(call.name, missing="signing key not found")
    )
    options = _sign_options(key.latest.type, body, algorithm)
    return await _run(
        request,
        call,
        body,
        key,
        lambda item: signing.sign_item(key, item, options),
        ("signature", "key_version", "public_key"),
        batches.SIGNED,
    )


def _sign_options(
    key_type: str, body: TransitDataRequest, algorithm: str | None
) -> signing.SignOptions:
    chosen = signing.signing_hash_of(algorithm or body.hash_algorithm)
    return signing.sign_options(
        key_type,
        chosen,
        body.prehashed,
        body.marshaling_algorithm,
        body.signature_algorithm,
        body.salt_length,
    )


_hash_in_body_or_path(
    "sign", _sign, "Sign (Transit)", "Sign with a hash named in the path (Transit)"
)


async def _verify(request: Request, name: str, algorithm: str | None) -> Response:
    # A valid token first; what it must be allowed depends on the body: an HMAC or a signature.
    call = await transit_call(request, "verify_verify", (), name)
    body = _with_input(await read_body(request, TransitDataRequest))
    is_hmac = signing.verifies_hmacs(body.batch_input, body)
    if is_hmac:
        audit_note(request.scope).operation = "hmac_verify"
    call.allow(Operation.HMAC if is_hmac else Operation.VERIFY)
    named = algorithm or body.algorithm or body.hash_algorithm
    chosen = crypto.algorithm_of(named) if is_hmac else signing.signing_hash_of(named)
    missing = _NO_ENCRYPTION_KEY if is_hmac else "signature verification key not found"
    key = await call.services.transit.key(call.name, any_type=is_hmac, missing=missing)
    if not is_hmac:
        key = signing.as_signer(key)
    options = signing.SignOptions() if is_hmac else _sign_options(key.latest.type, body, algorithm)
    return await _run(
        request,
        call,
        body,
        key,
        lambda item: signing.verify_item(key, item, chosen, options),
        ("valid",),
        batches.HMAC_VERDICTS if is_hmac else batches.VERDICTS,
    )


_hash_in_body_or_path(
    "verify",
    _verify,
    "Verify a signature or an HMAC (Transit)",
    "Verify with a hash named in the path (Transit)",
)


add_tools(router, "Transit")
