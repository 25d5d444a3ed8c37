"""hvac's JWT auth methods against cipherd and against a real OpenBao, compared, with one test
issuer (tests/e2e/issuer.py) both servers fetch keys from.

Each case is a function of an hvac client, a fresh JWT mount and the issuer, as hvac's own
integration tests (`tests/integration_tests/api/auth_methods/test_jwt.py`) write them (configure,
read_config, create_role, read_role, list_roles, delete_role, jwt_login), with the error cases
they leave out added: configurations refused, roles refused, and the logins a token must fail.
Every case runs on both servers; its outcome is the answer's shape (every field's name and JSON
type, recursively) or the hvac exception it raised, and the two must be equal, but where
`DIFFERENCES` says how and why cipherd answers otherwise.
"""

import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hvac
import pytest
import requests
from hvac import exceptions

from tests.e2e.issuer import Issuer, kubernetes_claims, new_key, public_pem, running_issuer
from tests.e2e.openbao import running_openbao
from tests.e2e.server import running

pytestmark = pytest.mark.e2e

ADMIN_TOKEN = "jwt-admin-" + secrets.token_urlsafe(16)
SERVERS = ("openbao", "cipherd")
AUDIENCE = "https://cipherd.example"


@dataclass(frozen=True)
class Target:
    url: str
    token: str


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as running_one:
        yield running_one


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    work = tmp_path_factory.mktemp("jwt")
    env = {"CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN}
    with running(work / "cipherd", env=env) as cipherd, running_openbao(work) as openbao:
        yield {
            "openbao": Target(openbao.url, openbao.token),
            "cipherd": Target(cipherd.url, ADMIN_TOKEN),
        }


def shape(value: Any) -> Any:
    """What a JSON answer is made of: the names and types of its fields, not their values."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return type(value).__name__


Case = Callable[[hvac.Client, str, Issuer], Any]


def outcome(case: Case, target: Target, issuer: Issuer) -> Any:
    """The case's outcome on one server, in a JWT mount of its own (enabled, then disabled)."""
    client = hvac.Client(url=target.url, token=target.token)
    mount = "jwt-test-" + secrets.token_hex(4)
    client.sys.enable_auth_method(method_type="jwt", path=mount)
    try:
        answer = case(client, mount, issuer)
    except exceptions.VaultError as error:
        return ("raised", type(error).__name__)
    finally:
        client.token = target.token
        client.sys.disable_auth_method(path=mount)
    if isinstance(answer, requests.Response):
        return ("status", answer.status_code)
    return ("answer", shape(answer))


def configured(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return client.auth.jwt.configure(jwks_url=issuer.jwks_url, bound_issuer=issuer.url, path=mount)


def role(client: hvac.Client, mount: str, name: str = "hvac", **options: Any) -> Any:
    settings: dict[str, Any] = {"user_claim": "sub", "bound_audiences": [AUDIENCE]}
    return client.auth.jwt.create_role(
        name=name, allowed_redirect_uris=[], path=mount, **{**settings, **options}
    )


def good_claims(issuer: Issuer, **extra: Any) -> dict[str, Any]:
    return issuer.claims(**{"sub": "repo:acme/app", "aud": AUDIENCE, **extra})


def _configure(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return configured(client, mount, issuer)


def _configure_discovery(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return client.auth.jwt.configure(oidc_discovery_url=issuer.url, path=mount)


def _configure_pubkeys(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return client.auth.jwt.configure(
        jwt_validation_pubkeys=[public_pem(issuer.keys[-1])],
        jwt_supported_algs=["RS256", "ES256"],
        path=mount,
    )


def _configure_nothing(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return client.auth.jwt.configure(bound_issuer=issuer.url, path=mount)


def _configure_two_sources(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return client.auth.jwt.configure(
        jwks_url=issuer.jwks_url, oidc_discovery_url=issuer.url, path=mount
    )


def _configure_bad_pem(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return client.auth.jwt.configure(jwt_validation_pubkeys=["not a key"], path=mount)


def _configure_unreachable(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return client.auth.jwt.configure(jwks_url=issuer.url + "/missing", path=mount)


def _configure_bad_alg(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return client.auth.jwt.configure(
        jwks_url=issuer.jwks_url, jwt_supported_algs=["XX1"], path=mount
    )


def _read_config(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    configured(client, mount, issuer)
    return client.auth.jwt.read_config(path=mount)


def _read_config_unset(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return client.auth.jwt.read_config(path=mount)


def _create_role(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return role(client, mount, user_claim="https://vault/user")


def _create_role_every_bound(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return role(
        client,
        mount,
        bound_subject="repo:acme/app",
        bound_claims={"repository": ["acme/*", "other/app"]},
        bound_claims_type="glob",
        claim_mappings={"repository": "repo"},
        clock_skew_leeway=30,
        expiration_leeway=-1,
        not_before_leeway=10,
        token_policies=["reader"],
        token_ttl="1h",
        token_max_ttl=7200,
    )


def _create_role_unbound(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return role(client, mount, bound_audiences=None)


def _create_role_no_user_claim(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return role(client, mount, user_claim="")


def _create_role_bad_type(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return role(client, mount, role_type="saml")


def _create_role_bad_claims_type(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return role(client, mount, bound_claims={"a": "b"}, bound_claims_type="regex")


def _create_role_ttl_over_max(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return role(client, mount, token_ttl=7200, token_max_ttl=60)


def _create_oidc_role(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return client.auth.jwt.create_role(
        name="browser",
        role_type="oidc",
        user_claim="sub",
        allowed_redirect_uris=["https://cipherd.example/callback"],
        path=mount,
    )


def _read_role(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    _create_role_every_bound(client, mount, issuer)
    return client.auth.jwt.read_role(name="hvac", path=mount)


def _read_role_missing(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return client.auth.jwt.read_role(name="missing", path=mount)


def _update_role(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    """A second write changes the fields it gives and keeps the others."""
    role(client, mount, bound_subject="repo:acme/app")
    client.auth.jwt.create_role(
        name="hvac", user_claim="sub", allowed_redirect_uris=[], token_ttl=60, path=mount
    )
    return client.auth.jwt.read_role(name="hvac", path=mount)["data"]["bound_subject"]


def _list_roles(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    role(client, mount, name="one")
    role(client, mount, name="two")
    return client.auth.jwt.list_roles(path=mount)


def _list_roles_empty(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return client.auth.jwt.list_roles(path=mount)


def _delete_role(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    role(client, mount)
    return client.auth.jwt.delete_role(name="hvac", path=mount)


def _delete_role_missing(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    return client.auth.jwt.delete_role(name="missing", path=mount)


def _read_deleted_role(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    role(client, mount)
    client.auth.jwt.delete_role(name="hvac", path=mount)
    return client.auth.jwt.read_role(name="hvac", path=mount)


def _login_with(claims: Callable[[Issuer], dict[str, Any]], **options: Any) -> Case:
    def case(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
        configured(client, mount, issuer)
        role(client, mount, **options)
        token = issuer.sign(claims(issuer))
        return client.auth.jwt.jwt_login(role="hvac", jwt=token, use_token=False, path=mount)

    return case


def _login_with_another_key(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    configured(client, mount, issuer)
    role(client, mount)
    forged = issuer.sign(good_claims(issuer), key=new_key())
    return client.auth.jwt.jwt_login(role="hvac", jwt=forged, use_token=False, path=mount)


def _login_missing_role(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    configured(client, mount, issuer)
    token = issuer.sign(good_claims(issuer))
    return client.auth.jwt.jwt_login(role="missing", jwt=token, use_token=False, path=mount)


def _login_not_a_token(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    configured(client, mount, issuer)
    role(client, mount)
    return client.auth.jwt.jwt_login(role="hvac", jwt="a.b.c", use_token=False, path=mount)


def _login_kubernetes(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    configured(client, mount, issuer)
    client.auth.jwt.create_role(
        name="hvac",
        user_claim="sub",
        allowed_redirect_uris=[],
        bound_audiences=[AUDIENCE],
        bound_claims={"/kubernetes.io/namespace": "payments"},
        claim_mappings={"/kubernetes.io/serviceaccount/name": "service_account"},
        path=mount,
    )
    token = issuer.sign(kubernetes_claims(issuer, "payments", "api", AUDIENCE))
    return client.auth.jwt.jwt_login(role="hvac", jwt=token, use_token=False, path=mount)


def _login_kubernetes_other_namespace(client: hvac.Client, mount: str, issuer: Issuer) -> Any:
    configured(client, mount, issuer)
    client.auth.jwt.create_role(
        name="hvac",
        user_claim="sub",
        allowed_redirect_uris=[],
        bound_audiences=[AUDIENCE],
        bound_claims={"/kubernetes.io/namespace": "payments"},
        path=mount,
    )
    token = issuer.sign(kubernetes_claims(issuer, "default", "api", AUDIENCE))
    return client.auth.jwt.jwt_login(role="hvac", jwt=token, use_token=False, path=mount)


def _expired(issuer: Issuer) -> dict[str, Any]:
    now = int(time.time())
    return good_claims(issuer, iat=now - 7200, nbf=now - 7200, exp=now - 3600)


def _expired_by(seconds: int) -> Callable[[Issuer], dict[str, Any]]:
    def claims(issuer: Issuer) -> dict[str, Any]:
        now = int(time.time())
        return good_claims(issuer, iat=now - 3600, nbf=now - 3600, exp=now - seconds)

    return claims


def _valid_from(seconds: int) -> Callable[[Issuer], dict[str, Any]]:
    def claims(issuer: Issuer) -> dict[str, Any]:
        now = int(time.time())
        return good_claims(issuer, iat=now, nbf=now + seconds, exp=now + 3600)

    return claims


def _in_the_future(issuer: Issuer) -> dict[str, Any]:
    now = int(time.time())
    return good_claims(issuer, iat=now + 3600, nbf=now + 3600, exp=now + 7200)


CASES: dict[str, Case] = {
    "configure jwks_url": _configure,
    "configure oidc_discovery_url": _configure_discovery,
    "configure jwt_validation_pubkeys": _configure_pubkeys,
    "configure without a key source": _configure_nothing,
    "configure two key sources": _configure_two_sources,
    "configure a bad PEM key": _configure_bad_pem,
    "configure an unreachable JWKS": _configure_unreachable,
    "configure an unknown algorithm": _configure_bad_alg,
    "read_config": _read_config,
    "read_config unconfigured": _read_config_unset,
    "create_role": _create_role,
    "create_role every bound": _create_role_every_bound,
    "create_role without a bound": _create_role_unbound,
    "create_role without a user claim": _create_role_no_user_claim,
    "create_role unknown role_type": _create_role_bad_type,
    "create_role unknown bound_claims_type": _create_role_bad_claims_type,
    "create_role token_ttl over token_max_ttl": _create_role_ttl_over_max,
    "create_role oidc": _create_oidc_role,
    "read_role": _read_role,
    "read_role missing": _read_role_missing,
    "create_role again keeps what it does not give": _update_role,
    "list_roles": _list_roles,
    "list_roles empty": _list_roles_empty,
    "delete_role": _delete_role,
    "delete_role missing": _delete_role_missing,
    "read_role deleted": _read_deleted_role,
    "jwt_login": _login_with(good_claims),
    "jwt_login glob bound claims": _login_with(
        lambda issuer: good_claims(issuer, repository="acme/app"),
        bound_claims={"repository": "acme/*"},
        bound_claims_type="glob",
    ),
    "jwt_login wrong audience": _login_with(
        lambda issuer: good_claims(issuer, aud="https://elsewhere.example")
    ),
    "jwt_login expired": _login_with(_expired),
    "jwt_login not yet valid": _login_with(_in_the_future),
    # The default leeways' edges: 60 s of skew, nothing more.
    "jwt_login expired 40 s ago": _login_with(_expired_by(40)),
    "jwt_login expired 90 s ago": _login_with(_expired_by(90)),
    "jwt_login expired 180 s ago": _login_with(_expired_by(180)),
    "jwt_login valid in 40 s": _login_with(_valid_from(40)),
    "jwt_login valid in 90 s": _login_with(_valid_from(90)),
    "jwt_login signed by another key": _login_with_another_key,
    "jwt_login claim outside bound_claims": _login_with(
        lambda issuer: good_claims(issuer, repository="evil/app"),
        bound_claims={"repository": "acme/*"},
        bound_claims_type="glob",
    ),
    "jwt_login bound_claims string type is exact": _login_with(
        lambda issuer: good_claims(issuer, repository="acme/app"),
        bound_claims={"repository": "acme/*"},
    ),
    "jwt_login wrong subject": _login_with(good_claims, bound_subject="repo:acme/other"),
    "jwt_login missing role": _login_missing_role,
    "jwt_login not a token": _login_not_a_token,
    "jwt_login kubernetes service account": _login_kubernetes,
    "jwt_login kubernetes other namespace": _login_kubernetes_other_namespace,
}

# Where cipherd answers otherwise on purpose: (OpenBao's outcome, cipherd's, why).
DIFFERENCES: dict[str, tuple[Any, Any, str]] = {
    "create_role oidc": (
        ("status", 204),
        ("raised", "InvalidRequest"),
        "the OIDC browser flow is not served: a role that could never log in is refused",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hvac_jwt_case_as_on_openbao(targets: dict[str, Target], issuer: Issuer, case: str) -> None:
    seen = {server: outcome(CASES[case], targets[server], issuer) for server in SERVERS}
    if case in DIFFERENCES:
        openbao, cipherd, _why = DIFFERENCES[case]
        assert (seen["openbao"], seen["cipherd"]) == (openbao, cipherd)
        return
    assert seen["cipherd"] == seen["openbao"]


def test_the_cases_cover_every_jwt_method() -> None:
    """Every hvac JWT method of the issue is called by a case."""
    source = Path(__file__).read_text()
    for method in (
        "configure",
        "read_config",
        "create_role",
        "read_role",
        "list_roles",
        "delete_role",
        "jwt_login",
    ):
        assert f"client.auth.jwt.{method}(" in source, method
