"""What a record holds: one per request that needs a token, with who, what, which key and
version, the outcome and details, never a secret; and how a stored record is shown."""

import json
import random
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.ops.audit import record
from app.ops.audit.record import AuditNote
from app.settings import Settings
from app.store import AuditRow
from tests.app.ops.audit.support import b64, listed, verify
from tests.conftest import ADMIN_TOKEN

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _mixed_run(client: TestClient) -> tuple[int, list[str]]:
    """Requests of every family, refusals included: how many need a token, and the secrets
    and plaintexts they carried."""
    plaintext = b64(b"the plaintext that must not be recorded")
    secrets_seen = [plaintext, ADMIN_TOKEN]
    calls = 0

    def call(method: str, path: str, expect: int, token: str | None = None, **kw: Any) -> Any:
        nonlocal calls
        calls += 1
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        answer = client.request(method, path, headers=headers, **kw)
        assert answer.status_code == expect, (path, answer.text)
        return answer.json() if answer.content else None

    call("POST", "/v1/keys", 201, json={"name": "orders", "type": "ecies-secp256k1"})
    call("POST", "/v1/keys", 201, json={"name": "session", "type": "aez"})
    call("POST", "/v1/keys", 201, json={"name": "stats", "type": "ipfe-opt", "dimension": 3})
    sealed = call("POST", "/v1/ecies/orders/encrypt", 200, json={"plaintext": plaintext})
    secrets_seen.append(sealed["ciphertext"])
    sealed_v1 = sealed["ciphertext"]
    call("POST", "/v1/ecies/orders/decrypt", 200, json={"ciphertext": sealed["ciphertext"]})
    sealed = call("POST", "/v1/aez/session/encrypt", 200, json={"plaintext": plaintext})
    secrets_seen.append(sealed["ciphertext"])
    call("POST", "/v1/aez/session/encrypt/batch", 200, json={"items": [{"plaintext": plaintext}]})
    fkey = call("POST", "/v1/fe/stats/keygen", 200, json={"y": [1, 2, 3]})
    secrets_seen.append(fkey["functional_key"])
    call("POST", "/v1/keys/orders/rotate", 200)
    call("GET", "/v1/keys/orders", 200)
    call("GET", "/v1/keys/orders/public", 200)
    token = call("POST", "/v1/tokens", 201, json={"keys": ["orders"], "operations": ["encrypt"]})[
        "token"
    ]
    secrets_seen.append(token)
    call("POST", "/v1/ecies/orders/encrypt", 200, token=token, json={"plaintext": plaintext})
    call("POST", "/v1/aez/session/encrypt", 403, token=token, json={"plaintext": plaintext})
    call("POST", "/v1/ecies/orders/decrypt", 403, token=token, json={"ciphertext": plaintext})
    call("POST", "/v1/aez/session/encrypt", 401, token="cdt_wrong", json={"plaintext": plaintext})
    call("GET", "/v1/keys", 401, token="")
    call("POST", "/v1/ecies/nothing/encrypt", 404, json={"plaintext": plaintext})
    call("POST", "/v1/aez/session/decrypt", 400, json={"ciphertext": plaintext})
    call("POST", "/v1/aez/bad%00name/encrypt", 422, json={"plaintext": plaintext})
    call("POST", "/v1/keys", 201, json={"name": "signer", "type": "ed25519"})
    call("POST", "/v1/keys", 201, json={"name": "mac", "type": "hmac"})
    signed = call("POST", "/v1/sign/signer", 200, json={"message": plaintext})
    check = {"message": plaintext, "signature": signed["signature"]}
    call("POST", "/v1/verify/signer", 200, json=check)
    mac = call("POST", "/v1/hmac/mac", 200, json={"message": plaintext})
    secrets_seen.append(mac["hmac"])
    call("POST", "/v1/hmac/mac/verify", 200, json={"message": plaintext, "hmac": mac["hmac"]})
    datakey = call("POST", "/v1/ecies/orders/datakey", 200, json={})
    secrets_seen.append(datakey["plaintext"])
    call("POST", "/v1/ecies/orders/rewrap", 200, json={"ciphertext": sealed_v1})
    secrets_seen.append(call("POST", "/v1/random", 200, json={"bytes": 32})["random"])
    call("GET", "/healthz", 200)  # needs no token: no record
    calls -= 1
    return calls, secrets_seen


