"""Every operation of the service as a `Call`: its request, and how its answer is read.

One function per operation; its signature is the SDK method's (`cipherd.client` binds it to a
client with `operation`). Adding an operation is a function here and a line in its family.
"""

import base64
from collections.abc import Mapping, Sequence
from typing import IO, Any, Literal, TypeVar
from urllib.parse import quote

import httpx

from cipherd import models
from cipherd._transport import Call, Source, content_length

T = TypeVar("T")

VERSION_HEADER = "Cipherd-Key-Version"
OCTET_STREAM = "application/octet-stream"

SymmetricAlgorithm = Literal["aes-256-gcm", "xchacha20"]
Curve = Literal["secp256k1", "x25519", "ed25519"]
Hash = Literal["sha256", "keccak256"]
SignatureFormat = Literal["der", "compact", "recoverable"]
HmacAlgorithm = Literal["sha256", "sha384", "sha512"]
Bounds = tuple[int, int] | Sequence[int]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _name(name: str) -> str:
    return quote(name, safe="")


def _into(cls: type[T]) -> Any:
    return lambda answer, _: models.decode(cls, answer.json())


def _batch(cls: type[T]) -> Any:
    return lambda answer, _: models.decode_batch(
        cls, answer.json(), answer.headers.get("X-Request-ID")
    )


def _valid(answer: httpx.Response, _: int) -> bool:
    return bool(answer.json()["valid"])


def _nothing(answer: httpx.Response, _: int) -> None:
    return None


def _streamed(answer: httpx.Response, written: int) -> models.Streamed:
    return models.Streamed(int(answer.headers[VERSION_HEADER]), written)


def _defined(**fields: Any) -> dict[str, Any]:
    """The fields that were given: the service's defaults stand for the rest."""
    return {name: value for name, value in fields.items() if value is not None}


def _raw(
    path: str, source: Source, sink: IO[bytes], params: dict[str, Any]
) -> Call[models.Streamed]:
    return Call(
        "POST",
        path,
        _streamed,
        params=params,
        content=source,
        content_length=content_length(source),
        sink=sink,
        idempotent=True,
        headers={"Content-Type": OCTET_STREAM},
    )


# Keys


def create_key(
    name: str,
    type: str,
    *,
    dimension: int | None = None,
    curve: str | None = None,
    exportable: bool | None = None,
    fe_policy: Mapping[str, Any] | None = None,
    allow_backup: bool | None = None,
    deletion_protection: bool | None = None,
) -> Call[models.Key]:
    """Create a key (admin token): `type` is `ecies-secp256k1`, `aez`, `ipfe-opt`, ...; FE
    types take a `dimension`; `allow_backup` lets `backup` copy it to another instance."""
    body = _defined(
        name=name,
        type=type,
        dimension=dimension,
        curve=curve,
        exportable=exportable,
        fe_policy=dict(fe_policy) if fe_policy is not None else None,
        allow_backup=allow_backup,
        deletion_protection=deletion_protection,
    )
    return Call("POST", "/v1/keys", _into(models.Key), json=body)


def list_keys(*, limit: int | None = None, after: str | None = None) -> Call[models.KeyPage]:
    """One page of the keys the token may read, by name (`next` is the next page's `after`)."""
    params = _defined(limit=limit, after=after)
    return Call("GET", "/v1/keys", _into(models.KeyPage), params=params, idempotent=True)


def get_key(name: str) -> Call[models.Key]:
    """A key's metadata and versions."""
    return Call("GET", f"/v1/keys/{_name(name)}", _into(models.Key), idempotent=True)


def rotate_key(name: str) -> Call[models.Key]:
    """A new version of the key (admin token); older versions still decrypt."""
    return Call("POST", f"/v1/keys/{_name(name)}/rotate", _into(models.Key))


def delete_key(name: str, *, window_seconds: int | None = None) -> Call[models.DeletionScheduled]:
    """Schedule the key's deletion (admin token): restorable until the answer's deletion_date,
    `window_seconds` from now (default: the service's window)."""
    params = _defined(window_seconds=window_seconds)
    path = f"/v1/keys/{_name(name)}"
    return Call("DELETE", path, _into(models.DeletionScheduled), params=params, idempotent=True)


