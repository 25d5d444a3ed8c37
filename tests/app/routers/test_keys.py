"""Key lifecycle over HTTP."""

import base64
import dataclasses

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.ops.keytypes import KEY_TYPES

PROBLEM = "application/problem+json"


def create(client: TestClient, name: str, key_type: str, **extra: object) -> dict:
    response = client.post("/v1/keys", json={"name": name, "type": key_type, **extra})
    assert response.status_code == 201, response.text
    return response.json()


def test_create_read_list_rotate_delete(client: TestClient) -> None:
    created = create(client, "orders", "ecies-secp256k1")
    assert created["latest_version"] == 1 and created["exportable"] is False
    assert client.get("/v1/keys/orders").json()["versions"][0]["version"] == 1

    rotated = client.post("/v1/keys/orders/rotate").json()
    assert rotated["latest_version"] == 2
    assert [v["version"] for v in rotated["versions"]] == [1, 2]

    assert [k["name"] for k in client.get("/v1/keys").json()["keys"]] == ["orders"]
    # Deletion is scheduled, not done: the key is listed as pending and refuses every use.
    scheduled = client.delete("/v1/keys/orders")
    assert scheduled.status_code == 202
    assert scheduled.json()["state"] == "pending-deletion"
    assert client.get("/v1/keys").json()["keys"][0]["state"] == "pending-deletion"
    refused = client.post("/v1/ecies/orders/encrypt", json={"plaintext": "aGk="})
    assert refused.status_code == 409
    assert refused.headers["content-type"] == PROBLEM
    assert refused.json()["type"] == "urn:cipherd:problem:key-pending-deletion"
    missing = client.get("/v1/keys/nothing")
    assert missing.status_code == 404
    assert missing.json()["type"] == "urn:cipherd:problem:key-not-found"


def test_list_pages_with_next(client: TestClient, app: FastAPI) -> None:
    for name in ("orders-1", "orders-2", "other", "orders-3", "orders-4"):
        create(client, name, "aez")
    everything = [k["name"] for k in client.get("/v1/keys").json()["keys"]]
    assert client.get("/v1/keys").json()["next"] is None
    reader = client.post("/v1/tokens", json={"keys": ["orders-*"], "operations": ["read"]})
    headers = {"Authorization": f"Bearer {reader.json()['token']}"}
    seen, after, pages = [], None, 0
    with TestClient(app, headers=headers) as scoped:
        while True:
            params = {"limit": 2, **({"after": after} if after else {})}
            page = scoped.get("/v1/keys", params=params).json()
            assert len(page["keys"]) <= 2
            seen += [k["name"] for k in page["keys"]]
            pages += 1
            if (after := page["next"]) is None:
                break
    # The scope filters before the page is cut: full pages, and no last page left empty.
    assert seen == [name for name in everything if name.startswith("orders-")]
    assert pages == 2
    assert client.get("/v1/keys", params={"after": ""}).json()["keys"][0]["name"] == everything[0]
    for bad in ({"limit": 0}, {"limit": 1001}, {"after": "x" * 129}):
        assert client.get("/v1/keys", params=bad).status_code == 422


def test_a_list_without_a_limit_is_a_page_of_one_hundred(client: TestClient) -> None:
    names = [f"bulk-{index:03}" for index in range(101)]
    for name in names:
        create(client, name, "aez")
    first = client.get("/v1/keys").json()
    assert [k["name"] for k in first["keys"]] == names[:100] and first["next"] == names[99]
    rest = client.get("/v1/keys", params={"after": first["next"]}).json()
    assert [k["name"] for k in rest["keys"]] == names[100:] and rest["next"] is None


def test_pages_never_name_a_key_outside_the_scope(client: TestClient, app: FastAPI) -> None:
    # More unreadable keys than the store is read at a time, between and after readable ones.
    hidden = [f"hidden-{i:03}" for i in range(300)]
    for name in ("a-1", *hidden, "z-1", "z-2"):
        create(client, name, "aez")
    reader = client.post("/v1/tokens", json={"keys": ["a-*", "z-*"], "operations": ["read"]})
    headers = {"Authorization": f"Bearer {reader.json()['token']}"}
    with TestClient(app, headers=headers) as scoped:
        for start in (None, "a-1", "hidden-000", "hidden-150", "z-2", "zz"):
            names, after = [], start
            while True:
                params = {"limit": 1, **({"after": after} if after is not None else {})}
                page = scoped.get("/v1/keys", params=params).json()
                names += [k["name"] for k in page["keys"]]
                if (after := page["next"]) is None:
                    break
                assert after == names[-1]  # a key of the page, never one beyond the scope
            readable = ["a-1", "z-1", "z-2"]
            assert names == [n for n in readable if start is None or n > start]
    admin_pages = client.get("/v1/keys", params={"limit": 302}).json()
    assert len(admin_pages["keys"]) == 302 and admin_pages["next"] == "z-1"
    assert client.get("/v1/keys", params={"limit": 303}).json()["next"] is None


def test_every_non_fe_type_can_be_created(client: TestClient) -> None:
    for key_type, spec in KEY_TYPES.items():
        if spec.family != "fe":
            assert create(client, f"k-{key_type}", key_type)["type"] == key_type


