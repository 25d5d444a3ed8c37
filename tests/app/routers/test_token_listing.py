"""`GET /v1/tokens` a page at a time, by id: a store with 50,000 tokens once answered them all
in one 484 MB body; a page now holds at most `limit` (100 by default, 1,000 at most) and
`next` is the `after` of the following one."""

import pytest
from fastapi.testclient import TestClient

from app.ops import vault_tokens


def _issued(client: TestClient, count: int) -> set[str]:
    made = set()
    for index in range(count):
        answer = client.post("/v1/tokens", json={"keys": [f"k{index}"], "operations": ["read"]})
        assert answer.status_code == 201, answer.text
        made.add(answer.json()["id"])
    return made


def test_the_tokens_are_walked_page_by_page_in_id_order(client: TestClient) -> None:
    made = _issued(client, 5)
    listed: list[str] = []
    after = None
    while True:
        answer = client.get("/v1/tokens", params={"limit": 2} | ({"after": after} if after else {}))
        assert answer.status_code == 200, answer.text
        page = answer.json()
        assert 1 <= len(page["tokens"]) <= 2
        listed += [token["id"] for token in page["tokens"]]
        if page["next"] is None:
            break
        assert page["next"] == page["tokens"][-1]["id"]
        after = page["next"]
    assert listed == sorted(made)
    everything = client.get("/v1/tokens").json()
    assert [t["id"] for t in everything["tokens"]] == sorted(made) and everything["next"] is None


def test_a_page_of_one_hundred_by_default(client: TestClient) -> None:
    made = _issued(client, 101)
    first = client.get("/v1/tokens").json()
    assert len(first["tokens"]) == 100 and first["next"] == sorted(made)[99]
    rest = client.get("/v1/tokens", params={"after": first["next"]}).json()
    assert [t["id"] for t in rest["tokens"]] == sorted(made)[100:] and rest["next"] is None


def test_a_page_out_of_bounds_is_refused_before_any_read(client: TestClient) -> None:
    for query in ({"limit": 0}, {"limit": 1001}, {"after": "not-an-id"}, {"after": "A" * 16}):
        answer = client.get("/v1/tokens", params=query)
        assert answer.status_code == 422, (query, answer.text)
        assert answer.headers["content-type"].startswith("application/problem+json")


def test_only_a_token_manager_lists_them(client: TestClient) -> None:
    reader = client.post("/v1/tokens", json={"keys": ["*"], "operations": ["read"]}).json()
    answer = client.get("/v1/tokens", headers={"Authorization": f"Bearer {reader['token']}"})
    assert answer.status_code == 403, answer.text


def test_vault_s_accessor_listing_is_bounded(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`LIST auth/token/accessors` (hvac's `list_accessors`) lists the live tokens by id, read a
    page at a time, and at most MAX_LISTED_ACCESSORS, saying so when there are more."""
    made = sorted(_issued(client, 5))
    listed = client.get("/v1/auth/token/accessors?list=true")
    assert listed.status_code == 200, listed.text
    assert listed.json()["data"]["keys"] == made and listed.json()["warnings"] is None
    monkeypatch.setattr(vault_tokens, "_ACCESSORS_PAGE", 2)
    monkeypatch.setattr(vault_tokens, "MAX_LISTED_ACCESSORS", 3)
    cut = client.get("/v1/auth/token/accessors?list=true").json()
    assert cut["data"]["keys"] == made[:3]
    assert cut["warnings"] == ["the first 3 listed; GET /v1/tokens pages through them all"]
    assert client.delete(f"/v1/tokens/{made[0]}").status_code == 204
    monkeypatch.setattr(vault_tokens, "MAX_LISTED_ACCESSORS", 10)
    assert client.get("/v1/auth/token/accessors?list=true").json()["data"]["keys"] == made[1:]