def restore_key(name: str) -> Call[models.Key]:
    """Cancel a scheduled deletion (admin token)."""
    return Call("POST", f"/v1/keys/{_name(name)}/restore", _into(models.Key), idempotent=True)


def update_key(
    name: str,
    *,
    min_decryption_version: int | None = None,
    min_encryption_version: int | None = None,
    auto_rotate_seconds: int | None = None,
    deletion_protection: bool | None = None,
    exportable: bool | None = None,
    fe_policy: Mapping[str, Any] | None = None,
) -> Call[models.Key]:
    """Change a key's policies (admin token); the fields not given stay as they are."""
    body = _defined(
        min_decryption_version=min_decryption_version,
        min_encryption_version=min_encryption_version,
        auto_rotate_seconds=auto_rotate_seconds,
        deletion_protection=deletion_protection,
        exportable=exportable,
        fe_policy=dict(fe_policy) if fe_policy is not None else None,
    )
    return Call("PATCH", f"/v1/keys/{_name(name)}", _into(models.Key), json=body, idempotent=True)


def trim_key(name: str) -> Call[models.Key]:
    """Destroy the versions below min_decryption_version, for good (admin token)."""
    return Call("POST", f"/v1/keys/{_name(name)}/trim", _into(models.Key), idempotent=True)


def public_key(name: str, *, version: int | None = None) -> Call[models.PublicKey]:
    """The public part of a key version (ECIES, QFE, tao)."""
    path = f"/v1/keys/{_name(name)}/public"
    params = _defined(version=version)
    return Call("GET", path, _into(models.PublicKey), params=params, idempotent=True)


def export_key(name: str, *, version: int | None = None) -> Call[models.ExportedKey]:
    """The secret of an exportable key version (admin token)."""
    path = f"/v1/keys/{_name(name)}/export"
    params = _defined(version=version)
    return Call("GET", path, _into(models.ExportedKey), params=params, idempotent=True)


def backup_key(name: str, wrapping_key: bytes) -> Call[bytes]:
    """Every version and policy of a key created with `allow_backup` (admin token), encrypted
    to the wrapping key of the instance that will import it (`sys.wrapping_key` there)."""

    def read(answer: httpx.Response, _: int) -> bytes:
        return base64.b64decode(answer.json()["backup"])

    path = f"/v1/keys/{_name(name)}/backup"
    return Call("POST", path, read, json={"wrapping_key": b64(wrapping_key)})


def import_backup(backup: bytes, *, name: str | None = None) -> Call[models.Key]:
    """Restore a backup from another instance as a new key (admin token), under its own name
    or `name`."""
    body = _defined(backup=b64(backup), name=name)
    return Call("POST", "/v1/keys/import", _into(models.Key), json=body)


def import_material(name: str, type: str, wrapped_material: bytes) -> Call[models.Key]:
    """Key material made elsewhere (BYOK), ECIES-encrypted to this instance's wrapping key with
    eciespy's default configuration, as a new key or a new version of `name` (admin token)."""
    body = {"name": name, "type": type, "wrapped_material": b64(wrapped_material)}
    return Call("POST", "/v1/keys/import", _into(models.Key), json=body)


# Tokens


def create_token(
    keys: Sequence[str],
    operations: Sequence[str],
    *,
    description: str | None = None,
    ttl_seconds: int | None = None,
    rate_per_second: float | None = None,
) -> Call[models.IssuedToken]:
    """A scoped token (admin token): key-name patterns and operations (`read`, `public`,
    `encrypt`, `decrypt`, `keygen`, `sign`, `verify`, `hmac`), and at most `rate_per_second`
    requests a second on each worker process. Its secret is in the answer only."""
    body = _defined(
        keys=list(keys),
        operations=list(operations),
        description=description,
        ttl_seconds=ttl_seconds,
        rate_per_second=rate_per_second,
    )
    return Call("POST", "/v1/tokens", _into(models.IssuedToken), json=body)


