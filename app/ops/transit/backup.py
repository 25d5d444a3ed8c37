"""Transit's backup format, both ways: what OpenBao's and Vault's `transit/backup` give for a key
with `allow_plaintext_backup`, and what `transit/restore` takes.

A backup is the base64 of a JSON object `{"policy": ..., "archived_keys": {"keys": [...]}}`
(`KeyData` in OpenBao's `sdk/helper/keysutil/policy.go`): the policy has the key's settings and a
map of its versions (`"1": {"key", "hmac_key", "time", "public_key", ...}`), the archive every
version by index from 0 (an empty entry at 0, and for trimmed versions). A version's material is
in `key` for the symmetric types, HMAC and Ed25519 (its 64-byte private key, seed then public
key), in `ec_d` (with `ec_x`, `ec_y` and the public key as PEM) for ECDSA, and in `rsa_key` for
RSA: Go's `rsa.PrivateKey` as JSON (`N`, `E`, `D`, the two `Primes` and the CRT values), its
numbers as JSON numbers. Each becomes the service's (PKCS#8 for ECDSA and RSA, checked as BYOK
material is) and its HMAC key is kept with it (`hmac_keys`), so that every ciphertext,
signature and HMAC made there opens here, and what is made here opens there once the key is
restored back.
"""

import base64
import binascii
import json
import re
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from app.ops import keys
from app.ops.errors import Problem
from app.ops.imported import IMPORTED, IMPORTED_ROTATES
from app.ops.keytypes import KEY_TYPES, stored_key
from app.ops.transit import hmac_keys
from app.ops.transit.keys import (
    BACKUP_INFO,
    MIN_AUTO_ROTATE_SECONDS,
    RESTORE_INFO,
    min_available_version,
)
from app.ops.transit.types import native_type, transit_type
from app.ops.vault_fields import MAX_SECONDS, json_document, vault_time
from app.store import KeyInfo, KeyPolicies, KeyStore, RestoredVersion
from core.sign import ecdsa_nist, ed25519

# keysutil's KeyType numbers.
_TYPE_NUMBERS = {
    "aes256-gcm96": 0,
    "ecdsa-p256": 1,
    "ed25519": 2,
    "rsa-2048": 3,
    "rsa-4096": 4,
    "chacha20-poly1305": 5,
    "ecdsa-p384": 6,
    "ecdsa-p521": 7,
    "aes128-gcm96": 8,
    "rsa-3072": 9,
    "hmac": 10,
    "xchacha20-poly1305": 11,
}
_TYPES_BY_NUMBER = {number: name for name, number in _TYPE_NUMBERS.items()}
_CURVES = {"ecdsa-p256": "p256", "ecdsa-p384": "p384", "ecdsa-p521": "p521"}
# keysutil's KDF numbers: 1 is HKDF-SHA256, the one Transit has used since Vault 0.9.
_HKDF = 1
_NANOSECONDS = 1_000_000_000
# The largest backup a restore reads (a key of a few thousand versions), and its arrays and
# objects: a version has a few, and 6 MiB of nested arrays took 1.2 s to parse.
MAX_BACKUP_BYTES = 8 * 1024 * 1024
MAX_BACKUP_CONTAINERS = 100_000
# The largest version number a restore takes: what the store's INTEGER columns hold in
# PostgreSQL; and its digits, so that no number is read past them.
_MAX_VERSION = 2**31 - 1
_VERSION_DIGITS = len(str(_MAX_VERSION))
_RFC3339 = re.compile(
    r"(\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})?", re.ASCII
)


def bad_backup(detail: str) -> Problem:
    return Problem(400, "invalid-backup", "Invalid backup", detail)


