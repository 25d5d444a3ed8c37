"""Named policies, the auth generation and mounts on SQLite and PostgreSQL: every change that
narrows a token moves the generation on, and a mount moved (`sys/remount`) keeps what is its
accessor's and is recorded in the same transaction."""

import threading

import pytest

from app.store import (
    AuthMount,
    KeyStore,
    MountExistsError,
    MountMigration,
    MountNotFoundError,
    SecretMount,
    TokenRecord,
)
from tests.app.store.stores import at_once


def test_a_policy_counts_its_versions_and_each_change_moves_the_generation(
    store: KeyStore,
) -> None:
    start = store.auth_state.read().generation
    first = store.policies.put("ci", {"rules": [], "admin": ["tokens"]}, 10.0)
    assert (first.version, first.created_at, first.updated_at) == (1, 10.0, 10.0)
    second = store.policies.put("ci", {"rules": [], "admin": []}, 20.0)
    assert (second.version, second.created_at, second.updated_at) == (2, 10.0, 20.0)
    assert store.policies.get("ci") == second
    assert store.policies.get("other") is None
    store.policies.put("app", {"rules": []}, 30.0)
    assert store.policies.names() == ["app", "ci"]
    assert [p.name for p in store.policies.get_many(["ci", "none"])] == ["ci"]
    assert store.policies.delete("ci") is True
    assert store.policies.delete("ci") is False
    assert store.auth_state.read().generation == start + 4


def test_first_writes_of_a_policy_at_once_are_one_creation_and_replacements(
    store: KeyStore, store_url: str
) -> None:
    """Processes writing a new name at once: one makes it, the others replace it in turn, each
    answered with its own version (on PostgreSQL two used to insert, and one failed)."""
    for attempt in range(5):
        name = f"race-{attempt}"
        barrier = threading.Barrier(8)

        def write(on: KeyStore, name: str = name, barrier: threading.Barrier = barrier) -> int:
            barrier.wait()
            return on.policies.put(name, {"rules": []}, 1.0).version

        assert sorted(at_once(store, store_url, write, processes=8)) == list(range(1, 9))
        final = store.policies.get(name)
        assert final is not None and final.version == 8


def test_the_admin_token_hash_is_stored_and_moves_the_generation(store: KeyStore) -> None:
    state = store.auth_state.read()
    assert state.admin_token_hash is None
    assert store.auth_state.set_admin_token_hash(b"a" * 32, None)
    assert not store.auth_state.set_admin_token_hash(b"b" * 32, None)  # replaced meanwhile
    rotated = store.auth_state.read()
    assert rotated.admin_token_hash == b"a" * 32
    assert rotated.generation == state.generation + 1


def test_auth_mounts_are_added_configured_and_removed_with_their_tokens(store: KeyStore) -> None:
    mount = AuthMount("auth_approle_1", "ci", "approle", "", {}, 1.0)
    store.auth_mounts.add(mount)
    with pytest.raises(MountExistsError):
        store.auth_mounts.add(AuthMount("auth_approle_2", "ci", "approle", "", {}, 2.0))
    assert store.auth_mounts.configure("ci", {"x": 1}).config == {"x": 1}
    issued = TokenRecord("t" * 16, b"t" * 32, "", (), (), 1.0, None, mount="ci")
    other = TokenRecord("o" * 16, b"o" * 32, "", (), (), 1.0, None, mount="token")
    store.tokens.add(issued)
    store.tokens.add(other)
    assert store.auth_mounts.remove("ci").accessor == "auth_approle_1"
    assert [r.id for r in store.tokens.page(None, 10)[0]] == ["o" * 16]
    assert store.auth_mounts.all() == []
    with pytest.raises(MountNotFoundError):
        store.auth_mounts.remove("ci")


