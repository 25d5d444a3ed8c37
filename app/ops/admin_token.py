"""The admin token's rotation: a new one drawn, its SHA-256 stored, the former one refused by
every replica from its next request (the auth generation moves, `app.ops.auth`). The new token
is shown once; the configured one (`CIPHERD_ADMIN_TOKEN`, `<data dir>/admin-token`) is no
longer valid once the store holds a rotated one."""

import secrets

from app.ops.errors import Problem
from app.ops.token_values import hash_token
from app.store import KeyStore

ADMIN_TOKEN_PREFIX = "cda_"


def rotate(store: KeyStore, replacing: bytes | None) -> str:
    """Draw a new admin token and make it the only one in place of the one the store holds as
    `replacing` (the caller's: `Authenticator.stored_admin_hash`): the token, shown only here.
    409 if another rotation replaced it meanwhile: of rotations at once one wins, and none
    hands out a token that never works."""
    token = ADMIN_TOKEN_PREFIX + secrets.token_urlsafe(32)
    if not store.auth_state.set_admin_token_hash(hash_token(token), replacing):
        raise Problem(
            409,
            "admin-token-changed",
            "Admin token changed",
            "another request rotated the admin token meanwhile: use the one it answered",
        )
    return token
