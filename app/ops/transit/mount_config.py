"""A Transit mount's own settings, kept by the mount's accessor (they move with it): its
`config/keys` (whether an encryption may create a missing key) and its `cache-config` (the size
Vault gives its key cache, kept and read back for the clients that set it; the service's own key
cache is bounded by its settings)."""

from typing import Any

from pydantic import field_validator

from app.ops.vault_fields import VaultBody, VaultBool, VaultInt
from app.store import KeyStore, SecretMount


class TransitKeysConfig(VaultBody):
    """`POST config/keys`: what a mount's keys have in common. A field left out is its default,
    as in Vault, where a write replaces the whole."""

    disable_upsert: VaultBool = False

    @field_validator("disable_upsert", mode="before")
    @classmethod
    def _null_is_false(cls, value: Any) -> Any:
        """`null` reads as the field not given, as in Vault: false."""
        return False if value is None else value


def keys_config(store: KeyStore, mount: SecretMount) -> dict[str, Any]:
    """The mount's `config/keys`, Vault's defaults where it was never written."""
    return TransitKeysConfig(**store.secret_mounts.keys_config(mount.accessor)).model_dump()


def configure_keys(store: KeyStore, mount: SecretMount, body: TransitKeysConfig) -> dict[str, Any]:
    """Replace the mount's `config/keys` (every field of it); the configuration written."""
    config = body.model_dump()
    store.secret_mounts.update_keys_config(mount.accessor, config)
    return config


# Where a mount's settings keep its `cache-config`.
CACHE_SIZE = "cache_size"


class TransitCacheConfig(VaultBody):
    """`POST cache-config`: the size Vault gives its cache of keys (0: unbounded)."""

    size: VaultInt = 0

    @field_validator("size")
    @classmethod
    def _vault_s_bounds(cls, size: int) -> int:
        if size != 0 and not 10 <= size <= 2**31 - 1:
            raise ValueError("size must be 0 or a value greater or equal to 10")
        return size


def cache_config(store: KeyStore, mount: SecretMount) -> dict[str, Any]:
    """The mount's `cache-config`: the size last written (0 if never)."""
    return {"size": store.secret_mounts.keys_config(mount.accessor).get(CACHE_SIZE, 0)}


def configure_cache(
    store: KeyStore, mount: SecretMount, body: TransitCacheConfig
) -> dict[str, Any]:
    store.secret_mounts.update_keys_config(mount.accessor, {CACHE_SIZE: body.size})
    return {"size": body.size}
