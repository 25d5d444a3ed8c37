"""The admin token's rotation: a new one drawn, its SHA-256 stored, the former one refused by
every replica from its next request (the auth generation moves, `app.ops.auth`). The new token
is shown once; the configured one (`CIPHERD_ADMIN_TOKEN`, `<data dir>/admin-token`) is no
longer valid once the store holds a rotated one."""

import secrets

from app.ops.token_values import hash_token
from app.store import KeyStore

ADMIN_TOKEN_PREFIX = "cda_"


def rotate(store: KeyStore) -> str:
    """Draw a new admin token and make it the only one: the token, shown only here."""
    token = ADMIN_TOKEN_PREFIX + secrets.token_urlsafe(32)
    store.auth_state.set_admin_token_hash(hash_token(token))
    return token
