"""AES-GCM and ChaCha20-Poly1305 over HTTP: payloads pyca opens and makes, Wycheproof's verdicts
through the service, derived and convergent keys, raw bodies, batches, rotation, BYOK, backups
and bad input."""

import os

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from fastapi.testclient import TestClient

from tests.app.routers.encryption import b64, byok, create, failure, unb64
from tests.core.encryption.vectors import AES_GCM, CHACHA20_POLY1305, XCHACHA20_POLY1305

OCTET = {"content-type": "application/octet-stream"}
TYPES = {
    "aes128-gcm": (16, AESGCM),
    "aes256-gcm": (32, AESGCM),
    "chacha20-poly1305": (32, ChaCha20Poly1305),
}


@pytest.mark.parametrize("key_type", sorted(TYPES))
def test_payloads_open_both_ways_with_pyca(client: TestClient, key_type: str) -> None:
    size, cls = TYPES[key_type]
    secret = create(client, "k", key_type)
    assert len(secret) == size
    theirs = cls(secret)
    for length in (0, 1, 64, 5000):
        plaintext, ad = os.urandom(length), os.urandom(length % 9)
        body = {"plaintext": b64(plaintext), "associated_data": b64(ad)}
        sealed = client.post("/v1/aead/k/encrypt", json=body).json()
        assert sealed["key_version"] == 1
        payload = unb64(sealed["ciphertext"])
        assert payload.startswith(b"cipherd:v1:") and len(payload) == 11 + 12 + length + 16
        bare = payload.removeprefix(b"cipherd:v1:")
        assert theirs.decrypt(bare[:12], bare[12:], ad) == plaintext
        bare_answer = client.post("/v1/aead/k/encrypt", json={**body, "envelope": False}).json()
        bare = unb64(bare_answer["ciphertext"])
        assert len(bare) == 12 + length + 16
        assert theirs.decrypt(bare[:12], bare[12:], ad) == plaintext
        nonce = os.urandom(12)
        made = nonce + theirs.encrypt(nonce, plaintext, ad)
        for ciphertext in (made, b"cipherd:v1:" + made):
            opened = client.post(
                "/v1/aead/k/decrypt",
                json={"ciphertext": b64(ciphertext), "associated_data": b64(ad)},
            ).json()
            assert opened == {"plaintext": b64(plaintext), "key_version": 1}


def test_every_failure_is_the_same_400(client: TestClient) -> None:
    create(client, "k", "aes256-gcm")
    sealed = client.post(
        "/v1/aead/k/encrypt",
        json={
            "plaintext": b64(b"attack at dawn"),
            "associated_data": b64(b"hdr"),
            "envelope": False,
        },
    ).json()["ciphertext"]
    payload = unb64(sealed)
    good = {"ciphertext": sealed, "associated_data": b64(b"hdr")}
    assert client.post("/v1/aead/k/decrypt", json=good).status_code == 200
    for index in (0, 11, 12, len(payload) - 17, len(payload) - 1):  # nonce, ciphertext, tag
        flipped = bytearray(payload)
        flipped[index] ^= 0x80
        bad = {**good, "ciphertext": b64(bytes(flipped))}
        answer = client.post("/v1/aead/k/decrypt", json=bad)
        assert (answer.status_code, answer.json()) == (400, failure("k")), index
    for bad in (
        {**good, "associated_data": b64(b"hdR")},
        {"ciphertext": sealed},
        {**good, "ciphertext": b64(payload[:27])},
        {**good, "ciphertext": ""},
        {**good, "ciphertext": b64(payload + b"\x00")},
    ):
        answer = client.post("/v1/aead/k/decrypt", json=bad)
        assert (answer.status_code, answer.json()) == (400, failure("k")), bad


def test_every_wycheproof_case_through_the_service(client: TestClient) -> None:
    """Each case's key brought in (once) as the next version of one key per type; its payload
    then decrypts under that version as Wycheproof says."""
    versions: dict[tuple[str, bytes], int] = {}
    checked = 0
    for case in AES_GCM + CHACHA20_POLY1305 + XCHACHA20_POLY1305:
        name = case.algorithm
        if (name, case.key) not in versions:
            assert byok(client, name, name, case.key).is_success, case.id
            versions[name, case.key] = len([k for k in versions if k[0] == name]) + 1
        version = versions[name, case.key]
        body = {
            "ciphertext": b64(case.payload),
            "associated_data": b64(case.associated_data),
            "key_version": version,
        }
        answer = client.post(f"/v1/aead/{name}/decrypt", json=body)
        if case.valid:
            expected = {"plaintext": b64(case.plaintext), "key_version": version}
            assert answer.json() == expected, case.id
        else:
            assert (answer.status_code, answer.json()) == (400, failure(name, version)), case.id
        checked += 1
    assert checked == 449 + 306


