"""Transit's answers to input at the edges of what its fields can hold: a batch's
`partial_failure_response_code` that no answer with a body can have, a `vault:v<N>:` version of
thousands of digits, a negative minimum version, a restored backup whose fields are malformed.
Each is Vault's 400, naming what is wrong without repeating the value it was given."""

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import MAX_BATCH_ITEMS, Settings

PLAINTEXT = base64.b64encode(b"order 1001").decode()
# A version past what any integer parser of bounded work reads.
HUGE_VERSION = "9" * 5000

Document = dict[str, Any]


@pytest.fixture
def vault(client: TestClient) -> TestClient:
    client.headers["X-Vault-Token"] = client.headers.pop("Authorization").removeprefix("Bearer ")
    assert client.post("/v1/transit/keys/orders").status_code in (200, 204)
    return client


def errors_of(answer: Any) -> list[str]:
    assert answer.status_code == 400, answer.text
    return list(answer.json()["errors"])


def partial_batch(code: int) -> dict[str, Any]:
    """An encryption batch whose second item fails (its plaintext is not base64)."""
    items = [{"plaintext": PLAINTEXT}, {"plaintext": "not base64!"}]
    return {"batch_input": items, "partial_failure_response_code": code}


@pytest.mark.parametrize("code", [-1, 0, 1, 101, 199, 204, 205, 304, 600, 2**63 - 1])
def test_a_partial_failure_code_that_cannot_carry_the_results_is_400(
    vault: TestClient, code: int
) -> None:
    answer = vault.post("/v1/transit/encrypt/orders", json=partial_batch(code))
    assert answer.status_code == 400, answer.text
    content = answer.json()
    first, second = content["data"]["batch_results"]
    assert first["ciphertext"].startswith("vault:v1:")
    assert "error" in second
    assert content["warnings"] == [
        "invalid HTTP response code override from partial_failure_response_code, reverting to 400"
    ]


def test_a_partial_failure_code_past_64_bits_is_refused_as_vault_refuses_it(
    vault: TestClient,
) -> None:
    answer = vault.post("/v1/transit/encrypt/orders", json=partial_batch(2**63))
    (error,) = errors_of(answer)
    assert "partial_failure_response_code" in error and "64 bits" in error


@pytest.mark.parametrize("code", [200, 202, 207, 299, 418, 500, 599])
def test_a_partial_failure_code_with_a_body_is_the_answers_status(
    vault: TestClient, code: int
) -> None:
    answer = vault.post("/v1/transit/encrypt/orders", json=partial_batch(code))
    assert answer.status_code == code, answer.text
    assert len(answer.json()["data"]["batch_results"]) == 2
    assert answer.json()["warnings"] is None


