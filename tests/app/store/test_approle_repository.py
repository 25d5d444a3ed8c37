"""AppRole's roles and secret ids in the store: on both backends."""

import hashlib

from app.store import AppRole, KeyStore, SecretId

MOUNT = "mount-accessor"


def role(name: str = "ci", role_id: str = "rid-1") -> AppRole:
    return AppRole(MOUNT, name, role_id, {"token_policies": ["p"]}, b"k" * 32, 1.0, 1.0)


def put(store: KeyStore, made: AppRole, max_roles: int) -> str:
    """Store `made` as the role of its name, whatever is stored: the outcome."""
    return store.approle.put_role(made.mount, made.name, lambda _: made, max_roles)[0]


def secret(accessor: str = "acc-1", uses: int = 0, expires_at: float | None = None) -> SecretId:
    digest = hashlib.sha256(accessor.encode()).digest()
    return SecretId(
        accessor, MOUNT, "ci", digest, uses, 0, expires_at, {"a": "b"}, (), (), 1.0, 1.0
    )


def test_a_role_is_stored_changed_and_found_by_its_role_id(store: KeyStore) -> None:
    assert put(store, role(), 10) == "ok"
    assert put(store, role(role_id="rid-2"), 10) == "ok"
    found = store.approle.role_by_id(MOUNT, "rid-2")
    assert found is not None and found.name == "ci" and found.settings == {"token_policies": ["p"]}
    assert store.approle.role_by_id(MOUNT, "rid-1") is None
    assert store.approle.role_by_id("another-mount", "rid-2") is None
    assert store.approle.role_names(MOUNT) == ["ci"]


def test_a_role_id_belongs_to_one_role_and_a_mount_holds_a_bounded_number(
    store: KeyStore,
) -> None:
    assert put(store, role("a", "same"), 2) == "ok"
    assert put(store, role("b", "same"), 2) == "role-id-taken"
    assert put(store, role("b", "other"), 2) == "ok"
    assert put(store, role("c", "third"), 2) == "full"
    assert put(store, role("b", "changed"), 2) == "ok"  # a change is not a new one


def test_a_limited_secret_id_is_spent_once_per_login_and_gone_with_its_last_use(
    store: KeyStore,
) -> None:
    put(store, role(), 10)
    limited = secret(uses=2)
    assert store.approle.add_secret_id(limited, 10) == "ok"
    first = store.approle.spend(MOUNT, "ci", limited.secret_hash, 2.0)
    assert first is not None and first.uses_left == 2
    second = store.approle.spend(MOUNT, "ci", limited.secret_hash, 2.0)
    assert second is not None and second.uses_left == 1
    assert store.approle.spend(MOUNT, "ci", limited.secret_hash, 2.0) is None
    assert store.approle.accessors(MOUNT, "ci", 2.0) == []


def test_an_expired_secret_id_is_refused_unlisted_and_purged(store: KeyStore) -> None:
    put(store, role(), 10)
    store.approle.add_secret_id(secret("old", expires_at=5.0), 10)
    store.approle.add_secret_id(secret("new", expires_at=50.0), 10)
    assert store.approle.accessors(MOUNT, "ci", 10.0) == ["new"]
    assert store.approle.spend(MOUNT, "ci", secret("old").secret_hash, 10.0) is None
    assert store.approle.secret_id(MOUNT, "ci", accessor="old") is None
    assert store.approle.delete_expired(100.0, 10) == 1
    assert store.approle.accessors(MOUNT, "ci", 0.0) == []


def test_secret_ids_are_unique_bounded_and_go_with_their_role(store: KeyStore) -> None:
    assert store.approle.add_secret_id(secret(), 10) == "no-role"
    put(store, role(), 10)
    assert store.approle.add_secret_id(secret("one"), 2) == "ok"
    assert store.approle.add_secret_id(secret("one"), 2) == "exists"
    assert store.approle.add_secret_id(secret("two"), 2) == "ok"
    assert store.approle.add_secret_id(secret("three"), 2) == "full"
    assert store.approle.delete_secret_id(MOUNT, "ci", "two")
    assert not store.approle.delete_secret_id(MOUNT, "ci", "two")
    assert store.approle.delete_role(MOUNT, "ci")
    assert store.approle.secret_id(MOUNT, "ci", accessor="one") is None
    assert not store.approle.delete_role(MOUNT, "ci")
