"""The signing types that came with OpenSSL (ecdsa-p256, -p384, -p521, rsa-2048, -3072, -4096,
ml-dsa-44, -65, -87) through the service: signatures verify under pyca/cryptography with the
key from `/public?format=der`, pyca's verify in the service (with the stored key and with the
key in the request), their options and refusals, rotation, BYOK, export and backups."""

import base64
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, mldsa, padding, rsa, utils
from fastapi.testclient import TestClient

from tests.app.routers.encryption import byok

# A signature made by the peer, and a check of the service's signature by the peer.
Peer = tuple[Callable[[Any, bytes], bytes], Callable[[Any, bytes, bytes], None]]
SHA = {"sha256": hashes.SHA256(), "sha384": hashes.SHA384(), "sha512": hashes.SHA512()}
CURVE_HASH = {"ecdsa-p256": "sha256", "ecdsa-p384": "sha384", "ecdsa-p521": "sha512"}
CURVES = {"ecdsa-p256": ec.SECP256R1(), "ecdsa-p384": ec.SECP384R1(), "ecdsa-p521": ec.SECP521R1()}
ML_DSA = {
    "ml-dsa-44": mldsa.MLDSA44PrivateKey,
    "ml-dsa-65": mldsa.MLDSA65PrivateKey,
    "ml-dsa-87": mldsa.MLDSA87PrivateKey,
}
TYPES = [*CURVES, "rsa-2048", "rsa-3072", "rsa-4096", *ML_DSA]
NO_ENCRYPTION = serialization.NoEncryption()
ENVELOPE = b"cipherd:v"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text)


def pss(hash: str = "sha256") -> padding.PSS:
    return padding.PSS(padding.MGF1(SHA[hash]), SHA[hash].digest_size)


def peer_of(key_type: str) -> Peer:
    """How pyca signs as the type does by default, and how it verifies that."""
    if key_type in CURVES:
        algorithm = ec.ECDSA(SHA[CURVE_HASH[key_type]])
        return (
            lambda key, m: key.sign(m, algorithm),
            lambda key, s, m: key.verify(s, m, algorithm),
        )
    if key_type.startswith("rsa-"):
        return (
            lambda key, m: key.sign(m, pss(), hashes.SHA256()),
            lambda key, s, m: key.verify(s, m, pss(), hashes.SHA256()),
        )
    return (lambda key, m: key.sign(m), lambda key, s, m: key.verify(s, m))


def pkcs8(key: Any) -> bytes:
    encoded: bytes = key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, NO_ENCRYPTION
    )
    return encoded


def peer_key(key_type: str) -> Any:
    if key_type in CURVES:
        return ec.generate_private_key(CURVES[key_type])
    if key_type.startswith("rsa-"):
        return rsa.generate_private_key(65537, int(key_type.removeprefix("rsa-")))
    return ML_DSA[key_type].generate()


def create(client: TestClient, name: str, key_type: str, **extra: object) -> Any:
    """The key's public key as pyca reads it from /public?format=der."""
    answer = client.post("/v1/keys", json={"name": name, "type": key_type, **extra})
    assert answer.status_code == 201, answer.text
    public = client.get(f"/v1/keys/{name}/public", params={"format": "der"}).json()
    return serialization.load_der_public_key(unb64(public["public_key"]))


def sign(client: TestClient, name: str, message: bytes, **options: object) -> dict:
    answer = client.post(f"/v1/sign/{name}", json={"message": b64(message), **options})
    assert answer.status_code == 200, answer.text
    return answer.json()


def verify(client: TestClient, name: str, message: bytes, signature: bytes, **options: object):
    body = {"message": b64(message), "signature": b64(signature), **options}
    return client.post(f"/v1/verify/{name}", json=body)


def verify_given(
    client: TestClient, key_type: str, public: bytes, message: bytes, signature: bytes, **options
) -> bool:
    body = {
        "type": key_type,
        "public_key": b64(public),
        "message": b64(message),
        "signature": b64(signature),
        **options,
    }
    answer = client.post("/v1/verify", json=body)
    assert answer.status_code == 200, answer.text
    valid: bool = answer.json()["valid"]
    return valid


