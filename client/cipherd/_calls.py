"""Every operation of the service as a `Call`: its request, and how its answer is read.

One function per operation; its signature is the SDK method's (`cipherd.client` binds it to a
client with `operation`). Adding an operation is a function here and a line in its family; the
batch form of an operation that has one is `batch(function)`, derived from the same function.
"""

import base64
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import IO, Any, Generic, Literal, TypeVar
from urllib.parse import quote

import httpx

from cipherd import models
from cipherd._transport import Call, Progress, Source, content_length

T = TypeVar("T")

VERSION_HEADER = "Cipherd-Key-Version"
OCTET_STREAM = "application/octet-stream"

SymmetricAlgorithm = Literal["aes-256-gcm", "xchacha20"]
Curve = Literal["secp256k1", "x25519", "ed25519"]
Hash = Literal["sha256", "sha384", "sha512", "keccak256"]
SignatureFormat = Literal["der", "compact", "recoverable"]
Padding = Literal["pss", "pkcs1v15"]
SigningType = Literal[
    "ecdsa-secp256k1",
    "ed25519",
    "ecdsa-p256",
    "ecdsa-p384",
    "ecdsa-p521",
    "rsa-2048",
    "rsa-3072",
    "rsa-4096",
    "ml-dsa-44",
    "ml-dsa-65",
    "ml-dsa-87",
]
HmacAlgorithm = Literal["sha256", "sha384", "sha512"]
PublicFormat = Literal["raw", "der", "pem", "jwk"]
Bounds = tuple[int, int] | Sequence[int]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _name(name: str) -> str:
    """A key name as one path segment. "." and ".." would be read as a move within the path
    (`/v1/keys/.` is `/v1/keys/`, another call), and no key has them, or no name."""
    if name in ("", ".", ".."):
        raise ValueError(f"not a key name: {name!r}")
    return quote(name, safe="")


@dataclass(frozen=True)
class Json(Generic[T]):
    """An answer read from its JSON body by `decode`, which also reads each item of the answer
    to the call's batch form."""

    decode: Callable[[Any], T]

    def __call__(self, answer: httpx.Response, _: int) -> T:
        return self.decode(answer.json())


@dataclass(frozen=True)
class Items(Generic[T]):
    """A batch answer (`{"results": [...]}`), each item read by `decode` or as its problem."""

    decode: Callable[[Any], T]

    def __call__(self, answer: httpx.Response, _: int) -> list[models.BatchItem[T]]:
        request_id = answer.headers.get("X-Request-ID")
        return models.decode_batch(self.decode, answer.json(), request_id)


def _into(cls: type[T]) -> Json[T]:
    return Json(partial(models.decode, cls))


def _field(name: str, kind: Callable[[Any], T]) -> Json[T]:
    """An answer that is one field of its JSON object."""
    return Json(lambda data: kind(data[name]))


def _base64_field(name: str) -> Json[bytes]:
    return _field(name, base64.b64decode)


_valid = _field("valid", bool)


class Item:
    """The arguments of one item of a batch, as the operation's own function takes them (after
    the key name), where the item is more than its first argument."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args
        self.kwargs = kwargs


def batch(
    single: Callable[..., Call[T]],
) -> Callable[..., Call[list[models.BatchItem[T]]]]:
    """The batch form of an operation on a named key: `(name, items, **shared)` sends every
    item in one request to the operation's path + `/batch`, each item built by `single` from
    its first argument (or from an `Item` with all of its own) and the `shared` options, and
    answers a list of `BatchItem`s, each a result or that item's problem."""

    def build(name: str, items: Sequence[Any], /, **shared: Any) -> Call[list[models.BatchItem[T]]]:
        calls = [
            single(name, *item.args, **{**shared, **item.kwargs})
            if isinstance(item, Item)
            else single(name, item, **shared)
            for item in items
        ]
        if not calls:
            raise ValueError("a batch needs at least one item")
        first = calls[0]
        assert isinstance(first.read, Json), f"{single.__name__} has no batch form"
        body = {"items": [call.json for call in calls]}
        path = f"{first.path}/batch"
        return Call("POST", path, Items(first.read.decode), json=body, idempotent=first.idempotent)

    build.__name__ = f"{single.__name__}_batch"
    build.__doc__ = f"The batch form of `{single.__name__}`: {batch.__doc__}"
    return build


def _nothing(answer: httpx.Response, _: int) -> None:
    return None


def _streamed(answer: httpx.Response, written: int) -> models.Streamed:
    return models.Streamed(int(answer.headers[VERSION_HEADER]), written)


def _defined(**fields: Any) -> dict[str, Any]:
    """The fields that were given: the service's defaults stand for the rest."""
    return {name: value for name, value in fields.items() if value is not None}


