"""JWT logins' checks (app.ops.jwt_auth, app.ops.jwks) against a real issuer served on
127.0.0.1: its keys made by pyca, its tokens signed by joserfc."""

import base64
import json
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import OctKey

from app.ops.errors import Problem
from app.ops.jwks import IssuerKeys, IssuerUnreachable
from app.ops.jwt_auth import MAX_JWT_BYTES, config_of, role_of, verify
from tests.e2e.issuer import Issuer, kubernetes_claims, new_key, public_pem, running_issuer


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with running_issuer() as running:
        yield running


@pytest.fixture
def keys() -> IssuerKeys:
    return IssuerKeys(min_refetch_seconds=0.5)


def jwks_config(issuer: Issuer, keys: IssuerKeys, **extra: Any) -> dict[str, Any]:
    return config_of({"jwks_url": issuer.jwks_url, **extra}, keys)


ROLE = role_of(
    {},
    {
        "role_type": "jwt",
        "user_claim": "sub",
        "bound_audiences": ["cipherd"],
        "bound_claims": {"repository": "acme/*", "ref": ["refs/heads/main", "refs/tags/*"]},
        "bound_claims_type": "glob",
        "claim_mappings": {"repository": "repo"},
    },
)


def good(issuer: Issuer, **extra: Any) -> dict[str, Any]:
    claims = {"sub": "repo:acme/app", "aud": "cipherd", "repository": "acme/app"}
    return issuer.claims(**{**claims, "ref": "refs/heads/main", **extra})


def refusal(call: Any) -> str:
    with pytest.raises(Problem) as caught:
        call()
    assert caught.value.status == 400 and caught.value.slug == "login-refused"
    return caught.value.detail


def test_a_good_token_gives_its_user_and_metadata(issuer: Issuer, keys: IssuerKeys) -> None:
    config = jwks_config(issuer, keys, bound_issuer=issuer.url)
    verified = verify(issuer.sign(good(issuer)), config, ROLE, keys, time.time())
    assert verified.user == "repo:acme/app"
    assert verified.metadata == {"repo": "acme/app"}


def test_white_space_around_and_within_a_token_is_dropped(issuer: Issuer, keys: IssuerKeys) -> None:
    """As Vault's parser drops it: `bao write auth/jwt/login jwt=@token` sends the file's last
    line break, and a token pasted across lines holds others."""
    config = jwks_config(issuer, keys)
    token = issuer.sign(good(issuer))
    header, payload, signature = token.split(".")
    for sent in (
        token + "\n",
        "\n " + token + "\r\n",
        f"{header}.\n{payload[:10]}\n{payload[10:]}.{signature}\t",
    ):
        assert verify(sent, config, ROLE, keys, time.time()).user == "repo:acme/app"


def test_the_four_refusals(issuer: Issuer, keys: IssuerKeys) -> None:
    config = jwks_config(issuer, keys)
    now = time.time()
    wrong_audience = issuer.sign(good(issuer, aud="someone-else"))
    assert "aud" in refusal(lambda: verify(wrong_audience, config, ROLE, keys, now))
    expired = issuer.sign(good(issuer, exp=int(now) - 3600, iat=int(now) - 4000))
    assert "expired" in refusal(lambda: verify(expired, config, ROLE, keys, now))
    stranger = new_key()
    forged = issuer.sign(good(issuer), key=stranger)
    assert "signature" in refusal(lambda: verify(forged, config, ROLE, keys, now))
    # The stranger's key under the issuer's kid: still not the issuer's signature.
    token = jwt.encode({"alg": "RS256", "kid": issuer.keys[0].kid}, good(issuer), stranger)
    assert "signature" in refusal(lambda: verify(token, config, ROLE, keys, now))
    outside = issuer.sign(good(issuer, repository="evil/app"))
    assert "repository" in refusal(lambda: verify(outside, config, ROLE, keys, now))
    branch = issuer.sign(good(issuer, ref="refs/heads/feature"))
    assert "ref" in refusal(lambda: verify(branch, config, ROLE, keys, now))