def bare(signature: str) -> bytes:
    """A signature without the envelope that names its version."""
    enveloped = unb64(signature)
    assert enveloped.startswith(ENVELOPE)
    return enveloped.split(b":", 2)[2]


@pytest.mark.parametrize("key_type", TYPES)
def test_signatures_verify_both_ways_with_pyca(client: TestClient, key_type: str) -> None:
    peer_sign, peer_verify = peer_of(key_type)
    public = create(client, "k", key_type)
    message = b"release 7.1"
    # In the envelope by default; the bare signature with envelope false, as peers read it.
    enveloped = sign(client, "k", message)
    assert enveloped["key_version"] == 1
    peer_verify(public, bare(enveloped["signature"]), message)
    plain = unb64(sign(client, "k", message, envelope=False)["signature"])
    peer_verify(public, plain, message)
    for signature in (unb64(enveloped["signature"]), plain):
        assert verify(client, "k", message, signature).json() == {"valid": True}
        assert verify(client, "k", message + b"!", signature).json() == {"valid": False}
    # pyca's signature, with a key pyca made and the service imported.
    mine = peer_key(key_type)
    assert byok(client, "mine", key_type, pkcs8(mine)).status_code == 201
    theirs = peer_sign(mine, message)
    assert verify(client, "mine", message, theirs).json() == {"valid": True}
    assert verify(client, "k", message, theirs).json() == {"valid": False}
    # And against the public key in the request: SubjectPublicKeyInfo, and raw where the type
    # has a raw form.
    spki = mine.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    forms = [spki]
    if not key_type.startswith("rsa-"):
        raw = client.get("/v1/keys/mine/public").json()
        assert raw["format"] == "raw"
        forms.append(unb64(raw["public_key"]))
    for given in forms:
        assert verify_given(client, key_type, given, message, theirs)
        assert not verify_given(client, key_type, given, message + b"!", theirs)
    other = "ecdsa-p256" if key_type != "ecdsa-p256" else "ecdsa-p384"
    assert not verify_given(client, other, spki, message, theirs)  # a key of another type


@pytest.mark.parametrize("key_type", list(CURVES))
def test_ecdsa_options(client: TestClient, key_type: str) -> None:
    public = create(client, "e", key_type)
    size = (public.curve.key_size + 7) // 8
    for hash, algorithm in SHA.items():
        der = bare(sign(client, "e", b"m", hash=hash)["signature"])
        public.verify(der, b"m", ec.ECDSA(algorithm))
        compact = unb64(
            sign(client, "e", b"m", hash=hash, format="compact", envelope=False)["signature"]
        )
        assert len(compact) == 2 * size
        r, s = int.from_bytes(compact[:size]), int.from_bytes(compact[size:])
        public.verify(utils.encode_dss_signature(r, s), b"m", ec.ECDSA(algorithm))
        checked = verify(client, "e", b"m", compact, hash=hash, format="compact")
        assert checked.json() == {"valid": True}
        digest = hashes.Hash(algorithm)
        digest.update(b"m")
        prehashed = sign(client, "e", digest.finalize(), hash=hash, prehashed=True)
        public.verify(bare(prehashed["signature"]), b"m", ec.ECDSA(algorithm))
    # The curve's hash by default: a signature of another hash does not verify without it.
    sha256 = bare(sign(client, "e", b"m", hash="sha256")["signature"])
    expected = key_type == "ecdsa-p256"
    assert verify(client, "e", b"m", sha256).json() == {"valid": expected}
    for options, field in (
        ({"format": "recoverable"}, "format"),
        ({"hash": "keccak256"}, "hash"),
        ({"padding": "pss"}, "padding"),
        ({"mu": True}, "mu"),
        ({"prehashed": True}, "prehashed"),  # 1 byte, not a digest
    ):
        refused = client.post("/v1/sign/e", json={"message": b64(b"m"), **options})
        assert refused.status_code == 422, options
        assert field in refused.json()["detail"]


