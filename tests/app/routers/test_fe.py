"""Functional encryption over HTTP, for all eight schemes."""

import base64
import random
import threading

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY

from core.fe import group
from core.fe.qfe import bcfg, sgp
from core.fe.schemes import SCHEMES as FE_SCHEMES

IPFE = [t for t, s in FE_SCHEMES.items() if not s.quadratic]
QFE = [t for t, s in FE_SCHEMES.items() if s.quadratic]
N = 3


def make_key(
    client: TestClient, key_type: str, n: int = N, name: str = "fe", curve: str | None = None
) -> None:
    body = {"name": name, "type": key_type, "dimension": n}
    if curve is not None:
        body["curve"] = curve
    response = client.post("/v1/keys", json=body)
    assert response.status_code == 201, response.text


def function_body(key_type: str, rng: random.Random, n: int = N) -> tuple[dict, object]:
    if FE_SCHEMES[key_type].quadratic:
        f = [[rng.randint(-5, 5) for _ in range(n)] for _ in range(n)]
        return {"f": f}, f
    y = [rng.randint(-9, 9) for _ in range(n)]
    return {"y": y}, y


def message_body(key_type: str, rng: random.Random, n: int = N) -> tuple[dict, tuple]:
    x = [rng.randint(-9, 9) for _ in range(n)]
    if FE_SCHEMES[key_type].quadratic:
        y = [rng.randint(-9, 9) for _ in range(n)]
        return {"x": x, "y": y}, (x, y)
    return {"x": x}, (x,)


def expected(function: object, message: tuple) -> int:
    if len(message) == 2:
        x, y = message
        return sum(x[i] * function[i][j] * y[j] for i in range(len(x)) for j in range(len(y)))
    return sum(a * b for a, b in zip(function, message[0], strict=True))


def decrypt(client: TestClient, key: str, ct: str, bounds: list[int], name: str = "fe", **kw):
    return client.post(
        f"/v1/fe/{name}/decrypt",
        json={"functional_key": key, "ciphertext": ct, "bounds": bounds, **kw},
    )


@pytest.mark.parametrize("curve", [None, *group.CURVES])
@pytest.mark.parametrize("key_type", list(FE_SCHEMES))
def test_keygen_encrypt_decrypt(client: TestClient, key_type: str, curve: str | None) -> None:
    rng = random.Random(key_type)
    make_key(client, key_type, curve=curve)
    info = client.get("/v1/keys/fe").json()
    assert info["curve"] == (curve or group.BLS12_381)
    for _ in range(3):
        fbody, function = function_body(key_type, rng)
        mbody, message = message_body(key_type, rng)
        key = client.post("/v1/fe/fe/keygen", json=fbody).json()
        ct = client.post("/v1/fe/fe/encrypt", json=mbody).json()
        assert key["key_version"] == ct["key_version"] == 1
        value = expected(function, message)
        # Twice: the second decryption runs with a cached, prepared key.
        for _ in range(2):
            result = decrypt(client, key["functional_key"], ct["ciphertext"], [-1000, 1000])
            assert result.json() == {"result": value}
        outside = decrypt(client, key["functional_key"], ct["ciphertext"], [value + 1, value + 50])
        assert outside.json() == {"result": None}


@pytest.mark.parametrize("key_type", list(FE_SCHEMES))
def test_batches_and_one_key_many_ciphertexts(client: TestClient, key_type: str) -> None:
    rng = random.Random(1)
    make_key(client, key_type)
    functions = [function_body(key_type, rng) for _ in range(2)]
    messages = [message_body(key_type, rng) for _ in range(3)]
    keys = client.post("/v1/fe/fe/keygen/batch", json={"items": [f for f, _ in functions]})
    cts = client.post("/v1/fe/fe/encrypt/batch", json={"items": [m for m, _ in messages]})
    keys, cts = keys.json()["results"], cts.json()["results"]
    many = client.post(
        "/v1/fe/fe/decrypt/many",
        json={
            "functional_key": keys[0]["functional_key"],
            "bounds": [-1000, 1000],
            "ciphertexts": [c["ciphertext"] for c in cts] + ["AAAA"],
        },
    ).json()["results"]
    assert [r["result"] for r in many[:3]] == [expected(functions[0][1], m) for _, m in messages]
    assert many[3]["error"]["status"] == 422
    items = [
        {
            "functional_key": k["functional_key"],
            "ciphertext": c["ciphertext"],
            "bounds": [-1000, 1000],
        }
        for k in keys
        for c in cts
    ]
    batch = client.post("/v1/fe/fe/decrypt/batch", json={"items": items}).json()["results"]
    assert [r["result"] for r in batch] == [
        expected(f, m) for _, f in functions for _, m in messages
    ]


