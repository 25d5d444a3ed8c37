"""JWTs signed by the service verify against the key's JWKS as a relying party checks them:
joserfc for the JOSE algorithms it knows, pyca/cryptography for ML-DSA (RFC 9964's AKP keys);
before and after a rotation, with the caller's header, and the key set's scope and refusals."""

import base64
import json
from typing import Any

import jwt as pyjwt
import pytest
from cryptography.hazmat.primitives.asymmetric import mldsa
from fastapi import FastAPI
from fastapi.testclient import TestClient
from joserfc import jwt
from joserfc.errors import BadSignatureError, InvalidKeyIdError
from joserfc.jwk import KeySet

# The service names Ed25519 signatures EdDSA, as RFC 8037 does and verifiers expect; joserfc
# warns that RFC 9864 deprecates the name in favour of the fully specified Ed25519.
pytestmark = pytest.mark.filterwarnings("ignore:EdDSA is deprecated via RFC 9864")

ALGORITHMS = {
    "ecdsa-secp256k1": "ES256K",
    "ed25519": "EdDSA",
    "ecdsa-p256": "ES256",
    "ecdsa-p384": "ES384",
    "ecdsa-p521": "ES512",
    "rsa-2048": "PS256",
    "ml-dsa-44": "ML-DSA-44",
    "ml-dsa-65": "ML-DSA-65",
    "ml-dsa-87": "ML-DSA-87",
}
ML_DSA_KEYS = {
    "ML-DSA-44": mldsa.MLDSA44PublicKey,
    "ML-DSA-65": mldsa.MLDSA65PublicKey,
    "ML-DSA-87": mldsa.MLDSA87PublicKey,
}
CLAIMS = {"sub": "alice", "aud": "orders", "iat": 1767225600, "scope": ["read", "write"]}


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign_jwt(client: TestClient, name: str, **body: Any) -> str:
    answer = client.post(f"/v1/jwt/{name}/sign", json={"claims": CLAIMS, **body})
    assert answer.status_code == 200, answer.text
    token: str = answer.json()["jwt"]
    return token


def jwks(client: TestClient, name: str) -> dict[str, Any]:
    answer = client.get(f"/v1/keys/{name}/jwks")
    assert answer.status_code == 200, answer.text
    document: dict[str, Any] = answer.json()
    return document


def verified(token: str, key_set: dict[str, Any], alg: str) -> dict[str, Any]:
    """The token's claims once its signature verifies with the key its kid names in the set
    (BadSignatureError, or for ML-DSA pyca's InvalidSignature, otherwise)."""
    if alg in ML_DSA_KEYS:
        header_part, payload_part, signature_part = token.split(".")
        kid = json.loads(unb64url(header_part))["kid"]
        (found,) = [k for k in key_set["keys"] if k["kid"] == kid]
        assert found["kty"] == "AKP" and found["alg"] == alg
        public = ML_DSA_KEYS[alg].from_public_bytes(unb64url(found["pub"]))
        public.verify(unb64url(signature_part), f"{header_part}.{payload_part}".encode())
        claims: dict[str, Any] = json.loads(unb64url(payload_part))
        return claims
    decoded = jwt.decode(token, KeySet.import_key_set(key_set), algorithms=[alg])
    return dict(decoded.claims)


def header(token: str) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(unb64url(token.split(".")[0]))
    return decoded


