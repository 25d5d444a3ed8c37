"""The roles of JWT and certificate auth mounts (`store.auth_roles`) on both backends."""

from app.store import AuthMount, KeyStore
from tests.app.store.stores import at_once


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


def test_each_change_of_a_mount_s_roles_moves_its_revision_on(store: KeyStore) -> None:
    roles = store.auth_roles
    assert roles.revision("auth_cert_1") == 0
    assert roles.put("auth_cert_1", "a", {"certificate": "x"}, most=2)
    assert roles.revision("auth_cert_1") == 1
    assert roles.put("auth_cert_1", "a", {"certificate": "y"}, most=2)
    assert roles.put("auth_cert_1", "b", {}, most=2)
    assert not roles.put("auth_cert_1", "c", {}, most=2)  # refused: nothing changed
    assert roles.revision("auth_cert_1") == 3
    roles.delete("auth_cert_1", "a")
    assert roles.revision("auth_cert_1") == 4
    assert roles.revision("auth_cert_2") == 0  # each mount its own
    with store.transaction() as held:  # moved on with the change, inside its transaction
        held.auth_roles.put("auth_cert_2", "a", {}, most=2)
        held.auth_roles.delete("auth_cert_2", "a")
    assert roles.revision("auth_cert_2") == 2


def test_a_removed_mount_takes_its_roles_and_their_revision(store: KeyStore) -> None:
    store.auth_mounts.add(AuthMount("auth_cert_1", "cert", "cert", "", {}, 1.0))
    assert store.auth_roles.put("auth_cert_1", "a", {}, most=2)
    store.auth_mounts.remove("cert")
    assert store.auth_roles.all("auth_cert_1") == {}
    assert store.auth_roles.revision("auth_cert_1") == 0


def test_writes_at_once_keep_every_field_and_the_bound(store: KeyStore, store_url: str) -> None:
    """Each write changes the role as stored when it is made: fields written at once are all
    kept (each replaced the role it had read before, so most were lost), and new roles at once
    stop at the mount's bound (a few more got in)."""
    fields = iter(range(8))

    def one_field(on: KeyStore) -> None:
        field = f"field-{next(fields)}"
        on.auth_roles.write("auth_jwt_1", "r", lambda now: {**(now or {}), field: 1}, most=10)

    at_once(store, store_url, one_field, processes=8)
    assert store.auth_roles.get("auth_jwt_1", "r") == {f"field-{i}": 1 for i in range(8)}
    names = iter(range(8))

    def new_role(on: KeyStore) -> bool:
        return on.auth_roles.put("auth_cert_1", f"rule-{next(names)}", {}, most=5)

    assert sorted(at_once(store, store_url, new_role, processes=8)) == [False] * 3 + [True] * 5
    assert len(store.auth_roles.names("auth_cert_1")) == 5
