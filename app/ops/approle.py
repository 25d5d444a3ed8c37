"""AppRole (Vault's `auth/approle`): roles that machines log in to with a role id and a secret
id, and get a token carrying the role's policies.

A role's settings are Vault's fields (`ROLE_DEFAULTS`); its role id is drawn or set, unique in
its mount. A secret id is drawn here (or given, a "custom" one), shown once and kept only as
its HMAC-SHA-256 under a key of its role's, with an accessor that names it without revealing
it, a TTL, a use count, metadata and the addresses it may log in from. A login
(`Login.check`) finds the role by its role id, the secret id by its HMAC, checks the client's
address and spends one use of the secret id, all before a token is made for the identity
`approle:<role>`. Every refusal of a login says only "invalid role or secret ID" (or which
address rule refused it), never which half was wrong.
"""

import hashlib
import hmac
import re
import secrets
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.ops.cidrs import address_allowed, check_within, cidr_blocks
from app.ops.errors import Problem, invalid_input
from app.ops.identity import MAX_METADATA as TOKEN_METADATA
from app.ops.lifecycle import EXPIRED_PER_PASS
from app.ops.role_tokens import TOKEN_DEFAULTS, check_role_token, check_token_fields
from app.ops.vault_fields import json_document, vault_time
from app.store import AppRole, KeyStore, SecretId

ROLE_NAME = r"^[A-Za-z0-9._ -]{1,128}$"
_ROLE_NAME = re.compile(ROLE_NAME)
# A secret id's accessor, as drawn here (a UUID): other text names none, and a NUL could not
# even be compared by PostgreSQL.
_ACCESSOR = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# A role id or a custom secret id: printable, no spaces at either end.
_CREDENTIAL = re.compile(r"^[\x21-\x7e]([\x20-\x7e]{0,510}[\x21-\x7e])?$")
MAX_ROLES_PER_MOUNT = 10_000
MAX_SECRET_IDS_PER_ROLE = 10_000
# One less than a token may carry: a login's token adds `role_name` to a secret id's.
MAX_METADATA = TOKEN_METADATA - 1
MAX_USES = 1_000_000_000
INVALID_CREDENTIALS = "invalid role or secret ID"

# A role's fields as Vault names them, with Vault's defaults.
ROLE_DEFAULTS: dict[str, Any] = {
    "bind_secret_id": True,
    "local_secret_ids": False,
    "secret_id_bound_cidrs": [],
    "secret_id_num_uses": 0,
    "secret_id_ttl": 0,
    "token_strictly_bind_ip": False,
    **TOKEN_DEFAULTS,
}
# Older names Vault still takes for two of them.
_ALIASES = {"policies": "token_policies", "period": "token_period"}
# Vault's paths of one field of a role (`role/<name>/<path>`), and the field each is.
FIELD_PATHS = {
    **_ALIASES,
    **{
        field.replace("_", "-"): field
        for field in (
            "bind_secret_id",
            "local_secret_ids",
            "secret_id_bound_cidrs",
            "secret_id_num_uses",
            "secret_id_ttl",
            "token_bound_cidrs",
            "token_max_ttl",
            "token_num_uses",
            "token_ttl",
        )
    },
}
# The field a role's path only reads: it is set when the role is made.
_READ_ONLY = "local_secret_ids"


def not_found(what: str) -> Problem:
    return Problem(404, "not-found", "Not found", what)