def test_a_partial_failure_code_does_not_apply_when_every_item_failed(vault: TestClient) -> None:
    body = {"batch_input": [{"plaintext": "not base64!"}], "partial_failure_response_code": 207}
    answer = vault.post("/v1/transit/encrypt/orders", json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["warnings"] is None


@pytest.mark.parametrize(
    "version",
    [HUGE_VERSION, "1" * 11, "\u0663", "", "x"],
    ids=["5000", "11", "arabic", "none", "x"],
)
def test_a_ciphertext_version_that_is_not_a_number_is_400(vault: TestClient, version: str) -> None:
    ciphertext = f"vault:v{version}:AAAA"
    single = vault.post("/v1/transit/decrypt/orders", json={"ciphertext": ciphertext})
    assert errors_of(single) == ["invalid ciphertext: version number could not be decoded"]
    rewrapped = vault.post("/v1/transit/rewrap/orders", json={"ciphertext": ciphertext})
    assert errors_of(rewrapped) == ["invalid ciphertext: version number could not be decoded"]

    sealed = vault.post("/v1/transit/encrypt/orders", json={"plaintext": PLAINTEXT})
    good = sealed.json()["data"]["ciphertext"]
    batch = {"batch_input": [{"ciphertext": ciphertext}, {"ciphertext": good}]}
    answer = vault.post("/v1/transit/decrypt/orders", json=batch)
    assert answer.status_code == 400, answer.text
    failed, opened = answer.json()["data"]["batch_results"]
    error = "invalid ciphertext: version number could not be decoded"
    assert failed == {"error": error, "plaintext": "", "reference": ""}  # Vault's fields
    assert opened == {"plaintext": PLAINTEXT, "reference": ""}


def test_a_ciphertext_version_of_ten_digits_is_too_new(vault: TestClient) -> None:
    answer = vault.post("/v1/transit/decrypt/orders", json={"ciphertext": "vault:v9999999999:AA"})
    assert errors_of(answer) == ["invalid ciphertext: version is too new"]


def test_an_hmac_or_signature_version_of_thousands_of_digits_is_400(vault: TestClient) -> None:
    huge = f"vault:v{HUGE_VERSION}:AAAA"
    hmac = vault.post("/v1/transit/verify/orders", json={"input": PLAINTEXT, "hmac": huge})
    assert errors_of(hmac) == ["invalid HMAC: version number could not be decoded"]
    batch = {"batch_input": [{"input": PLAINTEXT, "hmac": huge}]}
    answer = vault.post("/v1/transit/verify/orders", json=batch)
    assert answer.status_code == 200, answer.text  # as Vault answers a verification batch
    assert answer.json()["data"]["batch_results"] == [
        {"error": "invalid HMAC: version number could not be decoded", "reference": ""}
    ]
    vault.post("/v1/transit/keys/signer", json={"type": "ed25519"})
    signed = vault.post("/v1/transit/verify/signer", json={"input": PLAINTEXT, "signature": huge})
    assert errors_of(signed) == ["invalid signature: version number could not be decoded"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"min_decryption_version": -5}, "min_decryption_version"),
        ({"min_encryption_version": -1}, "min_encryption_version"),
    ],
)
def test_a_negative_minimum_version_is_400(
    vault: TestClient, body: dict[str, int], field: str
) -> None:
    (error,) = errors_of(vault.post("/v1/transit/keys/orders/config", json=body))
    assert error.startswith(f"{field}:")
    data = vault.get("/v1/transit/keys/orders").json()["data"]
    assert (data["min_decryption_version"], data["min_encryption_version"]) == (1, 0)


def backup_of(vault: TestClient, name: str) -> Document:
    """A real key's Transit backup, decoded: two versions, exportable and backed up."""
    created = {"exportable": True, "allow_plaintext_backup": True}
    assert vault.post(f"/v1/transit/keys/{name}", json=created).status_code in (200, 204)
    assert vault.post(f"/v1/transit/keys/{name}/config", json=created).status_code == 200
    assert vault.post(f"/v1/transit/keys/{name}/rotate").status_code == 200
    answer = vault.get(f"/v1/transit/backup/{name}")
    assert answer.status_code == 200, answer.text
    document: Document = json.loads(base64.b64decode(answer.json()["data"]["backup"]))
    return document


def encoded(document: Document | str) -> str:
    text = document if isinstance(document, str) else json.dumps(document)
    return base64.b64encode(text.encode()).decode()


def set_entry(field: str, value: object) -> Callable[[Document], object]:
    """Set `field` of version 1's entry (with `time` unset when `creation_time` is the field,
    so that it is the one read)."""

    def change(document: Document) -> object:
        entry = document["policy"]["keys"]["1"]
        if field == "creation_time":
            entry["time"] = "0001-01-01T00:00:00Z"
        entry[field] = value
        return value

    return change


def set_policy(field: str, value: object) -> Callable[[Document], object]:
    def change(document: Document) -> object:
        document["policy"][field] = value
        return value

    return change


def renumber(number: str) -> Callable[[Document], object]:
    """Move version 1's entry to the version `number`."""

    def change(document: Document) -> object:
        entries = document["policy"]["keys"]
        entries[number] = entries.pop("1")
        return number

    return change


