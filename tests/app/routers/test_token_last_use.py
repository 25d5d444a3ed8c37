"""A token's last use revokes it, yet the request that spends it still answers for the token:
its own lookup shows no use left and its own revocation succeeds; the next request is a 401."""

from fastapi.testclient import TestClient

SELF = {"keys": ["orders-*"], "operations": ["encrypt"]}


def limited(client: TestClient, uses: int) -> dict[str, str]:
    made = client.post("/v1/tokens", json={**SELF, "num_uses": uses})
    assert made.status_code == 201, made.text
    return {"Authorization": f"Bearer {made.json()['token']}"}


def test_the_last_use_looks_the_token_up(client: TestClient) -> None:
    headers = limited(client, 2)
    first, last = (client.get("/v1/tokens/self", headers=headers) for _ in range(2))
    assert (first.status_code, last.status_code) == (200, 200), last.text
    assert (first.json()["uses_left"], last.json()["uses_left"]) == (1, 0)
    assert first.json()["id"] == last.json()["id"]
    assert client.get("/v1/tokens/self", headers=headers).status_code == 401
    assert client.get(f"/v1/tokens/{first.json()['id']}").status_code == 404


def test_the_last_use_revokes_the_token_itself(client: TestClient) -> None:
    headers = limited(client, 1)
    revoked = client.delete("/v1/tokens/self", headers=headers)
    assert revoked.status_code == 204, revoked.text
    assert client.get("/v1/tokens/self", headers=headers).status_code == 401