def test_times_with_leeway(issuer: Issuer, keys: IssuerKeys) -> None:
    config = jwks_config(issuer, keys)
    now = time.time()
    # Expired 50 s ago: inside the default leeway (60 s of skew, as OpenBao's), refused
    # without it; 65 s ago, refused as by OpenBao.
    late = issuer.sign(good(issuer, exp=int(now) - 50))
    assert verify(late, config, ROLE, keys, now).user
    strict = role_of(ROLE, {"clock_skew_leeway": -1, "expiration_leeway": -1})
    assert "expired" in refusal(lambda: verify(late, config, strict, keys, now))
    later = issuer.sign(good(issuer, exp=int(now) - 65))
    assert "expired" in refusal(lambda: verify(later, config, ROLE, keys, now))
    wider = role_of(ROLE, {"expiration_leeway": 150})
    assert verify(issuer.sign(good(issuer, exp=int(now) - 200)), config, wider, keys, now).user
    early = issuer.sign(good(issuer, nbf=int(now) + 50))
    assert verify(early, config, ROLE, keys, now).user
    earlier = issuer.sign(good(issuer, nbf=int(now) + 65))
    assert "nbf" in refusal(lambda: verify(earlier, config, ROLE, keys, now))
    assert "nbf" in refusal(
        lambda: verify(early, config, strict | {"not_before_leeway": -1}, keys, now)
    )
    future = issuer.sign(good(issuer, iat=int(now) + 120))
    assert "iat" in refusal(lambda: verify(future, config, ROLE, keys, now))
    endless = good(issuer)
    del endless["exp"]
    assert "exp" in refusal(lambda: verify(issuer.sign(endless), config, ROLE, keys, now))


