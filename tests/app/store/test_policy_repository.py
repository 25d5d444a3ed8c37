"""Named policies, the auth generation and auth mounts on SQLite and PostgreSQL: every change
that narrows a token moves the generation on."""

import pytest

from app.store import AuthMount, KeyStore, MountExistsError, MountNotFoundError, TokenRecord


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


def test_the_admin_token_hash_is_stored_and_moves_the_generation(store: KeyStore) -> None:
    state = store.auth_state.read()
    assert state.admin_token_hash is None
    store.auth_state.set_admin_token_hash(b"a" * 32)
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
