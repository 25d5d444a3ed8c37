"""Who may call: the admin token, the life of tokens and of response-wrapping tokens, how long a
token lookup and a reading of the auth generation are reused, and how often a JWT issuer's keys
are fetched for logins."""

from pydantic import BaseModel, Field

from app.settings.fields import Lifetime, Staleness


class IdentitySettings(BaseModel):
    admin_token: str | None = Field(
        None,
        description="The admin bearer token: 16 or more printable ASCII characters, no spaces. "
        "Unset: generated once into `<data dir>/admin-token` (0600).",
    )
    admin_token_disabled: bool = Field(
        False,
        description="Refuse the admin token altogether: every request then acts by a token's "
        "policies (make those tokens first, `cipherd local tokens create --policy`).",
    )
    token_default_ttl_seconds: Lifetime = Field(
        768 * 3600,
        description="The life of a token made at Vault's paths or by a login when neither "
        "the request nor its role gives one.",
    )
    token_max_ttl_seconds: Lifetime = Field(
        768 * 3600,
        description="The longest life a token may be given or renewed to, from its creation "
        "(periodic tokens aside: each renewal gives them their period).",
    )
    token_cache_seconds: Staleness = Field(
        2.0,
        description="How long a process reuses a token lookup while nothing narrows tokens: "
        "a revocation, a policy change or an admin token rotation is seen by every replica "
        "within `CIPHERD_AUTH_CHECK_SECONDS`. It bounds how long a renewal made elsewhere goes "
        "unseen.",
    )
    auth_check_seconds: float = Field(
        0.0,
        ge=0,
        le=60,
        description="How long a process reuses its reading of the store's auth generation "
        "instead of reading it for each request. It bounds how long another process or "
        "replica goes on accepting a token after its revocation, a narrowed or deleted policy, "
        "a rotated admin token or a disabled auth method; the process that made the change "
        "refuses from its next request. 0 (the default): read it for every request, so that "
        "every replica refuses from its next request too (one read, begun after they arrived, "
        "serves the requests that arrived together); 0.5 serves a small encryption by a scoped "
        "token about a tenth faster (docs/performance/choices.md).",
    )
    jwks_min_refetch_seconds: float = Field(
        30.0,
        ge=0.1,
        le=86400,
        description="The shortest time between two fetches of a JWT issuer's keys (a JWKS or "
        "OIDC discovery URL of an `auth/jwt` mount) per worker: a login whose token names a key "
        "id the cached keys lack fetches them again only this long after the last fetch, so "
        "that an issuer's new key is seen within it and a stream of unknown key ids costs the "
        "issuer one request per interval at most.",
    )
    wrap_max_ttl_seconds: Lifetime = Field(
        32 * 86400,
        description="The longest TTL a response-wrapping token may be given (`X-Vault-Wrap-TTL`); "
        "a longer one is refused with 400.",
    )
    wrap_max_bytes: int = Field(
        1024 * 1024,
        ge=1024,
        le=64 * 1024 * 1024,
        description="The largest answer that may be response-wrapped (stored until unwrapped or "
        "expired); a larger one is refused with 413.",
    )
