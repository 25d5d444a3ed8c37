"""Keys: the verbs of their lifecycle (create, list, read, rotate, delete, public part, export).

What each type draws, takes in and shows is its entry in `app.ops.keytypes`; families (ECIES,
AEZ, FE, ...) check the type of a key before using it. The arguments and answers of
these verbs are the models that `POST /v1/keys` and `cipherd keys` share, so that both make the
same checks and print the same JSON.
"""

from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
)

from app.ops import jwk, sign
from app.ops.audit import AuditNote
from app.ops.errors import Problem, invalid_input
from app.ops.fe_policy import FePolicy, checked_fe_policy
from app.ops.grants import Operation, Principal
from app.ops.imported import IMPORTED, IMPORTED_ROTATES, refuse_rotation, taken
from app.ops.keyring import Keyring
from app.ops.keytypes import KEY_TYPES, PublicFormat, derivable
from app.ops.versioned import DISABLED, disabled, enabled
from app.settings import Settings
from app.store import (
    AUTOMATIC,
    ON_DEMAND,
    KeyInfo,
    KeyMaterial,
    KeyPendingDeletionError,
    KeyStore,
    PolicyDecision,
)
from core.fe.group import DEFAULT_CURVE

# Transit's key names begin with a word character (`\w`, so also `_`), as Vault's do; at most
# 128 characters here, where Vault sets no bound.
KEY_NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$"
PENDING_DELETION = "pending-deletion"
# The longest deletion window a request may ask for.
MAX_DELETION_WINDOW_SECONDS = 10 * 365 * 86400
# How far ahead of this clock a version brought in (a backup's, native or Transit's) may have
# been made: clocks differ, but a time past it would be refused by the next restore of the key's
# own backup, and one past year 9999 could not even be written out.
MAX_CREATED_AHEAD_SECONDS = 86400


KeyTypeName = Annotated[
    str, Field(json_schema_extra={"enum": sorted(KEY_TYPES)}, description="the key's type")
]


# What `POST /v1/keys` and `cipherd keys create` take (a docstring would reach the OpenAPI
# document as the schema's description).
class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=KEY_NAME_PATTERN, examples=["orders"])
    type: KeyTypeName
    # Strict: JSON true is not the dimension 1, nor "yes" a yes.
    dimension: StrictInt | None = Field(
        None, ge=1, description="vector length, for FE key types only"
    )
    curve: Literal["bls12-381", "bn254"] | None = Field(
        None,
        description="pairing curve, for FE key types only: bls12-381 (the default, about "
        "120-128-bit security) or bn254 (faster, about 100-bit security)",
    )
    exportable: StrictBool = Field(False, description="whether the admin may export the secret")
    allow_backup: StrictBool = Field(
        False,
        description="whether the admin may back the key up to another instance "
        "(POST /v1/keys/{name}/backup); set at creation only, never cleared",
    )
    fe_policy: FePolicy | None = Field(None, description="FE key types only: the function policy")
    deletion_protection: StrictBool = Field(
        False, description="DELETE is refused (409) until this is set false"
    )
    derived: StrictBool = Field(
        False,
        description="AEAD key types and ed25519 only: every call gives a context, and the key "
        "used is derived from it (HKDF-SHA256, as Vault Transit's derived keys)",
    )
    convergent: StrictBool = Field(
        False,
        description="AEAD key types only, with derived: the same plaintext, associated data and "
        "context give the same ciphertext",
    )


class KeyVersionOut(BaseModel):
    version: int
    created_at: datetime


