"""KMS's encryption actions, each the native verb of the key's family under the native scope:
Encrypt, Decrypt and ReEncrypt (AES-256-GCM keys, `app.ops.aead`, and RSA keys, RSAES-OAEP
with SHA-256, `app.ops.rsa`); the helpers the data keys (`app.ops.kms.datakeys`) and the
signing actions (`app.ops.kms.signing`) share.

A symmetric key's `CiphertextBlob` is `app.ops.kms.ciphertext`'s: it names the key and version,
so that Decrypt and ReEncrypt need no KeyId, and binds the encryption context; a decryption
with another context, or of a blob that does not open, is InvalidCiphertextException. An RSA
key's is the OAEP ciphertext itself, as AWS's, and takes no encryption context. A key of
another usage, or an algorithm the key does not have, is InvalidKeyUsageException; a
KeyId that is not the key a symmetric blob names, IncorrectKeyException.
"""

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import ConfigDict, Field

from app.ops.aead import AeadKey
from app.ops.grants import Operation
from app.ops.kms import ciphertext, specs
from app.ops.kms.actions import GrantTokenList, KeyIdField, KmsCall, KmsRequest, action
from app.ops.kms.errors import KmsError, validation
from app.ops.rsa import RsaKey
from app.ops.versioned import disabled
from app.store import KeyMaterial, KeyNotFoundError, VersionNotFoundError

# Blob members: base64 in the JSON body, with AWS's bounds.
PlaintextField = Annotated[bytes, Field(min_length=1, max_length=4096)]
CiphertextBlobField = Annotated[bytes, Field(min_length=1, max_length=6144)]
# One error is enough: a context of a million numbers was a million errors, gigabytes of them.
Context = Annotated[dict[str, str], Field(fail_fast=True)] | None
# AWS takes one modifier (IGNORE_CIPHERTEXT); the bound stops a long list at once.
IGNORE_CIPHERTEXT: Final = "IGNORE_CIPHERTEXT"
DryRunModifierList = Annotated[list[Literal["IGNORE_CIPHERTEXT"]], Field(max_length=8)] | None
EncryptionAlgorithmField = Literal[
    "SYMMETRIC_DEFAULT", "RSAES_OAEP_SHA_1", "RSAES_OAEP_SHA_256", "SM2PKE"
]
NumberOfBytesField = Annotated[int, Field(ge=1, le=1024)]

SYMMETRIC: Final = "SYMMETRIC_DEFAULT"


class BlobRequest(KmsRequest):
    """A request with blob members (base64 in JSON)."""

    model_config = ConfigDict(extra="forbid", strict=True, val_json_bytes="base64")


def b64(data: bytes) -> str:
    """A blob member of an answer."""
    return base64.b64encode(data).decode()


@dataclass(frozen=True)
class Bound:
    """What an AES-GCM encryption binds beside its key (`app.ops.aead.Params`)."""

    associated_data: bytes
    context: bytes | None = None


def usable(call: KmsCall, material: KeyMaterial, usage: str) -> str:
    """The key's spec, once the key is enabled (DisabledException) and of `usage`
    (InvalidKeyUsageException)."""
    if disabled(material.params):
        raise KmsError("DisabledException", f"{call.arn(material.name)} is disabled.")
    described = specs.described(material)
    if described is None or usage not in specs.usages_of(material):
        kind = "no KMS key spec" if described is None else f"KeyUsage {described[1]}"
        raise KmsError(
            "InvalidKeyUsageException",
            f"{call.arn(material.name)} ({kind}) cannot be used for {call.action}",
        )
    return described[0]


def dry_run(requested: bool) -> None:
    """A DryRun whose checks all passed: DryRunOperationException, as AWS answers it."""
    if requested:
        raise KmsError(
            "DryRunOperationException",
            "The request would have succeeded, but the DryRun flag is set.",
        )


def no_recipient(recipient: object) -> None:
    if recipient is not None:
        raise KmsError(
            "UnsupportedOperationException",
            "Recipient (an attested enclave) is not supported by this service",
        )


def _check_algorithm(spec: str, algorithm: str) -> None:
    """InvalidKeyUsageException for an algorithm the key's spec has not; ValidationException
    for RSAES_OAEP_SHA_1, which the service does not compute."""
    if algorithm == "RSAES_OAEP_SHA_1" and spec.startswith("RSA_"):
        raise validation(
            "EncryptionAlgorithm RSAES_OAEP_SHA_1 is not supported by this service; use "
            "RSAES_OAEP_SHA_256"
        )
    if algorithm not in specs.SPECS[spec].algorithms[specs.ENCRYPT_DECRYPT]:
        raise KmsError(
            "InvalidKeyUsageException",
            f"EncryptionAlgorithm {algorithm} is not valid for a {spec} key",
        )


