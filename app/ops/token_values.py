"""A token's value and its id. The value is a random 256-bit string shown once; the store keeps
only its SHA-256, which is enough for a secret of that entropy and lets a lookup be one indexed
query. The id, also its accessor, is what paths and records name it by."""

import hashlib
import secrets

TOKEN_PREFIX = "cdt_"
# A token's id as `new_token` draws it: what a path may name a token by.
TOKEN_ID_PATTERN = r"^[0-9a-f]{16}$"


def hash_token(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def new_token() -> tuple[str, str]:
    """A fresh (token id, token) pair: the id is also the token's accessor."""
    token_id = secrets.token_hex(8)
    return token_id, f"{TOKEN_PREFIX}{secrets.token_urlsafe(32)}"