class KeyOut(BaseModel):
    name: str
    type: str
    dimension: int | None = None
    curve: str | None = Field(None, description="FE key types: the pairing curve")
    fe_policy: FePolicy | None = Field(None, description="FE key types: the function policy")
    derived: bool = Field(
        False, description="AEAD key types and ed25519: every call gives a context"
    )
    convergent: bool = Field(
        False, description="AEAD key types: equal inputs give equal ciphertexts"
    )
    exportable: bool
    allow_backup: bool = Field(False, description="whether the key may be backed up")
    created_at: datetime
    updated_at: datetime
    latest_version: int
    state: Literal["active", "pending-deletion"]
    deletion_date: datetime | None = Field(
        None, description="when a key pending deletion will be destroyed"
    )
    deletion_protection: bool
    enabled: bool = Field(True, description="false: every use of the key is refused")
    min_decryption_version: int = Field(description="the oldest version that decrypts")
    min_encryption_version: int = Field(
        description="the oldest version an encryption may ask for; 0: any"
    )
    auto_rotate_seconds: int | None = Field(
        None, description="the service rotates the key when its latest version is this old"
    )
    versions: list[KeyVersionOut] | None = Field(
        None, description="every stored version (present when reading one key)"
    )


def timestamp(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def key_out(info: KeyInfo, with_versions: bool) -> KeyOut:
    return KeyOut(
        name=info.name,
        type=info.type,
        dimension=info.params.get("dimension"),
        # FE keys made before the choice of curve are BLS12-381 keys.
        curve=info.params.get("curve", DEFAULT_CURVE) if "dimension" in info.params else None,
        fe_policy=info.params.get("fe_policy"),
        derived=bool(info.params.get("derived")),
        convergent=bool(info.params.get("convergent")),
        exportable=info.exportable,
        allow_backup=bool(info.params.get("allow_backup")),
        created_at=timestamp(info.created_at),
        updated_at=timestamp(info.updated_at),
        latest_version=info.latest_version,
        state=info.state,
        deletion_date=None if info.deletion_date is None else timestamp(info.deletion_date),
        deletion_protection=info.deletion_protection,
        enabled=not disabled(info.params),
        min_decryption_version=info.min_decryption_version,
        min_encryption_version=info.min_encryption_version,
        auto_rotate_seconds=None
        if info.auto_rotate_seconds is None
        else round(info.auto_rotate_seconds),
        versions=[
            KeyVersionOut(version=v.version, created_at=timestamp(v.created_at))
            for v in info.versions
        ]
        if with_versions
        else None,
    )


def creation_params(body: KeyCreate, settings: Settings) -> dict[str, Any]:
    """The parameters a key is stored with, checked against the limits (422 otherwise): a
    creation's, and a backup's on its import."""
    key_type = KEY_TYPES.get(body.type)
    if key_type is None:
        raise invalid_input(f"type: unknown key type {body.type!r}; one of {sorted(KEY_TYPES)}")
    params = derivation_params(body.type, body.derived, body.convergent)
    if key_type.family != "fe":
        if body.dimension is not None:
            raise invalid_input(f"dimension: only FE key types take a dimension, not {body.type}")
        if body.curve is not None:
            raise invalid_input(f"curve: only FE key types take a curve, not {body.type}")
        if body.fe_policy is not None:
            raise invalid_input(f"fe_policy: only FE key types take one, not {body.type}")
        if body.allow_backup:
            params["allow_backup"] = True
        return params
    if body.dimension is None:
        raise invalid_input(f"dimension: key type {body.type} needs a dimension")
    if body.dimension > settings.fe_max_dimension:
        raise invalid_input(
            f"dimension: {body.dimension} is over this service's maximum of "
            f"{settings.fe_max_dimension} (CIPHERD_FE_MAX_DIMENSION)"
        )
    params = {"dimension": body.dimension, "curve": body.curve or DEFAULT_CURVE}
    if body.fe_policy is not None:
        params["fe_policy"] = checked_fe_policy(body.fe_policy, body.type, body.dimension)
    if body.allow_backup:
        params["allow_backup"] = True
    return params


def derivation_params(key_type: str, derived: bool, convergent: bool) -> dict[str, Any]:
    """The parameters of a key's derivation, made or brought in: AEAD keys may be derived and
    convergent, Ed25519 signing keys derived (422 for options its type does not take)."""
    if derived and not derivable(key_type):
        raise invalid_input(f"derived: only AEAD key types and ed25519 take it, not {key_type}")
    if convergent and KEY_TYPES[key_type].family != "aead":
        raise invalid_input(f"convergent: only AEAD key types take it, not {key_type}")
    if convergent and not derived:
        raise invalid_input(
            "convergent: a convergent key is derived too (derived: true): its nonces come "
            "from the context as well"
        )
    return {
        option: True
        for option, given in (("derived", derived), ("convergent", convergent))
        if given
    }


def create(
    store: KeyStore,
    body: KeyCreate,
    settings: Settings,
    noted: dict[str, Any] | None = None,
    material: bytes | None = None,
) -> KeyOut:
    """Check the request against the limits, draw the material (or take `material`, made
    elsewhere: 400 if the type could not have drawn it), store the key (with the parameters
    `noted`, which no native verb reads: KMS's description of the key, Transit's mark of an
    imported key)."""
    params = creation_params(body, settings) | (noted or {})
    key_type = KEY_TYPES[body.type]
    if material is None:
        secret, public = key_type.generate(params)
    else:
        secret, public = taken(body.type, material, params)
    info = store.keys.create(
        body.name, body.type, params, body.exportable, secret, public, body.deletion_protection
    )
    return key_out(info, with_versions=True)


def read(store: KeyStore, name: str) -> KeyOut:
    return key_out(store.keys.get(name), with_versions=True)


def readable_page(
    store: KeyStore, principal: Principal, after: str | None, limit: int
) -> tuple[list[KeyOut], str | None]:
    """Up to `limit` keys after `after` that the caller may read, and the `after` of the next
    page (None on the last).

    The store filters by where the caller may read (`Principal.reach`: the patterns of the
    rules that give `read`, less the prefixes a Transit mount's rule excludes) before it cuts
    the page, so that a page reads `limit` + 1 rows, all of them readable, and `next` is a key
    of the page: cutting first would hand a token the names of keys it may not read, and
    dropping keys here would end the listing at a page they emptied, or read any number of
    rows to fill it. The extra row shows whether a next page exists. `allows` still decides
    each key: should it refuse one the store gave (the two agree), that key is left out and
    `next` is still a key of the page (a page left empty ends the listing).
    """
    rows = store.keys.list(after, limit + 1, scope=principal.reach(Operation.READ))
    more = len(rows) > limit
    page = [info for info in rows[:limit] if principal.allows(Operation.READ, info.name)]
    next_after = page[-1].name if more and page else None
    return [key_out(info, with_versions=False) for info in page], next_after


def rotate(store: KeyStore, keyring: Keyring | None, name: str) -> KeyOut:
    """A new version of the key, drawn with the parameters it was created with."""
    return key_out(_rotated(store, keyring, name, None, ON_DEMAND), with_versions=True)


def automatic_rotation(
    store: KeyStore, keyring: Keyring | None, name: str, expected: int
) -> KeyInfo:
    """`rotate` by the maintenance pass, only if the latest version is still `expected`
    (`KeyChangedError` if not): a rotation due on several processes happens once."""
    return _rotated(store, keyring, name, expected, AUTOMATIC)


def _rotated(
    store: KeyStore, keyring: Keyring | None, name: str, expected: int | None, rotation: str
) -> KeyInfo:
    """A new version, made as `rotation` says. An imported key the service rotates is no longer
    Transit's imported key, as in Vault."""
    current = store.keys.get(name)
    if current.state == PENDING_DELETION:
        raise KeyPendingDeletionError(name, current.deletion_date or 0.0)
    refuse_rotation(current)
    secret, public = KEY_TYPES[current.type].generate(current.params)
    info = store.keys.rotate(name, secret, public, current.created_at, expected, rotation)
    if current.params.get(IMPORTED):
        info = store.keys.set_params(name, {IMPORTED: None, IMPORTED_ROTATES: None})
    if keyring is not None:
        keyring.forget(name)
    return info


class DeletionScheduled(BaseModel):
    name: str
    state: Literal["pending-deletion"]
    deletion_date: datetime


def answer_waits_for_caches(note: AuditNote, settings: Settings) -> None:
    """The answer to a change that withdraws a key (a deletion, `delete`; a disabling) waits
    out the other processes' key caches, once its record is on disk: when the caller hears it
    is done, no process uses the key any more."""
    note.answer_after = settings.key_cache_seconds


def delete(
    store: KeyStore, keyring: Keyring | None, name: str, window: int | None, settings: Settings
) -> DeletionScheduled:
    """Schedule the key's destruction after `window` seconds (the configured default when
    None); until then nothing may use it, and a restore cancels it.

    Its caller answers once `key_cache_seconds` have passed since (`answer_waits_for_caches`):
    every process (this replica's other workers, other replicas) may hold the key's material in
    its keyring cache for that long from its fetching, and none fetches it once the deletion is
    stored. So nothing encrypts with a key its caller was told is deleted, nor, once it is
    destroyed and a key of the same name made, with the old material under the new key's name
    and version (a ciphertext that would never decrypt)."""
    if window is None:
        window = settings.deletion_window_seconds
    if window < settings.deletion_min_window_seconds:
        raise invalid_input(
            f"window_seconds: {window} is under this service's minimum of "
            f"{settings.deletion_min_window_seconds} (CIPHERD_DELETION_MIN_WINDOW_SECONDS)"
        )
    info = store.keys.schedule_deletion(name, store.clock.now() + window)
    if keyring is not None:
        keyring.forget(name)
    assert info.deletion_date is not None
    return DeletionScheduled(
        name=name, state="pending-deletion", deletion_date=timestamp(info.deletion_date)
    )


def restore(store: KeyStore, name: str) -> KeyOut:
    """Cancel a key's scheduled deletion: it is back as it was, every version with it."""
    return key_out(store.keys.restore(name), with_versions=True)


def public_part(
    keyring: Keyring, name: str, version: int | None, form: PublicFormat | None
) -> tuple[KeyMaterial, PublicFormat, bytes | str | dict[str, str]]:
    """The key version whose public part a client asked for, the form given (raw by default,
    der for a type with no raw form) and the public part in it; 409 if its type has none, or
    none in that form, or if it is derived (each context has its own)."""
    material = enabled(keyring.material(name, version))
    if material.public is None:
        raise Problem(
            409,
            "no-public-part",
            "No public part",
            f"key {name!r} of type {material.type} has no public part",
        )
    sign.underived(material)
    key_type = KEY_TYPES[material.type]
    if form is None:
        form = "raw" if key_type.raw_public else "der"
    encoded = key_type.public(material.public, form)
    if isinstance(encoded, dict):  # a JWK names its version, as in the key's JWKS
        encoded = {**encoded, **jwk.members(name, material.version, material.type)}
    return material, form, encoded


# What `PATCH /v1/keys/{name}` takes: any of these, each changed as given (a docstring would
# reach the OpenAPI document as the schema's description).
class KeyPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_decryption_version: StrictInt | None = Field(
        None, ge=1, description="versions below this no longer decrypt; at most the latest"
    )
    min_encryption_version: StrictInt | None = Field(
        None,
        ge=0,
        description="0, or from min_decryption_version to the latest: the oldest version an "
        "encryption may use",
    )
    auto_rotate_seconds: StrictInt | None = Field(
        None,
        ge=0,
        le=10 * 365 * 86400,
        description="rotate the key when its latest version is this old; 0 turns it off",
    )
    deletion_protection: StrictBool | None = None
    exportable: StrictBool | None = Field(None, description="may only go from false to true")
    fe_policy: FePolicy | None = Field(None, description="FE key types: the function policy")
    enabled: StrictBool | None = Field(
        None,
        description="false: every use of the key is refused (409 key-disabled) until it is "
        "true again; its management goes on",
    )


def policy_decision(body: KeyPatch, shortest_rotation: int = 0) -> PolicyDecision:
    """The columns `body` sets, checked against the key as it is: under its row lock for a
    PATCH, as a backup brings it for an import. An `auto_rotate_seconds` other than 0 is at
    least `shortest_rotation` (CIPHERD_MIN_AUTO_ROTATE_SECONDS): each rotation adds a version
    the key keeps."""

    def decide(key: KeyInfo) -> dict[str, Any]:
        changes: dict[str, Any] = {}
        oldest = min((v.version for v in key.versions), default=key.latest_version)
        min_dec = key.min_decryption_version
        if body.min_decryption_version is not None:
            min_dec = body.min_decryption_version
            if not oldest <= min_dec <= key.latest_version:
                raise invalid_input(
                    f"min_decryption_version: from {oldest} (the oldest stored version) to "
                    f"{key.latest_version} (the latest), not {min_dec}"
                )
            changes["min_decryption_version"] = min_dec
        min_enc = key.min_encryption_version
        if body.min_encryption_version is not None:
            min_enc = body.min_encryption_version
            changes["min_encryption_version"] = min_enc
        if min_enc and not min_dec <= min_enc <= key.latest_version:
            raise invalid_input(
                f"min_encryption_version: 0 or from min_decryption_version ({min_dec}) to the "
                f"latest version ({key.latest_version}), not {min_enc}"
            )
        period = body.auto_rotate_seconds
        if period is not None:
            if 0 < period < shortest_rotation:
                raise invalid_input(
                    f"auto_rotate_seconds: 0 (off) or at least {shortest_rotation}, not {period}"
                )
            changes["auto_rotate_seconds"] = period or None
        if body.deletion_protection is not None:
            changes["deletion_protection"] = body.deletion_protection
        if body.exportable is not None:
            if key.exportable and not body.exportable:
                raise invalid_input("exportable: a key once exportable stays exportable")
            changes["exportable"] = body.exportable
        return changes

    return decide


def change_policy(
    store: KeyStore,
    keyring: Keyring | None,
    name: str,
    body: KeyPatch,
    shortest_rotation: int = 0,
) -> KeyOut:
    """Apply a policy change (`KeyPatch`), decided under the key's row lock: all of it in one
    transaction, or none of it."""
    with store.transaction() as held:
        if body.fe_policy is not None:
            current = held.keys.get(name)
            if KEY_TYPES[current.type].family != "fe":
                raise invalid_input(f"fe_policy: only FE key types take one, not {current.type}")
        info = held.keys.set_policy(name, policy_decision(body, shortest_rotation))
        if body.fe_policy is not None:
            policy = checked_fe_policy(body.fe_policy, info.type, info.params["dimension"])
            info = held.keys.set_params(name, {"fe_policy": policy})
        if body.enabled is not None:
            info = held.keys.set_params(name, {DISABLED: None if body.enabled else True})
    if keyring is not None:
        keyring.forget(name)
    return key_out(info, with_versions=True)


def trim(
    store: KeyStore, keyring: Keyring | None, name: str, below: int | None = None
) -> tuple[KeyOut, list[int]]:
    """Destroy, for good, the versions below `below`, by default (and at most) the key's
    min_decryption_version."""
    info, destroyed = store.keys.trim(name, below)
    if keyring is not None:
        keyring.forget(name)
    return key_out(info, with_versions=True), destroyed


def export(store: KeyStore, name: str, version: int | None) -> KeyMaterial:
    """The secret of an exportable key in its type's export form (what BYOK takes), read with
    its flag so that the check is of that key."""
    material = store.keys.material(name, version)
    if not material.exportable:
        raise Problem(
            403, "not-exportable", "Not exportable", f"key {name!r} was not created exportable"
        )
    return replace(material, secret=KEY_TYPES[material.type].export(material.secret))