def test_derived_keys_take_a_context_and_derive_as_transit(client: TestClient) -> None:
    master = create(client, "d", "aes256-gcm", derived=True)
    create(client, "plain", "aes256-gcm")
    key = client.get("/v1/keys/d").json()
    assert (key["derived"], key["convergent"]) == (True, False)
    context = b"tenant-7"
    sealed = client.post(
        "/v1/aead/d/encrypt",
        json={"plaintext": b64(b"hi"), "context": b64(context), "envelope": False},
    ).json()
    payload = unb64(sealed["ciphertext"])
    derived = HKDF(hashes.SHA256(), 32, None, context).derive(master)
    assert AESGCM(derived).decrypt(payload[:12], payload[12:], None) == b"hi"
    opened = client.post(
        "/v1/aead/d/decrypt", json={"ciphertext": sealed["ciphertext"], "context": b64(context)}
    )
    assert unb64(opened.json()["plaintext"]) == b"hi"
    other = client.post(
        "/v1/aead/d/decrypt", json={"ciphertext": sealed["ciphertext"], "context": b64(b"tenant-8")}
    )
    assert (other.status_code, other.json()) == (400, failure("d"))
    for body in ({"plaintext": b64(b"x")}, {"plaintext": b64(b"x"), "context": ""}):
        refused = client.post("/v1/aead/d/encrypt", json=body)
        assert refused.status_code == 422 and "context" in refused.json()["detail"]
    refused = client.post(
        "/v1/aead/plain/encrypt", json={"plaintext": b64(b"x"), "context": b64(b"c")}
    )
    assert refused.status_code == 422
    assert refused.json()["detail"] == "context: key 'plain' is not derived: it takes no context"
    # A derived key exports its master.
    assert unb64(client.get("/v1/keys/d/export").json()["secret"]) == master


def test_convergent_encryption_repeats_exactly_where_it_must(client: TestClient) -> None:
    master = create(client, "c", "aes128-gcm", derived=True, convergent=True)

    def encrypt(plaintext: bytes, context: bytes, ad: bytes = b"") -> bytes:
        body = {"plaintext": b64(plaintext), "context": b64(context), "associated_data": b64(ad)}
        answer = client.post("/v1/aead/c/encrypt", json={**body, "envelope": False})
        assert answer.status_code == 200, answer.text
        return unb64(answer.json()["ciphertext"])

    first = encrypt(b"ssn 078-05-1120", b"ctx")
    assert encrypt(b"ssn 078-05-1120", b"ctx") == first
    # Transit's convergent version 3 without associated data, byte for byte.
    okm = HKDF(hashes.SHA256(), 16 + 64, None, b"ctx").derive(master)
    import hashlib
    import hmac

    nonce = hmac.digest(okm[16:48], b"ssn 078-05-1120", hashlib.sha256)[:12]
    assert first == nonce + AESGCM(okm[:16]).encrypt(nonce, b"ssn 078-05-1120", None)
    variants = [
        encrypt(b"ssn 078-05-1121", b"ctx"),
        encrypt(b"ssn 078-05-1120", b"ctx2"),
        encrypt(b"ssn 078-05-1120", b"ctx", b"ad"),
        encrypt(b"ssn 078-05-1120", b"ctx", b"ae"),
        encrypt(b"", b"ctx"),
    ]
    nonces = {payload[:12] for payload in [first, *variants]}
    assert len(nonces) == 6
    assert encrypt(b"ssn 078-05-1120", b"ctx", b"ad") == variants[2]
    client.post("/v1/keys/c/rotate")
    rotated = encrypt(b"ssn 078-05-1120", b"ctx")
    assert rotated != first and encrypt(b"ssn 078-05-1120", b"ctx") == rotated
    # Data keys stay random: a convergent key's nonce follows the data key.
    keys = [
        client.post("/v1/aead/c/datakey", json={"context": b64(b"ctx")}).json() for _ in range(2)
    ]
    assert keys[0]["ciphertext"] != keys[1]["ciphertext"]