def _context_bytes(context: Context) -> bytes:
    try:
        return ciphertext.context_bytes(context)
    except ValueError as exc:
        raise validation(str(exc)) from None


async def encryption_key(call: KmsCall, name: str, algorithm: str) -> AeadKey | RsaKey:
    """The key as its family's verbs take it (AES-GCM or RSA encryption), once it may encrypt
    with `algorithm`."""
    services = call.services
    material = await services.keyring.fetch(name)
    spec = usable(call, material, specs.ENCRYPT_DECRYPT)
    _check_algorithm(spec, algorithm)
    trial = services.settings.bare_payload_versions
    if spec == SYMMETRIC:
        return AeadKey(services.keyring, material, trial)
    return RsaKey(services.keyring, material, trial)


def seal(key: AeadKey, plaintext: bytes, context: Context) -> bytes:
    """A symmetric blob of `plaintext` under the key's version for encryption."""
    material = key.encryption(None)
    head = ciphertext.header(key.name, material.version)
    bound = Bound(head.raw + _context_bytes(context))
    return head.raw + key.encrypt(plaintext, bound, False, material.version).data


def unseal(key: AeadKey, head: ciphertext.Header, payload: bytes, context: Context) -> bytes:
    """The plaintext of a symmetric blob (InvalidCiphertextException if it does not open, or
    names a version the key has not)."""
    try:
        return key.decrypt(payload, Bound(head.raw + _context_bytes(context)), head.version).data
    except VersionNotFoundError:
        raise KmsError("InvalidCiphertextException", "The ciphertext is not valid.") from None


def _encrypted(call: KmsCall, key: AeadKey | RsaKey, plaintext: bytes, context: Context) -> bytes:
    """The blob of `plaintext` under `key` (an RSA key takes no context)."""
    if isinstance(key, AeadKey):
        call.record("aead_encrypt", key.name)
        return seal(key, plaintext, context)
    if context:
        raise validation("EncryptionContext is not supported with asymmetric KMS keys")
    call.record("rsa_encrypt", key.name)
    return key.encrypt(plaintext, None, False).data


async def _decrypted(
    call: KmsCall, key_id: str | None, blob: bytes | None, context: Context, algorithm: str
) -> tuple[str, bytes]:
    """The key's name and the plaintext of `blob`: a symmetric blob names its key (`key_id`,
    if given, must name the same: IncorrectKeyException); an RSA one needs `key_id`. No blob
    (a dry run ignoring it): what can be checked without it, on the key `key_id` names."""
    named = None
    if key_id is not None:
        named = await call.key(key_id, "aead_decrypt", Operation.DECRYPT)
        await call.services.keyring.fetch(named)  # NotFoundException for no such key
    if blob is None:
        if named is None:
            raise validation("A dry run with IGNORE_CIPHERTEXT needs the KeyId of the key to check")
        await encryption_key(call, named, algorithm)
        return named, b""
    parsed = ciphertext.parse(blob) if algorithm == SYMMETRIC else None
    if algorithm == SYMMETRIC:
        if parsed is None:
            raise KmsError("InvalidCiphertextException", "The ciphertext is not valid.")
        if named is not None and named != parsed[0].name:
            raise KmsError(
                "IncorrectKeyException",
                "The key ID in the request does not identify a CMK that can perform this "
                "operation.",
            )
        name = parsed[0].name
        call.record("aead_decrypt", name)
        call.allow(Operation.DECRYPT, name)
    elif named is None:
        raise validation(f"KeyId is required to decrypt with {algorithm}")
    else:
        name = named
    try:
        key = await encryption_key(call, name, algorithm)
    except KeyNotFoundError:
        if named is not None:
            raise
        # A blob naming no key is a bad blob, as AWS answers it: no name is confirmed or denied.
        raise KmsError("InvalidCiphertextException", "The ciphertext is not valid.") from None
    if isinstance(key, AeadKey):
        assert parsed is not None
        return name, unseal(key, parsed[0], parsed[1], context)
    if context:
        raise validation("EncryptionContext is not supported with asymmetric KMS keys")
    call.record("rsa_decrypt", name)
    return name, key.decrypt(blob, None, None).data