@pytest.mark.parametrize("key_type", ["ipfe-tao", "ipfe-opt", "ipfe-kim", "qfe-sgp"])
def test_each_version_serves_its_own_keys_and_ciphertexts(
    client: TestClient, key_type: str
) -> None:
    """Old versions keep working after a rotation; a key and a ciphertext of different versions,
    which would decrypt to no value (`null`, read as "outside the bounds"), are refused."""
    rng = random.Random(2)
    make_key(client, key_type)
    fbody, function = function_body(key_type, rng)
    mbody, message = message_body(key_type, rng)
    value = expected(function, message)
    key1 = client.post("/v1/fe/fe/keygen", json=fbody).json()["functional_key"]
    ct1 = client.post("/v1/fe/fe/encrypt", json=mbody).json()["ciphertext"]
    assert client.post("/v1/keys/fe/rotate").json()["latest_version"] == 2
    again = client.post("/v1/fe/fe/keygen", json={**fbody, "key_version": 1}).json()
    assert again["key_version"] == 1
    result = decrypt(client, key1, ct1, [-1000, 1000], key_version=1)
    assert result.json() == {"result": value}
    key2 = client.post("/v1/fe/fe/keygen", json=fbody).json()
    assert key2["key_version"] == 2
    ct2 = client.post("/v1/fe/fe/encrypt", json=mbody).json()["ciphertext"]
    mismatched = decrypt(client, key2["functional_key"], ct1, [-1000, 1000])
    assert mismatched.status_code == 422, mismatched.text
    assert mismatched.json()["type"] == "urn:cipherd:problem:key-mismatch"
    many = client.post(
        "/v1/fe/fe/decrypt/many",
        json={
            "functional_key": key1,
            "bounds": [-1000, 1000],
            "ciphertexts": [ct1, ct2],
            "key_version": 1,
        },
    ).json()["results"]
    assert many[0]["result"] == value
    assert many[1]["error"]["type"] == "urn:cipherd:problem:key-mismatch"
    if key_type == "ipfe-tao":  # decrypted with the base of the version named, the latest here
        stale = decrypt(client, key1, ct1, [-1000, 1000])
        assert stale.json()["type"] == "urn:cipherd:problem:key-mismatch"
        assert "pass its key_version" in stale.json()["detail"]
        assert "not made under version 2 of key 'fe'" in stale.json()["detail"]


@pytest.mark.parametrize("key_type", QFE)
def test_anyone_encrypts_with_the_public_key(client: TestClient, key_type: str) -> None:
    make_key(client, key_type)
    public = base64.b64decode(client.get("/v1/keys/fe/public").json()["public_key"])
    module = {"qfe-sgp": sgp, "qfe-bcfg": bcfg}[key_type]
    ct = module.encrypt(module.PublicKey.from_bytes(public), [1, 2, 3], [4, 5, 6]).to_bytes()
    f = [[1, 0, 2], [0, -1, 0], [3, 1, 1]]
    key = client.post("/v1/fe/fe/keygen", json={"f": f}).json()["functional_key"]
    result = decrypt(client, key, base64.b64encode(ct).decode(), [-1000, 1000])
    assert result.json() == {"result": expected(f, ([1, 2, 3], [4, 5, 6]))}