def _raw(
    path: str, source: Source, sink: IO[bytes], params: dict[str, Any], progress: Progress | None
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
        progress=progress,
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
    derived: bool | None = None,
    convergent: bool | None = None,
) -> Call[models.Key]:
    """Create a key (admin token): `type` is `ecies-secp256k1`, `aez`, `aes256-gcm`,
    `ipfe-opt`, ...; FE types take a `dimension`; AEAD types may be `derived` (every call gives
    a context) and `convergent`; `allow_backup` lets `backup` copy it to another instance."""
    body = _defined(
        name=name,
        type=type,
        dimension=dimension,
        curve=curve,
        exportable=exportable,
        fe_policy=dict(fe_policy) if fe_policy is not None else None,
        allow_backup=allow_backup,
        deletion_protection=deletion_protection,
        derived=derived,
        convergent=convergent,
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
    enabled: bool | None = None,
) -> Call[models.Key]:
    """Change a key's policies (admin token, or a token with `configure` on it); the fields not
    given stay as they are. `enabled=False` refuses every use of the key until it is enabled."""
    body = _defined(
        min_decryption_version=min_decryption_version,
        min_encryption_version=min_encryption_version,
        auto_rotate_seconds=auto_rotate_seconds,
        deletion_protection=deletion_protection,
        exportable=exportable,
        fe_policy=dict(fe_policy) if fe_policy is not None else None,
        enabled=enabled,
    )
    return Call("PATCH", f"/v1/keys/{_name(name)}", _into(models.Key), json=body, idempotent=True)


def trim_key(name: str) -> Call[models.Key]:
    """Destroy the versions below min_decryption_version, for good (admin token)."""
    return Call("POST", f"/v1/keys/{_name(name)}/trim", _into(models.Key), idempotent=True)


def _public_key(data: Any) -> models.PublicKey:
    """`public_key` as bytes in the raw and der forms, as given (text, object) in the others."""
    form = data.get("format", "raw")
    given = data["public_key"]
    public = base64.b64decode(given) if form in ("raw", "der") else given
    return models.PublicKey(data["name"], data["type"], data["version"], public, form)


def public_key(
    name: str, *, version: int | None = None, format: PublicFormat | None = None
) -> Call[models.PublicKey]:
    """The public part of a key version (ECIES, signatures, QFE, tao): raw (the default where
    the type has it), der (SubjectPublicKeyInfo) as bytes, pem as text, jwk as a dict."""
    path = f"/v1/keys/{_name(name)}/public"
    params = _defined(version=version, format=format)
    return Call("GET", path, Json(_public_key), params=params, idempotent=True)


def jwks(name: str) -> Call[dict[str, Any]]:
    """The JSON Web Key Set of a signing key's live versions, as verifiers of its JWTs read it
    (`{"keys": [...]}`, each with kid `<name>:v<N>`)."""
    path = f"/v1/keys/{_name(name)}/jwks"
    return Call("GET", path, Json(dict), idempotent=True)


def export_key(name: str, *, version: int | None = None) -> Call[models.ExportedKey]:
    """The secret of an exportable key version (admin token)."""
    path = f"/v1/keys/{_name(name)}/export"
    params = _defined(version=version)
    return Call("GET", path, _into(models.ExportedKey), params=params, idempotent=True)


def backup_key(name: str, wrapping_key: bytes) -> Call[bytes]:
    """Every version and policy of a key created with `allow_backup` (admin operation
    `backup`, or every operation on the key), encrypted to the wrapping key of the instance that
    will import it (`sys.wrapping_key` there)."""
    path = f"/v1/keys/{_name(name)}/backup"
    body = {"wrapping_key": b64(wrapping_key)}
    return Call("POST", path, _base64_field("backup"), json=body)


def import_backup(backup: bytes, *, name: str | None = None) -> Call[models.Key]:
    """Restore a backup from another instance as a new key (admin operation `backup`, or
    `create` on the name), under its own name or `name`."""
    body = _defined(backup=b64(backup), name=name)
    return Call("POST", "/v1/keys/import", _into(models.Key), json=body)


def import_material(
    name: str,
    type: str,
    wrapped_material: bytes,
    *,
    derived: bool | None = None,
    convergent: bool | None = None,
) -> Call[models.Key]:
    """Key material made elsewhere (BYOK), ECIES-encrypted to this instance's wrapping key with
    eciespy's default configuration, as a new key or a new version of `name` (admin token);
    an AEAD key `derived` (and `convergent`) as at creation."""
    body = _defined(
        name=name,
        type=type,
        wrapped_material=b64(wrapped_material),
        derived=derived,
        convergent=convergent,
    )
    return Call("POST", "/v1/keys/import", _into(models.Key), json=body)


# Tokens


