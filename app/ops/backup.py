"""Keys that leave one instance and arrive in another: the instance's wrapping key pair, backups
encrypted to another instance's wrapping key, and their import (BYOK, key material made elsewhere
and encrypted to the wrapping key, is `app.ops.byok`).

The wrapping key is ECIES on secp256k1, and every blob is an ECIES payload in eciespy's default
form (uncompressed ephemeral key, 16-byte nonce, AES-256-GCM), so eciespy, eciesjs or
`core.ecies` can make BYOK material. A backup holds every version of a key, its parameters and
policies, its FE ledger and the HMAC keys a Transit restore brought it (`transit_hmac_keys`,
sealed under the versions' secrets), as JSON: only keys created with `allow_backup` (which
nothing clears) leave.

ECIES proves only that a blob was made for this instance, by anyone who has its public wrapping
key; so a backup is also signed (Ed25519) by the instance that made it, over the document that
names the instance it is for, and an import takes only backups signed by this instance or by one
`CIPHERD_BACKUP_SIGNERS` names. Before anything is stored, an imported document passes a
creation's and a PATCH's checks (`KeyCreate`, `KeyPatch`), each version's material BYOK's (its
length; its public part, or an FE master key's shape, computed again and compared), and its
ledger is replayed.
"""

import base64
import dataclasses
import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated, Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from app.ops.errors import Problem, first_error, invalid_input
from app.ops.fe_policy import SpanBasis, basis_capacity, flatten
from app.ops.keys import (
    MAX_CREATED_AHEAD_SECONDS,
    KeyCreate,
    KeyOut,
    KeyPatch,
    creation_params,
    key_out,
    policy_decision,
)
from app.ops.keytypes import KEY_TYPES
from app.ops.transit import hmac_keys
from app.ops.versioned import DISABLED, disabled
from app.settings import Settings
from app.store import (
    FunctionLedger,
    KeyInfo,
    KeyPolicies,
    KeyStore,
    KeyVersionInfo,
    RestoredVersion,
)
from core import ecies
from core.ecies import secp256k1
from core.errors import DecryptionError, EncodingError, InvalidKeyError
from core.fe import encoding
from core.fe.schemes import SCHEMES
from core.sign import ed25519

WRAPPING_CURVE = "secp256k1"
# A backup's plaintext: this line, the signer's Ed25519 public key, the signature of all that
# comes before and after it, then the document (JSON).
BACKUP_MAGIC = b"cipherd-key-backup-v2\n"
_SIGNED_AT = len(BACKUP_MAGIC) + ed25519.KEY_BYTES
_DOCUMENT_AT = _SIGNED_AT + ed25519.SIGNATURE_BYTES
SIGNING_KEY_LABEL = b"cipherd backup signing key"
# The most versions one backup holds, and the largest version number it may bring.
MAX_BACKUP_VERSIONS = 10_000
MAX_KEY_VERSION = 10**9
# The most entry operations replaying a backup's FE ledger may take (a few seconds).
MAX_LEDGER_WORK = 2 * 10**7
# The policies a backup carries beside its `KeyCreate`, as PATCH takes them; and `enabled`, false
# only, for a disabled key: it is imported disabled, and an instance that predates the field
# refuses the backup rather than bring the key back usable.
VERSION_POLICIES = frozenset(
    {"min_decryption_version", "min_encryption_version", "auto_rotate_seconds", "enabled"}
)


def _keypair() -> tuple[bytes, bytes]:
    return ecies.generate_keypair(WRAPPING_CURVE)


def wrapping_public_key(store: KeyStore) -> bytes:
    """The instance's wrapping public key (SEC1, 65 bytes), made the first time it is asked."""
    return store.wrapping_key.public(_keypair)


def _signing_key(store: KeyStore) -> ed25519.SigningKey:
    """The instance's backup signing key, derived from its wrapping secret (HKDF-SHA256 under a
    label of its own): every replica of a store has it, nothing else does, and it needs no row
    of its own."""
    secret, _ = store.wrapping_key.pair(_keypair)
    seed = HKDF(hashes.SHA256(), ed25519.KEY_BYTES, None, SIGNING_KEY_LABEL).derive(secret)
    return ed25519.SigningKey(seed)


def signing_public_key(store: KeyStore) -> bytes:
    """The Ed25519 public key that signs this instance's backups: what another instance's
    `CIPHERD_BACKUP_SIGNERS` names to take them."""
    return _signing_key(store).public


def unwrap(store: KeyStore, blob: bytes, what: str) -> bytes:
    secret, _ = store.wrapping_key.pair(_keypair)
    try:
        return ecies.decrypt(secret, blob)
    except DecryptionError:
        raise Problem(
            422,
            "unwrap-failed",
            "Does not decrypt",
            f"{what} does not decrypt under this instance's wrapping key "
            "(GET /v1/sys/wrapping-key)",
        ) from None