def test_tao_publishes_its_decryption_base(client: TestClient) -> None:
    make_key(client, "ipfe-tao")
    base = base64.b64decode(client.get("/v1/keys/fe/public").json()["public_key"])
    assert len(base) == group.GT_BYTES
    group.gt_from_bytes(base)


@pytest.mark.parametrize("key_type", list(FE_SCHEMES))
def test_wrong_shapes_are_422(client: TestClient, key_type: str) -> None:
    make_key(client, key_type)
    quadratic = FE_SCHEMES[key_type].quadratic
    bad_functions = (
        [{"f": [[1, 2, 3]] * 2}, {"f": [[1, 2]] * 3}, {"y": [1, 2, 3]}]
        if quadratic
        else [{"y": [1, 2]}, {"y": [1, 2, 3, 4]}, {"f": [[1, 2, 3]] * 3}]
    )
    bad_messages = (
        [{"x": [1, 2], "y": [1, 2, 3]}, {"x": [1, 2, 3], "y": [1, 2, 3, 4]}, {"x": [1, 2, 3]}]
        if quadratic
        else [{"x": [1, 2]}, {"x": [1, 2, 3], "y": [1, 2, 3]}]
    )
    for body in [*bad_functions, {}, {"y": [1, 2, 3], "f": [[1]]}, {"y": [2**63, 0, 0]}]:
        response = client.post("/v1/fe/fe/keygen", json=body)
        assert response.status_code == 422, (body, response.text)
    for body in [*bad_messages, {"x": [1.5, 2, 3]}, {"x": ["1", 2, 3]}]:
        response = client.post("/v1/fe/fe/encrypt", json=body)
        assert response.status_code == 422, (body, response.text)


def test_key_and_ciphertext_of_other_dimensions_are_refused(client: TestClient) -> None:
    make_key(client, "ipfe-opt", n=3, name="three")
    make_key(client, "ipfe-opt", n=2, name="two")
    key3 = client.post("/v1/fe/three/keygen", json={"y": [1, 2, 3]}).json()["functional_key"]
    ct2 = client.post("/v1/fe/two/encrypt", json={"x": [1, 2]}).json()["ciphertext"]
    assert decrypt(client, key3, ct2, [0, 10], name="three").status_code == 422
    assert decrypt(client, key3, ct2, [0, 10], name="two").status_code == 422


def test_tampered_and_foreign_bytes_are_refused(client: TestClient) -> None:
    make_key(client, "ipfe-opt")
    make_key(client, "ipfe-lin", name="lin")
    key = client.post("/v1/fe/fe/keygen", json={"y": [1, 2, 3]}).json()["functional_key"]
    ct = client.post("/v1/fe/fe/encrypt", json={"x": [1, 2, 3]}).json()["ciphertext"]
    raw_ct = bytearray(base64.b64decode(ct))
    raw_ct[-5] ^= 0x40  # a coordinate of the last point: off the curve or subgroup
    lin_key = client.post("/v1/fe/lin/keygen", json={"y": [1, 2, 3]}).json()["functional_key"]
    cases = [
        (key, base64.b64encode(bytes(raw_ct)).decode()),
        (key, base64.b64encode(base64.b64decode(ct)[:-1]).decode()),
        (lin_key, ct),
        (key, "@@@"),
    ]
    for functional_key, ciphertext in cases:
        response = decrypt(client, functional_key, ciphertext, [0, 100])
        assert response.status_code == 422, response.text
        assert response.headers["content-type"] == "application/problem+json"