def settings_of(current: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """A role's settings once `changes` (Vault's fields, as given) apply to `current`,
    checked: 400 for a value out of bounds or a role that binds nothing."""
    settings = {**ROLE_DEFAULTS, **current}
    for field, value in changes.items():
        settings[_ALIASES.get(field, field)] = value
    settings["secret_id_bound_cidrs"] = cidr_blocks(
        "secret_id_bound_cidrs", settings["secret_id_bound_cidrs"]
    )
    for field in ("secret_id_num_uses", "token_num_uses"):
        if not 0 <= settings[field] <= MAX_USES:
            raise invalid_input(f"{field}: from 0 (no limit) to {MAX_USES}")
    check_token_fields(settings)
    if not settings["bind_secret_id"] and not settings["secret_id_bound_cidrs"]:
        raise invalid_input("at least one constraint should be enabled on the role")
    return settings


def full_settings(role: AppRole) -> dict[str, Any]:
    """A role's settings, with Vault's defaults for those it was never given."""
    return {**ROLE_DEFAULTS, **role.settings}


def login_settings(role: AppRole, spent: SecretId | None) -> dict[str, Any]:
    """The settings a login's token is made on: the role's, with the address blocks of the
    secret id spent in their place when it names any, as Vault binds them."""
    settings = full_settings(role)
    if spent is not None and spent.token_bound_cidrs:
        settings["token_bound_cidrs"] = list(spent.token_bound_cidrs)
    return settings


def role_data(role: AppRole) -> dict[str, Any]:
    """A role as Vault's read answers it."""
    data = full_settings(role)
    data["secret_id_bound_cidrs"] = data["secret_id_bound_cidrs"] or None
    return dict(sorted(data.items()))


@dataclass(frozen=True)
class NewSecretId:
    """What a caller asks of a secret id: Vault's fields (`ttl`, `num_uses` None: the role's)."""

    secret_id: str | None = None  # None: draw one
    metadata: str = ""
    cidr_list: Sequence[str] = ()
    token_bound_cidrs: Sequence[str] = ()
    num_uses: int | None = None
    ttl: int | None = None


def _metadata(text: str) -> dict[str, str]:
    """Vault's secret id metadata: a JSON object of strings, given as a string."""
    if not text.strip():
        return {}
    try:
        parsed = json_document(text)
    except ValueError:
        raise invalid_input("metadata: a JSON object of strings, as a string") from None
    if not isinstance(parsed, dict) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in parsed.items()
    ):
        raise invalid_input("metadata: a JSON object of strings, as a string")
    if len(parsed) > MAX_METADATA or any(
        len(key) > 128 or len(value) > 512 for key, value in parsed.items()
    ):
        raise invalid_input(
            f"metadata: at most {MAX_METADATA} entries, keys of 128 and values of 512 characters"
        )
    return parsed


def secret_hash(role: AppRole, secret_id: str) -> bytes:
    return hmac.new(role.hmac_key, secret_id.encode(), hashlib.sha256).digest()


def secret_data(secret: SecretId) -> dict[str, Any]:
    """A secret id's properties as Vault's lookups answer them."""
    return {
        "cidr_list": list(secret.cidr_list),
        "creation_time": vault_time(secret.created_at),
        "expiration_time": vault_time(secret.expires_at),
        "last_updated_time": vault_time(secret.updated_at),
        "metadata": secret.metadata,
        "secret_id_accessor": secret.accessor,
        "secret_id_num_uses": secret.uses_left,
        "secret_id_ttl": secret.ttl_seconds,
        "token_bound_cidrs": list(secret.token_bound_cidrs),
    }