def create_token(
    keys: Sequence[str] = (),
    operations: Sequence[str] = (),
    *,
    policies: Sequence[str] = (),
    description: str | None = None,
    ttl_seconds: int | None = None,
    max_ttl_seconds: int | None = None,
    period_seconds: int | None = None,
    num_uses: int | None = None,
    orphan: bool | None = None,
    rate_per_second: float | None = None,
) -> Call[models.IssuedToken]:
    """A token (a token allowed the admin operation `tokens`): named `policies`, and/or an
    inline scope of key-name patterns and operations (`read`, `public`, `encrypt`, `decrypt`,
    `keygen`, `sign`, `verify`, `hmac`; for keys themselves `create`, `configure`, `rotate`,
    `delete`); a life (`ttl_seconds`, `max_ttl_seconds`, `period_seconds`, `num_uses`), and at
    most `rate_per_second` requests a second on each worker process. Its secret is in the
    answer only."""
    body = _defined(
        keys=list(keys),
        operations=list(operations),
        policies=list(policies),
        description=description,
        ttl_seconds=ttl_seconds,
        max_ttl_seconds=max_ttl_seconds,
        period_seconds=period_seconds,
        num_uses=num_uses,
        orphan=orphan,
        rate_per_second=rate_per_second,
    )
    return Call("POST", "/v1/tokens", _into(models.IssuedToken), json=body)


def lookup_self() -> Call[models.Token]:
    """The calling token (any token)."""
    return Call("GET", "/v1/tokens/self", _into(models.Token), idempotent=True)


def renew_self(increment_seconds: int | None = None) -> Call[models.Token]:
    """Renew the calling token: by `increment_seconds`, else by its TTL (its period for a
    periodic one), never past its maximum."""
    body = _defined(increment_seconds=increment_seconds)
    return Call("POST", "/v1/tokens/self/renew", _into(models.Token), json=body)


def revoke_self() -> Call[None]:
    """Revoke the calling token, and the tokens made with it."""
    return Call("DELETE", "/v1/tokens/self", _nothing)


def lookup_token(token_id: str) -> Call[models.Token]:
    """A token by its id, its accessor (admin operation `tokens`)."""
    return Call("GET", f"/v1/tokens/{_name(token_id)}", _into(models.Token), idempotent=True)


def list_tokens(*, limit: int | None = None, after: str | None = None) -> Call[models.TokenPage]:
    """One page of the tokens issued, by id, without their secrets (admin operation `tokens`;
    `next` is the next page's `after`)."""
    params = _defined(limit=limit, after=after)
    return Call("GET", "/v1/tokens", _into(models.TokenPage), params=params, idempotent=True)


def revoke_token(token_id: str) -> Call[None]:
    """Revoke a token (admin token)."""
    return Call("DELETE", f"/v1/tokens/{_name(token_id)}", _nothing, idempotent=True)


# Logins (they need no token)


def _login(answer: httpx.Response, _: int) -> models.Login:
    auth = answer.json()["auth"]
    return models.Login(
        token=auth["client_token"],
        accessor=auth["accessor"],
        policies=list(auth["policies"]),
        lease_duration=int(auth["lease_duration"]),
        renewable=bool(auth["renewable"]),
        metadata=dict(auth.get("metadata") or {}),
    )


def _mount(mount: str) -> str:
    return quote(mount.strip("/"), safe="/")


def jwt_login(role: str, jwt: str, *, mount: str = "jwt") -> Call[models.Login]:
    """A token for a JWT its issuer signed (a CI system's OIDC token, a Kubernetes service
    account's token), with the policies of `role` of the JWT auth mount `mount`, if the JWT
    meets the role's bounds."""
    path = f"/v1/auth/{_mount(mount)}/login"
    return Call("POST", path, _login, json={"role": role, "jwt": jwt})


def cert_login(name: str | None = None, *, mount: str = "cert") -> Call[models.Login]:
    """A token for the client certificate this client connects with (`client_cert` and
    `client_key`, over TLS), with the policies of the rule `name` of the certificate auth mount
    `mount`, or of the first rule that trusts the certificate."""
    path = f"/v1/auth/{_mount(mount)}/login"
    return Call("POST", path, _login, json=_defined(name=name))


# Named policies


def put_policy(
    name: str,
    rules: Sequence[Mapping[str, Sequence[str]]] = (),
    *,
    admin: Sequence[str] = (),
    description: str | None = None,
) -> Call[models.Policy]:
    """Create or replace the policy `name` (admin operation `policies`): `rules`, each
    `{"keys": [patterns], "operations": [...]}`, and `admin` operations by name. Every token
    that carries it follows the change from its next request."""
    body = _defined(
        rules=[{"keys": list(r["keys"]), "operations": list(r["operations"])} for r in rules],
        admin=list(admin),
        description=description,
    )
    return Call("POST", f"/v1/policies/{_name(name)}", _into(models.Policy), json=body)


def get_policy(name: str) -> Call[models.Policy]:
    """The policy `name`."""
    return Call("GET", f"/v1/policies/{_name(name)}", _into(models.Policy), idempotent=True)


def list_policies() -> Call[list[str]]:
    """Every policy's name, `default` and `root` among them."""
    return Call("GET", "/v1/policies", _field("policies", list), idempotent=True)


def delete_policy(name: str) -> Call[None]:
    """Delete the policy `name`: the tokens that carry it lose what it gave."""
    return Call("DELETE", f"/v1/policies/{_name(name)}", _nothing, idempotent=True)


# Response wrapping (at Vault's paths)


# AppRole (at Vault's paths, under the auth mount `mount`) and response wrapping


def _data(answer: httpx.Response, _: int) -> Any:
    return answer.json()["data"]