class EncryptRequest(BlobRequest):
    KeyId: KeyIdField
    Plaintext: PlaintextField
    EncryptionContext: Context = None
    GrantTokens: GrantTokenList = None
    EncryptionAlgorithm: EncryptionAlgorithmField = SYMMETRIC
    DryRun: bool = False


@action("Encrypt")
async def encrypt(call: KmsCall, request: EncryptRequest) -> dict[str, Any]:
    name = await call.key(request.KeyId, "aead_encrypt", Operation.ENCRYPT)
    key = await encryption_key(call, name, request.EncryptionAlgorithm)
    dry_run(request.DryRun)
    blob = _encrypted(call, key, request.Plaintext, request.EncryptionContext)
    return {
        "CiphertextBlob": b64(blob),
        "KeyId": call.arn(name),
        "EncryptionAlgorithm": request.EncryptionAlgorithm,
    }


class DecryptRequest(BlobRequest):
    CiphertextBlob: CiphertextBlobField | None = None  # required but in a dry run ignoring it
    EncryptionContext: Context = None
    GrantTokens: GrantTokenList = None
    KeyId: KeyIdField | None = None
    EncryptionAlgorithm: EncryptionAlgorithmField = SYMMETRIC
    Recipient: dict[str, Any] | None = None
    DryRun: bool = False
    DryRunModifiers: DryRunModifierList = None


def _blob_to_open(blob: bytes | None, dry: bool, modifiers: Sequence[str] | None) -> bytes | None:
    """The ciphertext a decryption opens; None for a dry run with IGNORE_CIPHERTEXT, which
    opens none, whether or not one is given."""
    if dry and IGNORE_CIPHERTEXT in (modifiers or ()):
        return None
    if blob is None:
        raise validation(
            "1 validation error detected: Value at 'CiphertextBlob' failed to satisfy "
            "constraint: Field required"
        )
    return blob


@action("Decrypt")
async def decrypt(call: KmsCall, request: DecryptRequest) -> dict[str, Any]:
    no_recipient(request.Recipient)
    algorithm = request.EncryptionAlgorithm
    blob = _blob_to_open(request.CiphertextBlob, request.DryRun, request.DryRunModifiers)
    name, plaintext = await _decrypted(
        call, request.KeyId, blob, request.EncryptionContext, algorithm
    )
    dry_run(request.DryRun)
    return {"KeyId": call.arn(name), "Plaintext": b64(plaintext), "EncryptionAlgorithm": algorithm}


class ReEncryptRequest(BlobRequest):
    CiphertextBlob: CiphertextBlobField | None = None  # required but in a dry run ignoring it
    SourceEncryptionContext: Context = None
    SourceKeyId: KeyIdField | None = None
    DestinationKeyId: KeyIdField
    DestinationEncryptionContext: Context = None
    SourceEncryptionAlgorithm: EncryptionAlgorithmField = SYMMETRIC
    DestinationEncryptionAlgorithm: EncryptionAlgorithmField = SYMMETRIC
    GrantTokens: GrantTokenList = None
    DryRun: bool = False
    DryRunModifiers: DryRunModifierList = None


@action("ReEncrypt")
async def re_encrypt(call: KmsCall, request: ReEncryptRequest) -> dict[str, Any]:
    """The plaintext of one blob under another key (or the same one's latest version), without
    it leaving the service: decrypt on the source, encrypt on the destination."""
    blob = _blob_to_open(request.CiphertextBlob, request.DryRun, request.DryRunModifiers)
    source, plaintext = await _decrypted(
        call,
        request.SourceKeyId,
        blob,
        request.SourceEncryptionContext,
        request.SourceEncryptionAlgorithm,
    )
    name = await call.key(request.DestinationKeyId, "aead_encrypt", Operation.ENCRYPT)
    key = await encryption_key(call, name, request.DestinationEncryptionAlgorithm)
    dry_run(request.DryRun)
    blob = _encrypted(call, key, plaintext, request.DestinationEncryptionContext)
    call.record("aead_rewrap" if isinstance(key, AeadKey) else "rsa_encrypt", name)
    call.note.details["source_key"] = source
    return {
        "CiphertextBlob": b64(blob),
        "SourceKeyId": call.arn(source),
        "KeyId": call.arn(name),
        "SourceEncryptionAlgorithm": request.SourceEncryptionAlgorithm,
        "DestinationEncryptionAlgorithm": request.DestinationEncryptionAlgorithm,
    }