def _created(entry: dict[str, Any], version: int, now: float) -> float:
    """A version's creation time: its `time` (RFC 3339; Go's zero time, year 1, for none), else
    its `creation_time` (Unix seconds), else now. A malformed one, or one before 1970 or more
    than a day ahead of this clock (which the key's native backup could not carry, and past year
    9999 no answer could write), is a 400 naming the field, not its value."""
    text = entry.get("time")
    if text is not None and not (isinstance(text, str) and text.startswith("0001-")):
        moment = _rfc3339(text) if isinstance(text, str) else None
        if moment is None:
            raise bad_backup(f"version {version}: time is not an RFC 3339 time")
        field = "time"
    else:
        seconds = entry.get("creation_time")
        if not seconds:
            return now
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            raise bad_backup(f"version {version}: creation_time is not a time in Unix seconds")
        moment, field = seconds, "creation_time"
    if not 0 <= moment <= now + keys.MAX_CREATED_AHEAD_SECONDS:
        raise bad_backup(
            f"version {version}: {field} is before 1970 or more than a day ahead of this clock"
        )
    return float(moment)


def _rfc3339(text: str) -> float | None:
    """The Unix time of an RFC 3339 time as Go writes one (up to nine digits of fraction, `Z`
    or an offset; UTC without either), None when it is not one."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    whole, fraction, zone = match.groups()
    offset = "+00:00" if zone in (None, "Z", "z") else zone
    try:
        moment = datetime.fromisoformat(f"{whole}{offset}").timestamp()
    except (ValueError, OverflowError):
        return None
    return moment + (float(f"0.{fraction}") if fraction else 0.0)


_EMPTY_ENTRY: dict[str, Any] = {
    "key": None,
    "hmac_key": None,
    "time": "0001-01-01T00:00:00Z",
    "ec_x": None,
    "ec_y": None,
    "ec_d": None,
    "rsa_key": None,
    "rsa_public_key": None,
    "public_key": "",
    "convergent_version": 0,
    "creation_time": 0,
    "certificate_chain": None,
    "external_key_ref": "",
}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


_PKCS8 = (
    serialization.Encoding.DER,
    serialization.PrivateFormat.PKCS8,
    serialization.NoEncryption(),
)
_SPKI_PEM = (serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def _written(native: str, secret: bytes, public: bytes) -> dict[str, Any]:
    """A version's material as a backup entry's fields."""
    if native in _CURVES:
        ec_key = stored_key(native, secret)
        assert isinstance(ec_key, ec.EllipticCurvePrivateKey)
        numbers = ec_key.private_numbers()
        return {
            "ec_x": numbers.public_numbers.x,
            "ec_y": numbers.public_numbers.y,
            "ec_d": numbers.private_value,
            "public_key": ec_key.public_key().public_bytes(*_SPKI_PEM).decode(),
        }
    if native.startswith("rsa-"):
        rsa_key = stored_key(native, secret)
        assert isinstance(rsa_key, rsa.RSAPrivateKey)
        private = rsa_key.private_numbers()
        crt = {"Dp": private.dmp1, "Dq": private.dmq1, "Qinv": private.iqmp, "CRTValues": []}
        go_key: dict[str, Any] = {
            "N": private.public_numbers.n,
            "E": private.public_numbers.e,
            "D": private.d,
            "Primes": [private.p, private.q],
            "Precomputed": crt,
        }
        return {"rsa_key": go_key}
    if native == "ed25519":
        return {"key": _b64(secret + public), "public_key": _b64(public)}
    return {"key": _b64(secret)}


def make(store: KeyStore, name: str, transit_name: str) -> str:
    """The backup of key `name`, as Transit's `backup/:name` gives it (named `transit_name`).
    The key keeps the backup's time and version (`backup_info`), as Vault's does."""
    with store.transaction() as held:  # the key as it stands, and its stamp, or neither
        info = held.keys.locked(name)
        transit = transit_type(info.type)
        if transit not in _TYPE_NUMBERS:
            raise bad_backup(f"a key of type {info.type} has no Transit backup here")
        if not info.exportable:
            raise bad_backup("exporting is disallowed on the policy")
        if not info.params.get("allow_backup"):
            raise bad_backup("plaintext backup is disallowed on the policy")
        backed_up = {"time": vault_time(store.clock.now()), "version": info.latest_version}
        info = held.keys.set_params(name, {BACKUP_INFO: backed_up})
        convergent = bool(info.params.get("convergent"))
        entries: dict[str, dict[str, Any]] = {}
        for v in info.versions:
            material = held.keys.material(name, v.version)
            entry = dict(_EMPTY_ENTRY)
            entry.update(_written(info.type, material.secret, material.public or b""))
            entry.update(
                hmac_key=_b64(hmac_keys.of(material)),
                time=vault_time(v.created_at),
                convergent_version=3 if convergent else 0,
                creation_time=int(v.created_at),
            )
            entries[str(v.version)] = entry
    policy = {
        "name": transit_name,
        "keys": entries,
        "derived": bool(info.params.get("derived")),
        "kdf": _HKDF if info.params.get("derived") else 0,
        "convergent_encryption": convergent,
        "exportable": info.exportable,
        "min_decryption_version": info.min_decryption_version,
        "min_encryption_version": info.min_encryption_version,
        "latest_version": info.latest_version,
        "archive_version": info.latest_version,
        "archive_min_version": 0,
        "min_available_version": min_available_version(info),
        "deletion_allowed": not info.deletion_protection,
        "convergent_version": 3 if convergent else 0,
        "type": _TYPE_NUMBERS[transit],
        BACKUP_INFO: backed_up,
        RESTORE_INFO: info.params.get(RESTORE_INFO),
        "allow_plaintext_backup": True,
        "version_template": "",
        "storage_prefix": "",
        "auto_rotate_period": int((info.auto_rotate_seconds or 0) * _NANOSECONDS),
        "Imported": bool(info.params.get(IMPORTED)),
        "AllowImportedKeyRotation": bool(info.params.get(IMPORTED_ROTATES)),
        "soft_deleted": False,
    }
    if info.type == "hmac":  # the size Transit draws its next version with
        policy["key_size"] = len(store.keys.material(name, info.latest_version).secret)
    archive = [entries.get(str(n), _EMPTY_ENTRY) for n in range(info.latest_version + 1)]
    document = {"policy": policy, "archived_keys": {"keys": archive}}
    return _b64(json.dumps(document, separators=(",", ":")).encode())


def policy_of(backup: str) -> dict[str, Any]:
    """The key's policy a backup holds, read once for both the name and the restore: 400 for a
    backup over MAX_BACKUP_BYTES or MAX_BACKUP_CONTAINERS, or one that is not Transit's."""
    if len(backup) > MAX_BACKUP_BYTES:
        raise bad_backup(f"a backup of at most {MAX_BACKUP_BYTES} bytes")
    try:
        text = base64.b64decode(backup, validate=True)
    except ValueError:  # binascii.Error, or a character outside ASCII
        raise bad_backup("failed to decode the backup: not base64 of JSON") from None
    if text.count(b"[") + text.count(b"{") > MAX_BACKUP_CONTAINERS:
        raise bad_backup(f"a backup of at most {MAX_BACKUP_CONTAINERS} arrays and objects")
    try:
        document = json_document(text)
    except ValueError:
        raise bad_backup("failed to decode the backup: not base64 of JSON") from None
    if not isinstance(document, dict) or not isinstance(document.get("policy"), dict):
        raise bad_backup("failed to decode the backup: no policy")
    policy: dict[str, Any] = document["policy"]
    return policy