def _wrap_info(answer: Any) -> models.WrapInfo:
    return models.decode(models.WrapInfo, answer["wrap_info"])


def _approle(mount: str, *parts: str) -> str:
    return "/".join([f"/v1/auth/{_mount(mount)}", *(_name(part) for part in parts)])


def approle_login(
    role_id: str, secret_id: str = "", *, mount: str = "approle"
) -> Call[models.Login]:
    """Log in with an AppRole role id and secret id (no token needed): a token carrying the
    role's policies."""
    body = {"role_id": role_id, "secret_id": secret_id}
    return Call("POST", _approle(mount, "login"), _login, json=body)


def approle_write_role(
    name: str,
    *,
    policies: Sequence[str] | None = None,
    token_ttl: int | None = None,
    token_max_ttl: int | None = None,
    token_num_uses: int | None = None,
    bind_secret_id: bool | None = None,
    secret_id_ttl: int | None = None,
    secret_id_num_uses: int | None = None,
    secret_id_bound_cidrs: Sequence[str] | None = None,
    token_bound_cidrs: Sequence[str] | None = None,
    mount: str = "approle",
) -> Call[None]:
    """Create an AppRole role, or change the settings given (durations in seconds)."""
    body = _defined(
        token_policies=None if policies is None else list(policies),
        token_ttl=token_ttl,
        token_max_ttl=token_max_ttl,
        token_num_uses=token_num_uses,
        bind_secret_id=bind_secret_id,
        secret_id_ttl=secret_id_ttl,
        secret_id_num_uses=secret_id_num_uses,
        secret_id_bound_cidrs=None
        if secret_id_bound_cidrs is None
        else list(secret_id_bound_cidrs),
        token_bound_cidrs=None if token_bound_cidrs is None else list(token_bound_cidrs),
    )
    return Call("POST", _approle(mount, "role", name), _nothing, json=body, idempotent=True)


def approle_read_role(name: str, *, mount: str = "approle") -> Call[dict[str, Any]]:
    """An AppRole role's settings, as Vault names them."""
    return Call("GET", _approle(mount, "role", name), _data, idempotent=True)


def approle_list_roles(*, mount: str = "approle") -> Call[list[str]]:
    """The names of the mount's AppRole roles."""
    keys = Json(lambda answer: list(answer["data"]["keys"]))
    return Call("GET", _approle(mount, "role"), keys, params={"list": "true"}, idempotent=True)


def approle_delete_role(name: str, *, mount: str = "approle") -> Call[None]:
    """Delete an AppRole role and its secret ids."""
    return Call("DELETE", _approle(mount, "role", name), _nothing, idempotent=True)


def approle_role_id(name: str, *, mount: str = "approle") -> Call[str]:
    """An AppRole role's role id."""
    role_id = Json(lambda answer: str(answer["data"]["role_id"]))
    return Call("GET", _approle(mount, "role", name, "role-id"), role_id, idempotent=True)


def _secret_id_body(
    metadata: Mapping[str, str] | None,
    cidr_list: Sequence[str] | None,
    ttl: int | None,
    num_uses: int | None,
) -> dict[str, Any]:
    return _defined(
        metadata=None if metadata is None else json.dumps(dict(metadata)),
        cidr_list=None if cidr_list is None else list(cidr_list),
        ttl=ttl,
        num_uses=num_uses,
    )


def approle_secret_id(
    name: str,
    *,
    metadata: Mapping[str, str] | None = None,
    cidr_list: Sequence[str] | None = None,
    ttl: int | None = None,
    num_uses: int | None = None,
    mount: str = "approle",
) -> Call[models.SecretId]:
    """A new secret id of an AppRole role (its secret shown only this once)."""
    body = _secret_id_body(metadata, cidr_list, ttl, num_uses)
    secret = Json(
        lambda answer: models.SecretId(
            secret_id=answer["data"]["secret_id"],
            accessor=answer["data"]["secret_id_accessor"],
            num_uses=answer["data"]["secret_id_num_uses"],
            ttl=answer["data"]["secret_id_ttl"],
        )
    )
    return Call("POST", _approle(mount, "role", name, "secret-id"), secret, json=body)


def approle_wrapped_secret_id(
    name: str,
    wrap_ttl: int,
    *,
    metadata: Mapping[str, str] | None = None,
    cidr_list: Sequence[str] | None = None,
    ttl: int | None = None,
    num_uses: int | None = None,
    mount: str = "approle",
) -> Call[models.WrapInfo]:
    """A new secret id of an AppRole role, wrapped: a single-use token that gives it (to
    whoever unwraps it first) within `wrap_ttl` seconds."""
    body = _secret_id_body(metadata, cidr_list, ttl, num_uses)
    headers = {"X-Vault-Wrap-TTL": str(wrap_ttl)}
    path = _approle(mount, "role", name, "secret-id")
    return Call("POST", path, Json(_wrap_info), json=body, headers=headers)