CORRUPTIONS = {
    "time garbage": (set_entry("time", "garbage-time"), "version 1: time"),
    "time year 0": (set_entry("time", "0000-01-01T00:00:00Z"), "version 1: time"),
    "time a number": (set_entry("time", 1700000000), "version 1: time"),
    "creation_time text": (set_entry("creation_time", "abcdef"), "version 1: creation_time"),
    "creation_time list": (set_entry("creation_time", [12345]), "version 1: creation_time"),
    "creation_time huge": (set_entry("creation_time", 10**400), "version 1: creation_time"),
    # Times a key's answers could not write (past year 9999 in UTC), or its native backup not
    # carry (before 1970, more than a day ahead): each was stored, then a 500 on every read.
    "time rounds past 9999": (
        set_entry("time", "9999-12-31T23:59:59.999999999Z"),
        "version 1: time is before 1970 or more than a day ahead",
    ),
    "time past 9999 in UTC": (
        set_entry("time", "9999-12-31T23:59:59-01:00"),
        "version 1: time is before 1970 or more than a day ahead",
    ),
    "time in 2100": (
        set_entry("time", "2100-01-01T00:00:00Z"),
        "version 1: time is before 1970 or more than a day ahead",
    ),
    "time before 1970": (
        set_entry("time", "1969-12-31T23:59:59Z"),
        "version 1: time is before 1970 or more than a day ahead",
    ),
    "creation_time in 2100": (
        set_entry("creation_time", 4102444800),
        "version 1: creation_time is before 1970 or more than a day ahead",
    ),
    "creation_time negative": (
        set_entry("creation_time", -1),
        "version 1: creation_time is before 1970 or more than a day ahead",
    ),
    "version superscript": (renumber("\u00b2"), "a version of the backup"),
    "version 5000 digits": (renumber(HUGE_VERSION), "a version of the backup"),
    "version past int32": (renumber("4294967296"), "a version of the backup"),
    "auto_rotate_period text": (set_policy("auto_rotate_period", "xyzzy"), "auto_rotate_period"),
    "auto_rotate_period huge": (set_policy("auto_rotate_period", 10**400), "auto_rotate_period"),
    "auto_rotate_period negative": (set_policy("auto_rotate_period", -(10**12)), "auto_rotate"),
    "auto_rotate_period a second": (set_policy("auto_rotate_period", 10**9), "under an hour"),
    "min_decryption_version text": (
        set_policy("min_decryption_version", "xyzzy"),
        "min_decryption_version",
    ),
    "min_decryption_version huge": (
        set_policy("min_decryption_version", 10**30),
        "min_decryption_version",
    ),
    "min_encryption_version text": (
        set_policy("min_encryption_version", "xyzzy"),
        "min_encryption_version",
    ),
    "min_encryption_version negative": (
        set_policy("min_encryption_version", -7),
        "min_encryption_version",
    ),
}


@pytest.mark.parametrize("case", CORRUPTIONS, ids=list(CORRUPTIONS))
def test_a_backup_with_a_malformed_field_is_400_naming_the_field(
    vault: TestClient, case: str
) -> None:
    document = backup_of(vault, "ledger")
    corrupt, field = CORRUPTIONS[case]
    value = corrupt(document)
    answer = vault.post("/v1/transit/restore/restored", json={"backup": encoded(document)})
    (error,) = errors_of(answer)
    assert field in error
    assert str(value) not in error
    assert len(error) < 200
    assert document["policy"]["keys"].get("2", {}).get("key", "-") not in answer.text
    assert vault.get("/v1/transit/keys/restored").status_code == 404


def test_a_deeply_nested_backup_is_400(vault: TestClient) -> None:
    depth = 50_000
    nested = '{"policy": {"name": ' + "[" * depth + "]" * depth + "}}"
    answer = vault.post("/v1/transit/restore/restored", json={"backup": encoded(nested)})
    assert errors_of(answer) == ["failed to decode the backup: not base64 of JSON"]


@pytest.mark.parametrize("backup", ["é", "\u0000", "not base64!"])
@pytest.mark.parametrize("path", ["/v1/transit/restore", "/v1/transit/restore/restored"])
def test_a_backup_that_is_not_base64_is_400(vault: TestClient, path: str, backup: str) -> None:
    answer = vault.post(path, json={"backup": backup})
    assert errors_of(answer) == ["failed to decode the backup: not base64 of JSON"]


@pytest.mark.parametrize("path", ["/v1/transit/restore", "/v1/transit/restore/restored"])
def test_a_backup_of_too_many_arrays_is_400_before_it_is_parsed(
    vault: TestClient, path: str
) -> None:
    """Arrays hide from the body's bounds inside the base64: 6 MiB of them took 1.2 s to parse,
    twice, once on the event loop, when the name came from the backup."""
    arrays = ",".join(["[" * 100 + "]" * 100] * 1001)  # 100,100 arrays, 0.2 MB
    nested = '{"policy": {"name": "restored", "x": [' + arrays + "]}}"
    answer = vault.post(path, json={"backup": encoded(nested)})
    assert errors_of(answer) == ["a backup of at most 100000 arrays and objects"]