def test_issuer_subject_and_unsigned_or_shared_secret_tokens(
    issuer: Issuer, keys: IssuerKeys
) -> None:
    config = jwks_config(issuer, keys, bound_issuer="https://elsewhere.example")
    now = time.time()
    assert "iss" in refusal(lambda: verify(issuer.sign(good(issuer)), config, ROLE, keys, now))
    config = jwks_config(issuer, keys)
    bound = role_of(ROLE, {"bound_subject": "repo:acme/other"})
    assert "sub" in refusal(lambda: verify(issuer.sign(good(issuer)), config, bound, keys, now))

    def b64(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    unsigned = f"{b64({'alg': 'none'})}.{b64(good(issuer))}."
    assert "algorithm" in refusal(lambda: verify(unsigned, config, ROLE, keys, now))
    secret = OctKey.import_key(b"k" * 32)
    hmac_token = jwt.encode({"alg": "HS256"}, good(issuer), secret)
    assert "algorithm" in refusal(lambda: verify(hmac_token, config, ROLE, keys, now))
    only_es = jwks_config(issuer, keys, jwt_supported_algs=["ES256"])
    assert "algorithm" in refusal(
        lambda: verify(issuer.sign(good(issuer)), only_es, ROLE, keys, now)
    )


def test_a_token_over_the_size_bound_is_refused_before_anything(
    issuer: Issuer, keys: IssuerKeys
) -> None:
    config = jwks_config(issuer, keys)
    requests = issuer.jwks_requests
    huge = issuer.sign(good(issuer, padding="x" * MAX_JWT_BYTES))
    assert "bytes" in refusal(lambda: verify(huge, config, ROLE, keys, time.time()))
    assert "compact" in refusal(lambda: verify("a.b", config, ROLE, keys, time.time()))
    assert issuer.jwks_requests == requests


def test_a_kubernetes_service_account_token(issuer: Issuer, keys: IssuerKeys) -> None:
    config = jwks_config(issuer, keys)
    role = role_of(
        {},
        {
            "role_type": "jwt",
            "user_claim": "sub",
            "bound_audiences": "https://cipherd.example",
            "bound_claims": {"/kubernetes.io/namespace": "payments"},
            "claim_mappings": {"/kubernetes.io/serviceaccount/name": "service_account"},
        },
    )
    token = issuer.sign(kubernetes_claims(issuer, "payments", "api", "https://cipherd.example"))
    verified = verify(token, config, role, keys, time.time())
    assert verified.user == "system:serviceaccount:payments:api"
    assert verified.metadata == {"service_account": "api"}
    other = issuer.sign(kubernetes_claims(issuer, "default", "api", "https://cipherd.example"))
    assert "kubernetes.io" in refusal(lambda: verify(other, config, role, keys, time.time()))


def test_a_pointer_indexes_a_list_with_ascii_digits_only(issuer: Issuer, keys: IssuerKeys) -> None:
    """RFC 6901: an array index is ASCII digits with no leading zero. "01", "²" and "１" (which
    Python calls digits) and an index of 5,000 digits (more than `int` reads) name no element,
    so the claim is missing, a refusal; "1" names the second."""
    config = jwks_config(issuer, keys)
    token = issuer.sign(good(issuer, groups=["ops", "payments"]))
    pointers = ("/groups/1", "/groups/01", "/groups/²", "/groups/１", "/groups/" + "9" * 5000)
    for pointer, user in zip(pointers, ("payments", None, None, None, None), strict=True):
        role = role_of(
            {}, {"role_type": "jwt", "user_claim": pointer, "bound_audiences": "cipherd"}
        )
        if user is None:
            assert pointer[:20] in refusal(partial(verify, token, config, role, keys, time.time()))
        else:
            assert verify(token, config, role, keys, time.time()).user == user


def test_rotation_is_seen_and_unknown_kids_are_fetched_within_bounds(
    issuer: Issuer, keys: IssuerKeys
) -> None:
    config = jwks_config(issuer, keys)  # one fetch, the configuration's check
    assert verify(issuer.sign(good(issuer)), config, ROLE, keys, time.time()).user
    assert issuer.jwks_requests == 1
    issuer.rotate("EC")
    issuer.retire()
    rotated = issuer.sign(good(issuer))
    # The last fetch was less than the interval ago, or is not: either way, within the
    # interval and a little more, the new key is seen, and a fetch was made for it.
    deadline = time.monotonic() + 5
    while True:
        try:
            verify(rotated, config, ROLE, keys, time.time())
            break
        except Problem:
            assert time.monotonic() < deadline, "the rotated key was not seen within 5 s"
            time.sleep(0.05)
    fetched = issuer.jwks_requests
    assert fetched >= 2
    # A stream of tokens naming kids the issuer never had: at most one fetch per interval.
    stranger = new_key()
    started = time.monotonic()
    for _ in range(200):
        refusal(
            lambda: verify(issuer.sign(good(issuer), key=stranger), config, ROLE, keys, time.time())
        )
    elapsed = time.monotonic() - started
    assert issuer.jwks_requests - fetched <= 1 + elapsed / keys.min_refetch_seconds


def test_configurations(issuer: Issuer, keys: IssuerKeys) -> None:
    discovered = config_of({"oidc_discovery_url": issuer.url}, keys)
    token = issuer.sign(good(issuer))
    assert verify(token, discovered, ROLE, keys, time.time()).user
    other_issuer = issuer.sign(good(issuer, iss="https://elsewhere.example"))
    assert "iss" in refusal(lambda: verify(other_issuer, discovered, ROLE, keys, time.time()))
    pems = config_of({"jwt_validation_pubkeys": [public_pem(issuer.keys[0])]}, keys)
    assert verify(token, pems, ROLE, keys, time.time()).user
    for bad, message in (
        ({}, "exactly one"),
        ({"jwks_url": issuer.jwks_url, "oidc_discovery_url": issuer.url}, "exactly one"),
        ({"jwt_validation_pubkeys": ["nope"]}, "public key"),
        ({"jwks_url": issuer.jwks_url, "jwt_supported_algs": ["HS256"]}, "algorithm"),
        ({"jwks_url": issuer.url + "/missing"}, "HTTP 404"),
        ({"oidc_discovery_url": issuer.url + "/elsewhere"}, "HTTP 404"),
    ):
        with pytest.raises(Problem) as caught:
            config_of(bad, keys)
        assert caught.value.status == 422 and message in caught.value.detail


def test_an_unreachable_issuer_is_a_clear_refusal() -> None:
    keys = IssuerKeys(min_refetch_seconds=0)
    with running_issuer() as gone:
        config = jwks_config(gone, keys)
        token = gone.sign(good(gone), key=new_key())  # a kid the cached keys do not hold
    with pytest.raises(IssuerUnreachable) as caught:
        verify(token, config, ROLE, keys, time.time())
    assert caught.value.status == 400 and gone.jwks_url in caught.value.detail


def test_long_subjects_stay_apart_and_control_characters_are_refused(
    issuer: Issuer, keys: IssuerKeys
) -> None:
    """The identity names a user claim whole up to 256 characters; two longer ones that share
    those (CI subjects with long branch names) were one identity, and now each keeps a digest of
    itself. A claim with a control character (a NUL) is refused, as no token keeps it."""
    config = jwks_config(issuer, keys)
    now = time.time()
    exact = "repo:acme/" + "a" * 246
    assert verify(issuer.sign(good(issuer, sub=exact)), config, ROLE, keys, now).user == exact
    users = {
        verify(issuer.sign(good(issuer, sub=exact + ending)), config, ROLE, keys, now).user
        for ending in ("x", "y")
    }
    assert len(users) == 2
    assert all(len(user) == 256 and user.startswith(exact[:191]) for user in users)
    for claims in ({"sub": "repo:acme/a\x00b"}, {"repository": "acme/app\n"}):
        token = issuer.sign(good(issuer, **claims))
        assert "control characters" in refusal(lambda t=token: verify(t, config, ROLE, keys, now))


def test_a_token_of_an_algorithm_not_taken_is_named_so(issuer: Issuer, keys: IssuerKeys) -> None:
    """A token of an algorithm joserfc takes no signature of (ML-DSA-44's are 2,420 bytes,
    past joserfc's 1,024: RFC 9964) is refused for its algorithm; it was 'not a compact JWS'."""

    def b64url(value: Any) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    token = ".".join((b64url({"alg": "ML-DSA-44", "kid": "k"}), b64url(good(issuer)), "A" * 3227))
    detail = refusal(lambda: verify(token, jwks_config(issuer, keys), ROLE, keys, time.time()))
    assert "algorithm 'ML-DSA-44' is not one of" in detail
    assert "not a compact JWS" in refusal(
        lambda: verify("bm90IGpzb24.e30.", jwks_config(issuer, keys), ROLE, keys, time.time())
    )


def test_roles_are_checked() -> None:
    for changes, message in (
        (
            {
                "role_type": "jwt",
                "user_claim": "sub",
                "bound_audiences": ["a"],
                "claim_mappings": {"team": "role"},
            },
            "reserved",
        ),
        ({"role_type": "jwt", "user_claim": "sub"}, "bound constraint"),
        ({"role_type": "jwt", "bound_audiences": ["a"]}, "user claim"),
        ({"role_type": "oidc", "user_claim": "sub", "bound_audiences": ["a"]}, "oidc"),
        ({"role_type": "x", "user_claim": "sub", "bound_audiences": ["a"]}, "role_type"),
        (
            {
                "role_type": "jwt",
                "user_claim": "sub",
                "bound_claims": {"a": "b"},
                "bound_claims_type": "regex",
            },
            "bound_claims_type",
        ),
        (
            {
                "role_type": "jwt",
                "user_claim": "sub",
                "bound_audiences": ["a"],
                "clock_skew_leeway": -5,
            },
            "clock_skew_leeway",
        ),
        (
            {
                "role_type": "jwt",
                "user_claim": "sub",
                "bound_audiences": ["a"],
                "token_ttl": 60,
                "token_max_ttl": 30,
            },
            "token_max_ttl",
        ),
    ):
        with pytest.raises(Problem) as caught:
            role_of({}, changes)
        assert caught.value.status == 422 and message in caught.value.detail
