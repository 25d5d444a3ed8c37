"""What `sys/capabilities-self` reads off a token (`app.ops.hcl_policy.capabilities`), at the
edges OpenBao is not compared on (`tests/e2e/test_vault_sys_as_openbao.py` compares the rest):
the verbs no policy path grants, keyless verbs, admin paths, a token's own paths."""

import pytest

from app.ops.auth import ADMIN, AdminOperation, Operation, Principal, Rule
from app.ops.hcl_policy import capabilities

ORDERS = Principal(
    admin=False,
    token_id="t",
    rules=(Rule(("orders-*",), frozenset({Operation.ENCRYPT, Operation.DECRYPT})),),
    admin_operations=frozenset({AdminOperation.TOKENS}),
)
ENCRYPT_ONLY = Principal(
    admin=False, token_id="t", rules=(Rule(("orders-*",), frozenset({Operation.ENCRYPT})),)
)


@pytest.mark.parametrize(
    ("principal", "path", "expected"),
    [
        (ADMIN, "secret/data/anything", ["root"]),
        (ORDERS, "/transit/encrypt/orders-eu", ["update"]),
        (ORDERS, "transit/encrypt/payroll", ["deny"]),
        (ORDERS, "transit/rewrap/orders-eu", ["update"]),
        (ENCRYPT_ONLY, "transit/rewrap/orders-eu", ["deny"]),  # rewrap decrypts too
        (ENCRYPT_ONLY, "transit/datakey/plaintext/orders-eu", ["update"]),
        (ENCRYPT_ONLY, "transit/datakey/wrapped/orders-eu", ["update"]),
        (ENCRYPT_ONLY, "transit/datakey/orders-eu", ["deny"]),
        (ENCRYPT_ONLY, "transit/datakey/sealed/orders-eu", ["deny"]),
        (ENCRYPT_ONLY, "transit/keys/orders-eu", ["deny"]),
        (ENCRYPT_ONLY, "transit/hash/sha2-256", ["update"]),
        (ENCRYPT_ONLY, "transit/random/32", ["update"]),
        (ENCRYPT_ONLY, "transit/randomness", ["deny"]),
        (ORDERS, "auth/token/create", ["create", "delete", "list", "read", "update"]),
        (ENCRYPT_ONLY, "auth/token/create", ["deny"]),
        (ORDERS, "sys/policies/acl/x", ["deny"]),
        (ENCRYPT_ONLY, "auth/token/lookup-self", ["read"]),
        (ENCRYPT_ONLY, "auth/token/revoke-self", ["update"]),
        (ENCRYPT_ONLY, "cubbyhole/x", ["deny"]),  # not served here
        (ENCRYPT_ONLY, "transit/encrypt/orders-eu/extra", ["deny"]),
    ],
)
def test_capabilities_are_what_the_token_may_do(
    principal: Principal, path: str, expected: list[str]
) -> None:
    assert capabilities(principal, path) == expected