def unwrap(wrapping_token: str) -> Call[dict[str, Any]]:
    """The answer a wrapping token wraps (Vault's envelope: `data`, or a login's `auth`), once:
    the token is spent. The wrapping token is the request's token: no other is needed."""
    headers = {"X-Vault-Token": wrapping_token}
    return Call("POST", "/v1/sys/wrapping/unwrap", Json(dict), headers=headers)


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
    envelope: bool | None = None,
) -> Call[models.Ciphertext]:
    """Encrypt to the key's latest version, or to `key_version` (at least the key's
    min_encryption_version); the options are eciespy's and eciesjs's; `envelope=False` leaves
    out the `cipherd:v<N>:` prefix that names the key version."""
    options = _ecies_options(
        compressed_ephemeral_key, compressed_hkdf_key, symmetric_algorithm, symmetric_nonce_length
    )
    fields = _defined(plaintext=b64(plaintext), key_version=key_version, envelope=envelope)
    body = _ecies_json(fields, options)
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
    key_version: int | None = None,
    envelope: bool | None = None,
    progress: Progress | None = None,
) -> Call[models.Streamed]:
    """Encrypt `source` (bytes, a binary file or an iterable of chunks) into `sink` through the
    raw form, a chunk at a time on this side; `progress(sent, total)` is called as the chunks
    go (`total` None when the source's length is not known)."""
    options = _ecies_options(
        compressed_ephemeral_key, compressed_hkdf_key, symmetric_algorithm, symmetric_nonce_length
    )
    params = {**options, **_defined(key_version=key_version, envelope=envelope)}
    return _raw(f"/v1/ecies/{_name(name)}/encrypt", source, sink, params, progress)


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
    progress: Progress | None = None,
) -> Call[models.Streamed]:
    """Decrypt `source` into `sink` through the raw form (`progress` as for encryption)."""
    options = _ecies_options(
        compressed_ephemeral_key, compressed_hkdf_key, symmetric_algorithm, symmetric_nonce_length
    )
    params = {**options, **_defined(key_version=key_version)}
    return _raw(f"/v1/ecies/{_name(name)}/decrypt", source, sink, params, progress)


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
    read = _base64_field("ciphertext")
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
    envelope: bool | None = None,
) -> Call[models.Ciphertext]:
    """AEZ-encrypt with the key's latest version (or `key_version`), a nonce, a vector of
    associated data and `tau` bytes of expansion (`envelope` as for ECIES)."""
    body = {
        **_defined(plaintext=b64(plaintext), key_version=key_version, envelope=envelope),
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
    key_version: int | None = None,
    envelope: bool | None = None,
    progress: Progress | None = None,
) -> Call[models.Streamed]:
    """AEZ-encrypt `source` into `sink` through the raw form (`progress` as for ECIES)."""
    params = {**_aez_fields(nonce, ad, tau), **_defined(key_version=key_version, envelope=envelope)}
    return _raw(f"/v1/aez/{_name(name)}/encrypt", source, sink, params, progress)


def aez_decrypt_stream(
    name: str,
    source: Source,
    sink: IO[bytes],
    *,
    nonce: bytes | None = None,
    ad: Sequence[bytes] | None = None,
    tau: int | None = None,
    key_version: int | None = None,
    progress: Progress | None = None,
) -> Call[models.Streamed]:
    """AEZ-decrypt `source` into `sink` through the raw form (`progress` as for ECIES)."""
    params = {**_aez_fields(nonce, ad, tau), **_defined(key_version=key_version)}
    return _raw(f"/v1/aez/{_name(name)}/decrypt", source, sink, params, progress)


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


# AEAD (AES-GCM, ChaCha20-Poly1305)


def _aead_fields(associated_data: bytes | None, context: bytes | None) -> dict[str, Any]:
    return _defined(
        associated_data=b64(associated_data) if associated_data is not None else None,
        context=b64(context) if context is not None else None,
    )


def aead_encrypt(
    name: str,
    plaintext: bytes,
    *,
    associated_data: bytes | None = None,
    context: bytes | None = None,
    key_version: int | None = None,
    envelope: bool | None = None,
) -> Call[models.Ciphertext]:
    """Encrypt with an AES-GCM or ChaCha20-Poly1305 key's latest version (or `key_version`),
    binding `associated_data`; a derived key needs its `context` (`envelope` as for ECIES)."""
    body = {
        **_defined(plaintext=b64(plaintext), key_version=key_version, envelope=envelope),
        **_aead_fields(associated_data, context),
    }
    path = f"/v1/aead/{_name(name)}/encrypt"
    return Call("POST", path, _into(models.Ciphertext), json=body)


def aead_decrypt(
    name: str,
    ciphertext: bytes,
    *,
    associated_data: bytes | None = None,
    context: bytes | None = None,
    key_version: int | None = None,
) -> Call[models.Plaintext]:
    """Decrypt with the version the envelope names (or `key_version`), with the same
    associated data and context as the encryption."""
    body = {
        "ciphertext": b64(ciphertext),
        **_aead_fields(associated_data, context),
        **_defined(key_version=key_version),
    }
    path = f"/v1/aead/{_name(name)}/decrypt"
    return Call("POST", path, _into(models.Plaintext), json=body, idempotent=True)