def test_rsa_options(client: TestClient) -> None:
    public = create(client, "r", "rsa-2048")
    for hash, algorithm in SHA.items():
        signature = bare(sign(client, "r", b"m", hash=hash)["signature"])
        public.verify(signature, b"m", pss(hash), algorithm)
        pkcs1 = bare(sign(client, "r", b"m", hash=hash, padding="pkcs1v15")["signature"])
        public.verify(pkcs1, b"m", padding.PKCS1v15(), algorithm)
        checked = verify(client, "r", b"m", pkcs1, hash=hash, padding="pkcs1v15")
        assert checked.json() == {"valid": True}
        assert verify(client, "r", b"m", pkcs1, hash=hash).json() == {"valid": False}
    digest = hashes.Hash(hashes.SHA384())
    digest.update(b"m")
    prehashed = sign(client, "r", digest.finalize(), hash="sha384", prehashed=True)
    public.verify(bare(prehashed["signature"]), b"m", pss("sha384"), hashes.SHA384())
    for options in ({"format": "der"}, {"mu": True}, {"hash": "keccak256"}, {"padding": "oaep"}):
        assert client.post("/v1/sign/r", json={"message": "bQ==", **options}).status_code == 422


def test_rsa_pss_salt_is_the_digest_length_exactly(client: TestClient) -> None:
    mine = rsa.generate_private_key(65537, 2048)
    assert byok(client, "r", "rsa-2048", pkcs8(mine)).status_code == 201
    for salt, valid in ((32, True), (0, False), (20, False), (padding.PSS.MAX_LENGTH, False)):
        signature = mine.sign(
            b"m", padding.PSS(padding.MGF1(hashes.SHA256()), salt), hashes.SHA256()
        )
        assert verify(client, "r", b"m", signature).json() == {"valid": valid}, salt


@pytest.mark.parametrize("key_type", list(ML_DSA))
def test_ml_dsa_with_an_external_mu(client: TestClient, key_type: str) -> None:
    public = create(client, "q", key_type)
    hasher = mldsa.MLDSAMuHasher(public)
    hasher.update(b"a message the service never sees")
    mu = hasher.finalize()
    signed = sign(client, "q", mu, mu=True, envelope=False)
    public.verify(unb64(signed["signature"]), b"a message the service never sees")
    assert verify(client, "q", mu, unb64(signed["signature"]), mu=True).json() == {"valid": True}
    # Without the flag, the 64 bytes are a message of their own.
    assert verify(client, "q", mu, unb64(signed["signature"])).json() == {"valid": False}
    for body in (
        {"message": b64(mu[:63]), "mu": True},
        {"message": b64(mu + b"\x00"), "mu": True},
        {"message": b64(b"m"), "hash": "sha256"},
        {"message": b64(b"m"), "prehashed": True},
        {"message": b64(b"m"), "format": "der"},
    ):
        assert client.post("/v1/sign/q", json=body).status_code == 422, body
    check = {"message": b64(mu[:10]), "signature": signed["signature"], "mu": True}
    assert client.post("/v1/verify/q", json=check).status_code == 422


def test_rotation_and_the_envelope(client: TestClient) -> None:
    first = create(client, "r", "ecdsa-p256")
    old = sign(client, "r", b"m")
    old_bare = unb64(sign(client, "r", b"m", envelope=False)["signature"])
    assert client.post("/v1/keys/r/rotate").json()["latest_version"] == 2
    second = serialization.load_der_public_key(
        unb64(client.get("/v1/keys/r/public", params={"format": "der"}).json()["public_key"])
    )
    assert second != first
    new = sign(client, "r", b"m")
    assert new["key_version"] == 2 and unb64(new["signature"]).startswith(b"cipherd:v2:")
    second.verify(bare(new["signature"]), b"m", ec.ECDSA(hashes.SHA256()))
    assert verify(client, "r", b"m", unb64(old["signature"])).json() == {"valid": True}
    assert verify(client, "r", b"m", old_bare).json() == {"valid": True}  # tried across versions
    assert verify(client, "r", b"m", old_bare, key_version=2).json() == {"valid": False}
    assert client.patch("/v1/keys/r", json={"min_decryption_version": 2}).status_code == 200
    assert verify(client, "r", b"m", old_bare).json() == {"valid": False}
    assert verify(client, "r", b"m", unb64(old["signature"])).status_code == 400