@pytest.mark.parametrize(("key_type", "alg"), list(ALGORITHMS.items()))
def test_a_jwt_verifies_against_the_jwks_before_and_after_a_rotation(
    client: TestClient, key_type: str, alg: str
) -> None:
    client.post("/v1/keys", json={"name": "issuer", "type": key_type})
    first = sign_jwt(client, "issuer")
    assert header(first) == {"typ": "JWT", "alg": alg, "kid": "issuer:v1"}
    assert verified(first, jwks(client, "issuer"), alg) == CLAIMS
    (listed,) = jwks(client, "issuer")["keys"]
    assert listed["kid"] == "issuer:v1" and listed["use"] == "sig"
    if not key_type.startswith("rsa-"):
        assert listed["alg"] == alg
    # The JWK of /public?format=jwk is the set's entry for that version.
    public = client.get("/v1/keys/issuer/public", params={"format": "jwk"}).json()
    assert public["public_key"] == listed
    client.post("/v1/keys/issuer/rotate")
    second = sign_jwt(client, "issuer")
    assert header(second)["kid"] == "issuer:v2"
    after = jwks(client, "issuer")
    assert [k["kid"] for k in after["keys"]] == ["issuer:v2", "issuer:v1"]
    assert verified(first, after, alg) == verified(second, after, alg) == CLAIMS
    # A version retired from verification leaves the set, and its tokens with it.
    client.patch("/v1/keys/issuer", json={"min_decryption_version": 2})
    retired = jwks(client, "issuer")
    assert [k["kid"] for k in retired["keys"]] == ["issuer:v2"]
    assert verified(second, retired, alg) == CLAIMS
    with pytest.raises((InvalidKeyIdError, ValueError)):  # no key of that kid in the set
        verified(first, retired, alg)


@pytest.mark.parametrize("alg", ["PS256", "PS384", "PS512", "RS256", "RS384", "RS512"])
def test_rsa_keys_sign_every_rsa_algorithm(client: TestClient, alg: str) -> None:
    client.post("/v1/keys", json={"name": "r", "type": "rsa-3072"})
    token = sign_jwt(client, "r", alg=alg)
    assert header(token)["alg"] == alg
    key_set = jwks(client, "r")
    assert "alg" not in key_set["keys"][0] and key_set["keys"][0]["kty"] == "RSA"
    assert verified(token, key_set, alg) == CLAIMS
    other = "RS256" if alg.startswith("PS") else "PS256"
    forged = token.rsplit(".", 1)[0] + "." + sign_jwt(client, "r", alg=other).rsplit(".", 1)[1]
    with pytest.raises(BadSignatureError):
        verified(forged, key_set, alg)


PYJWT_ALGORITHMS = {
    key_type: alg for key_type, alg in ALGORITHMS.items() if not alg.startswith("ML-DSA")
}


@pytest.mark.parametrize(("key_type", "alg"), list(PYJWT_ALGORITHMS.items()))
def test_pyjwt_verifies_with_the_key_set_as_its_jwks_client_reads_it(
    client: TestClient, key_type: str, alg: str
) -> None:
    """PyJWT, the other verifier most code uses, finds the token's key in the set by kid. A key
    of one algorithm carries it, and PyJWT then checks the token's against it; an RSA key signs
    with six and carries none, which PyJWT's PyJWK reads as RS256: its `.key` is then given with
    the algorithms the verifier takes (docs/api/signatures.md)."""
    client.post("/v1/keys", json={"name": "py", "type": key_type})
    token = sign_jwt(client, "py")
    found = pyjwt.PyJWKSet.from_dict(jwks(client, "py"))[header(token)["kid"]]
    if key_type.startswith("rsa-"):
        with pytest.raises(pyjwt.InvalidAlgorithmError):
            pyjwt.decode(token, found, algorithms=[alg], audience="orders")
        for rsa_alg in ("PS256", "PS512", "RS256", "RS384"):
            signed = sign_jwt(client, "py", alg=rsa_alg)
            assert pyjwt.decode(signed, found.key, algorithms=[rsa_alg], audience="orders") == (
                CLAIMS
            )
    else:
        assert found.algorithm_name == alg
        assert pyjwt.decode(token, found, algorithms=[alg], audience="orders") == CLAIMS