def test_limits_are_checked_before_work(client: TestClient, app: FastAPI) -> None:
    settings = app.state.services.settings
    too_big = client.post(
        "/v1/keys",
        json={"name": "big", "type": "ipfe-opt", "dimension": settings.fe_max_dimension + 1},
    )
    assert too_big.status_code == 422
    assert "CIPHERD_FE_MAX_DIMENSION" in too_big.json()["detail"]
    for body in (
        {"name": "x", "type": "ipfe-opt"},
        {"name": "x", "type": "qfe-sgp", "dimension": 0},
    ):
        assert client.post("/v1/keys", json=body).status_code == 422
    make_key(client, "ipfe-opt")
    key = client.post("/v1/fe/fe/keygen", json={"y": [1, 2, 3]}).json()["functional_key"]
    ct = client.post("/v1/fe/fe/encrypt", json={"x": [1, 2, 3]}).json()["ciphertext"]
    wide = decrypt(client, key, ct, [0, settings.fe_max_range + 1])
    assert wide.status_code == 422 and "CIPHERD_FE_MAX_RANGE" in wide.json()["detail"]
    assert decrypt(client, key, ct, [5, 1]).status_code == 422
    assert decrypt(client, key, ct, [1]).status_code == 422


def test_wrong_key_type_is_409(client: TestClient) -> None:
    client.post("/v1/keys", json={"name": "sym", "type": "aez"})
    response = client.post("/v1/fe/sym/keygen", json={"y": [1]})
    assert response.status_code == 409
    make_key(client, "ipfe-opt")
    response = client.post("/v1/aez/fe/encrypt", json={"plaintext": ""})
    assert response.status_code == 409


def test_keygen_encrypt_and_decrypt_are_separate_scopes(client: TestClient, app: FastAPI) -> None:
    make_key(client, "ipfe-opt")
    key = client.post("/v1/fe/fe/keygen", json={"y": [1, 2, 3]}).json()["functional_key"]
    ct = client.post("/v1/fe/fe/encrypt", json={"x": [1, 1, 1]}).json()["ciphertext"]
    analyst = client.post("/v1/tokens", json={"keys": ["fe"], "operations": ["decrypt"]})
    with TestClient(app, headers={"Authorization": f"Bearer {analyst.json()['token']}"}) as user:
        assert decrypt(user, key, ct, [0, 10]).json() == {"result": 6}
        assert user.post("/v1/fe/fe/keygen", json={"y": [1, 2, 3]}).status_code == 403
        assert user.post("/v1/fe/fe/encrypt", json={"x": [1, 2, 3]}).status_code == 403


def test_cache_figures_in_metrics(client: TestClient) -> None:
    make_key(client, "ipfe-opt")
    key = client.post("/v1/fe/fe/keygen", json={"y": [1, 2, 3]}).json()["functional_key"]
    ct = client.post("/v1/fe/fe/encrypt", json={"x": [1, 1, 1]}).json()["ciphertext"]
    for _ in range(3):
        decrypt(client, key, ct, [0, 77])
    metrics = client.get("/metrics").text
    for line in (
        'cipherd_cache_events_total{cache="dlog_tables",event="hit"}',
        'cipherd_cache_entries{cache="functional_keys"}',
        'cipherd_cache_bytes{cache="dlog_tables"}',
        'cipherd_cache_bytes{cache="functional_keys"}',
        'cipherd_cache_bytes{cache="decoded_master_keys"}',
        'cipherd_cache_bytes{cache="unwrapped_keys"}',
        'cipherd_cache_build_seconds_count{cache="dlog_tables"}',
        'cipherd_crypto_operation_duration_seconds_count{family="fe",operation="opt.decrypt"}',
    ):
        assert line in metrics, line


@pytest.mark.parametrize("key_type", ["ipfe-lin", "ipfe-tao"])
def test_moved_bounds_reuse_one_table(client: TestClient, key_type: str) -> None:
    """Bounds of one width anywhere share a table: moving them must not make the service build
    a new one (holding the RELIC lock) on every request."""
    make_key(client, key_type)
    key = client.post("/v1/fe/fe/keygen", json={"y": [1, 2, 3]}).json()["functional_key"]
    ct = client.post("/v1/fe/fe/encrypt", json={"x": [4, 5, 6]}).json()["ciphertext"]

    def events(event: str) -> float:
        labels = {"cache": "dlog_tables", "event": event}
        return REGISTRY.get_sample_value("cipherd_cache_events_total", labels) or 0.0

    misses, hits = events("miss"), events("hit")
    for lo in (-2000, -1968, 0, 32, 33, 5000, -4001):
        want = 32 if lo <= 32 <= lo + 2000 else None
        assert decrypt(client, key, ct, [lo, lo + 2000]).json() == {"result": want}, lo
    assert events("miss") - misses == 1
    assert events("hit") - hits == 6