def test_derivation_options_are_checked_at_creation(client: TestClient) -> None:
    for body, detail in (
        ({"type": "aes256-gcm", "convergent": True}, "convergent: a convergent key is derived too"),
        ({"type": "aez", "derived": True}, "derived: only AEAD key types and ed25519 take it"),
        ({"type": "ed25519", "derived": True, "convergent": True}, "convergent: only AEAD"),
        ({"type": "hmac", "convergent": True, "derived": True}, "derived: only AEAD key types"),
        ({"type": "aes256-gcm", "derived": "yes"}, None),
    ):
        answer = client.post("/v1/keys", json={"name": "x", **body})
        assert answer.status_code == 422, body
        if detail:
            assert answer.json()["detail"].startswith(detail)
    assert client.get("/v1/keys/x").status_code == 404


def test_raw_bodies_with_query_parameters(client: TestClient) -> None:
    secret = create(client, "k", "chacha20-poly1305", derived=True)
    plaintext = os.urandom(300_000)
    params = [("associated_data", b64(b"a+/")), ("context", b64(b"c"))]
    sealed = client.post(
        "/v1/aead/k/encrypt/raw",
        content=plaintext,
        headers=OCTET,
        params=[*params, ("envelope", "false")],
    )
    assert sealed.status_code == 200, sealed.text
    assert sealed.headers["cipherd-key-version"] == "1"
    derived = HKDF(hashes.SHA256(), 32, None, b"c").derive(secret)
    payload = sealed.content
    assert ChaCha20Poly1305(derived).decrypt(payload[:12], payload[12:], b"a+/") == plaintext
    opened = client.post(
        "/v1/aead/k/decrypt", content=b"cipherd:v1:" + payload, headers=OCTET, params=params
    )
    assert opened.content == plaintext and opened.headers["cipherd-key-version"] == "1"
    wrong = client.post("/v1/aead/k/decrypt/raw", content=payload, headers=OCTET, params=params[1:])
    assert wrong.status_code == 400


def test_batches_datakeys_and_rewrap_across_a_rotation(client: TestClient) -> None:
    create(client, "k", "aes256-gcm")
    items = [
        {"plaintext": b64(b"a")},
        {"plaintext": b64(b"b"), "associated_data": b64(b"x")},
        {"plaintext": b64(b"c"), "context": b64(b"no")},
    ]
    results = client.post("/v1/aead/k/encrypt/batch", json={"items": items}).json()["results"]
    assert [r.get("key_version") for r in results[:2]] == [1, 1]
    assert results[2]["error"]["status"] == 422
    old = results[1]["ciphertext"]
    client.post("/v1/keys/k/rotate")
    decrypts = [
        {"ciphertext": results[0]["ciphertext"]},
        {"ciphertext": old, "associated_data": b64(b"x")},
        {"ciphertext": old},
    ]
    opened = client.post("/v1/aead/k/decrypt/batch", json={"items": decrypts}).json()["results"]
    assert opened[:2] == [
        {"plaintext": b64(b"a"), "key_version": 1},
        {"plaintext": b64(b"b"), "key_version": 1},
    ]
    assert opened[2]["error"] == failure("k")
    rewrapped = client.post(
        "/v1/aead/k/rewrap", json={"ciphertext": old, "associated_data": b64(b"x")}
    ).json()
    assert rewrapped["key_version"] == 2 and unb64(rewrapped["ciphertext"]).startswith(
        b"cipherd:v2:"
    )
    again = client.post(
        "/v1/aead/k/decrypt",
        json={"ciphertext": rewrapped["ciphertext"], "associated_data": b64(b"x")},
    )
    assert again.json() == {"plaintext": b64(b"b"), "key_version": 2}
    # A bare payload of version 1 is tried from the latest version down.
    bare = client.post(
        "/v1/aead/k/encrypt", json={"plaintext": b64(b"v2"), "envelope": False, "key_version": 1}
    ).json()
    assert (
        client.post("/v1/aead/k/decrypt", json={"ciphertext": bare["ciphertext"]}).json()[
            "key_version"
        ]
        == 1
    )
    datakey = client.post(
        "/v1/aead/k/datakey", json={"bytes": 16, "associated_data": b64(b"dk")}
    ).json()
    assert len(unb64(datakey["plaintext"])) == 16 and datakey["key_version"] == 2
    opened_key = client.post(
        "/v1/aead/k/decrypt",
        json={"ciphertext": datakey["ciphertext"], "associated_data": b64(b"dk")},
    ).json()
    assert opened_key["plaintext"] == datakey["plaintext"]
    hidden = client.post(
        "/v1/aead/k/datakey/batch", json={"items": [{"plaintext": False}] * 2}
    ).json()["results"]
    assert all(result.get("plaintext") is None and result["ciphertext"] for result in hidden)
    # Policies: below min_decryption_version nothing decrypts.
    assert client.patch("/v1/keys/k", json={"min_decryption_version": 2}).status_code == 200
    refused = client.post("/v1/aead/k/decrypt", json={"ciphertext": results[0]["ciphertext"]})
    assert refused.status_code == 400 and refused.json()["type"].endswith("version-too-old")


