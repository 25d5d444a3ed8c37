"""The secrets-engine mount repository's `config/keys` documents on SQLite and PostgreSQL: none
until written, each mount's its own by accessor, a write replacing the whole, kept across a
reopen of the store."""

from app.store import KeyStore, open_store
from tests.app.store.stores import root


def test_a_mount_s_keys_config_is_its_own_and_replaced_whole(
    store: KeyStore, store_url: str
) -> None:
    mounts = store.secret_mounts
    assert mounts.keys_config("transit_00000000") == {}
    mounts.set_keys_config("transit_00000000", {"disable_upsert": True, "other": [1, 2]})
    mounts.set_keys_config("transit_0a1b2c3d", {"disable_upsert": False})
    mounts.set_keys_config("transit_00000000", {"disable_upsert": True})
    store.close()
    reopened = open_store(store_url, root())
    try:
        assert reopened.secret_mounts.keys_config("transit_00000000") == {"disable_upsert": True}
        assert reopened.secret_mounts.keys_config("transit_0a1b2c3d") == {"disable_upsert": False}
        assert reopened.secret_mounts.keys_config("transit_ffffffff") == {}
    finally:
        reopened.close()