def list_tokens() -> Call[list[models.Token]]:
    """The tokens issued (admin token), without their secrets."""

    def read(answer: httpx.Response, _: int) -> list[models.Token]:
        return [models.decode(models.Token, item) for item in answer.json()["tokens"]]

    return Call("GET", "/v1/tokens", read, idempotent=True)


def revoke_token(token_id: str) -> Call[None]:
    """Revoke a token (admin token)."""
    return Call("DELETE", f"/v1/tokens/{_name(token_id)}", _nothing, idempotent=True)


# ECIES


def _ecies_options(
    compressed_ephemeral_key: bool | None,
    compressed_hkdf_key: bool | None,
    symmetric_algorithm: SymmetricAlgorithm | None,
    symmetric_nonce_length: int | None,
) -> dict[str, Any]:
    return _defined(
        is_ephemeral_key_compressed=compressed_ephemeral_key,
        is_hkdf_key_compressed=compressed_hkdf_key,
        symmetric_algorithm=symmetric_algorithm,
        symmetric_nonce_length=symmetric_nonce_length,
    )


def _ecies_json(body: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    return {**body, "config": options} if options else body


def ecies_encrypt(
    name: str,
    plaintext: bytes,
    *,
    compressed_ephemeral_key: bool | None = None,
    compressed_hkdf_key: bool | None = None,
    symmetric_algorithm: SymmetricAlgorithm | None = None,
    symmetric_nonce_length: int | None = None,
    key_version: int | None = None,
) -> Call[models.Ciphertext]:
    """Encrypt to the key's latest version, or to `key_version` (at least the key's
    min_encryption_version); the options are eciespy's and eciesjs's."""
    options = _ecies_options(
        compressed_ephemeral_key, compressed_hkdf_key, symmetric_algorithm, symmetric_nonce_length
    )
    body = _ecies_json(_defined(plaintext=b64(plaintext), key_version=key_version), options)
    path = f"/v1/ecies/{_name(name)}/encrypt"
    return Call("POST", path, _into(models.Ciphertext), json=body, idempotent=True)


def ecies_decrypt(
    name: str,
    ciphertext: bytes,
    *,
    key_version: int | None = None,
    compressed_ephemeral_key: bool | None = None,
    compressed_hkdf_key: bool | None = None,
    symmetric_algorithm: SymmetricAlgorithm | None = None,
    symmetric_nonce_length: int | None = None,
) -> Call[models.Plaintext]:
    """Decrypt with a key version (default: the latest)."""
    options = _ecies_options(
        compressed_ephemeral_key, compressed_hkdf_key, symmetric_algorithm, symmetric_nonce_length
    )
    body = _ecies_json(_defined(ciphertext=b64(ciphertext), key_version=key_version), options)
    path = f"/v1/ecies/{_name(name)}/decrypt"
    return Call("POST", path, _into(models.Plaintext), json=body, idempotent=True)


def ecies_encrypt_stream(
    name: str,
    source: Source,
    sink: IO[bytes],
    *,
    compressed_ephemeral_key: bool | None = None,
    compressed_hkdf_key: bool | None = None,
    symmetric_algorithm: SymmetricAlgorithm | None = None,
    symmetric_nonce_length: int | None = None,
) -> Call[models.Streamed]:
    """Encrypt `source` (bytes, a binary file or an iterable of chunks) into `sink` through the
    raw form, a chunk at a time on this side."""
    options = _ecies_options(
        compressed_ephemeral_key, compressed_hkdf_key, symmetric_algorithm, symmetric_nonce_length
    )
    return _raw(f"/v1/ecies/{_name(name)}/encrypt", source, sink, options)


def ecies_decrypt_stream(
    name: str,
    source: Source,
    sink: IO[bytes],
    *,
    key_version: int | None = None,
    compressed_ephemeral_key: bool | None = None,
    compressed_hkdf_key: bool | None = None,
    symmetric_algorithm: SymmetricAlgorithm | None = None,
    symmetric_nonce_length: int | None = None,
) -> Call[models.Streamed]:
    """Decrypt `source` into `sink` through the raw form."""
    options = _ecies_options(
        compressed_ephemeral_key, compressed_hkdf_key, symmetric_algorithm, symmetric_nonce_length
    )
    params = {**options, **_defined(key_version=key_version)}
    return _raw(f"/v1/ecies/{_name(name)}/decrypt", source, sink, params)


def ecies_encrypt_batch(
    name: str, plaintexts: Sequence[bytes]
) -> Call[list[models.BatchItem[models.Ciphertext]]]:
    """Encrypt many messages in one call; each item succeeds or fails on its own."""
    body = {"items": [{"plaintext": b64(p)} for p in plaintexts]}
    path = f"/v1/ecies/{_name(name)}/encrypt/batch"
    return Call("POST", path, _batch(models.Ciphertext), json=body, idempotent=True)


def ecies_decrypt_batch(
    name: str, ciphertexts: Sequence[bytes], *, key_version: int | None = None
) -> Call[list[models.BatchItem[models.Plaintext]]]:
    """Decrypt many ciphertexts in one call; each item succeeds or fails on its own."""
    items = [_defined(ciphertext=b64(c), key_version=key_version) for c in ciphertexts]
    path = f"/v1/ecies/{_name(name)}/decrypt/batch"
    return Call("POST", path, _batch(models.Plaintext), json={"items": items}, idempotent=True)


def ecies_encrypt_to_public_key(
    public_key: bytes,
    plaintext: bytes,
    *,
    curve: Curve | None = None,
    compressed_ephemeral_key: bool | None = None,
    compressed_hkdf_key: bool | None = None,
    symmetric_algorithm: SymmetricAlgorithm | None = None,
    symmetric_nonce_length: int | None = None,
) -> Call[bytes]:
    """Encrypt to a public key given in the request (no stored key): the ciphertext."""
    options = _ecies_options(
        compressed_ephemeral_key, compressed_hkdf_key, symmetric_algorithm, symmetric_nonce_length
    )
    options.update(_defined(elliptic_curve=curve))
    body = _ecies_json({"public_key": b64(public_key), "plaintext": b64(plaintext)}, options)

    def read(answer: httpx.Response, _: int) -> bytes:
        return base64.b64decode(answer.json()["ciphertext"])

    return Call("POST", "/v1/ecies/encrypt", read, json=body, idempotent=True)


def ecies_datakey(
    name: str, *, size: int | None = None, plaintext: bool | None = None
) -> Call[models.DataKey]:
    """A fresh data key of `size` bytes (default 32) and its payload under the key's latest
    version, which `decrypt` opens; `plaintext=False` leaves the key itself out."""
    body = _defined(bytes=size, plaintext=plaintext)
    path = f"/v1/ecies/{_name(name)}/datakey"
    return Call("POST", path, _into(models.DataKey), json=body)


def ecies_rewrap(
    name: str,
    ciphertext: bytes,
    *,
    key_version: int | None = None,
    envelope: bool | None = None,
    compressed_ephemeral_key: bool | None = None,
    compressed_hkdf_key: bool | None = None,
    symmetric_algorithm: SymmetricAlgorithm | None = None,
    symmetric_nonce_length: int | None = None,
) -> Call[models.Ciphertext]:
    """The payload under the key's latest version; its plaintext stays in the service."""
    options = _ecies_options(
        compressed_ephemeral_key, compressed_hkdf_key, symmetric_algorithm, symmetric_nonce_length
    )
    fields = _defined(ciphertext=b64(ciphertext), key_version=key_version, envelope=envelope)
    path = f"/v1/ecies/{_name(name)}/rewrap"
    return Call("POST", path, _into(models.Ciphertext), json=_ecies_json(fields, options))


# AEZ


def _aez_fields(nonce: bytes | None, ad: Sequence[bytes] | None, tau: int | None) -> dict[str, Any]:
    return _defined(
        nonce=b64(nonce) if nonce is not None else None,
        ad=[b64(a) for a in ad] if ad is not None else None,
        tau=tau,
    )


def aez_encrypt(
    name: str,
    plaintext: bytes,
    *,
    nonce: bytes | None = None,
    ad: Sequence[bytes] | None = None,
    tau: int | None = None,
    key_version: int | None = None,
) -> Call[models.Ciphertext]:
    """AEZ-encrypt with the key's latest version (or `key_version`), a nonce, a vector of
    associated data and `tau` bytes of expansion."""
    body = {
        **_defined(plaintext=b64(plaintext), key_version=key_version),
        **_aez_fields(nonce, ad, tau),
    }
    path = f"/v1/aez/{_name(name)}/encrypt"
    return Call("POST", path, _into(models.Ciphertext), json=body, idempotent=True)


def aez_decrypt(
    name: str,
    ciphertext: bytes,
    *,
    nonce: bytes | None = None,
    ad: Sequence[bytes] | None = None,
    tau: int | None = None,
    key_version: int | None = None,
) -> Call[models.Plaintext]:
    """AEZ-decrypt with a key version (default: the latest)."""
    body = {
        "ciphertext": b64(ciphertext),
        **_aez_fields(nonce, ad, tau),
        **_defined(key_version=key_version),
    }
    path = f"/v1/aez/{_name(name)}/decrypt"
    return Call("POST", path, _into(models.Plaintext), json=body, idempotent=True)


def aez_encrypt_stream(
    name: str,
    source: Source,
    sink: IO[bytes],
    *,
    nonce: bytes | None = None,
    ad: Sequence[bytes] | None = None,
    tau: int | None = None,
) -> Call[models.Streamed]:
    """AEZ-encrypt `source` into `sink` through the raw form."""
    return _raw(f"/v1/aez/{_name(name)}/encrypt", source, sink, _aez_fields(nonce, ad, tau))


def aez_decrypt_stream(
    name: str,
    source: Source,
    sink: IO[bytes],
    *,
    nonce: bytes | None = None,
    ad: Sequence[bytes] | None = None,
    tau: int | None = None,
    key_version: int | None = None,
) -> Call[models.Streamed]:
    """AEZ-decrypt `source` into `sink` through the raw form."""
    params = {**_aez_fields(nonce, ad, tau), **_defined(key_version=key_version)}
    return _raw(f"/v1/aez/{_name(name)}/decrypt", source, sink, params)


def aez_encrypt_batch(
    name: str,
    plaintexts: Sequence[bytes],
    *,
    nonce: bytes | None = None,
    ad: Sequence[bytes] | None = None,
    tau: int | None = None,
) -> Call[list[models.BatchItem[models.Ciphertext]]]:
    """AEZ-encrypt many messages, with the same nonce, associated data and tau."""
    fields = _aez_fields(nonce, ad, tau)
    items = [{"plaintext": b64(p), **fields} for p in plaintexts]
    path = f"/v1/aez/{_name(name)}/encrypt/batch"
    return Call("POST", path, _batch(models.Ciphertext), json={"items": items}, idempotent=True)


def aez_decrypt_batch(
    name: str,
    ciphertexts: Sequence[bytes],
    *,
    nonce: bytes | None = None,
    ad: Sequence[bytes] | None = None,
    tau: int | None = None,
    key_version: int | None = None,
) -> Call[list[models.BatchItem[models.Plaintext]]]:
    """AEZ-decrypt many ciphertexts, with the same nonce, associated data and tau."""
    fields = {**_aez_fields(nonce, ad, tau), **_defined(key_version=key_version)}
    items = [{"ciphertext": b64(c), **fields} for c in ciphertexts]
    path = f"/v1/aez/{_name(name)}/decrypt/batch"
    return Call("POST", path, _batch(models.Plaintext), json={"items": items}, idempotent=True)


def aez_datakey(
    name: str, *, size: int | None = None, plaintext: bool | None = None
) -> Call[models.DataKey]:
    """A fresh data key of `size` bytes (default 32), its ciphertext under the key's latest
    version and the nonce and tau that `decrypt` takes back with it."""
    body = _defined(bytes=size, plaintext=plaintext)
    path = f"/v1/aez/{_name(name)}/datakey"
    return Call("POST", path, _into(models.DataKey), json=body)


def aez_rewrap(
    name: str,
    ciphertext: bytes,
    *,
    nonce: bytes | None = None,
    ad: Sequence[bytes] | None = None,
    tau: int | None = None,
    key_version: int | None = None,
    envelope: bool | None = None,
) -> Call[models.Ciphertext]:
    """The ciphertext under the key's latest version, with the same nonce, associated data and
    tau; its plaintext stays in the service."""
    body = {
        "ciphertext": b64(ciphertext),
        **_aez_fields(nonce, ad, tau),
        **_defined(key_version=key_version, envelope=envelope),
    }
    path = f"/v1/aez/{_name(name)}/rewrap"
    return Call("POST", path, _into(models.Ciphertext), json=body)


# Signatures


def _sign_options(
    hash: Hash | None, prehashed: bool | None, format: SignatureFormat | None
) -> dict[str, Any]:
    return _defined(hash=hash, prehashed=prehashed, format=format)


def sign(
    name: str,
    message: bytes,
    *,
    hash: Hash | None = None,
    prehashed: bool | None = None,
    format: SignatureFormat | None = None,
    envelope: bool | None = None,
) -> Call[models.Signature]:
    """Sign with the key's latest version (ecdsa-secp256k1 or ed25519; the options are
    ECDSA's: SHA-256 or Keccak-256, or a 32-byte digest when `prehashed`; DER, compact or
    recoverable)."""
    body = {
        "message": b64(message),
        **_sign_options(hash, prehashed, format),
        **_defined(envelope=envelope),
    }
    path = f"/v1/sign/{_name(name)}"
    return Call("POST", path, _into(models.Signature), json=body, idempotent=True)


def sign_batch(
    name: str,
    messages: Sequence[bytes],
    *,
    hash: Hash | None = None,
    prehashed: bool | None = None,
    format: SignatureFormat | None = None,
) -> Call[list[models.BatchItem[models.Signature]]]:
    """Sign many messages with the same options; each item succeeds or fails on its own."""
    options = _sign_options(hash, prehashed, format)
    items = [{"message": b64(m), **options} for m in messages]
    path = f"/v1/sign/{_name(name)}/batch"
    return Call("POST", path, _batch(models.Signature), json={"items": items}, idempotent=True)


def verify(
    name: str,
    message: bytes,
    signature: bytes,
    *,
    hash: Hash | None = None,
    prehashed: bool | None = None,
    format: SignatureFormat | None = None,
    key_version: int | None = None,
) -> Call[bool]:
    """Whether `signature` is the key's signature of `message` (a malformed one is False)."""
    body = {
        "message": b64(message),
        "signature": b64(signature),
        **_sign_options(hash, prehashed, format),
        **_defined(key_version=key_version),
    }
    return Call("POST", f"/v1/verify/{_name(name)}", _valid, json=body, idempotent=True)


def verify_with_public_key(
    type: Literal["ecdsa-secp256k1", "ed25519"],
    public_key: bytes,
    message: bytes,
    signature: bytes,
    *,
    hash: Hash | None = None,
    prehashed: bool | None = None,
    format: SignatureFormat | None = None,
) -> Call[bool]:
    """Verification against a public key given in the request (no stored key)."""
    body = {
        "type": type,
        "public_key": b64(public_key),
        "message": b64(message),
        "signature": b64(signature),
        **_sign_options(hash, prehashed, format),
    }
    return Call("POST", "/v1/verify", _valid, json=body, idempotent=True)


# HMAC


def hmac(name: str, message: bytes, *, algorithm: HmacAlgorithm | None = None) -> Call[models.Hmac]:
    """The HMAC of `message` with the key's latest version (SHA-256 unless `algorithm`)."""
    body = {"message": b64(message), **_defined(algorithm=algorithm)}
    return Call("POST", f"/v1/hmac/{_name(name)}", _into(models.Hmac), json=body, idempotent=True)


def hmac_verify(
    name: str,
    message: bytes,
    mac: bytes,
    *,
    algorithm: HmacAlgorithm | None = None,
    key_version: int | None = None,
) -> Call[bool]:
    """Whether `mac` (as `hmac` answered it, or bare) is the key's HMAC of `message`."""
    body = {
        "message": b64(message),
        "hmac": b64(mac),
        **_defined(algorithm=algorithm, key_version=key_version),
    }
    return Call("POST", f"/v1/hmac/{_name(name)}/verify", _valid, json=body, idempotent=True)


# Functional encryption


def _function(y: Sequence[int] | None, f: Sequence[Sequence[int]] | None) -> dict[str, Any]:
    return _defined(
        y=list(y) if y is not None else None,
        f=[list(row) for row in f] if f is not None else None,
    )


def fe_keygen(
    name: str,
    *,
    y: Sequence[int] | None = None,
    f: Sequence[Sequence[int]] | None = None,
    key_version: int | None = None,
) -> Call[models.FunctionalKey]:
    """A functional key for y (inner-product schemes) or the matrix f (quadratic schemes)."""
    body = {**_function(y, f), **_defined(key_version=key_version)}
    path = f"/v1/fe/{_name(name)}/keygen"
    return Call("POST", path, _into(models.FunctionalKey), json=body)


def fe_keygen_batch(
    name: str,
    functions: Sequence[Sequence[int] | Sequence[Sequence[int]]],
    *,
    key_version: int | None = None,
) -> Call[list[models.BatchItem[models.FunctionalKey]]]:
    """Functional keys for many functions: vectors y, or matrices f for quadratic keys."""
    items = []
    for function in functions:
        quadratic = bool(function) and not isinstance(function[0], int)
        fields = _function(None, function) if quadratic else _function(function, None)  # type: ignore[arg-type]
        items.append({**fields, **_defined(key_version=key_version)})
    path = f"/v1/fe/{_name(name)}/keygen/batch"
    return Call("POST", path, _batch(models.FunctionalKey), json={"items": items})


def fe_encrypt(
    name: str,
    x: Sequence[int],
    *,
    y: Sequence[int] | None = None,
    key_version: int | None = None,
) -> Call[models.Ciphertext]:
    """An FE ciphertext of x (inner product), or of x and y (quadratic)."""
    body = {"x": list(x), **_defined(y=list(y) if y is not None else None, key_version=key_version)}
    path = f"/v1/fe/{_name(name)}/encrypt"
    return Call("POST", path, _into(models.Ciphertext), json=body, idempotent=True)


def fe_encrypt_batch(
    name: str,
    vectors: Sequence[Sequence[int] | tuple[Sequence[int], Sequence[int]]],
    *,
    key_version: int | None = None,
) -> Call[list[models.BatchItem[models.Ciphertext]]]:
    """FE ciphertexts of many vectors x, or of (x, y) pairs for quadratic keys."""
    items = []
    for vector in vectors:
        if isinstance(vector, tuple) and len(vector) == 2 and not isinstance(vector[0], int):
            fields: dict[str, Any] = {"x": list(vector[0]), "y": list(vector[1])}
        else:
            fields = {"x": list(vector)}
        items.append({**fields, **_defined(key_version=key_version)})
    path = f"/v1/fe/{_name(name)}/encrypt/batch"
    return Call("POST", path, _batch(models.Ciphertext), json={"items": items}, idempotent=True)


def fe_decrypt(
    name: str,
    functional_key: bytes,
    ciphertext: bytes,
    bounds: Bounds,
    *,
    key_version: int | None = None,
) -> Call[int | None]:
    """The function's value on the ciphertext's vector, searched in `bounds` (lo, hi): None when
    it lies outside them."""
    body = {
        "functional_key": b64(functional_key),
        "ciphertext": b64(ciphertext),
        "bounds": list(bounds),
        **_defined(key_version=key_version),
    }

    def read(answer: httpx.Response, _: int) -> int | None:
        return models.decode(models.FeResult, answer.json()).result

    return Call("POST", f"/v1/fe/{_name(name)}/decrypt", read, json=body, idempotent=True)


def fe_decrypt_many(
    name: str,
    functional_key: bytes,
    ciphertexts: Sequence[bytes],
    bounds: Bounds,
    *,
    key_version: int | None = None,
) -> Call[list[models.BatchItem[models.FeResult]]]:
    """One functional key against many ciphertexts."""
    body = {
        "functional_key": b64(functional_key),
        "ciphertexts": [b64(c) for c in ciphertexts],
        "bounds": list(bounds),
        **_defined(key_version=key_version),
    }
    path = f"/v1/fe/{_name(name)}/decrypt/many"
    return Call("POST", path, _batch(models.FeResult), json=body, idempotent=True)


def fe_decrypt_batch(
    name: str,
    pairs: Sequence[tuple[bytes, bytes]],
    bounds: Bounds,
    *,
    key_version: int | None = None,
) -> Call[list[models.BatchItem[models.FeResult]]]:
    """Many (functional key, ciphertext) pairs, each decrypted in `bounds`."""
    items = [
        {
            "functional_key": b64(key),
            "ciphertext": b64(ct),
            "bounds": list(bounds),
            **_defined(key_version=key_version),
        }
        for key, ct in pairs
    ]
    path = f"/v1/fe/{_name(name)}/decrypt/batch"
    return Call("POST", path, _batch(models.FeResult), json={"items": items}, idempotent=True)


def fe_functions(name: str, *, key_version: int | None = None) -> Call[models.FeFunctions]:
    """The functions released under a key version, their rank and the key's budget."""
    params = _defined(key_version=key_version)
    path = f"/v1/fe/{_name(name)}/functions"
    return Call("GET", path, _into(models.FeFunctions), params=params, idempotent=True)


# The service itself


def list_audit(
    *,
    key: str | None = None,
    principal: str | None = None,
    operation: str | None = None,
    outcome: str | None = None,
    since: str | None = None,
    until: str | None = None,
    limit: int | None = None,
    after: str | None = None,
) -> Call[models.AuditPage]:
    """One page of the audit trail (admin token), filtered; `next` is the next page's `after`."""
    params = _defined(
        key=key,
        principal=principal,
        operation=operation,
        outcome=outcome,
        since=since,
        until=until,
        limit=limit,
        after=after,
    )
    return Call("GET", "/v1/audit", _into(models.AuditPage), params=params, idempotent=True)


def keyring() -> Call[models.Keyring]:
    """The keyring's current term and how many key versions are still wrapped under older
    ones (admin token)."""
    return Call("GET", "/v1/sys/keyring", _into(models.Keyring), idempotent=True)


def rotate_keyring() -> Call[models.Keyring]:
    """A new keyring term (admin token): every process then rewraps older versions onto it."""
    return Call("POST", "/v1/sys/keyring/rotate", _into(models.Keyring))


def wrapping_key() -> Call[bytes]:
    """The public key backups and key material for this instance are encrypted to (admin
    token): SEC1 secp256k1."""

    def read(answer: httpx.Response, _: int) -> bytes:
        return base64.b64decode(answer.json()["public_key"])

    return Call("GET", "/v1/sys/wrapping-key", read, idempotent=True)


def random(count: int) -> Call[bytes]:
    """`count` random bytes from the service's CSPRNG (any valid token)."""

    def read(answer: httpx.Response, _: int) -> bytes:
        return base64.b64decode(answer.json()["random"])

    return Call("POST", "/v1/random", read, json={"bytes": count}, idempotent=True)


def ready() -> Call[str]:
    """The service's readiness (`ok`); StoreUnavailable or ShuttingDown when it is not ready."""
    return Call("GET", "/readyz", lambda answer, _: answer.json()["status"], idempotent=True)