class AppRoles:
    """The roles and secret ids of one AppRole mount (by its accessor)."""

    def __init__(self, store: KeyStore, mount: str) -> None:
        self._store = store
        self._mount = mount

    def role(self, name: str, *, missing: int = 404) -> AppRole:
        """The role `name`; `missing` is the status of its absence (Vault answers some paths
        400, others 404)."""
        role = self._store.approle.role(self._mount, checked_name(name))
        if role is None:
            detail = f'role "{name[:128]}" does not exist'
            if missing == 404:
                raise not_found(detail)
            raise invalid_input(detail)
        return role

    def names(self) -> Sequence[str]:
        return self._store.approle.role_names(self._mount)

    def write(self, name: str, changes: Mapping[str, Any], create: bool = True) -> AppRole:
        """Create the role `name` (unless not `create`: 404), or change the fields given, on the
        role as stored when the write is made."""
        now = self._now()

        def changed(current: AppRole | None) -> AppRole:
            if current is None and not create:
                raise not_found("unsupported path")  # Vault's words
            return AppRole(
                mount=self._mount,
                name=name,
                role_id=current.role_id if current else str(uuid.uuid4()),
                settings=settings_of(current.settings if current else {}, changes),
                hmac_key=current.hmac_key if current else secrets.token_bytes(32),
                created_at=current.created_at if current else now,
                updated_at=now,
            )

        return self._put(checked_name(name), changed)

    def field(self, name: str, path: str) -> dict[str, Any]:
        """The field of role `name` that `path` (`token-ttl`) names, as Vault reads it (address
        blocks: null when there are none)."""
        field = _field_at(path)
        value = role_data(self.role(name))[field]
        return {field: None if field.endswith("_cidrs") and not value else value}

    def set_field(self, name: str, path: str, changes: Mapping[str, Any]) -> None:
        """Set the field `path` names to its value in `changes` (Vault's name, or its older
        one): 404 for a role that does not exist, 400 when `changes` has no value for it."""
        field = _field_at(path, writing=True)
        if self._store.approle.role(self._mount, checked_name(name)) is None:
            raise not_found("unsupported path")  # Vault's words
        older = [alias for alias, newer in _ALIASES.items() if newer == field]
        values = [changes[given] for given in (field, *older) if given in changes]
        if not values:
            raise invalid_input(f"missing {field}")
        self.write(name, {field: values[0]}, create=False)

    def reset_field(self, name: str, path: str) -> None:
        """Give the field `path` names Vault's default (nothing to do for a missing role)."""
        field = _field_at(path, writing=True)
        if self._store.approle.role(self._mount, checked_name(name)) is not None:
            self.write(name, {field: ROLE_DEFAULTS[field]})

    def set_role_id(self, name: str, role_id: str) -> None:
        self.role(name)
        if not _CREDENTIAL.fullmatch(role_id):
            raise invalid_input("role_id: 1 to 512 printable characters")
        now = self._now()

        def changed(current: AppRole | None) -> AppRole:
            if current is None:  # deleted meanwhile
                raise not_found(f'role "{name[:128]}" does not exist')
            return AppRole(**{**current.__dict__, "role_id": role_id, "updated_at": now})

        self._put(name, changed)

    def delete(self, name: str) -> None:
        """Delete a role and its secret ids (nothing to do if there is none)."""
        self._store.approle.delete_role(self._mount, checked_name(name))

    def new_secret_id(self, name: str, asked: NewSecretId) -> dict[str, Any]:
        """Draw (or take) a secret id for role `name`: Vault's answer, with the secret id."""
        role = self.role(name)
        settings = full_settings(role)
        uses, ttl = _bounded(settings, asked)
        cidr_list = cidr_blocks("cidr_list", asked.cidr_list)
        check_within("cidr_list", cidr_list, settings["secret_id_bound_cidrs"])
        token_cidrs = cidr_blocks("token_bound_cidrs", asked.token_bound_cidrs)
        check_within("token_bound_cidrs", token_cidrs, settings["token_bound_cidrs"])
        if asked.secret_id is not None and not _CREDENTIAL.fullmatch(asked.secret_id):
            raise invalid_input("secret_id: 1 to 512 printable characters")
        secret_id = asked.secret_id if asked.secret_id is not None else str(uuid.uuid4())
        now = self._now()
        record = SecretId(
            accessor=str(uuid.uuid4()),
            mount=self._mount,
            role=role.name,
            secret_hash=secret_hash(role, secret_id),
            uses_left=uses,
            ttl_seconds=ttl,
            expires_at=now + ttl if ttl else None,
            metadata=_metadata(asked.metadata),
            cidr_list=tuple(cidr_list),
            token_bound_cidrs=tuple(token_cidrs),
            created_at=now,
            updated_at=now,
        )
        outcome = self._store.approle.add_secret_id(record, MAX_SECRET_IDS_PER_ROLE)
        if outcome == "exists":
            raise invalid_input("SecretID is already registered")
        if outcome == "full":
            raise Problem(
                409,
                "too-many-secret-ids",
                "Too many secret ids",
                f"a role holds at most {MAX_SECRET_IDS_PER_ROLE} live secret ids: destroy some",
            )
        if outcome == "no-role":
            raise not_found(f'role "{name[:128]}" does not exist')
        return {
            "secret_id": secret_id,
            "secret_id_accessor": record.accessor,
            "secret_id_num_uses": uses,
            "secret_id_ttl": ttl,
        }

    def secret_id(self, name: str, secret_id: str) -> SecretId | None:
        """A live secret id of role `name`, found by itself."""
        role = self.role(name)
        found = self._store.approle.secret_id(
            self._mount, role.name, secret_hash=secret_hash(role, secret_id)
        )
        return found if found is not None and self._live(found) else None

    def by_accessor(self, name: str, accessor: str) -> SecretId:
        role = self.role(name)
        found = (
            self._store.approle.secret_id(self._mount, role.name, accessor=accessor)
            if _ACCESSOR.fullmatch(accessor)
            else None
        )
        if found is None or not self._live(found):
            raise not_found(f'failed to find accessor entry for secret_id_accessor: "{accessor}"')
        return found

    def accessors(self, name: str) -> Sequence[str]:
        role = self.role(name, missing=400)
        return self._store.approle.accessors(self._mount, role.name, self._now())

    def destroy(self, name: str, secret_id: str) -> None:
        """Destroy a secret id, given itself (nothing to do if it is unknown)."""
        found = self.secret_id(name, secret_id)
        if found is not None:
            self._store.approle.delete_secret_id(self._mount, found.role, found.accessor)

    def destroy_accessor(self, name: str, accessor: str) -> None:
        role = self.role(name)
        known = _ACCESSOR.fullmatch(accessor)
        if not known or not self._store.approle.delete_secret_id(self._mount, role.name, accessor):
            raise not_found(f'failed to find accessor entry for secret_id_accessor: "{accessor}"')

    def login_role(self, role_id: str) -> AppRole:
        """The role a login's role id names: 400 otherwise, saying only what Vault says."""
        role_id = role_id.strip()
        if not role_id:
            raise invalid_input("missing role_id")
        role = self._store.approle.role_by_id(self._mount, role_id) if len(role_id) <= 512 else None
        if role is None:
            raise invalid_input(INVALID_CREDENTIALS)
        return role

    def login_secret(self, role: AppRole, secret_id: str, address: str | None) -> SecretId | None:
        """The secret id a login to `role` from `address` spends (None for a role that binds
        none): 400 otherwise, saying only what Vault says. The client's address, and what
        would refuse the role's token, are checked before a use is spent."""
        settings = full_settings(role)
        if not address_allowed(address, settings["secret_id_bound_cidrs"]):
            raise invalid_input(
                f'source address "{address}" unauthorized by CIDR restrictions on the role'
            )
        if not settings["bind_secret_id"]:
            return None
        secret_id = secret_id.strip()
        if not secret_id:
            raise invalid_input("missing secret_id")
        if len(secret_id) > 512:
            raise invalid_input(INVALID_CREDENTIALS)
        digest = secret_hash(role, secret_id)
        found = self._store.approle.secret_id(self._mount, role.name, secret_hash=digest)
        if found is not None and not address_allowed(address, found.cidr_list):
            raise invalid_input(
                f'source address "{address}" unauthorized by CIDR restrictions on the secret ID'
            )
        if found is not None:  # the secret proven: what would refuse its token, before the use
            check_role_token(self._store, settings)
        spent = self._store.approle.spend(self._mount, role.name, digest, self._now())
        if spent is None:
            raise invalid_input(INVALID_CREDENTIALS)
        return spent

    def tidy(self) -> int:
        """Free the rows of up to EXPIRED_PER_PASS expired secret ids now, of every mount
        (Vault's `tidy/secret-id`; the maintenance pass does the same on its own): how many."""
        return self._store.approle.delete_expired(self._now(), EXPIRED_PER_PASS)

    def _live(self, secret: SecretId) -> bool:
        return secret.expires_at is None or secret.expires_at > self._now()

    def _now(self) -> float:
        return self._store.clock.now()

    def _put(self, name: str, change: Callable[[AppRole | None], AppRole]) -> AppRole:
        """`change` of the role as stored, written (400 if its role id is another's, 409 if
        the mount is full)."""
        outcome, role = self._store.approle.put_role(self._mount, name, change, MAX_ROLES_PER_MOUNT)
        if outcome == "role-id-taken":
            raise invalid_input("role_id already in use")
        if outcome == "full":
            raise Problem(
                409,
                "too-many-roles",
                "Too many roles",
                f"an AppRole mount holds at most {MAX_ROLES_PER_MOUNT} roles",
            )
        return role


