"""Every Wycheproof case of the OpenSSL signing types through the service: `POST /v1/verify`
with the case's key (SubjectPublicKeyInfo or the raw form), type and options gives the expected
verdict (either, where Wycheproof finds the case acceptable); ML-DSA's seeds brought in as BYOK
give FIPS 204's public keys, and the signatures of the sign files verify with the stored key."""

import base64

from fastapi.testclient import TestClient

from tests.app.routers.encryption import byok
from tests.core.sign.wycheproof import ML_DSA_SEEDS, ML_DSA_SIGNED, OPENSSL_CASES, agrees


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_every_case_through_post_verify(client: TestClient) -> None:
    wrong = []
    for case in OPENSSL_CASES:
        body = {
            "type": case.key_type,
            "public_key": b64(case.public_key),
            "message": b64(case.message),
            "signature": b64(case.signature),
            **case.options,
        }
        answer = client.post("/v1/verify", json=body)
        assert answer.status_code == 200, (case.id, answer.text)
        if not agrees(answer.json()["valid"], case):
            wrong.append(case.id)
    assert wrong == []
    assert len(OPENSSL_CASES) == 4608 + 2330 + 788 + 15 + 610 + 490


def test_ml_dsa_seeds_and_their_signatures_with_stored_keys(client: TestClient) -> None:
    names = {}
    for index, seed in enumerate(ML_DSA_SEEDS):
        name = f"seed-{index}"
        answer = byok(client, name, seed.key_type, seed.seed)
        if seed.public_key is None:
            assert answer.status_code == 422, seed.id
            continue
        assert answer.status_code == 201, (seed.id, answer.text)
        public = client.get(f"/v1/keys/{name}/public").json()["public_key"]
        assert base64.b64decode(public) == seed.public_key, seed.id
        names[seed.public_key] = name
    checked = 0
    for case in ML_DSA_SIGNED:
        check = {"message": b64(case.message), "signature": b64(case.signature), **case.options}
        answer = client.post(f"/v1/verify/{names[case.public_key]}", json=check)
        assert answer.json() == {"valid": True}, case.id
        checked += 1
    assert checked == 490 and len(names) == 97