@pytest.mark.parametrize("key_type", ["ipfe-lin", "ipfe-tao", "ipfe-bjk", "qfe-sgp"])
def test_curves_do_not_mix(client: TestClient, key_type: str) -> None:
    """A functional key or ciphertext of one curve sent against a key of the other: a clear
    422, never a wrong number."""
    rng = random.Random(7)
    made = {}
    for curve in group.CURVES:
        make_key(client, key_type, name=curve, curve=curve)
        fbody, _ = function_body(key_type, rng)
        mbody, _ = message_body(key_type, rng)
        key = client.post(f"/v1/fe/{curve}/keygen", json=fbody).json()["functional_key"]
        ct = client.post(f"/v1/fe/{curve}/encrypt", json=mbody).json()["ciphertext"]
        made[curve] = (key, ct)
    bls, bn = made[group.BLS12_381], made[group.BN254]
    for name, key, ct, field in [
        (group.BLS12_381, bn[0], bls[1], "functional_key"),
        (group.BLS12_381, bls[0], bn[1], "ciphertext"),
        (group.BN254, bls[0], bn[1], "functional_key"),
        (group.BN254, bn[0], bls[1], "ciphertext"),
    ]:
        response = decrypt(client, key, ct, [-1000, 1000], name=name)
        assert response.status_code == 422, response.text
        assert f"{field}: made on" in response.json()["detail"]


def test_curve_only_for_fe_types(client: TestClient) -> None:
    body = {"name": "e", "type": "ecies-x25519", "curve": "bn254"}
    response = client.post("/v1/keys", json=body)
    assert response.status_code == 422
    assert "only FE key types take a curve" in response.json()["detail"]
    other = {"name": "f", "type": "ipfe-lin", "dimension": 2, "curve": "bls12-377"}
    assert client.post("/v1/keys", json=other).status_code == 422
    aez = client.post("/v1/keys", json={"name": "a", "type": "aez"})
    assert aez.json()["curve"] is None


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 10, 100])
@pytest.mark.parametrize("key_type", list(FE_SCHEMES))
def test_random_cases_at_each_dimension(client: TestClient, key_type: str, n: int) -> None:
    """Random signed inputs at n = 1, 10 and 100; a range that misses the value gives null."""
    rng = random.Random(f"{key_type}-{n}")
    make_key(client, key_type, n=n)
    fbody, function = function_body(key_type, rng, n)
    mbody, message = message_body(key_type, rng, n)
    key = client.post("/v1/fe/fe/keygen", json=fbody).json()["functional_key"]
    ct = client.post("/v1/fe/fe/encrypt", json=mbody).json()["ciphertext"]
    value = expected(function, message)
    assert decrypt(client, key, ct, [-100_000, 100_000]).json() == {"result": value}
    assert decrypt(client, key, ct, [value + 1, value + 1000]).json() == {"result": None}


def test_warm_decryptions_and_a_busy_relic_lock(client: TestClient) -> None:
    """Once its table and prepared key are cached, a small decryption runs on the event loop;
    while another thread holds the RELIC lock it goes to a worker thread and still answers."""
    make_key(client, "ipfe-opt")
    key = client.post("/v1/fe/fe/keygen", json={"y": [1, 2, 3]}).json()["functional_key"]
    ct = client.post("/v1/fe/fe/encrypt", json={"x": [4, 5, 6]}).json()["ciphertext"]
    for _ in range(4):
        assert decrypt(client, key, ct, [0, 100]).json() == {"result": 32}

    held, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        with group.LOCK:
            held.set()
            release.wait(5)

    holder = threading.Thread(target=hold_lock)
    holder.start()
    held.wait(5)
    threading.Timer(0.3, release.set).start()
    assert decrypt(client, key, ct, [0, 100]).json() == {"result": 32}
    holder.join()