def aead_encrypt_stream(
    name: str,
    source: Source,
    sink: IO[bytes],
    *,
    associated_data: bytes | None = None,
    context: bytes | None = None,
    key_version: int | None = None,
    envelope: bool | None = None,
    progress: Progress | None = None,
) -> Call[models.Streamed]:
    """Encrypt `source` into `sink` through the raw form (`progress` as for ECIES)."""
    params = {
        **_aead_fields(associated_data, context),
        **_defined(key_version=key_version, envelope=envelope),
    }
    return _raw(f"/v1/aead/{_name(name)}/encrypt", source, sink, params, progress)


def aead_decrypt_stream(
    name: str,
    source: Source,
    sink: IO[bytes],
    *,
    associated_data: bytes | None = None,
    context: bytes | None = None,
    key_version: int | None = None,
    progress: Progress | None = None,
) -> Call[models.Streamed]:
    """Decrypt `source` into `sink` through the raw form (`progress` as for ECIES)."""
    params = {**_aead_fields(associated_data, context), **_defined(key_version=key_version)}
    return _raw(f"/v1/aead/{_name(name)}/decrypt", source, sink, params, progress)


def aead_datakey(
    name: str,
    *,
    size: int | None = None,
    plaintext: bool | None = None,
    associated_data: bytes | None = None,
    context: bytes | None = None,
) -> Call[models.DataKey]:
    """A fresh data key of `size` bytes (default 32) and its ciphertext under the key's latest
    version, which `decrypt` opens with the same associated data and context."""
    body = {**_defined(bytes=size, plaintext=plaintext), **_aead_fields(associated_data, context)}
    path = f"/v1/aead/{_name(name)}/datakey"
    return Call("POST", path, _into(models.DataKey), json=body)


def aead_rewrap(
    name: str,
    ciphertext: bytes,
    *,
    associated_data: bytes | None = None,
    context: bytes | None = None,
    key_version: int | None = None,
    envelope: bool | None = None,
) -> Call[models.Ciphertext]:
    """The ciphertext under the key's latest version, with the same associated data and
    context; its plaintext stays in the service."""
    body = {
        "ciphertext": b64(ciphertext),
        **_aead_fields(associated_data, context),
        **_defined(key_version=key_version, envelope=envelope),
    }
    path = f"/v1/aead/{_name(name)}/rewrap"
    return Call("POST", path, _into(models.Ciphertext), json=body)


# HPKE


def _hpke_fields(info: bytes | None, aad: bytes | None) -> dict[str, Any]:
    return _defined(
        info=b64(info) if info is not None else None, aad=b64(aad) if aad is not None else None
    )


def hpke_encrypt(
    name: str,
    plaintext: bytes,
    *,
    info: bytes | None = None,
    aad: bytes | None = None,
    key_version: int | None = None,
    envelope: bool | None = None,
) -> Call[models.Ciphertext]:
    """Seal to an HPKE key's latest version (or `key_version`), RFC 9180 base mode, binding
    `info` and `aad` (`envelope` as for ECIES)."""
    body = {
        **_defined(plaintext=b64(plaintext), key_version=key_version, envelope=envelope),
        **_hpke_fields(info, aad),
    }
    path = f"/v1/hpke/{_name(name)}/encrypt"
    return Call("POST", path, _into(models.Ciphertext), json=body)


def hpke_decrypt(
    name: str,
    ciphertext: bytes,
    *,
    info: bytes | None = None,
    aad: bytes | None = None,
    key_version: int | None = None,
) -> Call[models.Plaintext]:
    """Open an HPKE payload (enc ‖ ciphertext) with the same info and aad as its sealing."""
    body = {
        "ciphertext": b64(ciphertext),
        **_hpke_fields(info, aad),
        **_defined(key_version=key_version),
    }
    path = f"/v1/hpke/{_name(name)}/decrypt"
    return Call("POST", path, _into(models.Plaintext), json=body, idempotent=True)


def hpke_encrypt_stream(
    name: str,
    source: Source,
    sink: IO[bytes],
    *,
    info: bytes | None = None,
    aad: bytes | None = None,
    key_version: int | None = None,
    envelope: bool | None = None,
    progress: Progress | None = None,
) -> Call[models.Streamed]:
    """Seal `source` into `sink` through the raw form (`progress` as for ECIES)."""
    params = {**_hpke_fields(info, aad), **_defined(key_version=key_version, envelope=envelope)}
    return _raw(f"/v1/hpke/{_name(name)}/encrypt", source, sink, params, progress)


def hpke_decrypt_stream(
    name: str,
    source: Source,
    sink: IO[bytes],
    *,
    info: bytes | None = None,
    aad: bytes | None = None,
    key_version: int | None = None,
    progress: Progress | None = None,
) -> Call[models.Streamed]:
    """Open `source` into `sink` through the raw form (`progress` as for ECIES)."""
    params = {**_hpke_fields(info, aad), **_defined(key_version=key_version)}
    return _raw(f"/v1/hpke/{_name(name)}/decrypt", source, sink, params, progress)


