"""FE keys keep to their minimum versions as every other family does: a version below
min_decryption_version neither decrypts nor releases functional keys, and one below
min_encryption_version neither encrypts nor releases functional keys (400 version-too-old)."""

from fastapi.testclient import TestClient

TOO_OLD = "urn:cipherd:problem:version-too-old"


def _patch(client: TestClient, **policies: int) -> None:
    answer = client.patch("/v1/keys/fe", json=policies)
    assert answer.status_code == 200, answer.text


def _refused(answer: object, policy: str) -> None:
    assert answer.status_code == 400, answer.text  # type: ignore[attr-defined]
    problem = answer.json()  # type: ignore[attr-defined]
    assert problem["type"] == TOO_OLD
    assert policy in problem["detail"]


def test_fe_keeps_to_the_minimum_versions(client: TestClient) -> None:
    assert (
        client.post("/v1/keys", json={"name": "fe", "type": "ipfe-opt", "dimension": 2}).status_code
        == 201
    )
    made = {}
    for version in (1, 2, 3):
        if version > 1:
            assert client.post("/v1/keys/fe/rotate").status_code == 200
        key = client.post("/v1/fe/fe/keygen", json={"y": [1, 2]}).json()
        ct = client.post("/v1/fe/fe/encrypt", json={"x": [3, 4]}).json()
        assert key["key_version"] == ct["key_version"] == version
        made[version] = {
            "functional_key": key["functional_key"],
            "ciphertext": ct["ciphertext"],
            "bounds": [0, 100],
            "key_version": version,
        }

    _patch(client, min_decryption_version=2)
    _refused(client.post("/v1/fe/fe/decrypt", json=made[1]), "min_decryption_version (2)")
    batch = client.post("/v1/fe/fe/decrypt/batch", json={"items": [made[1], made[2]]}).json()
    assert batch["results"][0]["error"]["type"] == TOO_OLD
    assert batch["results"][1]["result"] == 11
    many = {
        "functional_key": made[1]["functional_key"],
        "ciphertexts": [made[1]["ciphertext"]],
        "bounds": [0, 100],
        "key_version": 1,
    }
    _refused(client.post("/v1/fe/fe/decrypt/many", json=many), "min_decryption_version (2)")
    _refused(
        client.post("/v1/fe/fe/keygen", json={"y": [1, 2], "key_version": 1}),
        "min_decryption_version (2)",
    )
    keys = client.post("/v1/fe/fe/keygen/batch", json={"items": [{"y": [1, 2], "key_version": 1}]})
    assert keys.json()["results"][0]["error"]["type"] == TOO_OLD
    assert client.post("/v1/fe/fe/decrypt", json=made[2]).json() == {"result": 11}

    _patch(client, min_encryption_version=3)
    _refused(
        client.post("/v1/fe/fe/encrypt", json={"x": [3, 4], "key_version": 2}),
        "min_encryption_version (3)",
    )
    items = {"items": [{"x": [3, 4], "key_version": 2}, {"x": [3, 4]}]}
    cts = client.post("/v1/fe/fe/encrypt/batch", json=items).json()["results"]
    assert cts[0]["error"]["type"] == TOO_OLD and cts[1]["key_version"] == 3
    _refused(
        client.post("/v1/fe/fe/keygen", json={"y": [1, 2], "key_version": 2}),
        "min_encryption_version (3)",
    )
    assert client.post("/v1/fe/fe/keygen", json={"y": [1, 2]}).json()["key_version"] == 3
    # Decryption follows min_decryption_version only: version 2 still decrypts.
    assert client.post("/v1/fe/fe/decrypt", json=made[2]).json() == {"result": 11}
