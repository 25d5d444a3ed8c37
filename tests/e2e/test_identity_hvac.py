"""hvac's token, ACL policy and auth method calls against cipherd and against a real OpenBao,
compared.

Each case is a function of an hvac client holding the root (admin) token, written as hvac's own
integration tests use these methods (`tests/integration_tests/api/auth_methods/test_token.py`,
`api/system_backend/test_policy.py`, `test_auth.py`), success and error cases. Every case runs
on both servers; its outcome is the answer's shape (every field's name and JSON type,
recursively) or the hvac exception class it raised, and the two outcomes must be equal.
"""

import secrets
from collections.abc import Callable, Iterator
from typing import Any

import hvac
import pytest
import requests
from hvac import exceptions

from tests.e2e.openbao import running_openbao, shape
from tests.e2e.server import running

pytestmark = pytest.mark.e2e

ADMIN_TOKEN = "identity-admin-" + secrets.token_urlsafe(16)
SERVERS = ("openbao", "cipherd")
POLICY = 'path "transit/encrypt/orders-*" {\n  capabilities = ["update"]\n}'


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, hvac.Client]]:
    work = tmp_path_factory.mktemp("identity")
    env = {"CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN}
    with running(work / "cipherd", env=env) as cipherd, running_openbao(work) as openbao:
        yield {
            "openbao": hvac.Client(url=openbao.url, token=openbao.token),
            "cipherd": hvac.Client(url=cipherd.url, token=ADMIN_TOKEN),
        }


def outcome(case: Callable[[hvac.Client], Any], client: hvac.Client) -> Any:
    try:
        answer = case(client)
    except exceptions.VaultError as error:
        return ("raised", type(error).__name__)
    if isinstance(answer, requests.Response):
        return ("status", answer.status_code)
    return ("answer", shape(answer))


def as_token(client: hvac.Client, token: str) -> hvac.Client:
    return hvac.Client(url=client.url, token=token)


def child(client: hvac.Client, **options: Any) -> dict[str, Any]:
    created: dict[str, Any] = client.auth.token.create(policies=["orders"], ttl="1h", **options)[
        "auth"
    ]
    return created


def _name() -> str:
    return "p-" + secrets.token_hex(4)


def _renewed(client: hvac.Client) -> Any:
    token = child(client)["client_token"]
    client.auth.token.renew(token, increment="2h")
    return client.auth.token.lookup(token)


def _role(client: hvac.Client) -> Any:
    name = _name()
    client.auth.token.create_or_update_role(name, allowed_policies=["orders"], orphan=True)
    return client.auth.token.read_role(name)


def _role_updated(client: hvac.Client) -> Any:
    """A role written again with one field keeps the others, as Vault updates a role."""
    name = _name()
    client.auth.token.create_or_update_role(name, allowed_policies=["orders"], token_period="1h")
    client.adapter.post(f"/v1/auth/token/roles/{name}", json={"bound_cidrs": ["10.0.0.0/8"]})
    client.auth.token.create_or_update_role(name, orphan=True)
    return client.auth.token.read_role(name)


def _child_beyond_its_parent(client: hvac.Client) -> Any:
    """A token that may make tokens asks for a policy it does not carry."""
    maker = 'path "auth/token/*" {\n  capabilities = ["create", "update"]\n}'
    client.sys.create_or_update_acl_policy(name="token-maker", policy=maker)
    parent = client.auth.token.create(policies=["token-maker"])["auth"]["client_token"]
    return as_token(client, parent).auth.token.create(policies=["orders"])


def _bound_role(client: hvac.Client, blocks: str) -> Any:
    """A token role binding its tokens to `blocks`; the token made through it, used from this
    host (only the lookup's blocks compared)."""
    name = _name()
    body = {"allowed_policies": ["orders"], "token_bound_cidrs": blocks}
    client.adapter.post(f"/v1/auth/token/roles/{name}", json=body)  # hvac's call has no blocks
    read = client.auth.token.read_role(name)["data"]
    made = client.auth.token.create(role_name=name, policies=["orders"])["auth"]
    found = as_token(client, made["client_token"]).auth.token.lookup_self()["data"]
    return {"role": read["token_bound_cidrs"], "token": found["bound_cidrs"]}


def _chosen(client: hvac.Client, value: str, role: bool = False) -> Any:
    """A token of the value `value`, made by the root token (through a role when asked)."""
    role_name = None
    if role:
        role_name = _name()
        client.auth.token.create_or_update_role(role_name, allowed_policies=["orders"])
    return client.auth.token.create(id=value, role_name=role_name, policies=["orders"])


def _chosen_twice(client: hvac.Client) -> Any:
    value = "chosen-" + secrets.token_hex(8)
    _chosen(client, value)
    return _chosen(client, value)


def _chosen_by_a_token_that_is_not_root(client: hvac.Client) -> Any:
    maker = 'path "auth/token/*" {\n  capabilities = ["create", "update"]\n}'
    client.sys.create_or_update_acl_policy(name="token-maker", policy=maker)
    parent = client.auth.token.create(policies=["token-maker"])["auth"]["client_token"]
    value = "chosen-" + secrets.token_hex(8)
    return as_token(client, parent).auth.token.create(id=value, policies=["token-maker"])


def _create_through_role(client: hvac.Client) -> Any:
    name = _name()
    client.auth.token.create_or_update_role(name, allowed_policies=["orders"], orphan=True)
    return client.auth.token.create(role_name=name, policies=["orders"])


def _create_through_role_refused(client: hvac.Client) -> Any:
    name = _name()
    client.auth.token.create_or_update_role(name, allowed_policies=["orders"])
    return client.auth.token.create(role_name=name, policies=["other"])


def _list_roles(client: hvac.Client) -> Any:
    client.auth.token.create_or_update_role(_name(), allowed_policies=["orders"])
    return client.auth.token.list_roles()


def _deleted_role(client: hvac.Client) -> Any:
    name = _name()
    client.auth.token.create_or_update_role(name)
    client.auth.token.delete_role(name)
    return client.auth.token.read_role(name)


def _revoke_self(client: hvac.Client) -> Any:
    own = as_token(client, child(client)["client_token"])
    own.auth.token.revoke_self()
    return own.auth.token.lookup_self()


def _self_with_a_child_token(client: hvac.Client) -> Any:
    return as_token(client, child(client)["client_token"]).auth.token.lookup_self()


def _renew_self_child(client: hvac.Client) -> Any:
    return as_token(client, child(client)["client_token"]).auth.token.renew_self(increment=60)


def _revoke_accessor(client: hvac.Client) -> Any:
    created = child(client)
    client.auth.token.revoke_accessor(created["accessor"])
    return as_token(client, created["client_token"]).auth.token.lookup_self()


def _not_renewable(client: hvac.Client) -> Any:
    return client.auth.token.renew(child(client, renewable=False)["client_token"])


def _acl_policy(client: hvac.Client) -> Any:
    name = _name()
    client.sys.create_or_update_acl_policy(name, POLICY)
    return client.sys.read_acl_policy(name)


def _acl_deleted(client: hvac.Client) -> Any:
    name = _name()
    client.sys.create_or_update_acl_policy(name, POLICY)
    client.sys.delete_acl_policy(name)
    return client.sys.read_acl_policy(name)


def _auth_enabled_twice(client: hvac.Client) -> Any:
    path = _name()
    client.sys.enable_auth_method("approle", path=path)
    try:
        return client.sys.enable_auth_method("approle", path=path)
    finally:
        client.sys.disable_auth_method(path)


def _auth_listed(client: hvac.Client) -> Any:
    path = _name()
    client.sys.enable_auth_method("approle", path=path)
    try:
        listed = client.sys.list_auth_methods()
        return {"token/": listed["token/"], "approle/": listed[f"{path}/"]}
    finally:
        client.sys.disable_auth_method(path)


CASES: dict[str, Callable[[hvac.Client], Any]] = {
    "create": lambda c: c.auth.token.create(policies=["orders"], ttl="1h", meta={"team": "a"}),
    "create_orphan": lambda c: c.auth.token.create_orphan(policies=["orders"], ttl=60),
    "create_periodic": lambda c: c.auth.token.create(policies=["orders"], period="10m"),
    "create_with_uses": lambda c: c.auth.token.create(policies=["orders"], num_uses=3),
    "lookup": lambda c: c.auth.token.lookup(child(c)["client_token"]),
    "lookup_unknown": lambda c: c.auth.token.lookup("no-such-token"),
    "lookup_self_root": lambda c: c.auth.token.lookup_self(),
    "lookup_self_child": _self_with_a_child_token,
    "lookup_accessor": lambda c: c.auth.token.lookup_accessor(child(c)["accessor"]),
    "lookup_accessor_unknown": lambda c: c.auth.token.lookup_accessor("no-such-accessor"),
    "renew": lambda c: c.auth.token.renew(child(c)["client_token"], increment="2h"),
    "lookup_renewed": _renewed,
    "renew_unknown": lambda c: c.auth.token.renew("no-such-token"),
    "renew_not_renewable": _not_renewable,
    "renew_self_root": lambda c: c.auth.token.renew_self(),
    "renew_self_child": _renew_self_child,
    "revoke_self": _revoke_self,
    "revoke_accessor": _revoke_accessor,
    "role": _role,
    "role_updated": _role_updated,
    "role_list": _list_roles,
    "role_deleted": _deleted_role,
    "create_through_role": _create_through_role,
    "create_through_role_bound_elsewhere": lambda c: _bound_role(c, "10.0.0.0/8"),
    "create_through_role_refused": _create_through_role_refused,
    "create_with_id": lambda c: _chosen(c, "chosen-" + secrets.token_hex(8)),
    "create_with_id_through_role": lambda c: _chosen(c, "chosen-" + secrets.token_hex(8), True),
    "create_with_id_taken": _chosen_twice,
    "create_with_id_with_a_dot": lambda c: _chosen(c, "chosen." + secrets.token_hex(8)),
    "create_with_id_as_vault_draws": lambda c: _chosen(c, "hvs." + secrets.token_hex(12)),
    "create_with_id_not_root": _chosen_by_a_token_that_is_not_root,
    "tidy": lambda c: c.auth.token.tidy(),
    "create_beyond_the_parent": _child_beyond_its_parent,
    "bad_token": lambda c: as_token(c, "no-such-token").auth.token.lookup_self(),
    "acl_policy": _acl_policy,
    "acl_policy_list": lambda c: c.sys.list_acl_policies(),
    "acl_policy_bad_capability": lambda c: c.sys.create_or_update_acl_policy(
        _name(), 'path "transit/encrypt/x" { capabilities = ["fly"] }'
    ),
    "acl_policy_deleted": _acl_deleted,
    "acl_policy_delete_root": lambda c: c.sys.delete_acl_policy("root"),
    "acl_policy_delete_default": lambda c: c.sys.delete_acl_policy("default"),
    "acl_policy_bad_token": lambda c: as_token(c, "no-such-token").sys.list_acl_policies(),
    "auth_listed": _auth_listed,
    "auth_enable": lambda c: c.sys.enable_auth_method("approle", path=_name()),
    "auth_enabled_twice": _auth_enabled_twice,
    "auth_unknown_type": lambda c: c.sys.enable_auth_method("no-such-method", path=_name()),
    "auth_disable_missing": lambda c: c.sys.disable_auth_method(_name()),
}


@pytest.mark.parametrize("case", list(CASES))
def test_hvac_behaves_alike(clients: dict[str, hvac.Client], case: str) -> None:
    outcomes = {server: outcome(CASES[case], clients[server]) for server in SERVERS}
    assert outcomes["cipherd"] == outcomes["openbao"], outcomes


def test_the_cases_are_not_all_alike(clients: dict[str, hvac.Client]) -> None:
    """The comparison can tell: a refusal and an answer differ."""
    refused = outcome(CASES["lookup_unknown"], clients["cipherd"])
    answered = outcome(CASES["lookup_self_root"], clients["cipherd"])
    assert refused == ("raised", "Forbidden")
    assert answered[0] == "answer" and refused != answered


def test_a_token_role_binds_its_tokens_as_on_openbao(clients: dict[str, hvac.Client]) -> None:
    """The blocks as both write them (a single address without its length) on the role and
    on the token made through it, which acts from this host."""
    seen = {server: _bound_role(clients[server], "127.0.0.0/8,127.0.0.1/32") for server in SERVERS}
    assert seen["cipherd"] == seen["openbao"]
    assert seen["cipherd"]["role"] == ["127.0.0.0/8", "127.0.0.1"]


def test_a_chosen_token_value_is_the_token_on_both(clients: dict[str, hvac.Client]) -> None:
    """`id` on create: the token is that value, it acts, and the answer warns of it."""
    for server in SERVERS:
        value = f"chosen-{server}-" + secrets.token_hex(8)
        made = _chosen(clients[server], value)
        assert made["auth"]["client_token"] == value
        assert made["warnings"], made
        found = as_token(clients[server], value).auth.token.lookup_self()["data"]
        assert found["id"] == value and "orders" in found["policies"], (server, found)


def test_a_role_without_allowed_policies_gives_its_maker_s(
    clients: dict[str, hvac.Client],
) -> None:
    """A token made through a role that names no allowed policies, asking for none, has its
    maker's, as in Vault; one of them disallowed by the role is a 400."""
    maker_policy = 'path "auth/token/*" {\n  capabilities = ["create", "update", "read"]\n}'
    seen = {}
    for server, admin in clients.items():
        name = _name()
        admin.sys.create_or_update_acl_policy(name, maker_policy)
        admin.auth.token.create_or_update_role(f"{name}-open")
        admin.auth.token.create_or_update_role(f"{name}-shut", disallowed_policies=[name])
        maker = as_token(admin, admin.auth.token.create(policies=[name])["auth"]["client_token"])
        made = maker.auth.token.create(role_name=f"{name}-open")["auth"]
        try:
            maker.auth.token.create(role_name=f"{name}-shut")
            shut = "made"
        except exceptions.InvalidRequest as error:
            shut = "refused" if "disallowed" in str(error) else str(error)
        seen[server] = ([p.replace(name, "maker") for p in sorted(made["policies"])], shut)
    assert seen["cipherd"] == seen["openbao"] == (["default", "maker"], "refused")
