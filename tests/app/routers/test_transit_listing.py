"""Transit's `LIST keys` for a narrow token: the store is asked for the keys the token may read,
not for every key of the store, whose other tenants' keys once cost it 0.42 s a listing among
50,000; the answer is the same."""

from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient


def _listed(client: TestClient, token: str) -> Any:
    answer = client.get("/v1/transit/keys?list=true", headers={"X-Vault-Token": token})
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]["keys"]


def test_a_narrow_token_lists_its_keys_from_its_own_patterns(
    app: FastAPI, client: TestClient
) -> None:
    admin = client.headers.pop("Authorization").removeprefix("Bearer ")
    for name in ("orders-1", "orders-2", "payroll", "other-1"):
        made = client.post(f"/v1/transit/keys/{name}", headers={"X-Vault-Token": admin})
        assert made.status_code in (200, 204), made.text
    scoped = {"keys": ["orders-*", "payroll"], "operations": ["read"]}
    reader = client.post("/v1/tokens", json=scoped, headers={"Authorization": f"Bearer {admin}"})
    assert reader.status_code == 201, reader.text
    store = app.state.services.store
    asked: list[Any] = []
    real_list = store.keys.list

    def spied(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs.get("scope"))
        return real_list(*args, **kwargs)

    store.keys.list = spied
    assert _listed(client, reader.json()["token"]) == ["orders-1", "orders-2", "payroll"]
    assert asked == [[(("orders-*", "payroll"), ())]]  # its own, of the rules that give read
    assert _listed(client, admin) == ["orders-1", "orders-2", "other-1", "payroll"]
    assert asked[-1] is None  # the admin: every key of the mount
