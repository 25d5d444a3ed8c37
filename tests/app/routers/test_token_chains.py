"""A token a stored token makes stays within its maker's life: none from a token with a use
count (as Vault refuses), none that outlives its maker or outpaces its rate, and none deeper
than a revocation of the chain reaches."""

from datetime import datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.ops import tokens
from app.store.tokens import MAX_DEPTH

MAKER = {"rules": [{"keys": ["orders-*"], "operations": ["encrypt"]}], "admin": ["tokens"]}


def made(client: TestClient, by: str | None = None, **body: Any) -> Any:
    headers = {} if by is None else {"Authorization": f"Bearer {by}"}
    return client.post("/v1/tokens", headers=headers, json={"policies": ["maker"], **body})


def when(text: str | None) -> float | None:
    return None if text is None else datetime.fromisoformat(text).timestamp()


def test_a_token_made_by_a_token_stays_within_its_makers_life(client: TestClient) -> None:
    assert client.post("/v1/policies/maker", json=MAKER).status_code == 200
    limited = made(client, ttl_seconds=60, rate_per_second=20).json()
    for body in ({}, {"ttl_seconds": 3600, "rate_per_second": 50}, {"orphan": True}):
        child = made(client, limited["token"], **body)
        assert child.status_code == 201, child.text
        record = child.json()
        expires_at = when(record["expires_at"])
        assert expires_at is not None and expires_at <= when(limited["expires_at"])  # type: ignore[operator]
        assert record["rate_per_second"] == 20
    slower = made(client, limited["token"], rate_per_second=0.5).json()
    assert slower["rate_per_second"] == 0.5
    counted = made(client, num_uses=5).json()
    refused = made(client, counted["token"])
    assert refused.status_code == 422, refused.text
    assert "restricted use token cannot generate child tokens" in refused.json()["detail"]


def test_a_chain_is_no_deeper_than_a_revocation_reaches(client: TestClient) -> None:
    assert client.post("/v1/policies/maker", json=MAKER).status_code == 200
    chain = [made(client).json()["token"]]
    while True:
        child = made(client, chain[-1])
        if child.status_code != 201:
            break
        chain.append(child.json()["token"])
    assert child.status_code == 422, child.text
    assert "at most 64 deep" in child.json()["detail"]
    assert len(chain) == MAX_DEPTH
    # Revoking the first revokes every one, the deepest too.
    first = client.get("/v1/tokens/self", headers={"Authorization": f"Bearer {chain[0]}"}).json()
    assert client.delete(f"/v1/tokens/{first['id']}").status_code == 204
    for token in (chain[1], chain[-1]):
        answer = client.get("/v1/tokens/self", headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 401


def test_a_token_revoked_while_it_makes_a_child_makes_none(
    admin_on_both_stores: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A maker revoked after its checks passed but before its child is stored: the child is
    refused as the revoked maker itself would be, not stored under a parent that is gone
    (which the revocation, already done, would never reach)."""
    client = admin_on_both_stores
    assert client.post("/v1/policies/maker", json=MAKER).status_code == 200
    maker = made(client).json()
    store = client.app.state.services.store  # type: ignore[attr-defined]
    mint = tokens.mint

    def revoked_first(*args: Any, **kwargs: Any) -> Any:
        assert store.tokens.delete(maker["id"]) == [maker["id"]]
        return mint(*args, **kwargs)

    monkeypatch.setattr(tokens, "mint", revoked_first)
    child = made(client, maker["token"])
    assert child.status_code == 403, child.text
    assert "unknown, revoked or expired" in child.json()["detail"]
    monkeypatch.undo()
    assert client.get("/v1/tokens").json()["tokens"] == []
    late = made(client, maker["token"])  # and the maker itself is refused
    assert late.status_code == 401, late.text


def test_a_tokens_numbers_and_switches_are_read_strictly(client: TestClient) -> None:
    """`"ttl_seconds": true` is no TTL of one second, nor `"1"` a number."""
    base = {"keys": ["orders-*"], "operations": ["encrypt"]}
    for field, value in (
        ("ttl_seconds", True),
        ("ttl_seconds", "1"),
        ("rate_per_second", True),
        ("num_uses", "2"),
        ("orphan", "true"),
    ):
        answer = client.post("/v1/tokens", json={**base, field: value})
        assert answer.status_code == 422, (field, value, answer.text)
    assert client.post("/v1/tokens", json={**base, "rate_per_second": 3}).status_code == 201