def test_other_families_keys_are_refused(client: TestClient) -> None:
    client.post("/v1/keys", json={"name": "z", "type": "aez"})
    create(client, "k", "aes128-gcm")
    refused = client.post("/v1/aead/z/encrypt", json={"plaintext": ""})
    assert refused.status_code == 409 and refused.json()["type"].endswith("wrong-key-type")
    assert client.post("/v1/aez/k/encrypt", json={"plaintext": ""}).status_code == 409
    assert client.get("/v1/keys/k/public").status_code == 409


def test_byok_takes_the_raw_key_of_the_types_length(client: TestClient) -> None:
    for key_type, (size, cls) in TYPES.items():
        secret = os.urandom(size)
        assert byok(client, key_type, key_type, secret).status_code == 201
        nonce = os.urandom(12)
        payload = nonce + cls(secret).encrypt(nonce, b"mine", None)
        opened = client.post(f"/v1/aead/{key_type}/decrypt", json={"ciphertext": b64(payload)})
        assert unb64(opened.json()["plaintext"]) == b"mine"
        wrong = byok(client, key_type, key_type, os.urandom(48 - size))
        assert wrong.status_code == 422
        assert f"a secret of {size} bytes for {key_type}" in wrong.json()["detail"]
        assert client.get(f"/v1/keys/{key_type}").json()["latest_version"] == 1


def test_byok_brings_a_derived_and_convergent_key_in(client: TestClient) -> None:
    """Material made elsewhere comes in derived (and convergent) as a key made so here: the
    key used is HKDF of the brought master with the context, and convergent payloads are
    Transit's, byte for byte; a next version keeps its key's derivation."""
    master = os.urandom(32)
    made = byok(client, "m", "aes256-gcm", master, derived=True, convergent=True)
    assert made.status_code == 201, made.text
    assert (made.json()["derived"], made.json()["convergent"]) == (True, True)
    body = {"plaintext": b64(b"iban DE89"), "context": b64(b"tenant-7"), "envelope": False}
    first = unb64(client.post("/v1/aead/m/encrypt", json=body).json()["ciphertext"])
    assert unb64(client.post("/v1/aead/m/encrypt", json=body).json()["ciphertext"]) == first
    okm = HKDF(hashes.SHA256(), 32 + 64, None, b"tenant-7").derive(master)
    assert AESGCM(okm[:32]).decrypt(first[:12], first[12:], None) == b"iban DE89"
    refused = client.post("/v1/aead/m/encrypt", json={"plaintext": b64(b"x")})
    assert refused.status_code == 422 and "context" in refused.json()["detail"]

    derived_only = os.urandom(16)
    assert byok(client, "d", "aes128-gcm", derived_only, derived=True).status_code == 201
    sealed = client.post(
        "/v1/aead/d/encrypt",
        json={"plaintext": b64(b"hi"), "context": b64(b"c"), "envelope": False},
    ).json()
    payload = unb64(sealed["ciphertext"])
    key = HKDF(hashes.SHA256(), 16, None, b"c").derive(derived_only)
    assert AESGCM(key).decrypt(payload[:12], payload[12:], None) == b"hi"

    again = byok(client, "m", "aes256-gcm", os.urandom(32), derived=True, convergent=True)
    assert again.status_code == 200 and again.json()["latest_version"] == 2
    unlike = byok(client, "m", "aes256-gcm", os.urandom(32), derived=True)
    assert unlike.status_code == 409 and "a next version keeps" in unlike.json()["detail"]
    assert client.get("/v1/keys/m").json()["latest_version"] == 2
    # A version brought without options is the key's next version, derivation and all.
    plain_next = byok(client, "m", "aes256-gcm", os.urandom(32))
    assert plain_next.status_code == 200 and plain_next.json()["convergent"] is True


def test_byok_refuses_derivation_where_it_does_not_apply(client: TestClient) -> None:
    refused = byok(client, "e", "ecdsa-secp256k1", os.urandom(32), derived=True)
    assert refused.status_code == 422
    assert refused.json()["detail"] == (
        "derived: only AEAD key types and ed25519 take it, not ecdsa-secp256k1"
    )
    lone = byok(client, "a", "aes256-gcm", os.urandom(32), convergent=True)
    assert lone.status_code == 422 and "convergent" in lone.json()["detail"]
    for name in ("e", "a"):
        assert client.get(f"/v1/keys/{name}").status_code == 404