def _field_at(path: str, writing: bool = False) -> str:
    """The field a role's path names (404 as Vault for none; 405 for writing a read-only one)."""
    field = FIELD_PATHS.get(path)
    if field is None:
        raise not_found("unsupported path")
    if writing and field == _READ_ONLY:
        raise Problem(405, "method-not-allowed", "Method not allowed", "unsupported operation")
    return field


def checked_name(name: str) -> str:
    if not _ROLE_NAME.fullmatch(name):
        raise invalid_input("a role name is 1 to 128 letters, digits, spaces, '.', '_' or '-'")
    return name


def _bounded(settings: Mapping[str, Any], asked: NewSecretId) -> tuple[int, int]:
    """A new secret id's use count and TTL: the role's unless asked, and never more."""
    role_uses, role_ttl = settings["secret_id_num_uses"], settings["secret_id_ttl"]
    uses = role_uses if asked.num_uses is None else asked.num_uses
    if not 0 <= uses <= MAX_USES:
        raise invalid_input(f"num_uses: from 0 (no limit) to {MAX_USES}")
    if role_uses and (uses == 0 or uses > role_uses):
        raise invalid_input("num_uses cannot be higher than the role's secret_id_num_uses")
    ttl = role_ttl if asked.ttl is None else asked.ttl
    if role_ttl and (ttl == 0 or ttl > role_ttl):
        raise invalid_input("ttl cannot be longer than the role's secret_id_ttl")
    return uses, ttl