def hpke_encrypt_to_public_key(
    type: str,
    public_key: bytes,
    plaintext: bytes,
    *,
    format: Literal["raw", "der"] | None = None,
    info: bytes | None = None,
    aad: bytes | None = None,
) -> Call[bytes]:
    """Seal to an HPKE public key of `type` given in the request (no stored key), raw or as a
    DER SubjectPublicKeyInfo: enc ‖ ciphertext."""
    body = {
        "type": type,
        "public_key": b64(public_key),
        "plaintext": b64(plaintext),
        **_defined(format=format),
        **_hpke_fields(info, aad),
    }
    return Call("POST", "/v1/hpke/encrypt", _base64_field("ciphertext"), json=body)


# RSA encryption


def rsa_encrypt(
    name: str,
    plaintext: bytes,
    *,
    key_version: int | None = None,
    envelope: bool | None = None,
) -> Call[models.Ciphertext]:
    """RSAES-OAEP (SHA-256) with an RSA key's latest version (or `key_version`)."""
    body = _defined(plaintext=b64(plaintext), key_version=key_version, envelope=envelope)
    path = f"/v1/rsa/{_name(name)}/encrypt"
    return Call("POST", path, _into(models.Ciphertext), json=body)


def rsa_decrypt(
    name: str, ciphertext: bytes, *, key_version: int | None = None
) -> Call[models.Plaintext]:
    """Decrypt an RSAES-OAEP ciphertext with the version the envelope names (or
    `key_version`)."""
    body = {"ciphertext": b64(ciphertext), **_defined(key_version=key_version)}
    path = f"/v1/rsa/{_name(name)}/decrypt"
    return Call("POST", path, _into(models.Plaintext), json=body, idempotent=True)


def rsa_encrypt_stream(
    name: str,
    source: Source,
    sink: IO[bytes],
    *,
    key_version: int | None = None,
    envelope: bool | None = None,
    progress: Progress | None = None,
) -> Call[models.Streamed]:
    """Encrypt `source` into `sink` through the raw form (`progress` as for ECIES)."""
    params = _defined(key_version=key_version, envelope=envelope)
    return _raw(f"/v1/rsa/{_name(name)}/encrypt", source, sink, params, progress)


def rsa_decrypt_stream(
    name: str,
    source: Source,
    sink: IO[bytes],
    *,
    key_version: int | None = None,
    progress: Progress | None = None,
) -> Call[models.Streamed]:
    """Decrypt `source` into `sink` through the raw form (`progress` as for ECIES)."""
    params = _defined(key_version=key_version)
    return _raw(f"/v1/rsa/{_name(name)}/decrypt", source, sink, params, progress)


# Signatures


def _sign_options(
    hash: Hash | None,
    prehashed: bool | None,
    format: SignatureFormat | None,
    padding: Padding | None,
    mu: bool | None,
) -> dict[str, Any]:
    return _defined(hash=hash, prehashed=prehashed, format=format, padding=padding, mu=mu)


def sign(
    name: str,
    message: bytes,
    *,
    hash: Hash | None = None,
    prehashed: bool | None = None,
    format: SignatureFormat | None = None,
    padding: Padding | None = None,
    mu: bool | None = None,
    envelope: bool | None = None,
    context: bytes | None = None,
) -> Call[models.Signature]:
    """Sign with the key's latest version. The options each type takes (the service refuses
    the others): ECDSA `hash` (secp256k1: SHA-256 or Keccak-256; P-256, P-384, P-521: SHA-256,
    -384 or -512, the curve's by default), `prehashed` (the message is the digest), `format`
    (DER, compact; recoverable for secp256k1); RSA `hash`, `prehashed` and `padding` (PSS or
    PKCS#1 v1.5); ML-DSA `mu` (the message is FIPS 204's 64-byte mu). `envelope`: the
    signature in the envelope that names its version (the default for all but
    ecdsa-secp256k1 and ed25519). `context`: a derived ed25519 key's, always."""
    body = {
        "message": b64(message),
        **_sign_options(hash, prehashed, format, padding, mu),
        **_defined(envelope=envelope, context=b64(context) if context is not None else None),
    }
    path = f"/v1/sign/{_name(name)}"
    return Call("POST", path, _into(models.Signature), json=body, idempotent=True)


def verify(
    name: str,
    message: bytes,
    signature: bytes,
    *,
    hash: Hash | None = None,
    prehashed: bool | None = None,
    format: SignatureFormat | None = None,
    padding: Padding | None = None,
    mu: bool | None = None,
    key_version: int | None = None,
    context: bytes | None = None,
) -> Call[bool]:
    """Whether `signature` is the key's signature of `message` (a malformed one is False);
    `context` as for `sign`."""
    body = {
        "message": b64(message),
        "signature": b64(signature),
        **_sign_options(hash, prehashed, format, padding, mu),
        **_defined(key_version=key_version, context=b64(context) if context is not None else None),
    }
    return Call("POST", f"/v1/verify/{_name(name)}", _valid, json=body, idempotent=True)