def test_public_part_per_version(client: TestClient) -> None:
    create(client, "k", "ecies-x25519")
    first = client.get("/v1/keys/k/public").json()
    client.post("/v1/keys/k/rotate")
    second = client.get("/v1/keys/k/public").json()
    assert (first["version"], second["version"]) == (1, 2)
    assert len(base64.b64decode(first["public_key"])) == 32
    assert first["public_key"] != second["public_key"]
    assert client.get("/v1/keys/k/public", params={"version": 1}).json() == first
    assert client.get("/v1/keys/k/public", params={"version": 9}).status_code == 404


def test_aez_key_has_no_public_part(client: TestClient) -> None:
    create(client, "sym", "aez")
    response = client.get("/v1/keys/sym/public")
    assert response.status_code == 409
    assert response.json()["type"] == "urn:cipherd:problem:no-public-part"


def test_metadata_never_contains_secret_material(client: TestClient) -> None:
    create(client, "k", "ecies-secp256k1", exportable=True)
    secret = client.get("/v1/keys/k/export").json()["secret"]
    for path in ("/v1/keys", "/v1/keys/k", "/v1/keys/k/public"):
        assert secret not in client.get(path).text


def test_export_only_when_exportable(client: TestClient) -> None:
    create(client, "open", "aez", exportable=True)
    create(client, "closed", "aez")
    exported = client.get("/v1/keys/open/export").json()
    assert len(base64.b64decode(exported["secret"])) == 48
    refused = client.get("/v1/keys/closed/export")
    assert refused.status_code == 403
    assert refused.json()["type"] == "urn:cipherd:problem:not-exportable"


def test_bad_creation_requests(client: TestClient) -> None:
    cases = [
        ({"name": "x", "type": "rsa"}, 422),
        ({"name": "bad name", "type": "aez"}, 422),
        ({"name": "-x", "type": "aez"}, 422),
        ({"name": ".x", "type": "aez"}, 422),
        ({"name": "", "type": "aez"}, 422),
        ({"name": "x" * 129, "type": "aez"}, 422),
        ({"name": "x", "type": "aez", "dimension": 4}, 422),
        ({"type": "aez"}, 422),
        ({"name": "x", "type": "aez", "exportable": "maybe"}, 422),
    ]
    for body, status in cases:
        response = client.post("/v1/keys", json=body)
        assert response.status_code == status, (body, response.text)
        assert response.headers["content-type"] == PROBLEM
        assert response.json()["detail"]
    assert client.get("/v1/keys").json()["keys"] == []


def test_a_name_may_begin_with_an_underscore_as_in_transit(client: TestClient) -> None:
    create(client, "_under", "aez")
    assert client.get("/v1/keys/_under").json()["name"] == "_under"
    sealed = client.post("/v1/aez/_under/encrypt", json={"plaintext": "aGk="})
    assert sealed.status_code == 200, sealed.text
    opened = client.post("/v1/aez/_under/decrypt", json={"ciphertext": sealed.json()["ciphertext"]})
    assert opened.json()["plaintext"] == "aGk="
    assert [key["name"] for key in client.get("/v1/keys").json()["keys"]] == ["_under"]


def test_duplicate_name_is_a_conflict_and_keeps_the_first(client: TestClient) -> None:
    first = create(client, "k", "aez", exportable=True)
    response = client.post("/v1/keys", json={"name": "k", "type": "ecies-x25519"})
    assert response.status_code == 409
    assert client.get("/v1/keys/k").json()["type"] == first["type"] == "aez"


def test_malformed_json_is_a_problem(client: TestClient) -> None:
    response = client.post(
        "/v1/keys", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert response.headers["content-type"] == PROBLEM


def test_unknown_path_and_method(client: TestClient) -> None:
    assert client.get("/v1/nothing").status_code == 404
    assert client.put("/v1/keys").status_code == 405


def test_a_rotation_that_loses_a_race_with_delete_and_create_is_a_409(
    client: TestClient, app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name is deleted (a window of 0, destroyed at once) and given to an AEZ key while an
    FE version is being drawn: the FE material must not become version 2 of the AEZ key."""
    services = app.state.services
    monkeypatch.setattr(services.settings, "deletion_min_window_seconds", 0)
    client.post("/v1/keys", json={"name": "k", "type": "ipfe-opt", "dimension": 3})
    fe_type = KEY_TYPES["ipfe-opt"]

    def generate_while_replaced(params: dict) -> tuple[bytes, bytes | None]:
        assert client.delete("/v1/keys/k", params={"window_seconds": 0}).status_code == 202
        services.maintenance.run_once()
        assert client.post("/v1/keys", json={"name": "k", "type": "aez"}).status_code == 201
        return fe_type.generate(params)

    replaced = dataclasses.replace(fe_type, generate=generate_while_replaced)
    monkeypatch.setitem(KEY_TYPES, "ipfe-opt", replaced)
    response = client.post("/v1/keys/k/rotate")
    assert response.status_code == 409
    assert response.json()["type"] == "urn:cipherd:problem:key-changed"
    assert client.get("/v1/keys/k").json()["latest_version"] == 1
    sealed = client.post("/v1/aez/k/encrypt", json={"plaintext": "aGk="})
    assert sealed.status_code == 200