def _base64(value: object) -> bytes:
    if not isinstance(value, str):
        raise ValueError("must be a base64 string")
    return base64.b64decode(value, validate=True)  # binascii.Error is a ValueError


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


Base64 = Annotated[bytes, BeforeValidator(_base64)]


def _not_ahead(seconds: float) -> float:
    """A time of the source's (a version's, a release's): one far ahead would be carried on."""
    if seconds > time.time() + MAX_CREATED_AHEAD_SECONDS:
        raise ValueError("more than a day ahead of this clock")
    return seconds


Seconds = Annotated[StrictFloat, Field(ge=0, allow_inf_nan=False), AfterValidator(_not_ahead)]
Version = Annotated[StrictInt, Field(ge=1, le=MAX_KEY_VERSION)]
Entry = Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1)]
# Fail-fast lists: refused at their first bad entry rather than each described (seconds and
# gigabytes for millions of them).
Entries = Annotated[list[Entry], Field(min_length=1, max_length=4096, fail_fast=True)]


class BackupVersion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Version
    created_at: Seconds
    secret: Base64
    public: Base64 | None


class LedgerEntry(BaseModel):
    """One function released under an FE key version, as the source's ledger holds it."""

    model_config = ConfigDict(extra="forbid")

    version: Version
    function: (
        Entries | Annotated[list[Entries], Field(min_length=1, max_length=4096, fail_fast=True)]
    )
    # No control characters: a NUL, which PostgreSQL text cannot hold, would tie the key to
    # SQLite instances.
    principal: str = Field(min_length=1, max_length=128, pattern=r"^[^\x00-\x1f\x7f]+$")
    time: Seconds
    rank: StrictInt = Field(ge=0)


class BackupDocument(BaseModel):
    """What a backup holds: the key as `POST /v1/keys` would create it, its version policies
    as `PATCH` would set them, its versions, its FE ledger and its versions' sealed HMAC keys
    (`app.ops.transit.hmac_keys`), when a Transit restore brought them."""

    model_config = ConfigDict(extra="forbid")

    recipient: Base64  # the wrapping public key of the instance the backup is for
    made_at: Seconds
    key: KeyCreate
    policies: KeyPatch
    versions: list[BackupVersion] = Field(min_length=1, max_length=MAX_BACKUP_VERSIONS)
    ledger: Annotated[list[LedgerEntry], Field(fail_fast=True)] = Field(default_factory=list)
    transit_hmac_keys: dict[str, StrictStr] = Field(
        default_factory=dict, max_length=MAX_BACKUP_VERSIONS
    )


def backup(store: KeyStore, name: str, wrapping_key: bytes) -> bytes:
    """Every version, the parameters, the policies, the FE ledger and the Transit HMAC keys of
    `name`, signed by this instance and ECIES-encrypted to `wrapping_key`."""
    try:  # as the recipient names it: uncompressed, whichever form the request gave
        recipient = secp256k1.encode(secp256k1.parse(wrapping_key), compressed=False)
    except InvalidKeyError as exc:
        raise invalid_input(f"wrapping_key: {exc}") from None
    with store.transaction() as held:  # the key as it stands: a trim or rotation waits for it
        info = held.keys.locked(name)
        if not info.params.get("allow_backup"):
            raise Problem(
                403,
                "backup-not-allowed",
                "Backup not allowed",
                f"key {name!r} was not created with allow_backup",
            )
        if len(info.versions) > MAX_BACKUP_VERSIONS:
            raise invalid_input(
                f"key {name!r} has {len(info.versions)} versions, over the "
                f"{MAX_BACKUP_VERSIONS} a backup holds: trim it first (POST /v1/keys/{name}/trim)"
            )
        versions, released = [], []
        for version in info.versions:
            material = held.keys.material(name, version.version)
            versions.append(
                {
                    "version": version.version,
                    "created_at": version.created_at,
                    "secret": _b64(material.secret),
                    "public": _b64(material.public),
                }
            )
            after: int | None = 0
            while after is not None:  # the version's ledger, page by page
                page = held.ledger.functions(name, version.version, after=after)
                released.extend(page.functions)
                after = page.next
    key: dict[str, Any] = {
        "name": info.name,
        "type": info.type,
        "exportable": info.exportable,
        "allow_backup": True,
        "deletion_protection": info.deletion_protection,
    }
    for param in ("dimension", "curve", "fe_policy", "derived", "convergent"):
        if param in info.params:
            key[param] = info.params[param]
    policies: dict[str, Any] = {
        "min_decryption_version": info.min_decryption_version,
        "min_encryption_version": info.min_encryption_version,
        "auto_rotate_seconds": round(info.auto_rotate_seconds or 0),
    }
    if disabled(info.params):
        policies["enabled"] = False
    document = {
        "recipient": _b64(recipient),
        "made_at": store.clock.now(),
        "key": key,
        "policies": policies,
        "versions": versions,
        "ledger": [
            {
                "version": record.version,
                "function": record.function,
                "principal": record.principal,
                "time": record.time,
                "rank": record.rank,
            }
            for record in released
        ],
    }
    sealed_hmac_keys = hmac_keys.for_backup(info)
    if sealed_hmac_keys:  # only then: an instance without the field refuses every backup with it
        document["transit_hmac_keys"] = sealed_hmac_keys
    signer = _signing_key(store)
    signed = BACKUP_MAGIC + signer.public
    body = json.dumps(document).encode()
    plaintext = signed + signer.sign(signed + body) + body
    return ecies.encrypt(recipient, plaintext)