def test_the_backup_the_corruptions_start_from_restores(vault: TestClient) -> None:
    document = backup_of(vault, "ledger")
    sealed = vault.post("/v1/transit/encrypt/ledger", json={"plaintext": PLAINTEXT})
    ciphertext = sealed.json()["data"]["ciphertext"]
    answer = vault.post("/v1/transit/restore/restored", json={"backup": encoded(document)})
    assert answer.status_code == 204, answer.text
    opened = vault.post("/v1/transit/decrypt/restored", json={"ciphertext": ciphertext})
    assert opened.json()["data"]["plaintext"] == PLAINTEXT


def test_a_restore_without_a_name_takes_the_backup_s(vault: TestClient) -> None:
    document = backup_of(vault, "ledger")
    document["policy"]["name"] = "renamed"
    answer = vault.post("/v1/transit/restore", json={"backup": encoded(document)})
    assert answer.status_code == 204, answer.text
    assert vault.get("/v1/transit/keys/renamed").status_code == 200


def test_a_rotation_period_past_a_float_is_400_and_makes_no_key(vault: TestClient) -> None:
    huge = {"auto_rotate_period": 10**400}
    (error,) = errors_of(vault.post("/v1/transit/keys/orders/config", json=huge))
    assert error.startswith("auto_rotate_period:")
    (error,) = errors_of(vault.post("/v1/transit/keys/hourly", json=huge))
    assert error.startswith("auto_rotate_period:")
    assert vault.get("/v1/transit/keys/hourly").status_code == 404


def test_a_backup_with_one_version_twice_is_400(vault: TestClient) -> None:
    document = backup_of(vault, "ledger")
    entries = document["policy"]["keys"]
    entries["01"] = entries["1"]
    answer = vault.post("/v1/transit/restore/restored", json={"backup": encoded(document)})
    assert errors_of(answer) == ["two entries of the backup have the same version number"]


def test_a_backup_of_an_unknown_key_type_does_not_repeat_it(vault: TestClient) -> None:
    document = backup_of(vault, "ledger")
    document["policy"]["type"] = "x" * 10_000
    answer = vault.post("/v1/transit/restore/restored", json={"backup": encoded(document)})
    assert errors_of(answer) == ["the backup's key type is not one this service restores"]


def test_a_version_time_with_an_offset_is_that_instant(vault: TestClient) -> None:
    document = backup_of(vault, "ledger")
    document["policy"]["keys"]["1"]["time"] = "2024-01-01T02:00:00.123456789+02:00"
    answer = vault.post("/v1/transit/restore/restored", json={"backup": encoded(document)})
    assert answer.status_code == 204, answer.text
    versions = vault.get("/v1/transit/keys/restored").json()["data"]["keys"]
    assert versions["1"] == 1_704_067_200


def test_a_batch_over_the_configured_limit_names_the_setting(vault: TestClient) -> None:
    limit = vault.app.state.services.settings.max_batch_items  # type: ignore[attr-defined]
    body = {"batch_input": [{"plaintext": PLAINTEXT}] * (limit + 1)}
    answer = vault.post("/v1/transit/encrypt/orders", json=body)
    expected = (
        f"items: {limit + 1} items where at most {limit} are allowed (CIPHERD_MAX_BATCH_ITEMS)"
    )
    assert errors_of(answer) == [expected]


def test_a_batch_past_what_any_setting_allows_is_refused_as_it_is_read(vault: TestClient) -> None:
    """The schema holds the bound, so that validation stops there: a million empty items took
    3.5 s of the event loop and 600 MB before their count was checked."""
    for count in (MAX_BATCH_ITEMS + 1, 200_000):
        answer = vault.post("/v1/transit/encrypt/orders", json={"batch_input": [{}] * count})
        assert errors_of(answer) == [
            f"body.batch_input: List should have at most {MAX_BATCH_ITEMS} items after "
            f"validation, not {count}"
        ]


def test_a_batch_as_long_as_the_setting_allows_is_taken(settings: Settings) -> None:
    widest = settings.model_copy(update={"max_batch_items": MAX_BATCH_ITEMS})
    with TestClient(
        create_app(widest), headers={"X-Vault-Token": str(widest.admin_token)}
    ) as vault:
        body = {"batch_input": [{"plaintext": PLAINTEXT}] * MAX_BATCH_ITEMS}
        answer = vault.post("/v1/transit/encrypt/orders", json=body)
        assert answer.status_code == 200, answer.text[:500]
        assert len(answer.json()["data"]["batch_results"]) == MAX_BATCH_ITEMS