def verify_with_public_key(
    type: SigningType,
    public_key: bytes,
    message: bytes,
    signature: bytes,
    *,
    hash: Hash | None = None,
    prehashed: bool | None = None,
    format: SignatureFormat | None = None,
    padding: Padding | None = None,
    mu: bool | None = None,
) -> Call[bool]:
    """Verification against a public key given in the request (no stored key): raw, or a
    SubjectPublicKeyInfo in DER (the only form for RSA)."""
    body = {
        "type": type,
        "public_key": b64(public_key),
        "message": b64(message),
        "signature": b64(signature),
        **_sign_options(hash, prehashed, format, padding, mu),
    }
    return Call("POST", "/v1/verify", _valid, json=body, idempotent=True)


# JWT


def jwt_sign(
    name: str,
    claims: Mapping[str, Any],
    *,
    header: Mapping[str, Any] | None = None,
    alg: str | None = None,
) -> Call[models.Jwt]:
    """A JWT of `claims` signed with the key's latest version: `alg` the key's (ES256, EdDSA,
    ML-DSA-65, ...; for RSA PS256 by default, or PS384, PS512, RS256, RS384, RS512), `header`
    fields added to the token's header (alg and kid are the key's)."""
    body = {
        "claims": dict(claims),
        **_defined(header=dict(header) if header is not None else None, alg=alg),
    }
    path = f"/v1/jwt/{_name(name)}/sign"
    return Call("POST", path, _into(models.Jwt), json=body, idempotent=True)


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
    y: Sequence[int] | None = None,
    *,
    f: Sequence[Sequence[int]] | None = None,
    key_version: int | None = None,
) -> Call[models.FunctionalKey]:
    """A functional key for y (inner-product schemes) or the matrix f (quadratic schemes)."""
    body = {**_function(y, f), **_defined(key_version=key_version)}
    path = f"/v1/fe/{_name(name)}/keygen"
    return Call("POST", path, _into(models.FunctionalKey), json=body)


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


_fe_result = _field("result", lambda result: None if result is None else int(result))


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
    path = f"/v1/fe/{_name(name)}/decrypt"
    return Call("POST", path, _fe_result, json=body, idempotent=True)


def fe_decrypt_many(
    name: str,
    functional_key: bytes,
    ciphertexts: Sequence[bytes],
    bounds: Bounds,
    *,
    key_version: int | None = None,
) -> Call[list[models.BatchItem[int | None]]]:
    """One functional key against many ciphertexts."""
    body = {
        "functional_key": b64(functional_key),
        "ciphertexts": [b64(c) for c in ciphertexts],
        "bounds": list(bounds),
        **_defined(key_version=key_version),
    }
    path = f"/v1/fe/{_name(name)}/decrypt/many"
    return Call("POST", path, Items(_fe_result.decode), json=body, idempotent=True)


def fe_functions(
    name: str,
    *,
    key_version: int | None = None,
    limit: int | None = None,
    after: int | None = None,
) -> Call[models.FeFunctions]:
    """One page of the functions released under a key version (`next` is the next page's
    `after`), the rank of them all and the key's budget."""
    params = _defined(key_version=key_version, limit=limit, after=after)
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
    """One page of the audit trail (admin operation `audit`), filtered; `next` is the next
    page's `after`."""
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


def verify_audit() -> Call[models.AuditVerification]:
    """The service's check of every chain of its audit trail (admin operation `audit`):
    whether each record's MAC and place in its chain hold, and the faults found."""
    return Call("POST", "/v1/audit/verify", _into(models.AuditVerification), idempotent=True)


def keyring() -> Call[models.Keyring]:
    """The keyring's current term and how many key versions are still wrapped under older
    ones (admin operation `sys`)."""
    return Call("GET", "/v1/sys/keyring", _into(models.Keyring), idempotent=True)


def rotate_keyring() -> Call[models.Keyring]:
    """A new keyring term (admin operation `sys`): every process then rewraps older versions
    onto it."""
    return Call("POST", "/v1/sys/keyring/rotate", _into(models.Keyring))


def wrapping_key() -> Call[bytes]:
    """The public key backups and key material for this instance are encrypted to (admin
    operation `sys` or `backup`): SEC1 secp256k1."""
    return Call("GET", "/v1/sys/wrapping-key", _base64_field("public_key"), idempotent=True)


def signing_key() -> Call[bytes]:
    """The Ed25519 public key this instance signs its backups with (admin operation `sys` or
    `backup`): what another instance's CIPHERD_BACKUP_SIGNERS names to import them."""
    return Call("GET", "/v1/sys/wrapping-key", _base64_field("signing_key"), idempotent=True)


def random(count: int) -> Call[bytes]:
    """`count` random bytes from the service's CSPRNG (any valid token)."""
    body = {"bytes": count}
    return Call("POST", "/v1/random", _base64_field("random"), json=body, idempotent=True)


def ready() -> Call[str]:
    """The service's readiness (`ok`); StoreUnavailable or ShuttingDown when it is not ready."""
    return Call("GET", "/readyz", _field("status", str), idempotent=True)