def open_backup(store: KeyStore, settings: Settings, blob: bytes) -> tuple[BackupDocument, bytes]:
    """The document of a backup made for this instance and signed by a signer it takes, with
    that signer's public key (422 for any other)."""
    plaintext = unwrap(store, blob, "backup")
    if not plaintext.startswith(BACKUP_MAGIC) or len(plaintext) < _DOCUMENT_AT:
        raise invalid_input(
            "backup: not a signed cipherd key backup (backups made before they were signed "
            "cannot be imported: make the backup again)"
        )
    signer = plaintext[len(BACKUP_MAGIC) : _SIGNED_AT]
    signature = plaintext[_SIGNED_AT:_DOCUMENT_AT]
    body = plaintext[_DOCUMENT_AT:]
    if not ed25519.verify(signer, plaintext[:_SIGNED_AT] + body, signature):
        raise invalid_input("backup: its signature does not verify")
    trusted = {signing_public_key(store), *settings.backup_signer_keys}
    if signer not in trusted:
        raise Problem(
            403,
            "backup-signer-not-trusted",
            "Backup signer not trusted",
            f"the backup is signed by {_b64(signer)}, which is neither this instance nor one "
            "that CIPHERD_BACKUP_SIGNERS names",
        )
    try:
        document = BackupDocument.model_validate_json(body)
    except ValidationError as exc:
        raise invalid_input(f"backup: {first_error(exc)}") from None
    if document.recipient != wrapping_public_key(store):
        raise invalid_input("backup: made for another instance's wrapping key")
    return document, signer


@contextmanager
def _within(prefix: str) -> Iterator[None]:
    """A 422 of a creation's or PATCH's checks, naming the field within the backup."""
    try:
        yield
    except Problem as exc:
        if exc.slug != "invalid-input":
            raise
        raise invalid_input(f"{prefix}.{exc.detail}") from None


def restore(
    store: KeyStore, settings: Settings, document: BackupDocument, name: str | None
) -> KeyOut:
    """The key of an opened backup, under its own name or `name`, once every check of a
    creation, a PATCH and BYOK has passed, with its FE ledger."""
    key = document.key
    if name is not None and name != key.name:
        if key.fe_policy is not None:
            raise invalid_input(
                f"name: an FE key with a function policy is imported under its own name only "
                f"({key.name!r}), so that one instance keeps one ledger of what its functional "
                "keys reveal"
            )
        key = key.model_copy(update={"name": name})
    with _within("backup.key"):
        params = creation_params(key, settings)
    if not params.get("allow_backup"):
        raise invalid_input("backup.key.allow_backup: a backup is of a key with allow_backup")
    extra = document.policies.model_fields_set - VERSION_POLICIES
    if extra:
        raise invalid_input(f"backup.policies: {sorted(extra)} travel in backup.key")
    if document.policies.enabled is not None:
        if document.policies.enabled:
            raise invalid_input("backup.policies.enabled: carried as false only")
        params[DISABLED] = True
    versions = _checked_versions(key.type, params, document.versions)
    numbers = [v.version for v in versions]
    if document.transit_hmac_keys:
        secrets = {v.version: v.secret for v in versions}
        try:
            params[hmac_keys.PARAM] = hmac_keys.carried(
                key.type, document.transit_hmac_keys, secrets
            )
        except ValueError as exc:
            raise invalid_input(f"backup.transit_hmac_keys: {exc}") from None
    proposed = KeyInfo(
        key.name,
        key.type,
        params,
        key.exportable,
        created_at=0.0,
        updated_at=0.0,
        latest_version=numbers[-1],
        versions=tuple(KeyVersionInfo(v.version, v.created_at) for v in versions),
        min_decryption_version=numbers[0],
    )
    with _within("backup.policies"):
        columns = policy_decision(document.policies, settings.min_auto_rotate_seconds)(proposed)
    ledger = _replayed_ledger(key.type, params, numbers, document.ledger)
    policies = KeyPolicies(
        deletion_protection=key.deletion_protection,
        min_decryption_version=columns.get("min_decryption_version", numbers[0]),
        min_encryption_version=columns.get("min_encryption_version", 0),
        auto_rotate_seconds=columns.get("auto_rotate_seconds"),
    )
    with store.transaction() as held:  # the key with its ledger, or neither
        info = held.keys.restore_backup(
            key.name, key.type, params, key.exportable, versions, policies
        )
        for version, (basis, entries) in ledger.items():
            held.ledger.release(key.name, version, _restoring(basis, entries))
    return key_out(info, with_versions=True)


