"""The roles of JWT and certificate auth mounts (`store.auth_roles`) on both backends."""

from app.store import KeyStore


def test_roles_by_mount_and_name(store: KeyStore) -> None:
    roles = store.auth_roles
    assert roles.put("auth_jwt_1", "ci", {"user_claim": "sub"}, most=2)
    assert roles.put("auth_jwt_1", "deploy", {"user_claim": "sub", "ttl": 60}, most=2)
    assert roles.put("auth_jwt_2", "ci", {"user_claim": "email"}, most=2)
    assert roles.get("auth_jwt_1", "ci") == {"user_claim": "sub"}
    assert roles.get("auth_jwt_2", "ci") == {"user_claim": "email"}
    assert roles.get("auth_jwt_1", "missing") is None
    assert roles.names("auth_jwt_1") == ["ci", "deploy"]
    assert roles.all("auth_jwt_1") == {
        "ci": {"user_claim": "sub"},
        "deploy": {"user_claim": "sub", "ttl": 60},
    }
    # A third role does not fit the mount's bound; a change of one there does.
    assert not roles.put("auth_jwt_1", "third", {}, most=2)
    assert roles.put("auth_jwt_1", "ci", {"user_claim": "aud"}, most=2)
    assert roles.get("auth_jwt_1", "ci") == {"user_claim": "aud"}
    roles.delete("auth_jwt_1", "ci")
    roles.delete("auth_jwt_1", "ci")  # nothing there: nothing done
    assert roles.names("auth_jwt_1") == ["deploy"]
    assert roles.names("auth_jwt_3") == []
