"""The secrets-engine mount repository's settings documents on SQLite and PostgreSQL: none
until written, each mount's its own by accessor, a write setting its fields and keeping the
others, kept across a reopen of the store."""

from app.store import KeyStore, open_store
from tests.app.store.stores import root


def test_a_mount_s_settings_are_its_own_and_set_field_by_field(
    store: KeyStore, store_url: str
) -> None:
    mounts = store.secret_mounts
    assert mounts.keys_config("transit_00000000") == {}
    mounts.update_keys_config("transit_00000000", {"disable_upsert": False, "other": [1, 2]})
    mounts.update_keys_config("transit_0a1b2c3d", {"disable_upsert": False})
    assert mounts.update_keys_config("transit_00000000", {"disable_upsert": True}) == {
        "disable_upsert": True,
        "other": [1, 2],
    }
    store.close()
    reopened = open_store(store_url, root())
    try:
        assert reopened.secret_mounts.keys_config("transit_00000000") == {
            "disable_upsert": True,
            "other": [1, 2],
        }
        assert reopened.secret_mounts.keys_config("transit_0a1b2c3d") == {"disable_upsert": False}
        assert reopened.secret_mounts.keys_config("transit_ffffffff") == {}
    finally:
        reopened.close()