def _checked_versions(
    key_type: str, params: dict[str, Any], versions: Sequence[BackupVersion]
) -> list[RestoredVersion]:
    """The versions, numbered strictly increasingly, each with its material as BYOK would take
    it and its public part as the service computes it (422 otherwise)."""
    restored: list[RestoredVersion] = []
    for index, version in enumerate(versions):
        where = f"backup.versions.{index}"
        if restored and version.version <= restored[-1].version:
            raise invalid_input(f"{where}.version: versions increase strictly")
        try:
            secret, public = KEY_TYPES[key_type].take(version.secret, params)
            if not _same_public(key_type, version.public, public):
                raise ValueError("its public part is not its secret's")
        except (InvalidKeyError, EncodingError, ValueError) as exc:
            raise invalid_input(f"{where}: {exc}") from None
        restored.append(RestoredVersion(version.version, version.created_at, secret, public))
    return restored


def _same_public(key_type: str, given: bytes | None, expected: bytes | None) -> bool:
    """Whether `given` is `expected`, or a QFE public key encoded before master ids (format
    2) with the same points."""
    scheme = SCHEMES.get(key_type)
    if given == expected or given is None or expected is None:
        return given == expected
    if scheme is None or not scheme.quadratic:
        return False
    decoded, computed = scheme.public_key(given), scheme.public_key(expected)
    renamed = dataclasses.replace(decoded, master_id=computed.master_id)
    return encoding.same_id(decoded.master_id, computed.master_id) and (
        renamed.to_bytes() == expected
    )


Replayed = dict[int, tuple[list[list[int]], list[LedgerEntry]]]


def _replayed_ledger(
    key_type: str, params: dict[str, Any], versions: Sequence[int], ledger: Sequence[LedgerEntry]
) -> Replayed:
    """Each version's released functions and the echelon basis of their span, replayed as the
    service decides them, each entry's rank checked (422 otherwise), within `MAX_LEDGER_WORK`."""
    if not ledger:
        return {}
    scheme = SCHEMES.get(key_type)
    if scheme is None:
        raise invalid_input(f"backup.ledger: a {key_type} key has no FE ledger")
    n = params["dimension"]
    length = n * n if scheme.quadratic else n
    rows = min(length, basis_capacity(length))  # the most rows a basis reduces against
    work = sum(length * min(entry.rank, rows) for entry in ledger)
    if work > MAX_LEDGER_WORK:
        raise invalid_input(
            f"backup.ledger: replaying it would take about {work} operations, over the "
            f"{MAX_LEDGER_WORK} an import may take"
        )
    known = set(versions)
    replayed: Replayed = {}
    bases: dict[int, SpanBasis] = {}
    for index, entry in enumerate(ledger):
        where = f"backup.ledger.{index}"
        if entry.version not in known:
            raise invalid_input(f"{where}.version: the backup has no version {entry.version}")
        function = entry.function
        shaped = len(function) == n and (
            all(isinstance(row, list) and len(row) == n for row in function)
            if scheme.quadratic
            else all(isinstance(e, int) for e in function)
        )
        if not shaped:
            wanted = f"an {n}×{n} matrix" if scheme.quadratic else f"{n} entries"
            raise invalid_input(f"{where}.function: needs {wanted}")
        basis = bases.get(entry.version)
        if basis is None:
            basis = bases[entry.version] = SpanBasis(length)
        basis.add(flatten(function))
        # A basis at its capacity counts no further; a ledger made before it did.
        if basis.rank != entry.rank and not (basis.full and basis.rank < entry.rank <= length):
            raise invalid_input(
                f"{where}.rank: the functions so far span rank {basis.rank}, not {entry.rank}"
            )
        replayed.setdefault(entry.version, ([], []))[1].append(entry)
    for version, basis in bases.items():
        replayed[version] = (basis.rows, replayed[version][1])
    return replayed


def _restoring(basis: list[list[int]], entries: Sequence[LedgerEntry]) -> Any:
    """The decision that writes a version's replayed ledger as the source kept it."""

    def write(ledger: FunctionLedger) -> None:
        for entry in entries:
            ledger.record(entry.function, entry.principal, entry.time, entry.rank)
        ledger.basis = basis

    return write
