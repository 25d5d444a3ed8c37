"""Attacks on a real `cipherd serve`, one test per way a caller tried to make a worker do
unbounded work or get more than it should: each is refused or bounded, and an ordinary request
on the same worker is answered meanwhile."""

import base64
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.server import Server, running

pytestmark = pytest.mark.e2e

# An ordinary request on the attacked worker must be answered within this (the attacks used to
# stall it for 10 to 25 s).
ORDINARY_SECONDS = 2.0
PROBLEM = "urn:cipherd:problem:"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running(tmp_path_factory.mktemp("abuse") / "data") as started:
        yield started


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def fe_key(admin: httpx.Client, name: str, key_type: str, n: int) -> tuple[str, str]:
    """A key of `key_type` and dimension n, a functional key for y = (1, ..., 1) and a
    ciphertext of x = (1, ..., 1), both base64."""
    created = admin.post("/v1/keys", json={"name": name, "type": key_type, "dimension": n})
    assert created.status_code == 201, created.text
    key = admin.post(f"/v1/fe/{name}/keygen", json={"y": [1] * n}).json()["functional_key"]
    ct = admin.post(f"/v1/fe/{name}/encrypt", json={"x": [1] * n}).json()["ciphertext"]
    return key, ct


def while_attacked(
    attack: Callable[[], httpx.Response], ordinary: Callable[[], httpx.Response]
) -> tuple[httpx.Response, float, httpx.Response, float]:
    """Run `attack` in a thread and, once it is on its way, `ordinary` here: both answers and
    how long each took."""
    answers: dict[str, Any] = {}

    def run() -> None:
        started = time.monotonic()
        answers["attack"] = attack()
        answers["attack_seconds"] = time.monotonic() - started

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.3)
    started = time.monotonic()
    normal = ordinary()
    normal_seconds = time.monotonic() - started
    thread.join(timeout=120)
    return answers["attack"], answers["attack_seconds"], normal, normal_seconds


def test_row1_a_ciphertext_claiming_a_huge_dimension_is_refused_before_decoding(
    server: Server,
) -> None:
    """A lin ciphertext whose header claims n = 100,000, its points valid G1 points (9.6 MB),
    against a key of dimension 4, from a decrypt-only token: a 422 naming the dimension, and an
    ordinary FE decryption on the same worker meanwhile."""
    with server.client() as admin:
        key, ct = fe_key(admin, "row1", "ipfe-lin", 4)
        token = admin.post("/v1/tokens", json={"keys": ["row1"], "operations": ["decrypt"]}).json()[
            "token"
        ]
        other_key, other_ct = fe_key(admin, "row1-other", "ipfe-lin", 5)
    raw, longer = base64.b64decode(ct), base64.b64decode(other_ct)
    header, points = raw[:19], raw[19:]
    per_n = len(longer) - len(raw)
    length = len(points) + per_n * (100_000 - 4)  # what lin's ciphertext of n = 100,000 takes
    huge_header = header[:7] + (100_000).to_bytes(4, "big") + header[11:]
    huge = huge_header + (points * (length // len(points) + 1))[:length]  # valid G1 points
    assert len(huge) > 9_000_000
    with server.client(token) as caller, server.client() as admin:
        attack, attack_seconds, normal, normal_seconds = while_attacked(
            lambda: caller.post(
                "/v1/fe/row1/decrypt",
                json={"functional_key": key, "ciphertext": b64(huge), "bounds": [0, 100]},
            ),
            lambda: admin.post(
                "/v1/fe/row1-other/decrypt",
                json={"functional_key": other_key, "ciphertext": other_ct, "bounds": [0, 100]},
            ),
        )
    assert attack.status_code == 422, attack.text
    assert attack.json()["type"] == PROBLEM + "invalid-input"
    assert "dimension 100000" in attack.json()["detail"]
    assert attack_seconds < ORDINARY_SECONDS * 2
    assert normal.status_code == 200 and normal.json() == {"result": 5}
    assert normal_seconds < ORDINARY_SECONDS


def test_row2_per_pair_searches_share_one_work_budget(server: Server) -> None:
    """A bjk decrypt batch of 40 items (and one of 1,000) each searching 2^32 values: a 422
    naming CIPHERD_FE_MAX_REQUEST_WORK before any search, an ordinary request served
    meanwhile; the same batch over narrow bounds is served."""
    with server.client() as admin:
        key, ct = fe_key(admin, "row2", "ipfe-bjk", 4)
        item = {"functional_key": key, "ciphertext": ct, "bounds": [0, 2**32]}
        for count in (40, 1000):
            attack, attack_seconds, normal, normal_seconds = while_attacked(
                lambda count=count: admin.post(
                    "/v1/fe/row2/decrypt/batch", json={"items": [item] * count}
                ),
                lambda: admin.post("/v1/fe/row2/decrypt", json={**item, "bounds": [0, 10]}),
            )
            assert attack.status_code == 422, attack.text
            problem = attack.json()
            assert problem["type"] == PROBLEM + "too-much-work"
            assert "CIPHERD_FE_MAX_REQUEST_WORK" in problem["detail"]
            assert attack_seconds < ORDINARY_SECONDS
            assert normal.json() == {"result": 4} and normal_seconds < ORDINARY_SECONDS
        many = admin.post(
            "/v1/fe/row2/decrypt/many",
            json={"functional_key": key, "ciphertexts": [ct] * 40, "bounds": [0, 2**32]},
        )
        assert many.status_code == 422 and many.json()["type"] == PROBLEM + "too-much-work"
        narrow = admin.post(
            "/v1/fe/row2/decrypt/batch", json={"items": [{**item, "bounds": [0, 10]}] * 40}
        )
        assert narrow.status_code == 200
        assert [r["result"] for r in narrow.json()["results"]] == [4] * 40


def test_row1_every_field_of_the_header_is_checked_against_the_key(server: Server) -> None:
    """The functional key and the ciphertext each checked against the key before decoding:
    another key's (master id), another curve's, a wrong length."""
    with server.client() as admin:
        key, ct = fe_key(admin, "row1-fields", "ipfe-opt", 4)
        other_key, other_ct = fe_key(admin, "row1-fields-b", "ipfe-opt", 4)
        call = {"functional_key": key, "ciphertext": ct, "bounds": [0, 10]}
        assert admin.post("/v1/fe/row1-fields/decrypt", json=call).json() == {"result": 4}
        for field, value in (("ciphertext", other_ct), ("functional_key", other_key)):
            mixed = admin.post("/v1/fe/row1-fields/decrypt", json={**call, field: value})
            assert mixed.status_code == 422
            assert mixed.json()["type"] == PROBLEM + "key-mismatch", mixed.text
            assert mixed.json()["detail"].startswith(field)
        short = b64(base64.b64decode(ct)[:-1])
        cut = admin.post("/v1/fe/row1-fields/decrypt", json={**call, "ciphertext": short})
        assert cut.status_code == 422 and "bytes where" in cut.json()["detail"]
        raw = bytearray(base64.b64decode(ct))
        raw[6] = 2  # BN254
        curve = admin.post("/v1/fe/row1-fields/decrypt", json={**call, "ciphertext": b64(raw)})
        assert curve.status_code == 422, curve.text