def _number(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise bad_backup(f"{what} is not a positive integer")
    return value


def _version(text: Any) -> int:
    """A version number of the backup's map of versions: from 1 to `_MAX_VERSION`, in ASCII
    digits (read only when few enough)."""
    if not (
        isinstance(text, str)
        and text.isascii()
        and text.isdigit()
        and len(text) <= _VERSION_DIGITS
        and 1 <= int(text) <= _MAX_VERSION
    ):
        raise bad_backup(f"a version of the backup is not numbered from 1 to {_MAX_VERSION}")
    return int(text)


def _count(policy: dict[str, Any], field: str) -> int:
    """A policy's field that is a non-negative integer (0 when absent or null)."""
    value = policy.get(field)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise bad_backup(f"{field} is not a non-negative integer")
    return value


def _ecdsa_pkcs8(native: str, entry: dict[str, Any], version: int) -> bytes:
    """An ECDSA version's private key from `ec_d`, checked against `ec_x` and `ec_y`."""
    scalar = _number(entry.get("ec_d"), f"version {version}: ec_d")
    key = ec.derive_private_key(scalar, ecdsa_nist.CURVES[_CURVES[native]])
    point = key.public_key().public_numbers()
    if (entry.get("ec_x"), entry.get("ec_y")) not in ((None, None), (point.x, point.y)):
        raise bad_backup(f"version {version}: ec_x and ec_y are not ec_d's point")
    return key.private_bytes(*_PKCS8)


def _rsa_pkcs8(native: str, entry: dict[str, Any], version: int) -> bytes:
    """An RSA version's private key from Go's `rsa.PrivateKey` (its CRT values drawn again)."""
    go_key = entry.get("rsa_key")
    primes = go_key.get("Primes") if isinstance(go_key, dict) else None
    if not isinstance(go_key, dict) or not isinstance(primes, list) or len(primes) != 2:
        raise bad_backup(f"version {version}: rsa_key is not an RSA key of two primes")
    what = f"version {version}: rsa_key"
    n, e, d = (_number(go_key.get(field), f"{what}.{field}") for field in ("N", "E", "D"))
    p, q = (_number(prime, f"{what}.Primes") for prime in primes)
    if n.bit_length() != int(native.removeprefix("rsa-")):
        raise bad_backup(f"version {version}: the modulus is not of {native}")
    public = rsa.RSAPublicNumbers(e, n)
    crt = (rsa.rsa_crt_dmp1(d, p), rsa.rsa_crt_dmq1(d, q), rsa.rsa_crt_iqmp(p, q))
    return rsa.RSAPrivateNumbers(p, q, d, *crt, public).private_key().private_bytes(*_PKCS8)


def _decoded(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise bad_backup(f"{what} is not base64") from None


def _keyed(native: str, entry: dict[str, Any], version: int) -> bytes:
    """A version's material from `key` (Ed25519's 64 bytes checked and cut to the seed)."""
    raw = entry.get("key")
    if not isinstance(raw, str) or not raw:
        raise bad_backup(f"version {version} has no key material this service can take")
    key = _decoded(raw, f"version {version}: key")
    if native == "ed25519":
        if len(key) != 64 or ed25519.public_key(key[:32]) != key[32:]:
            raise bad_backup(f"version {version}: not an Ed25519 private key")
        key = key[:32]
    return key


def _material(native: str, entry: dict[str, Any], version: int) -> tuple[bytes, bytes | None]:
    """A version's secret and public part as the service stores them, taken in as BYOK
    material is (its checks made)."""
    try:
        if native in _CURVES:
            given = _ecdsa_pkcs8(native, entry, version)
        elif native.startswith("rsa-"):
            given = _rsa_pkcs8(native, entry, version)
        else:
            given = _keyed(native, entry, version)
        return KEY_TYPES[native].take(given, {})
    except ValueError as exc:
        raise bad_backup(f"version {version}: {exc}") from None


def _policies(policy: dict[str, Any], latest: int) -> KeyPolicies:
    """The key's policies from the backup's, each checked to be one the store can hold."""
    period = _count(policy, "auto_rotate_period") // _NANOSECONDS
    if period > MAX_SECONDS or 0 < period < MIN_AUTO_ROTATE_SECONDS:
        raise bad_backup("auto_rotate_period is under an hour or more than ten years")
    min_decryption = _count(policy, "min_decryption_version")
    if min_decryption > latest:
        raise bad_backup("min_decryption_version is past the latest version")
    return KeyPolicies(
        deletion_protection=not policy.get("deletion_allowed", False),
        min_decryption_version=max(min_decryption, 1),
        min_encryption_version=min(_count(policy, "min_encryption_version"), latest),
        auto_rotate_seconds=float(period) if period else None,
    )


def restore(store: KeyStore, name: str, policy: dict[str, Any], params: dict[str, Any]) -> KeyInfo:
    """Store the key a Transit backup's policy (`policy_of`) holds as key `name`
    (`KeyExistsError` if taken): every version, its HMAC key and the key's settings. `params`
    are those of the native type's parameters the caller adds (none today)."""
    type_number = policy.get("type")
    transit = _TYPES_BY_NUMBER.get(type_number) if isinstance(type_number, int) else None
    if transit is None:
        if isinstance(type_number, int) and 0 <= type_number < 100:
            raise bad_backup(f"key type {type_number} is not one this service restores")
        raise bad_backup("the backup's key type is not one this service restores")
    native = native_type(transit)
    derived = bool(policy.get("derived"))
    convergent = bool(policy.get("convergent_encryption"))
    if derived and policy.get("kdf") != _HKDF:
        raise bad_backup("derived keys of the HMAC-SHA256 counter KDF (kdf 0) are not taken")
    if convergent and policy.get("convergent_version", 3) not in (3, -1):
        raise bad_backup("convergent keys of convergent_version 1 or 2 are not taken")
    try:
        derivation = keys.derivation_params(native, derived, convergent)
    except Problem as problem:
        raise bad_backup(f"the backup's key: {problem.detail}") from None
    entries = policy.get("keys")
    if not isinstance(entries, dict) or not entries:
        raise bad_backup("the backup holds no key version")
    numbered = {_version(text): entry for text, entry in entries.items()}
    if len(numbered) != len(entries):
        raise bad_backup("two entries of the backup have the same version number")
    policies = _policies(policy, max(numbered))
    versions = []
    hmac_of: dict[int, tuple[bytes, bytes]] = {}
    now = store.clock.now()
    for number, entry in sorted(numbered.items()):
        if not isinstance(entry, dict):
            raise bad_backup(f"version {number} is not a key version")
        secret, public = _material(native, entry, number)
        created = _created(entry, number, now)
        versions.append(RestoredVersion(number, created, secret, public))
        raw_hmac = entry.get("hmac_key")
        if isinstance(raw_hmac, str) and raw_hmac and native != "hmac":
            hmac_of[number] = (secret, _decoded(raw_hmac, f"version {number}: hmac_key"))
    key_params = {**params, **derivation}
    if policy.get("allow_plaintext_backup"):
        key_params["allow_backup"] = True
    if _is_info(policy.get(BACKUP_INFO)):  # the backup's own record, as Vault restores it
        key_params[BACKUP_INFO] = policy[BACKUP_INFO]
    key_params[RESTORE_INFO] = {"time": vault_time(store.clock.now()), "version": max(numbered)}
    if policy.get("Imported") is True:  # rotated only by its owner, unless it allows more
        key_params[IMPORTED] = True
        if policy.get("AllowImportedKeyRotation") is True:
            key_params[IMPORTED_ROTATES] = True
    key_params.update(hmac_keys.params_for(hmac_of))
    return store.keys.restore_backup(
        name, native, key_params, bool(policy.get("exportable")), versions, policies
    )


def _is_info(value: Any) -> bool:
    """Whether a backup's `backup_info` is what Vault writes: a time (RFC 3339) and a version."""
    return (
        isinstance(value, dict)
        and set(value) == {"time", "version"}
        and isinstance(value["time"], str)
        and len(value["time"]) <= 64
        and isinstance(value["version"], int)
    )


def backup_name(policy: dict[str, Any]) -> str:
    """The key name a backup's policy carries (Transit's `restore` without a name uses it)."""
    name = policy.get("name")
    if not isinstance(name, str) or not name:
        raise bad_backup("the backup names no key")
    return name
