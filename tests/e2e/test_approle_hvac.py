"""hvac's AppRole methods and response wrapping against cipherd and against a real OpenBao,
compared as the Transit tests compare them (`tests/e2e/test_transit_hvac.py`).

Each case is a function of an hvac client and a fresh AppRole mount (enabled at a path of its
own through `sys/auth`, then disabled); its outcome is the answer's shape (field names and JSON
types, recursively) or the hvac exception it raised, and must be the same on both servers, but
where `DIFFERENCES` says otherwise and why. The cases follow hvac's own AppRole integration
tests (`tests/integration_tests/api/auth_methods/test_approle.py`): success and error cases,
with the login's refusals (a bad, used-up or wrongly placed secret id) added.
"""

import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import hvac
import pytest
import requests
from hvac import exceptions

from tests.e2e.openbao import running_openbao, shape
from tests.e2e.server import running, wait_for

pytestmark = pytest.mark.e2e

ADMIN_TOKEN = "approle-admin-" + secrets.token_urlsafe(16)
SERVERS = ("openbao", "cipherd")
Case = Callable[[hvac.Client, str], Any]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("approle")


@pytest.fixture(scope="module")
def targets(work: Path) -> Iterator[dict[str, tuple[str, str]]]:
    env = {"CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN}
    with running(work / "cipherd", env=env) as cipherd, running_openbao(work) as openbao:
        yield {"openbao": (openbao.url, openbao.token), "cipherd": (cipherd.url, ADMIN_TOKEN)}


def outcome(case: Case, url: str, token: str) -> Any:
    """The case's outcome on one server, in an AppRole mount of its own."""
    client = hvac.Client(url=url, token=token)
    mount = "approle-test-" + secrets.token_hex(4)
    client.sys.enable_auth_method("approle", path=mount)
    try:
        answer = case(client, mount)
    except exceptions.VaultError as error:
        return ("raised", type(error).__name__)
    finally:
        hvac.Client(url=url, token=token).sys.disable_auth_method(path=mount)
    if isinstance(answer, requests.Response):
        return ("status", answer.status_code)
    return ("answer", shape(answer))


def on_both(
    targets: dict[str, tuple[str, str]], work: Callable[[hvac.Client, str], Any]
) -> dict[str, Any]:
    """`work(client, mount)` on each server, in an AppRole mount of its own there."""
    seen = {}
    for server in SERVERS:
        client = hvac.Client(url=targets[server][0], token=targets[server][1])
        mount = "approle-both-" + secrets.token_hex(4)
        client.sys.enable_auth_method("approle", path=mount)
        try:
            seen[server] = work(client, mount)
        finally:
            client.sys.disable_auth_method(path=mount)
    return seen


ROLE = "testrole"


def role(client: hvac.Client, mount: str, **options: Any) -> str:
    """Make the role; its role id."""
    options.setdefault("token_policies", ["default", "reader"])
    client.auth.approle.create_or_update_approle(ROLE, mount_point=mount, **options)
    return str(client.auth.approle.read_role_id(ROLE, mount_point=mount)["data"]["role_id"])


def secret(client: hvac.Client, mount: str, **options: Any) -> dict[str, Any]:
    answer = client.auth.approle.generate_secret_id(ROLE, mount_point=mount, **options)
    data: dict[str, Any] = answer["data"]
    return data


def login(client: hvac.Client, mount: str, role_id: str, secret_id: str) -> Any:
    return client.auth.approle.login(role_id, secret_id, use_token=False, mount_point=mount)


def _create(**options: Any) -> Case:
    def case(client: hvac.Client, mount: str) -> Any:
        role(client, mount, **options)
        return client.auth.approle.read_role(ROLE, mount_point=mount)

    return case


def _read_missing(client: hvac.Client, mount: str) -> Any:
    return client.auth.approle.read_role("missing", mount_point=mount)


def _list(client: hvac.Client, mount: str) -> Any:
    role(client, mount)
    return client.auth.approle.list_roles(mount_point=mount)


def _list_empty(client: hvac.Client, mount: str) -> Any:
    return client.auth.approle.list_roles(mount_point=mount)


def _delete(client: hvac.Client, mount: str) -> Any:
    role(client, mount)
    client.auth.approle.delete_role(ROLE, mount_point=mount)
    return client.auth.approle.read_role(ROLE, mount_point=mount)


def _delete_missing(client: hvac.Client, mount: str) -> Any:
    return client.auth.approle.delete_role("missing", mount_point=mount)


def _role_id(client: hvac.Client, mount: str) -> Any:
    role(client, mount)
    return client.auth.approle.read_role_id(ROLE, mount_point=mount)


def _update_role_id(client: hvac.Client, mount: str) -> Any:
    role(client, mount)
    client.auth.approle.update_role_id(ROLE, "custom-role-id", mount_point=mount)
    return client.auth.approle.read_role_id(ROLE, mount_point=mount)


def _update_role_id_missing(client: hvac.Client, mount: str) -> Any:
    return client.auth.approle.update_role_id("missing", "custom", mount_point=mount)


def _generate(**options: Any) -> Case:
    def case(client: hvac.Client, mount: str) -> Any:
        role(client, mount, secret_id_bound_cidrs=["127.0.0.0/8"])
        return client.auth.approle.generate_secret_id(ROLE, mount_point=mount, **options)

    return case


def _generate_missing_role(client: hvac.Client, mount: str) -> Any:
    return client.auth.approle.generate_secret_id("missing", mount_point=mount)


def _generate_beyond_the_role(field: str, value: Any) -> Case:
    def case(client: hvac.Client, mount: str) -> Any:
        role(client, mount, secret_id_num_uses=2, secret_id_ttl="10m")
        return client.write(f"auth/{mount}/role/{ROLE}/secret-id", **{field: value})

    return case


def _custom(client: hvac.Client, mount: str) -> Any:
    role(client, mount)
    return client.auth.approle.create_custom_secret_id(
        ROLE, "my-own-secret-id", metadata={"team": "ci"}, mount_point=mount
    )


def _custom_twice(client: hvac.Client, mount: str) -> Any:
    role(client, mount)
    client.auth.approle.create_custom_secret_id(ROLE, "my-own-secret-id", mount_point=mount)
    return client.auth.approle.create_custom_secret_id(ROLE, "my-own-secret-id", mount_point=mount)


def _read_secret(client: hvac.Client, mount: str) -> Any:
    role(client, mount)
    made = secret(client, mount, metadata={"a": "b"})
    return client.auth.approle.read_secret_id(ROLE, made["secret_id"], mount_point=mount)


def _read_unknown_secret(client: hvac.Client, mount: str) -> Any:
    role(client, mount)
    return client.auth.approle.read_secret_id(ROLE, "not-a-secret-id", mount_point=mount)


def _read_accessor(client: hvac.Client, mount: str) -> Any:
    role(client, mount)
    made = secret(client, mount)
    accessor = made["secret_id_accessor"]
    return client.auth.approle.read_secret_id_accessor(ROLE, accessor, mount_point=mount)


def _read_unknown_accessor(client: hvac.Client, mount: str) -> Any:
    role(client, mount)
    return client.auth.approle.read_secret_id_accessor(ROLE, "unknown", mount_point=mount)


def _list_accessors(client: hvac.Client, mount: str) -> Any:
    role(client, mount)
    secret(client, mount)
    secret(client, mount)
    return client.auth.approle.list_secret_id_accessors(ROLE, mount_point=mount)


def _list_accessors_missing_role(client: hvac.Client, mount: str) -> Any:
    return client.auth.approle.list_secret_id_accessors("missing", mount_point=mount)


def _destroy(client: hvac.Client, mount: str) -> Any:
    role(client, mount)
    made = secret(client, mount)
    client.auth.approle.destroy_secret_id(ROLE, made["secret_id"], mount_point=mount)
    return client.auth.approle.read_secret_id(ROLE, made["secret_id"], mount_point=mount)


def _destroy_accessor(client: hvac.Client, mount: str) -> Any:
    role_id = role(client, mount)
    made = secret(client, mount)
    accessor = made["secret_id_accessor"]
    client.auth.approle.destroy_secret_id_accessor(ROLE, accessor, mount_point=mount)
    return login(client, mount, role_id, made["secret_id"])


def _destroy_unknown_accessor(client: hvac.Client, mount: str) -> Any:
    role(client, mount)
    return client.auth.approle.destroy_secret_id_accessor(ROLE, "unknown", mount_point=mount)


def _login(client: hvac.Client, mount: str) -> Any:
    role_id = role(client, mount, token_ttl="10m", token_max_ttl="1h")
    return login(client, mount, role_id, secret(client, mount)["secret_id"])


def _login_without_secret_id_binding(client: hvac.Client, mount: str) -> Any:
    role_id = role(client, mount, bind_secret_id=False, secret_id_bound_cidrs=["127.0.0.1/32"])
    return login(client, mount, role_id, "")


def _login_bad_secret_id(client: hvac.Client, mount: str) -> Any:
    role_id = role(client, mount)
    secret(client, mount)
    return login(client, mount, role_id, "not-the-secret-id")


def _login_bad_role_id(client: hvac.Client, mount: str) -> Any:
    role(client, mount)
    return login(client, mount, "not-the-role-id", secret(client, mount)["secret_id"])


def _login_missing_secret_id(client: hvac.Client, mount: str) -> Any:
    role_id = role(client, mount)
    return login(client, mount, role_id, "")


def _login_used_up(client: hvac.Client, mount: str) -> Any:
    role_id = role(client, mount, secret_id_num_uses=2)
    secret_id = secret(client, mount)["secret_id"]
    login(client, mount, role_id, secret_id)
    login(client, mount, role_id, secret_id)
    return login(client, mount, role_id, secret_id)


def _login_destroyed(client: hvac.Client, mount: str) -> Any:
    role_id = role(client, mount)
    secret_id = secret(client, mount)["secret_id"]
    client.auth.approle.destroy_secret_id(ROLE, secret_id, mount_point=mount)
    return login(client, mount, role_id, secret_id)


def _login_outside_the_roles_cidrs(client: hvac.Client, mount: str) -> Any:
    role_id = role(client, mount, secret_id_bound_cidrs=["10.0.0.0/8"])
    return login(client, mount, role_id, secret(client, mount)["secret_id"])


def _login_outside_the_secret_ids_cidrs(client: hvac.Client, mount: str) -> Any:
    role_id = role(client, mount)
    made = secret(client, mount, cidr_list=["10.1.2.0/24"])
    return login(client, mount, role_id, made["secret_id"])


def _login_wrapped(client: hvac.Client, mount: str) -> Any:
    role_id = role(client, mount)
    body = {"role_id": role_id, "secret_id": secret(client, mount)["secret_id"]}
    headers = {"X-Vault-Wrap-TTL": "60"}
    return client.adapter.post(f"/v1/auth/{mount}/login", json=body, headers=headers)


def _login_wrapped_then_unwrapped(client: hvac.Client, mount: str) -> Any:
    wrapped = _login_wrapped(client, mount)
    return client.sys.unwrap(wrapped["wrap_info"]["token"])


def _secret_id_wrapped(client: hvac.Client, mount: str) -> Any:
    role(client, mount)
    return client.auth.approle.generate_secret_id(ROLE, mount_point=mount, wrap_ttl="2m")


def _secret_id_unwrapped_and_used(client: hvac.Client, mount: str) -> Any:
    """AppRole's secret id delivery: the wrapping token is handed on, unwrapped once, and the
    secret id it gave logs in."""
    role_id = role(client, mount)
    wrapped = client.auth.approle.generate_secret_id(ROLE, mount_point=mount, wrap_ttl=120)
    unwrapped = client.sys.unwrap(wrapped["wrap_info"]["token"])
    return login(client, mount, role_id, unwrapped["data"]["secret_id"])


def _secret_id_unwrapped_twice(client: hvac.Client, mount: str) -> Any:
    role(client, mount)
    wrapped = client.auth.approle.generate_secret_id(ROLE, mount_point=mount, wrap_ttl=120)
    client.sys.unwrap(wrapped["wrap_info"]["token"])
    return client.sys.unwrap(wrapped["wrap_info"]["token"])


def _role_without_constraints(client: hvac.Client, mount: str) -> Any:
    return client.auth.approle.create_or_update_approle(
        ROLE, bind_secret_id=False, mount_point=mount
    )


def _role_bad_ttl(client: hvac.Client, mount: str) -> Any:
    return client.auth.approle.create_or_update_approle(ROLE, token_ttl="soon", mount_point=mount)


def _role_ttl_above_max(client: hvac.Client, mount: str) -> Any:
    return client.auth.approle.create_or_update_approle(
        ROLE, token_ttl="2h", token_max_ttl="1h", mount_point=mount
    )


def _token_used(role_blocks: list[str], secret_blocks: list[str] | None = None) -> Case:
    """Log in to a role whose tokens are bound to `role_blocks` (the secret id's own
    `secret_blocks` in their place when given), then use the token from this host: its lookup,
    of which only the blocks are compared (Vault's own lookup has fields this one has not)."""

    def case(client: hvac.Client, mount: str) -> Any:
        role_id = role(client, mount, token_bound_cidrs=role_blocks)
        options = {} if secret_blocks is None else {"token_bound_cidrs": secret_blocks}
        secret_id = secret(client, mount, **options)["secret_id"]
        token = login(client, mount, role_id, secret_id)["auth"]["client_token"]
        found = hvac.Client(url=client.url, token=token).auth.token.lookup_self()["data"]
        return {"bound_cidrs": found.get("bound_cidrs")}

    return case


def _tidy(client: hvac.Client, mount: str) -> Any:
    """hvac has no call for AppRole's tidy: the path, as the bao command writes it."""
    return client.adapter.post(f"/v1/auth/{mount}/tidy/secret-id")


CASES: dict[str, Case] = {
    "create_or_update_approle": _create(),
    "create_or_update_approle with every setting": _create(
        token_ttl="10m",
        token_max_ttl="1h",
        token_num_uses=3,
        secret_id_num_uses=5,
        secret_id_ttl="30m",
        secret_id_bound_cidrs=["127.0.0.1/32", "10.0.0.0/8"],
        token_bound_cidrs=["127.0.0.1/32"],
        token_no_default_policy=True,
        token_explicit_max_ttl="2h",
    ),
    "create_or_update_approle without constraints": _role_without_constraints,
    "create_or_update_approle bad ttl": _role_bad_ttl,
    "create_or_update_approle ttl above max": _role_ttl_above_max,
    "read_role missing": _read_missing,
    "list_roles": _list,
    "list_roles empty": _list_empty,
    "delete_role": _delete,
    "delete_role missing": _delete_missing,
    "read_role_id": _role_id,
    "update_role_id": _update_role_id,
    "update_role_id missing role": _update_role_id_missing,
    "generate_secret_id": _generate(),
    "generate_secret_id with metadata and cidrs": _generate(
        metadata={"team": "ci"}, cidr_list=["127.0.0.1/32"]
    ),
    "generate_secret_id cidrs outside the role's": _generate(cidr_list=["192.168.0.0/16"]),
    "generate_secret_id missing role": _generate_missing_role,
    "generate_secret_id more uses than the role": _generate_beyond_the_role("num_uses", 5),
    "generate_secret_id longer than the role": _generate_beyond_the_role("ttl", "1h"),
    "generate_secret_id wrap_ttl": _secret_id_wrapped,
    "generate_secret_id wrapped, unwrapped and used": _secret_id_unwrapped_and_used,
    "generate_secret_id wrapped, unwrapped twice": _secret_id_unwrapped_twice,
    "create_custom_secret_id": _custom,
    "create_custom_secret_id twice": _custom_twice,
    "read_secret_id": _read_secret,
    "read_secret_id unknown": _read_unknown_secret,
    "read_secret_id_accessor": _read_accessor,
    "read_secret_id_accessor unknown": _read_unknown_accessor,
    "list_secret_id_accessors": _list_accessors,
    "list_secret_id_accessors missing role": _list_accessors_missing_role,
    "destroy_secret_id": _destroy,
    "destroy_secret_id_accessor": _destroy_accessor,
    "destroy_secret_id_accessor unknown": _destroy_unknown_accessor,
    "login": _login,
    "login without secret id binding": _login_without_secret_id_binding,
    "login bad secret id": _login_bad_secret_id,
    "login bad role id": _login_bad_role_id,
    "login missing secret id": _login_missing_secret_id,
    "login used-up secret id": _login_used_up,
    "login destroyed secret id": _login_destroyed,
    "login outside the role's cidrs": _login_outside_the_roles_cidrs,
    "login outside the secret id's cidrs": _login_outside_the_secret_ids_cidrs,
    "login wrapped": _login_wrapped,
    "login wrapped, unwrapped": _login_wrapped_then_unwrapped,
    "login, its token bound to this host, used": _token_used(["127.0.0.1/32"]),
    "tidy secret ids": _tidy,
    "login, its token bound elsewhere, used": _token_used(["10.0.0.0/8"]),
    "login, its token bound elsewhere by the secret id, used": _token_used(
        ["127.0.0.0/8"], ["127.0.0.2/32"]
    ),
    "login, its token bound to this host by the secret id, used": _token_used(
        ["127.0.0.0/8"], ["127.0.0.1/32"]
    ),
}

# Where cipherd answers otherwise on purpose: (OpenBao's outcome, cipherd's, why).
DIFFERENCES: dict[str, tuple[Any, Any, str]] = {
    "create_or_update_approle without constraints": (
        ("raised", "InternalServerError"),
        ("raised", "InvalidRequest"),
        "a refused request is a 4xx here, never a 500",
    ),
    "generate_secret_id cidrs outside the role's": (
        ("raised", "InternalServerError"),
        ("raised", "InvalidRequest"),
        "a refused request is a 4xx here, never a 500",
    ),
    "create_custom_secret_id twice": (
        ("raised", "InternalServerError"),
        ("raised", "InvalidRequest"),
        "a secret id in use is a 4xx here, never a 500",
    ),
    "destroy_secret_id_accessor unknown": (
        ("raised", "InternalServerError"),
        ("raised", "InvalidPath"),
        "an unknown accessor is a 404 here (as its lookup is on both), never a 500",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hvac_approle_case_as_on_openbao(targets: dict[str, tuple[str, str]], case: str) -> None:
    seen = {server: outcome(CASES[case], *targets[server]) for server in SERVERS}
    if case in DIFFERENCES:
        openbao, cipherd, _why = DIFFERENCES[case]
        assert (seen["openbao"], seen["cipherd"]) == (openbao, cipherd)
        return
    assert seen["cipherd"] == seen["openbao"]


def test_the_cases_cover_every_approle_method() -> None:
    """Every hvac AppRole method, and unwrapping, is one of those compared."""
    methods = {
        "create_or_update_approle",
        "list_roles",
        "read_role",
        "delete_role",
        "read_role_id",
        "update_role_id",
        "generate_secret_id",
        "create_custom_secret_id",
        "read_secret_id",
        "destroy_secret_id",
        "list_secret_id_accessors",
        "read_secret_id_accessor",
        "destroy_secret_id_accessor",
        "login",
    }
    source = Path(__file__).read_text()
    assert all(f"approle.{m}(" in source for m in methods)
    assert "sys.unwrap(" in source


def test_an_expired_secret_id_is_refused_at_once(targets: dict[str, tuple[str, str]]) -> None:
    """cipherd refuses a secret id past its TTL at the next login, and lists it no more
    (OpenBao only once its tidy pass, every minute, has removed it: not compared)."""
    client = hvac.Client(url=targets["cipherd"][0], token=ADMIN_TOKEN)
    mount = "approle-expiry-" + secrets.token_hex(4)
    client.sys.enable_auth_method("approle", path=mount)
    try:
        role_id = role(client, mount, secret_id_ttl=2)
        secret_id = secret(client, mount)["secret_id"]
        made = time.monotonic()
        assert login(client, mount, role_id, secret_id)["auth"]["client_token"]

        def refused() -> bool:
            try:
                login(client, mount, role_id, secret_id)
            except exceptions.InvalidRequest as error:
                assert error.errors == ["invalid role or secret ID"]
                return True
            return False

        wait_for(refused, 30, "the secret id expiring")
        assert time.monotonic() - made >= 1.5
        with pytest.raises(exceptions.InvalidPath):
            client.auth.approle.list_secret_id_accessors(ROLE, mount_point=mount)
    finally:
        client.sys.disable_auth_method(path=mount)


def _settings_read_back(client: hvac.Client, mount: str) -> Any:
    """A role written with the `bao` command's strings, then one with a word Vault refuses: the
    settings read back, and how the second write ended."""
    role(
        client,
        mount,
        bind_secret_id="true",
        secret_id_num_uses="3",
        token_num_uses="0x5",
        token_no_default_policy="t",
    )
    data = client.auth.approle.read_role(ROLE, mount_point=mount)["data"]
    fields = ("bind_secret_id", "secret_id_num_uses", "token_num_uses", "token_no_default_policy")
    try:
        client.auth.approle.create_or_update_approle(ROLE, bind_secret_id="yes", mount_point=mount)
        refused = None
    except exceptions.VaultError as error:
        refused = type(error).__name__
    return {field: data[field] for field in fields}, refused


def test_settings_given_as_strings_read_as_on_openbao(
    targets: dict[str, tuple[str, str]],
) -> None:
    seen = on_both(targets, _settings_read_back)
    assert seen["cipherd"] == seen["openbao"]
    assert seen["cipherd"][0]["token_num_uses"] == 5


def _left_after_revoking(prefix: str, force: bool, client: hvac.Client, mount: str) -> list[bool]:
    """A login's token and a child of it, then a revocation of the leases under `prefix`
    (`{mount}`: the mount's path): which of the two are left."""
    maker = 'path "auth/token/*" {\n  capabilities = ["create", "update"]\n}'
    client.sys.create_or_update_acl_policy(name="token-maker", policy=maker)
    role_id = role(client, mount, token_policies=["token-maker"])
    token = login(client, mount, role_id, secret(client, mount)["secret_id"])["auth"]
    child = hvac.Client(url=client.url, token=token["client_token"])
    made = child.auth.token.create(policies=["default"])["auth"]
    revoke = client.sys.revoke_force if force else client.sys.revoke_prefix
    revoke(prefix.format(mount=mount))
    left = []
    for each in (token["client_token"], made["client_token"]):
        try:
            hvac.Client(url=client.url, token=each).auth.token.lookup_self()
            left.append(True)
        except exceptions.Forbidden:
            left.append(False)
    return left


@pytest.mark.parametrize(
    ("prefix", "force", "left"),
    [
        ("auth/{mount}/login", False, [False, False]),
        ("auth/{mount}", False, [False, False]),
        ("auth/{mount}", True, [False, False]),
        ("auth/{mount}-other", False, [True, True]),
    ],
)
def test_a_revocation_by_prefix_as_on_openbao(
    targets: dict[str, tuple[str, str]], prefix: str, force: bool, left: list[bool]
) -> None:
    """hvac's `revoke_prefix` and `revoke_force` (the bao command's `lease revoke -prefix`):
    the tokens of the mount's logins go, with their children; a longer path's name is no
    prefix of them."""
    seen = on_both(
        targets, lambda client, mount: _left_after_revoking(prefix, force, client, mount)
    )
    assert seen == {"openbao": left, "cipherd": left}


FIELDS = (
    "policies",
    "period",
    "token-ttl",
    "token-max-ttl",
    "token-num-uses",
    "local-secret-ids",
    "token-bound-cidrs",
    "secret-id-bound-cidrs",
    "secret-id-ttl",
)


def _one_field_at_a_time(client: hvac.Client, mount: str) -> dict[str, Any]:
    """A role's fields through their own paths (`bao read auth/approle/role/ci/token-ttl`):
    read, set, reset; a missing role, a missing value, a field that is only read, a path that
    names none. (A field set by its older name, `period`, Vault reads back under both names,
    this service under the newer only.)"""
    base = f"/v1/auth/{mount}/role/{ROLE}"
    role(client, mount, token_policies=["a", "b"], token_ttl="10m")

    def status(method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        try:
            answer = client.adapter.request(method, path, json=body)
        except exceptions.VaultError as error:
            return type(error).__name__
        return answer.status_code if isinstance(answer, requests.Response) else answer["data"]

    return {
        "read": {field: status("GET", f"{base}/{field}") for field in FIELDS},
        "set": [
            status("POST", f"{base}/token-ttl", {"token_ttl": "2m"}),
            status("POST", f"{base}/policies", {"token_policies": "x,y"}),
            status("POST", f"{base}/period", {"token_period": "1h"}),
            status("POST", f"{base}/token-num-uses", {"token_num_uses": "3"}),
        ],
        "after": {field: status("GET", f"{base}/{field}") for field in FIELDS[:5]},
        "reset": [status("DELETE", f"{base}/{field}") for field in ("token-ttl", "period")],
        "after reset": [status("GET", f"{base}/{field}") for field in ("token-ttl", "period")],
        "refused": [
            status("POST", f"{base}/token-ttl", {}),
            status("POST", f"/v1/auth/{mount}/role/missing/token-ttl", {"token_ttl": 60}),
            status("GET", f"/v1/auth/{mount}/role/missing/token-ttl"),
            status("DELETE", f"/v1/auth/{mount}/role/missing/token-ttl"),
            status("POST", f"{base}/local-secret-ids", {"local_secret_ids": True}),
            status("GET", f"{base}/nonsense"),
        ],
    }


def test_a_roles_fields_one_at_a_time_as_on_openbao(targets: dict[str, tuple[str, str]]) -> None:
    seen = on_both(targets, _one_field_at_a_time)
    assert seen["cipherd"] == seen["openbao"]
    assert seen["cipherd"]["after"]["token-ttl"] == {"token_ttl": 120}
