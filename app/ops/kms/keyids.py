"""How KMS names keys: key ids (a key's native name; a key made by CreateKey is named by a UUID),
key ARNs `arn:aws:kms:<region>:<account>:key/<id>`, aliases `alias/<name>` (those made by
CreateAlias, and every key under its native name) and alias ARNs."""

import re

from app.ops.keys import KEY_NAME_PATTERN
from app.ops.kms.errors import KmsError, not_found
from app.store import KeyNotFoundError, KeyStore
from app.store.kms_aliases import ALIAS_PREFIX

ALIAS_PATTERN = re.compile(r"^alias/[A-Za-z0-9/_-]{1,250}$")
_ARN = re.compile(r"^arn:aws:kms:([a-z0-9-]{1,64}):([0-9]{12}):(key/.+|alias/.+)$")
_KEY_NAME = re.compile(KEY_NAME_PATTERN)


def key_arn(region: str, account: str, key_name: str) -> str:
    return f"arn:aws:kms:{region}:{account}:key/{key_name}"


def alias_arn(region: str, account: str, alias: str) -> str:
    return f"arn:aws:kms:{region}:{account}:{alias}"


def _invalid_arn(key_id: str) -> KmsError:
    return KmsError("InvalidArnException", f"ARN {key_id[:256]!r} is not valid")


def target(key_id: str, account: str) -> str:
    """What `key_id` names without the ARN around it: a key id, or `alias/<name>`."""
    if key_id.startswith("arn:"):
        found = _ARN.fullmatch(key_id)
        if found is None:
            raise _invalid_arn(key_id)
        if found.group(2) != account:
            raise not_found(f"Key '{key_id[:256]}' does not exist")
        inner = found.group(3)
        return inner.removeprefix("key/") if inner.startswith("key/") else inner
    return key_id


def direct(key_id: str, account: str) -> str | None:
    """The native name a key id or key ARN names (whether the key exists is the store's to
    say), or None for an alias or alias ARN (`by_alias`)."""
    named = target(key_id, account)
    if named.startswith(ALIAS_PREFIX):
        return None
    if not _KEY_NAME.fullmatch(named):
        raise not_found(f"Key '{key_id[:256]}' does not exist")
    return named


def by_alias(store: KeyStore, key_id: str, account: str) -> str:
    """The native name of the key an alias or alias ARN names (NotFoundException if none): a
    key's own name first, which no alias may take (one made before that rule is passed over)."""
    alias = target(key_id, account)
    name = alias.removeprefix(ALIAS_PREFIX)
    if _KEY_NAME.fullmatch(name):
        try:
            store.keys.get(name)
        except KeyNotFoundError:
            pass
        else:
            return name
    found = store.kms_aliases.get(alias)
    if found is not None:
        return found.key_name
    raise not_found(f"Alias '{alias[:256]}' is not found.")
