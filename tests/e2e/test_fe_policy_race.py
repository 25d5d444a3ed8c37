"""Two replicas on one PostgreSQL, 16 callers racing for functional keys of one FE key: the
decisions are serialised in the store, so together they never pass the key's budget."""

import base64
import random
import secrets
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.app.ops.test_fe_policy import rank_over_q
from tests.e2e.server import Server, running

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

N, MAX_RANK, CALLERS, PER_CALLER = 12, 7, 16, 3


@pytest.fixture
def replicas(tmp_path: Path, postgres_url: str) -> Iterator[tuple[Server, Server]]:
    env = {
        "CIPHERD_DATABASE_URL": postgres_url,
        "CIPHERD_ROOT_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
        "CIPHERD_ADMIN_TOKEN": "replica-admin-" + secrets.token_urlsafe(16),
    }
    with running(tmp_path / "a", env=env) as first, running(tmp_path / "b", env=env) as second:
        yield first, second


def test_racing_callers_never_pass_the_budget(replicas: tuple[Server, Server]) -> None:
    first, second = replicas
    with first.client() as admin:
        created = admin.post(
            "/v1/keys",
            json={
                "name": "fe",
                "type": "ipfe-opt",
                "dimension": N,
                "fe_policy": {"max_rank": MAX_RANK},
            },
        )
        assert created.status_code == 201, created.text
    rng = random.Random(11)
    asked = [
        [[rng.randint(-50, 50) for _ in range(N)] for _ in range(PER_CALLER)]
        for _ in range(CALLERS)
    ]

    def caller(index: int) -> list[tuple[list[int], int, str]]:
        server = (first, second)[index % 2]
        outcomes = []
        with server.client() as client:
            for y in asked[index]:
                response = client.post("/v1/fe/fe/keygen", json={"y": y})
                outcomes.append((y, response.status_code, response.json().get("type", "")))
        return outcomes

    with ThreadPoolExecutor(CALLERS) as pool:
        outcomes = [o for result in pool.map(caller, range(CALLERS)) for o in result]
    released = [y for y, status, _ in outcomes if status == 200]
    refused = [(status, kind) for _, status, kind in outcomes if status != 200]
    assert rank_over_q(released) <= MAX_RANK
    assert len(released) == MAX_RANK  # random vectors: independent until the budget is spent
    assert set(refused) == {(403, "urn:cipherd:problem:leakage-budget-exceeded")}
    with second.client() as admin:
        ledger = admin.get("/v1/fe/fe/functions").json()
    assert sorted(f["function"] for f in ledger["functions"]) == sorted(released)
    assert ledger["rank"] == rank_over_q([f["function"] for f in ledger["functions"]]) == MAX_RANK
