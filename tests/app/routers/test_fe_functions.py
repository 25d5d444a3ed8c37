"""FE function policies over HTTP: the unit-vector attack, allowlists, quotas, entry bounds,
QFE matrices, batch keygen and the ledger, listed in pages on SQLite and PostgreSQL."""

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.store import pages as weighed
from tests.app.ops.test_fe_policy import rank_over_q
from tests.conftest import ADMIN_TOKEN, STORES


@pytest.fixture(params=STORES)
def admin(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestClient]:
    """The service with the admin token, on SQLite and on PostgreSQL (keygen in the worker)."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    settings = Settings(
        data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, database_url=url, fe_processes=0
    )
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(settings), headers=headers) as client:
        yield client


def create(client: TestClient, name: str, key_type: str, n: int, policy: dict | None) -> dict:
    body = {"name": name, "type": key_type, "dimension": n}
    if policy is not None:
        body["fe_policy"] = policy
    response = client.post("/v1/keys", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def unit(n: int, i: int) -> list[int]:
    return [int(j == i) for j in range(n)]


def ledger_rank(client: TestClient, name: str) -> tuple[dict, int]:
    ledger = client.get(f"/v1/fe/{name}/functions").json()
    vectors = [
        [entry for row in f["function"] for entry in row]
        if isinstance(f["function"][0], list)
        else f["function"]
        for f in ledger["functions"]
    ]
    return ledger, rank_over_q(vectors)


@pytest.mark.parametrize("key_type", ["ipfe-opt", "ipfe-lin", "ipfe-bjk"])
def test_the_unit_vector_attack_stops_at_the_budget(client: TestClient, key_type: str) -> None:
    n = 5
    key = create(client, "fe", key_type, n, {"max_rank": n - 2})
    assert key["fe_policy"]["max_rank"] == n - 2
    assert client.get("/v1/keys/fe").json()["fe_policy"] == key["fe_policy"]
    answers = [client.post("/v1/fe/fe/keygen", json={"y": unit(n, i)}) for i in range(n)]
    assert [a.status_code for a in answers] == [200] * (n - 2) + [403, 403]
    for refused in answers[n - 2 :]:
        problem = refused.json()
        assert problem["type"] == "urn:cipherd:problem:leakage-budget-exceeded"
        assert f"max_rank is {n - 2}" in problem["detail"]
        assert "functional_key" not in problem
    # In the span of what was released: nothing new, served.
    for y in ([1, 1, 0, 0, 0], [0, -7, 3, 0, 0], [0, 0, 0, 0, 0]):
        assert client.post("/v1/fe/fe/keygen", json={"y": y}).status_code == 200
    assert client.post("/v1/fe/fe/keygen", json={"y": [1, 0, 0, 1, 0]}).status_code == 403
    ledger, rank = ledger_rank(client, "fe")
    assert ledger["rank"] == rank == n - 2 and ledger["max_rank"] == n - 2
    assert len(ledger["functions"]) == n - 2 + 3  # each release once, no refusal
    assert [f["rank"] for f in ledger["functions"]] == [1, 2, 3, 3, 3, 3]
    assert {f["principal"] for f in ledger["functions"]} == {"admin"}


def test_batch_keygen_decides_item_by_item_in_order(client: TestClient) -> None:
    create(client, "fe", "ipfe-opt", 4, {"max_rank": 2})
    items = [
        {"y": y} for y in ([1, 0, 0, 0], [2, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [1, 1, 0, 0])
    ]
    results = client.post("/v1/fe/fe/keygen/batch", json={"items": items}).json()["results"]
    assert ["functional_key" in r for r in results] == [True, True, True, False, True]
    assert results[3]["error"]["type"] == "urn:cipherd:problem:leakage-budget-exceeded"
    ledger, rank = ledger_rank(client, "fe")
    assert rank == ledger["rank"] == 2 and len(ledger["functions"]) == 4


def test_quadratic_matrices_count_as_vectors_of_n_squared(client: TestClient) -> None:
    create(client, "q", "qfe-sgp", 2, {"max_rank": 2})
    identity, swap, other = [[1, 0], [0, 1]], [[0, 1], [1, 0]], [[1, 0], [0, 0]]
    assert client.post("/v1/fe/q/keygen", json={"f": identity}).status_code == 200
    assert client.post("/v1/fe/q/keygen", json={"f": swap}).status_code == 200
    assert client.post("/v1/fe/q/keygen", json={"f": [[2, 3], [3, 2]]}).status_code == 200
    assert client.post("/v1/fe/q/keygen", json={"f": other}).status_code == 403
    assert ledger_rank(client, "q")[1] == 2


def test_allowlist_entry_bound_and_quota(client: TestClient) -> None:
    policy = {
        "allowed_functions": [[1, 1, 1]],
        "allow_multiples": True,
        "max_abs_entry": 5,
        "keygen_quota": {"count": 2, "period_seconds": 3600},
    }
    create(client, "fe", "ipfe-kks", 3, policy)
    token = client.post("/v1/tokens", json={"keys": ["fe"], "operations": ["keygen", "read"]})
    analyst = {"Authorization": f"Bearer {token.json()['token']}"}
    refused = client.post("/v1/fe/fe/keygen", json={"y": [1, 2, 3]}, headers=analyst)
    assert (refused.status_code, refused.json()["type"]) == (
        403,
        "urn:cipherd:problem:function-not-allowed",
    )
    too_big = client.post("/v1/fe/fe/keygen", json={"y": [6, 6, 6]}, headers=analyst)
    assert too_big.status_code == 403 and "max_abs_entry" in too_big.json()["detail"]
    for y in ([1, 1, 1], [-2, -2, -2]):
        assert client.post("/v1/fe/fe/keygen", json={"y": y}, headers=analyst).status_code == 200
    over = client.post("/v1/fe/fe/keygen", json={"y": [1, 1, 1]}, headers=analyst)
    assert over.status_code == 429 and over.headers["Retry-After"]
    assert over.json()["type"] == "urn:cipherd:problem:keygen-quota-exceeded"
    assert client.post("/v1/fe/fe/keygen", json={"y": [3, 3, 3]}).status_code == 200  # admin
    ledger = client.get("/v1/fe/fe/functions", headers=analyst)
    assert ledger.status_code == 200 and len(ledger.json()["functions"]) == 3


def test_policies_are_checked_at_creation(client: TestClient) -> None:
    for body, where in (
        ({"type": "aez", "fe_policy": {"max_rank": 1}}, "fe_policy: only FE key types"),
        (
            {"type": "ipfe-opt", "dimension": 3, "fe_policy": {"allowed_functions": [[1, 2]]}},
            "fe_policy.allowed_functions.0: needs 3 entries",
        ),
        (
            {"type": "qfe-sgp", "dimension": 2, "fe_policy": {"allowed_functions": [[1, 2]]}},
            "needs an 2×2 matrix",
        ),
        ({"type": "ipfe-opt", "dimension": 3, "fe_policy": {"max_rank": -1}}, "max_rank"),
        ({"type": "ipfe-opt", "dimension": 3, "fe_policy": {"budget": 1}}, "budget"),
    ):
        response = client.post("/v1/keys", json={"name": "k", **body})
        assert response.status_code == 422 and where in response.json()["detail"], response.text
    assert client.get("/v1/keys").json()["keys"] == []


def test_without_a_policy_every_release_is_still_in_the_ledger(client: TestClient) -> None:
    create(client, "fe", "ipfe-tao", 3, None)
    for y in ([1, 0, 0], [0, 1, 0], [1, 1, 0]):
        assert client.post("/v1/fe/fe/keygen", json={"y": y}).status_code == 200
    ledger, rank = ledger_rank(client, "fe")
    assert (ledger["rank"], rank, ledger["max_rank"]) == (2, 2, None)
    client.post("/v1/keys/fe/rotate").raise_for_status()
    assert client.get("/v1/fe/fe/functions").json()["functions"] == []  # the new version's
    assert len(client.get("/v1/fe/fe/functions?key_version=1").json()["functions"]) == 3


def test_a_disabled_keys_ledger_stays_readable(client: TestClient) -> None:
    """Disabling a key refuses its uses, not the reading of what it released: an auditor reads
    the ledger of a key disabled for a suspected leak. It was a 409 key-disabled."""
    create(client, "fe", "ipfe-opt", 2, None)
    assert client.post("/v1/fe/fe/keygen", json={"y": [1, 2]}).status_code == 200
    client.patch("/v1/keys/fe", json={"enabled": False}).raise_for_status()
    refused = client.post("/v1/fe/fe/keygen", json={"y": [2, 1]})
    assert (refused.status_code, refused.json()["type"]) == (
        409,
        "urn:cipherd:problem:key-disabled",
    )
    listed = client.get("/v1/fe/fe/functions")
    assert listed.status_code == 200, listed.text
    assert [f["function"] for f in listed.json()["functions"]] == [[1, 2]]


def test_a_large_quadratic_key_keeps_a_bounded_ledger(client: TestClient) -> None:
    """Released 128×128 matrices took a basis row each of ever longer integers, read and
    written whole at every keygen (the 26th took 6 s): a basis holds 65,536 entries at most,
    4 rows here, and the rank it shows past them is a lower bound."""
    create(client, "q", "qfe-sgp", 128, None)
    rng = random.Random(9)
    for _ in range(6):
        f = [[rng.randint(-(2**63), 2**63 - 1) for _ in range(128)] for _ in range(128)]
        assert client.post("/v1/fe/q/keygen", json={"f": f}).status_code == 200
    ledger = client.get("/v1/fe/q/functions").json()
    assert [f["rank"] for f in ledger["functions"]] == [1, 2, 3, 4, 4, 4]
    assert ledger["rank"] == 4 and ledger["max_rank"] is None


def test_a_policy_has_a_size_bound(client: TestClient) -> None:
    """900 allowed 128×128 matrices (30 MB) made every later use of the key take seconds:
    65,536 entries in all, 64-bit each, at creation and at PATCH."""
    matrix = [[1] * 128 for _ in range(128)]
    body = {"name": "q", "type": "qfe-sgp", "dimension": 128}
    over = client.post("/v1/keys", json={**body, "fe_policy": {"allowed_functions": [matrix] * 5}})
    assert over.status_code == 422, over.text[:300]
    assert "81,920 entries in all, over the 65,536" in over.json()["detail"]
    huge = {"name": "v", "type": "ipfe-opt", "dimension": 2}
    huge["fe_policy"] = {"allowed_functions": [[2**63, 1]]}
    refused = client.post("/v1/keys", json=huge)
    assert refused.status_code == 422 and "64-bit" in refused.json()["detail"]
    assert client.get("/v1/keys").json()["keys"] == []
    policy = {"allowed_functions": [matrix] * 4}
    assert client.post("/v1/keys", json={**body, "fe_policy": policy}).status_code == 201
    patched = client.patch(
        "/v1/keys/q", json={"fe_policy": {"allowed_functions": [matrix] * 4 + [[[2] * 128]]}}
    )
    assert patched.status_code == 422 and "65,664 entries" in patched.json()["detail"]
    assert client.get("/v1/keys/q").json()["fe_policy"]["allowed_functions"] == [matrix] * 4


def test_a_max_rank_past_what_the_key_tracks_is_refused(client: TestClient) -> None:
    """A 128×128 quadratic key's ledger holds 4 functions of 16,384 entries: a larger bound
    short of the whole space could not be kept, and is refused rather than kept stricter."""
    body = {"name": "q", "type": "qfe-sgp", "dimension": 128}
    over = client.post("/v1/keys", json={**body, "fe_policy": {"max_rank": 5}})
    assert over.status_code == 422, over.text
    assert "tracks a rank of at most 4 (or 16384" in over.json()["detail"]
    for taken in (4, 16384):
        name = f"q{taken}"
        made = client.post(
            "/v1/keys", json={**body, "name": name, "fe_policy": {"max_rank": taken}}
        )
        assert made.status_code == 201, made.text
    patched = client.patch("/v1/keys/q4", json={"fe_policy": {"max_rank": 100}})
    assert patched.status_code == 422, patched.text


# Five releases of 9 bytes each as stored ("[1, 0, 0]"), and the rank after each.
RELEASED = [[1, 0, 0], [2, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1]]
RANKS = [1, 1, 2, 2, 3]


def pages(client: TestClient, query: str) -> list[tuple[list[list[int]], int | None, int]]:
    """Every page of the ledger of key `fe`, each as its functions, `next` and rank."""
    read, after = [], 0
    while True:
        answer = client.get(f"/v1/fe/fe/functions?after={after}&{query}")
        assert answer.status_code == 200, answer.text
        page = answer.json()
        read.append(([f["function"] for f in page["functions"]], page["next"], page["rank"]))
        if page["next"] is None:
            return read
        after = page["next"]


def release(client: TestClient) -> None:
    create(client, "fe", "ipfe-opt", 3, None)
    for y in RELEASED:
        assert client.post("/v1/fe/fe/keygen", json={"y": y}).status_code == 200


def test_the_ledger_is_listed_in_pages(admin: TestClient) -> None:
    """`limit` functions a page, `next` the following page's `after`; each page has the rank
    of the whole version, not of the functions it shows."""
    release(admin)
    assert pages(admin, "limit=2") == [
        (RELEASED[:2], 2, 3),
        (RELEASED[2:4], 4, 3),
        (RELEASED[4:], None, 3),
    ]
    whole = admin.get("/v1/fe/fe/functions").json()
    assert [f["rank"] for f in whole["functions"]] == RANKS and whole["next"] is None
    past = admin.get("/v1/fe/fe/functions?after=5").json()
    assert (past["functions"], past["next"], past["rank"], past["key_version"]) == ([], None, 3, 1)
    admin.post("/v1/keys/fe/rotate").raise_for_status()
    assert pages(admin, "key_version=1&limit=3") == [(RELEASED[:3], 3, 3), (RELEASED[3:], None, 3)]
    assert pages(admin, "") == [([], None, 0)]  # the new version's


def test_a_page_stops_after_the_function_that_reaches_its_bytes(
    admin: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page weighs the functions as stored, and stops after the one that brings them to
    the budget (4 MiB; 20 bytes here, crossed by the third)."""
    assert weighed.PAGE_BYTES == 4 * 2**20
    release(admin)
    monkeypatch.setattr(weighed, "PAGE_BYTES", 20)
    assert pages(admin, "limit=1000") == [(RELEASED[:3], 3, 3), (RELEASED[3:], None, 3)]
    assert pages(admin, "limit=1") == [([y], at + 1, 3) for at, y in enumerate(RELEASED[:4])] + [
        (RELEASED[4:], None, 3)
    ]


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ("after=-1", "greater than or equal to 0"),
        ("after=abc", "a valid integer"),
        ("after=1.5", "a valid integer"),
        ("after=" + "9" * 30, f"less than or equal to {2**63 - 1}"),
        (f"after={2**63}", f"less than or equal to {2**63 - 1}"),
        ("limit=0", "greater than or equal to 1"),
        ("limit=1001", "less than or equal to 1000"),
        ("limit=x", "a valid integer"),
    ],
)
def test_a_bad_page_is_a_422(admin: TestClient, query: str, why: str) -> None:
    """A position past what the store's integers hold is refused here, not by the driver."""
    create(admin, "fe", "ipfe-opt", 3, None)
    answer = admin.get(f"/v1/fe/fe/functions?{query}")
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"].startswith(f"query.{query.split('=')[0]}: Input should be")
    assert why in answer.json()["detail"]


def test_the_largest_after_is_an_empty_last_page(admin: TestClient) -> None:
    release(admin)
    answer = admin.get(f"/v1/fe/fe/functions?after={2**63 - 1}&limit=1000")
    assert answer.status_code == 200, answer.text
    assert (answer.json()["functions"], answer.json()["next"], answer.json()["rank"]) == (
        [],
        None,
        3,
    )