def test_the_header_adds_but_does_not_change_alg_or_kid(client: TestClient) -> None:
    client.post("/v1/keys", json={"name": "h", "type": "ecdsa-p256"})
    token = sign_jwt(client, "h", header={"typ": "at+jwt", "cty": "JWT"})
    assert header(token) == {"typ": "at+jwt", "cty": "JWT", "alg": "ES256", "kid": "h:v1"}
    # A member of the caller's own goes as given (joserfc's verifier refuses names it does not
    # know, so it is only read here).
    custom = sign_jwt(client, "h", header={"trace": [1, "a"]})
    assert header(custom) == {"typ": "JWT", "trace": [1, "a"], "alg": "ES256", "kid": "h:v1"}
    assert verified(token, jwks(client, "h"), "ES256") == CLAIMS
    same = sign_jwt(client, "h", header={"alg": "ES256", "kid": "h:v1"}, alg="ES256")
    assert header(same)["alg"] == "ES256"
    for body in (
        {"header": {"alg": "none"}},
        {"header": {"alg": "HS256"}},
        {"header": {"kid": "h:v9"}},
        {"alg": "ES384"},
        {"alg": "PS256"},
        {"alg": "none"},
        {"claims": ["not", "an", "object"]},
        {"header": "alg"},
        # What would have a verifier read the token otherwise, or trust a key it carries.
        {"header": {"crit": ["b64"], "b64": False}},
        {"header": {"b64": True}},
        {"header": {"jku": "https://example.com/jwks"}},
        {"header": {"jwk": {"kty": "EC"}}},
        {"header": {"x5u": "https://example.com/x"}},
        {"header": {"x5c": ["MII"]}},
        {"header": {"typ": None}},
        {"header": {"cty": 1}},
    ):
        refused = client.post("/v1/jwt/h/sign", json={"claims": CLAIMS, **body})
        assert refused.status_code == 422, body


def test_batches(client: TestClient) -> None:
    client.post("/v1/keys", json={"name": "b", "type": "ed25519"})
    items = [{"claims": {"n": 1}}, {"claims": {"n": 2}, "alg": "ES256"}, {"claims": {}}]
    results = client.post("/v1/jwt/b/sign/batch", json={"items": items}).json()["results"]
    key_set = jwks(client, "b")
    assert verified(results[0]["jwt"], key_set, "EdDSA") == {"n": 1}
    assert results[1]["error"]["status"] == 422
    assert verified(results[2]["jwt"], key_set, "EdDSA") == {}


def test_a_key_set_lists_at_most_its_100_newest_live_versions(client: TestClient) -> None:
    client.post("/v1/keys", json={"name": "many", "type": "ecdsa-p256"})
    for _ in range(102):
        client.post("/v1/keys/many/rotate")
    kids = [k["kid"] for k in jwks(client, "many")["keys"]]
    assert kids == [f"many:v{v}" for v in range(103, 3, -1)]


def test_jwks_is_for_signing_keys_and_readable_with_public(
    client: TestClient, app: FastAPI
) -> None:
    client.post("/v1/keys", json={"name": "box", "type": "aez"})
    client.post("/v1/keys", json={"name": "ecies", "type": "ecies-x25519"})
    for name in ("box", "ecies"):
        refused = client.get(f"/v1/keys/{name}/jwks")
        assert refused.status_code == 409, refused.text
        assert client.post(f"/v1/jwt/{name}/sign", json={"claims": {}}).status_code == 409
    assert client.get("/v1/keys/nothing/jwks").status_code == 404
    client.post("/v1/keys", json={"name": "s", "type": "ml-dsa-44"})

    def token(operations: list[str]) -> dict[str, str]:
        issued = client.post("/v1/tokens", json={"keys": ["s"], "operations": operations})
        return {"Authorization": f"Bearer {issued.json()['token']}"}

    with TestClient(app) as user:
        for operations, can_read, can_sign in (
            (["public"], True, False),
            (["verify"], False, False),
            (["sign"], False, True),
            (["read"], False, False),
        ):
            headers = token(operations)
            read = user.get("/v1/keys/s/jwks", headers=headers)
            assert read.status_code == (200 if can_read else 403), operations
            signed = user.post("/v1/jwt/s/sign", json={"claims": {}}, headers=headers)
            assert signed.status_code == (200 if can_sign else 403), operations
