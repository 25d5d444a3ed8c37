"""What `sys/capabilities-self` reads off a token (`app.ops.capabilities`), at the edges OpenBao
is not compared on (`tests/e2e/test_vault_sys_as_openbao.py` compares the rest): the verbs no
policy path grants, keyless verbs, other Transit mounts, admin paths, a token's own paths."""

import pytest

from app.ops.capabilities import capabilities
from app.ops.grants import ADMIN, AdminOperation, Operation, Principal, Rule
from app.ops.transit.mounts import DEFAULT
from app.store import SecretMount

PAYMENTS = SecretMount(
    accessor="transit_1",
    path="payments",
    type="transit",
    key_prefix="payments.",
    description="",
    created_at=0.0,
)
MOUNTS = {"transit": DEFAULT, "payments": PAYMENTS}
EVERY = ["create", "delete", "list", "read", "update"]
ORDERS = Principal(
    admin=False,
    token_id="t",
    rules=(
        Rule(("orders-*",), frozenset({Operation.ENCRYPT, Operation.DECRYPT})),
        Rule(("payments.k",), frozenset({Operation.SIGN, Operation.HMAC})),
    ),
    admin_operations=frozenset({AdminOperation.TOKENS, AdminOperation.BACKUP}),
)
ENCRYPT_ONLY = Principal(
    admin=False, token_id="t", rules=(Rule(("orders-*",), frozenset({Operation.ENCRYPT})),)
)
AUTH_ADMIN = Principal(
    admin=False, token_id="t", rules=(), admin_operations=frozenset({AdminOperation.AUTH})
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
        (ENCRYPT_ONLY, "transit/keys/orders-eu/rotate", ["deny"]),  # the admin token's
        (ENCRYPT_ONLY, "transit/hash/sha2-256", ["update"]),
        (ENCRYPT_ONLY, "transit/random/32", ["update"]),
        (ENCRYPT_ONLY, "transit/randomness", ["deny"]),
        # Open to every token here, as Transit's: they were `deny`, yet allowed.
        (ENCRYPT_ONLY, "sys/tools/hash", ["update"]),
        (ENCRYPT_ONLY, "sys/tools/hash/sha2-512", ["update"]),
        (ENCRYPT_ONLY, "sys/tools/random/16", ["update"]),
        (ENCRYPT_ONLY, "sys/tools/randomness", ["deny"]),
        (ENCRYPT_ONLY, "transit/encrypt/orders-eu/extra", ["deny"]),
        (ORDERS, "payments/sign/k", ["update"]),
        (ORDERS, "payments/verify/k", ["update"]),  # an HMAC verifies at the same path
        (ORDERS, "payments/encrypt/orders-eu", ["deny"]),  # another mount's key
        (ORDERS, "transit/sign/k", ["deny"]),
        (ORDERS, "transit/backup/orders-eu", EVERY),
        (ENCRYPT_ONLY, "payments/restore", ["deny"]),
        (ORDERS, "auth/token/create", EVERY),
        (ORDERS, "auth/token/create-orphan", EVERY),
        (ORDERS, "auth/token/lookup-accessor", EVERY),
        (ORDERS, "sys/capabilities-accessor", EVERY),
        (ORDERS, "sys/leases/revoke-prefix/auth/approle", EVERY),
        (ENCRYPT_ONLY, "auth/token/create", ["deny"]),
        (ORDERS, "sys/policies/acl/x", ["deny"]),
        (ORDERS, "auth/approle/role/ci", ["deny"]),
        (ENCRYPT_ONLY, "auth/token/lookup-self", ["read"]),
        (ENCRYPT_ONLY, "auth/token/revoke-self", ["update"]),
        (ENCRYPT_ONLY, "auth/token/lookup-self/x", ["deny"]),
        (ENCRYPT_ONLY, "sys/wrapping/foo", ["deny"]),
        (ENCRYPT_ONLY, "cubbyhole/x", ["deny"]),  # not served here
        (AUTH_ADMIN, "sys/remount", EVERY),  # it moves auth methods there
        (AUTH_ADMIN, "sys/remount/status/x", EVERY),
        (AUTH_ADMIN, "sys/mounts", ["deny"]),
        (ORDERS, "sys/remount", ["deny"]),
    ],
)
def test_capabilities_are_what_the_token_may_do(
    principal: Principal, path: str, expected: list[str]
) -> None:
    assert capabilities(principal, path, MOUNTS) == expected