def test_an_auth_mount_moves_with_its_roles_and_without_its_tokens(store: KeyStore) -> None:
    store.auth_mounts.add(AuthMount("auth_jwt_1", "ci", "jwt", "", {"x": 1}, 1.0))
    store.auth_mounts.add(AuthMount("auth_jwt_2", "taken", "jwt", "", {}, 2.0))
    store.auth_roles.put("auth_jwt_1", "build", {"user_claim": "sub"}, 10)
    store.tokens.add(TokenRecord("t" * 16, b"t" * 32, "", (), (), 1.0, None, mount="ci"))
    store.tokens.add(TokenRecord("o" * 16, b"o" * 32, "", (), (), 1.0, None, mount="token"))
    start = store.auth_state.read().generation
    migration = MountMigration("m-1", "auth/ci/", "auth/ci2/", 10.0)
    with pytest.raises(MountExistsError):
        store.auth_mounts.move("ci", "taken", migration)
    with pytest.raises(MountNotFoundError):
        store.auth_mounts.move("absent", "ci2", migration)
    assert store.mount_migrations.get("m-1") is None  # nothing recorded for a move refused

    moved = store.auth_mounts.move("ci", "ci2", migration)
    assert (moved.accessor, moved.path, moved.config) == ("auth_jwt_1", "ci2", {"x": 1})
    assert [m.path for m in store.auth_mounts.all()] == ["ci2", "taken"]
    assert store.auth_roles.get("auth_jwt_1", "build") == {"user_claim": "sub"}
    assert [r.id for r in store.tokens.page(None, 10)[0]] == ["o" * 16]
    assert store.auth_state.read().generation > start
    assert store.mount_migrations.get("m-1") == migration


def test_a_secrets_mount_moves_with_its_prefix_and_config(store: KeyStore) -> None:
    store.secret_mounts.add(SecretMount("transit_1", "pay", "transit", "pay.", "", 1.0))
    store.secret_mounts.add(SecretMount("transit_2", "other", "transit", "other.", "", 2.0))
    store.secret_mounts.update_keys_config("transit_1", {"disable_upsert": True})
    migration = MountMigration("m-2", "pay/", "payments/", 10.0)
    with pytest.raises(MountExistsError):
        store.secret_mounts.move("pay", "other", migration)
    with pytest.raises(MountNotFoundError):
        store.secret_mounts.move("absent", "payments", migration)

    moved = store.secret_mounts.move("pay", "payments", migration)
    assert (moved.accessor, moved.path, moved.key_prefix) == ("transit_1", "payments", "pay.")
    assert [m.path for m in store.secret_mounts.all()] == ["payments", "other"]
    assert store.secret_mounts.keys_config("transit_1") == {"disable_upsert": True}
    assert store.mount_migrations.get("m-2") == migration


def test_a_move_is_kept_for_a_week(store: KeyStore) -> None:
    store.secret_mounts.add(SecretMount("transit_1", "a", "transit", "a.", "", 1.0))
    week = 7 * 24 * 3600
    store.secret_mounts.move("a", "b", MountMigration("old", "a/", "b/", 100.0))
    store.secret_mounts.move("b", "c", MountMigration("recent", "b/", "c/", 100.0 + week - 1))
    assert store.mount_migrations.get("old") is not None
    store.secret_mounts.move("c", "d", MountMigration("new", "c/", "d/", 101.0 + week))
    assert store.mount_migrations.get("old") is None
    assert store.mount_migrations.get("recent") is not None


def test_a_mount_at_under_or_over_another_is_refused(store: KeyStore) -> None:
    store.secret_mounts.add(SecretMount("transit_1", "nx", "transit", "nx.", "", 1.0))
    store.auth_mounts.add(AuthMount("auth_jwt_1", "ci/y", "jwt", "", {}, 1.0))
    refused = [
        lambda: store.secret_mounts.add(SecretMount("transit_2", "nx/y", "transit", "y.", "", 2)),
        lambda: store.secret_mounts.add(
            SecretMount("transit_3", "transit/y", "transit", "t.", "", 2), fixed=("transit",)
        ),
        lambda: store.auth_mounts.add(AuthMount("auth_jwt_2", "ci", "jwt", "", {}, 2.0)),
        lambda: store.secret_mounts.move("nx", "nx/z", MountMigration("m", "nx/", "nx/z/", 3)),
    ]
    taken = []
    for attempt in refused:
        with pytest.raises(MountExistsError) as caught:
            attempt()
        taken.append(caught.value.path)
    assert taken == ["nx", "transit", "ci/y", "nx"]


def test_mounts_made_at_once_never_nest(store: KeyStore, store_url: str) -> None:
    """Four processes each mounting at once where the others would be above or below: the
    store lets through only mounts none of which is under another."""
    paths = iter(["nx", "nx/y", "nx/y/z", "nx/w"])
    lock = threading.Lock()

    def mount(opened: KeyStore) -> str | None:
        with lock:
            path = next(paths)
        try:
            opened.secret_mounts.add(
                SecretMount(f"transit_{path}", path, "transit", f"{path}.", "", 1)
            )
        except MountExistsError:
            return None
        return path

    made = [path for path in at_once(store, store_url, mount) if path is not None]
    assert made and all(not b.startswith(a + "/") for a in made for b in made)
    assert sorted(made) == sorted(m.path for m in store.secret_mounts.all() if m.path)