def test_batches(client: TestClient) -> None:
    public = create(client, "b", "ecdsa-p384")
    items = [
        {"message": b64(b"a")},
        {"message": b64(b"b"), "format": "compact", "envelope": False},
        {"message": b64(b"c"), "format": "recoverable"},
    ]
    results = client.post("/v1/sign/b/batch", json={"items": items}).json()["results"]
    public.verify(bare(results[0]["signature"]), b"a", ec.ECDSA(hashes.SHA384()))
    assert len(unb64(results[1]["signature"])) == 96
    assert results[2]["error"]["status"] == 422
    checks = [
        {"message": b64(b"a"), "signature": results[0]["signature"]},
        {"message": b64(b"b"), "signature": results[1]["signature"], "format": "compact"},
        {"message": b64(b"x"), "signature": results[0]["signature"]},
    ]
    verdicts = client.post("/v1/verify/b/batch", json={"items": checks}).json()["results"]
    assert verdicts == [{"valid": True}, {"valid": True}, {"valid": False}]


@pytest.mark.parametrize("key_type", TYPES)
def test_byok_and_export_give_the_same_encodings(client: TestClient, key_type: str) -> None:
    mine = peer_key(key_type)
    imported = byok(client, "mine", key_type, pkcs8(mine))
    assert imported.status_code == 201, imported.text
    assert client.patch("/v1/keys/mine", json={"exportable": True}).status_code == 200
    exported = unb64(client.get("/v1/keys/mine/export").json()["secret"])
    assert exported == pkcs8(mine)
    assert serialization.load_der_private_key(exported, None).public_key() == mine.public_key()
    if key_type in ML_DSA:  # and the 32-byte seed, as a second version
        again = byok(client, "mine", key_type, mine.private_bytes_raw())
        assert again.status_code == 200 and again.json()["latest_version"] == 2
        second = client.get("/v1/keys/mine/export", params={"version": 2}).json()
        assert unb64(second["secret"]) == pkcs8(mine)


@pytest.mark.parametrize(
    ("key_type", "material", "why"),
    [
        ("ecdsa-p256", lambda: pkcs8(ec.generate_private_key(ec.SECP384R1())), "secp384r1"),
        ("ecdsa-p521", lambda: pkcs8(ec.generate_private_key(ec.SECP256K1())), "secp256k1"),
        ("rsa-3072", lambda: pkcs8(rsa.generate_private_key(65537, 2048)), "3072-bit"),
        ("rsa-2048", lambda: pkcs8(rsa.generate_private_key(3, 2048)), "exponent"),
        (
            "rsa-2048",
            lambda: rsa.generate_private_key(65537, 2048).private_bytes(
                serialization.Encoding.DER,
                serialization.PrivateFormat.TraditionalOpenSSL,
                NO_ENCRYPTION,
            ),
            "PKCS#8",
        ),
        ("ml-dsa-65", lambda: pkcs8(mldsa.MLDSA44PrivateKey.generate()), "ML-DSA-65"),
        ("ml-dsa-44", lambda: bytes(31), "32-byte seed"),
        ("ecdsa-p384", lambda: bytes(32), "PKCS#8"),
    ],
)
def test_byok_refuses_material_of_another_kind(
    client: TestClient, key_type: str, material: Callable[[], bytes], why: str
) -> None:
    refused = byok(client, "k", key_type, material())
    assert refused.status_code == 422, refused.text
    assert why in refused.json()["detail"]
    assert client.get("/v1/keys/k").status_code == 404


def test_scopes(client: TestClient, app: Any) -> None:
    create(client, "s", "ml-dsa-44")
    issued = client.post("/v1/tokens", json={"keys": ["s"], "operations": ["verify"]}).json()
    with TestClient(app, headers={"Authorization": f"Bearer {issued['token']}"}) as user:
        assert user.post("/v1/sign/s", json={"message": "bQ=="}).status_code == 403
        signature = sign(client, "s", b"m")["signature"]
        body = {"message": "bQ==", "signature": signature}
        assert user.post("/v1/verify/s", json=body).json() == {"valid": True}