def test_a_mixed_run_gives_one_record_per_request_and_verifies(
    admin: TestClient, audited: Settings
) -> None:
    calls, secrets_seen = _mixed_run(admin)
    records = listed(admin)
    assert len(records) == calls  # the listing's own request is recorded after it answers
    assert verify(audited) == (calls + 1, [])
    by_operation = {(r["operation"], r["status"]) for r in records}
    assert ("aez_encrypt", 401) in by_operation and ("aez_encrypt", 403) in by_operation
    refused = next(r for r in records if r["status"] == 401)
    assert refused["principal"] is None and refused["problem"] == "unauthorized"
    scoped = next(r for r in records if r["status"] == 403)
    assert scoped["principal"] not in (None, "admin") and scoped["key"] == "session"
    rotate = next(r for r in records if r["operation"] == "keys_rotate_key")
    assert (rotate["key"], rotate["key_version"]) == ("orders", 2)
    for operation, key, version in (
        ("sign_sign", "signer", 1),
        ("verify_verify", "signer", None),
        ("hmac_hmac", "mac", 1),
        ("hmac_verify", "mac", None),
        ("ecies_datakey", "orders", 2),
        ("ecies_rewrap", "orders", 2),
        ("random_random", None, None),
    ):
        record = next(r for r in records if r["operation"] == operation)
        assert (record["key"], record["key_version"], record["status"]) == (key, version, 200)
    keygen = next(r for r in records if r["operation"] == "fe_keygen")
    assert keygen["details"]["dimension"] == 3
    assert len(keygen["details"]["function_sha256"]) == 64
    # The released function, once in the audit trail as in the FE ledger.
    assert keygen["details"]["function"] == [1, 2, 3]
    ledger = admin.get("/v1/fe/stats/functions").json()["functions"]
    assert [f["function"] for f in ledger] == [
        r["details"]["function"] for r in records if r["operation"] == "fe_keygen"
    ]
    failed = next(r for r in records if r["status"] == 400)
    assert failed["problem"] == "authentication-failed"
    malformed = next(r for r in records if r["status"] == 422)
    assert (malformed["key"], malformed["problem"]) == ("bad\\x00name", "invalid-input")
    text = json.dumps(records)
    for secret in secrets_seen:
        assert secret not in text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({}, "{}"),
        (7, "7"),
        ([2, 1], "[2,1]"),
        ({"b": 1, "a": "é"}, '{"a":"é","b":1}'),
        (
            {"nested": {"z": [1, {"y": None}], "a": True}},
            '{"nested":{"a":true,"z":[1,{"y":null}]}}',
        ),
    ],
)
def test_the_canonical_form_sorts_keys_and_drops_spaces(value: object, text: str) -> None:
    assert record.canonical(value) == text
    assert json.loads(text) == value


@pytest.mark.parametrize(
    "seconds",
    [
        0.0,
        1_700_000_000.123456,
        1_700_000_000.9999999,
        1_700_000_000.0000004,
        # Times whose product by 10^6 in floats rounds up to the next microsecond.
        1_765_717_039.6683779,
        1_765_578_175.7952769,
    ],
)
def test_a_moment_is_its_time_rounded_down_to_the_microsecond(seconds: float) -> None:
    shown = record.moment(seconds)
    assert shown.endswith("Z")
    micros = (datetime.fromisoformat(shown) - EPOCH) // timedelta(microseconds=1)
    assert Fraction(micros, 10**6) <= Fraction(seconds) < Fraction(micros + 1, 10**6)  # exactly


def test_no_time_is_listed_after_itself() -> None:
    """`since` set to a record's listed time finds the record, for any time (one in 170 was
    listed a microsecond late)."""
    draw = random.Random(5)
    for _ in range(20_000):
        seconds = 1_765_000_000 + draw.random() * 1_000_000
        assert datetime.fromisoformat(record.moment(seconds)).timestamp() <= seconds


def test_a_stored_row_is_shown_with_its_json_columns_decoded() -> None:
    row = AuditRow(
        "rabc",
        3,
        1_700_000_000.5,
        "req",
        "127.0.0.1",
        "admin",
        "aez_encrypt",
        "k",
        "[1,2]",
        403,
        "forbidden",
        '{"items":2}',
        b"\x01" * 32,
    )
    assert record.record_json(row) == {
        "time": "2023-11-14T22:13:20.500000Z",
        "request_id": "req",
        "client": "127.0.0.1",
        "principal": "admin",
        "operation": "aez_encrypt",
        "key": "k",
        "key_version": [1, 2],
        "status": 403,
        "outcome": "failure",
        "problem": "forbidden",
        "details": {"items": 2},
        "chain": "rabc",
        "seq": 3,
        "mac": "01" * 32,
    }
    assert record.record_json(row._replace(key_version=None, status=200))["outcome"] == "success"


@pytest.mark.parametrize(
    ("versions", "noted"),
    [([], None), ([None], None), ([3, 3, None], 3), ([4, 2, 4, 2], [2, 4])],
)
def test_a_batch_notes_one_version_as_a_number_and_several_as_a_list(
    versions: list[int | None], noted: Any
) -> None:
    note = AuditNote()
    note.versions(versions)
    assert note.key_version == noted


@pytest.mark.parametrize(
    ("key_type", "body", "problem"),
    [
        ("qfe-sgp", {"f": [[1] * 300] * 300}, "shape-mismatch"),
        ("qfe-sgp", {"f": [[1, 2], [1, 2, 3]]}, "shape-mismatch"),
        ("qfe-sgp", {"y": [1, 2]}, "invalid-input"),
        ("ipfe-opt", {"y": [1] * 3000}, "shape-mismatch"),
    ],
)
def test_a_function_of_another_shape_is_refused_before_it_is_recorded(
    admin: TestClient, key_type: str, body: dict[str, Any], problem: str
) -> None:
    """A 4,000 × 4,000 F for a key of n = 2 was hashed and written whole into the audit record
    (32 MB, 5 s of the event loop) before the scheme refused its shape."""
    made = admin.post("/v1/keys", json={"name": "small", "type": key_type, "dimension": 2})
    assert made.status_code == 201, made.text
    refused = admin.post("/v1/fe/small/keygen", json=body)
    assert refused.status_code == 422, refused.text
    assert refused.json()["type"] == f"urn:cipherd:problem:{problem}"
    keygen = next(r for r in listed(admin) if r["operation"] == "fe_keygen")
    assert (keygen["status"], keygen["problem"]) == (422, problem)
    assert "function" not in keygen["details"]
    assert admin.get("/v1/fe/small/functions").json()["functions"] == []
