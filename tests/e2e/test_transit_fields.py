"""Transit's fields as Vault reads them and its batch results as Vault writes them, on cipherd
and on a real OpenBao, compared.

Vault's framework reads a request's integers and booleans weakly: the `bao` command sends every
`key=value` as a string ("2", "true"), and Go's syntax for them holds ("0x10", "t", "" for zero).
A `batch_input` entry is read strictly. Trimming has its own bounds and order of refusals. Each
case is a list of requests in a fresh mount; each request's status must be OpenBao's, and an
accepted one's values (the key's settings, the version used, the bytes given) must be too.

A batch's entries carry the fields Vault's response structures always write (`reference`, ""
when not given; a failed decryption's empty `plaintext`, a failed signature's `key_version` 0)
and leave out what they omit when empty (a false HMAC verdict); a batch with failed items is a
400 for encrypt and decrypt only. A mount's `config/keys` written with the `bao` command stops
encryptions from creating keys there, as in OpenBao.
"""

import base64
import json
import os
import secrets
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.openbao import bao_binary, running_openbao
from tests.e2e.server import running

pytestmark = pytest.mark.e2e

ADMIN_TOKEN = "transit-fields-" + secrets.token_urlsafe(16)
TEXT = base64.b64encode(b"field test").decode()
CONTEXT = base64.b64encode(b"tenant-7").decode()
# A key's settings an answer is compared on.
SETTINGS = (
    "min_decryption_version",
    "min_encryption_version",
    "min_available_version",
    "latest_version",
    "deletion_allowed",
    "exportable",
    "allow_plaintext_backup",
    "derived",
    "supports_derivation",
    "convergent_encryption",
    "convergent_encryption_version",
    "kdf",
)

Step = tuple[str, dict[str, Any]]
UNHASHED = {"hash_algorithm": "none", "prehashed": True, "signature_algorithm": "pkcs1v15"}
DIGEST = base64.b64encode(bytes(32)).decode()
HMAC_ENTRY = {"input": TEXT, "hmac": "vault:v1:" + "A" * 44}
# 100 bytes in base64 as coreutils' `base64` writes them: lines of 76 characters.
WRAPPED = textwrap.fill(base64.b64encode(bytes(range(100))).decode(), 76)
ROTATE: Step = ("keys/k/rotate", {})


def _config(**fields: Any) -> Step:
    return ("keys/k/config", fields)


def _trim(version: Any) -> Step:
    return ("keys/k/trim", {"min_available_version": version})


CASES: dict[str, list[Step]] = {
    "config as the bao command writes it": [
        ROTATE,
        ROTATE,
        _config(min_decryption_version="2", min_encryption_version="3", deletion_allowed="true"),
        _config(exportable="1", allow_plaintext_backup="t"),
    ],
    "config in Go's integer syntax": [
        ROTATE,
        ROTATE,
        _config(min_encryption_version="0x3"),
        _config(min_decryption_version="0b10"),
        _config(min_decryption_version="03"),
        _config(min_decryption_version="+1"),
    ],
    "config with empty strings": [ROTATE, _config(min_decryption_version="", deletion_allowed="")],
    "a create of an existing key checks its options first": [
        ("keys/k", {"type": "no-such-type"}),
        ("keys/k", {"convergent_encryption": True}),
        ("keys/k", {"key_size": 32}),
        ("keys/k", {"auto_rotate_period": "1s"}),
        ("keys/k", {"auto_rotate_period": "soon"}),
        ("keys/k", {"type": "ed25519"}),  # a valid type: the existing key, unchanged
    ],
    "an auto-rotate period empty, then set, then empty again": [
        _config(auto_rotate_period=""),
        _config(auto_rotate_period="1h"),
        _config(auto_rotate_period=""),
    ],
    "config with what Vault refuses": [
        _config(deletion_allowed="yes"),
        _config(deletion_allowed=2),
        _config(deletion_allowed=1.0),
        _config(min_decryption_version="1.0"),
        _config(min_decryption_version=1.5),
        _config(min_decryption_version=" 1"),
        _config(min_decryption_version="9223372036854775808"),
        _config(min_decryption_version=[1]),
    ],
    "config with JSON numbers and booleans where the other is due": [
        ROTATE,
        _config(deletion_allowed=1),
        _config(exportable=0),
        _config(min_decryption_version=True),
    ],
    "create derived and convergent as strings": [
        ("keys/convergent", {"derived": "true", "convergent_encryption": "true"}),
        ("keys/k", {"derived": "true", "convergent_encryption": "true"}),
        ("encrypt/k", {"plaintext": TEXT, "context": CONTEXT}),
    ],
    "encrypt under a version given as a string": [
        ROTATE,
        ("encrypt/k", {"plaintext": TEXT, "key_version": "1"}),
        ("encrypt/k", {"plaintext": TEXT, "key_version": ""}),
        ("encrypt/k", {"plaintext": TEXT, "key_version": "one"}),
    ],
    "a data key and random bytes of sizes given as strings": [
        ("datakey/plaintext/k", {"bits": "512"}),
        ("datakey/plaintext/k", {"bits": "0x80"}),
        ("random", {"bytes": "0x10"}),
        ("random", {"bytes": "24"}),
        ("random", {"bytes": ""}),
        (
            "encrypt/k",
            {
                "plaintext": TEXT,
                "batch_input": [{"plaintext": TEXT}],
                "partial_failure_response_code": "400",
            },
        ),
    ],
    "missing input, and empty input": [
        ("encrypt/k", {}),
        ("encrypt/k", {"plaintext": ""}),
        ("encrypt/k", {"batch_input": []}),
        ("hmac/k", {}),
        ("hmac/k", {"input": ""}),
        ("hash", {}),
        ("hash", {"input": ""}),
    ],
    "one-way switches stay on": [
        _config(exportable=True, allow_plaintext_backup=True),
        _config(exportable=False),
        _config(allow_plaintext_backup="false"),
    ],
    "min_decryption_version 0 is 1": [
        ROTATE,
        _config(min_decryption_version=2),
        _config(min_decryption_version=0),
    ],
    "a nonce is ignored": [
        ("encrypt/k", {"plaintext": TEXT, "nonce": "AAAAAAAAAAAAAAAA"}),
        ("datakey/plaintext/k", {"nonce": "AAAAAAAAAAAAAAAA"}),
    ],
    "a data key under a version given": [
        ROTATE,
        ("datakey/plaintext/k", {"key_version": 1}),
        ("datakey/wrapped/k", {"key_version": "2"}),
        ("datakey/plaintext/k", {"key_version": 3}),
    ],
    "key_size only for hmac keys": [("keys/sized", {"type": "aes256-gcm96", "key_size": 32})],
    "a batch whose items carry a context in part": [
        ("keys/derived", {"derived": True}),
        (
            "encrypt/derived",
            {"batch_input": [{"plaintext": TEXT, "context": CONTEXT}, {"plaintext": TEXT}]},
        ),
        (
            "decrypt/derived",
            {
                "batch_input": [
                    {"ciphertext": "vault:v1:AAAA"},
                    {"ciphertext": "vault:v1:AAAA", "context": CONTEXT},
                ]
            },
        ),
        (
            "rewrap/derived",
            {
                "batch_input": [
                    {"ciphertext": "vault:v1:AAAA", "context": CONTEXT},
                    {"ciphertext": "vault:v1:AAAA"},
                ]
            },
        ),
    ],
    "RSA: a data key, and no associated data": [
        ("keys/rsa", {"type": "rsa-2048"}),
        ("datakey/plaintext/rsa", {"bits": 256}),
        ("encrypt/rsa", {"plaintext": TEXT, "associated_data": CONTEXT}),
        ("encrypt/rsa", {"plaintext": TEXT}),
    ],
    "hash none: prehashed, with signature_algorithm pkcs1v15, for RSA and ECDSA": [
        ("keys/rsa", {"type": "rsa-2048"}),
        ("sign/rsa", {"input": TEXT, "hash_algorithm": "none"}),
        ("sign/rsa", {"input": TEXT, "hash_algorithm": "none", "prehashed": True}),
        ("sign/rsa", {"input": TEXT, "hash_algorithm": "none", "signature_algorithm": "pkcs1v15"}),
        ("sign/rsa/none", {"input": TEXT, "prehashed": True, "signature_algorithm": "pkcs1v15"}),
        ("sign/rsa", {"input": TEXT, "batch_input": [{"input": TEXT}], **UNHASHED}),
        ("sign/rsa", {"input": TEXT, "marshaling_algorithm": "jws", **UNHASHED}),
        ("verify/rsa", {"input": TEXT, "signature": "vault:v1:AAAA", "hash_algorithm": "none"}),
        ("verify/rsa", {"input": TEXT, "signature": "vault:v1:AAAA", **UNHASHED}),
        ("keys/ec", {"type": "ecdsa-p256"}),
        ("sign/ec", {"input": TEXT, "hash_algorithm": "none"}),
        ("sign/ec", {"input": DIGEST, "hash_algorithm": "none", "prehashed": True}),
        ("sign/ec", {"input": DIGEST, **UNHASHED}),
        ("sign/ec", {"input": base64.b64encode(bytes(20)).decode(), **UNHASHED}),
        ("keys/ed", {"type": "ed25519"}),  # Transit ignores the hash
        ("sign/ed", {"input": TEXT, "hash_algorithm": "none"}),
        ("sign/ed", {"input": TEXT, "hash_algorithm": "none", "signature_algorithm": "pss"}),
        ("sign/ed", {"input": TEXT, **UNHASHED}),
        ("verify/ed", {"input": TEXT, "signature": "vault:v1:AAAA", "hash_algorithm": "none"}),
    ],
    "sign and verify: a batch entry must carry its input": [
        ("keys/ed", {"type": "ed25519"}),
        ("sign/ed", {"batch_input": [{"plaintext": TEXT}, {"input": TEXT}]}),
        ("sign/ed", {}),
        ("verify/ed", {"batch_input": [{"plaintext": TEXT, "signature": "vault:v1:AAAA"}]}),
        ("verify/ed", {"batch_input": [{"plaintext": TEXT, "hmac": "vault:v1:AAAA"}]}),
        ("hmac/k", {"batch_input": [{"plaintext": TEXT}]}),
    ],
    "verify: signatures or HMACs, never both": [
        ("keys/ec", {"type": "ecdsa-p256"}),
        ("verify/ec", {"batch_input": [{"input": TEXT, "signature": "vault:v1:AA"}, HMAC_ENTRY]}),
        ("verify/ec", {"batch_input": [{"input": TEXT, "signature": "vault:v1:AA"}, {}]}),
        ("verify/ec", {"batch_input": [HMAC_ENTRY, {"input": TEXT}]}),
        ("verify/ec", {"batch_input": [{"input": TEXT}]}),
        ("verify/ec", {"input": TEXT}),
        ("verify/ec", {"input": TEXT, "signature": "vault:v1:AA", "hmac": "vault:v1:AA"}),
        ("verify/k", {"batch_input": [HMAC_ENTRY, HMAC_ENTRY]}),
    ],
    "version 0 opens a ciphertext, never a signature or an HMAC": [
        ("keys/ed", {"type": "ed25519"}),
        ("verify/ed", {"input": TEXT, "signature": "vault:v0:" + "A" * 88}),
        ("verify/k", {"input": TEXT, "hmac": "vault:v0:" + "A" * 44}),
        ("verify/k", {"batch_input": [{"input": TEXT, "hmac": "vault:v0:" + "A" * 44}]}),
    ],
    "salt_length read for every key type": [
        ("keys/ed", {"type": "ed25519"}),
        ("sign/ed", {"input": TEXT, "salt_length": "x"}),
        ("sign/ed", {"input": TEXT, "salt_length": "-2"}),
        ("sign/ed", {"input": TEXT, "salt_length": "1000"}),
        ("keys/rsa", {"type": "rsa-2048"}),
        ("sign/rsa", {"input": TEXT, "salt_length": "AUTO"}),
        ("sign/rsa", {"input": TEXT, "salt_length": "Hash"}),
        ("sign/rsa", {"input": TEXT, "salt_length": "0"}),
        ("sign/rsa", {"input": TEXT, "salt_length": -1}),
        ("sign/rsa", {"input": TEXT, "salt_length": "+32"}),
        ("sign/rsa", {"input": TEXT, "salt_length": " 32"}),
        ("sign/rsa", {"input": TEXT, "salt_length": "1_0"}),
        ("sign/rsa", {"input": TEXT, "salt_length": "20"}),
        ("sign/rsa", {"input": TEXT, "salt_length": 222}),  # 256 - 32 - 2: the longest
        ("sign/rsa", {"input": TEXT, "salt_length": "100", "hash_algorithm": "sha2-512"}),
        ("sign/rsa", {"input": TEXT, "salt_length": "1000", "signature_algorithm": "pkcs1v15"}),
        ("sign/rsa", {"batch_input": [{"input": TEXT}], "salt_length": "223"}),
        ("verify/rsa", {"input": TEXT, "signature": "vault:v1:AAAA", "salt_length": "223"}),
    ],
    "an encryption creates keys of the encryption types only": [
        ("encrypt/by-rsa", {"plaintext": TEXT, "type": "rsa-2048"}),
        ("encrypt/by-ecdsa", {"plaintext": TEXT, "type": "ecdsa-p256"}),
        ("encrypt/by-hmac", {"plaintext": TEXT, "type": "hmac"}),
        ("encrypt/by-chacha", {"plaintext": TEXT, "type": "chacha20-poly1305"}),
        ("encrypt/by-aes128", {"plaintext": TEXT, "type": "aes128-gcm96"}),
        ("encrypt/k", {"plaintext": TEXT, "type": "rsa-2048"}),  # the key is there
    ],
    "a context the key ignores is still read": [
        ("encrypt/k", {"plaintext": TEXT, "context": "!!"}),
        ("datakey/plaintext/k", {"context": "x"}),
        ("encrypt/k", {"batch_input": [{"plaintext": TEXT, "context": "!!"}]}),
        ("encrypt/k", {"plaintext": TEXT, "context": CONTEXT}),
    ],
    "base64 with line breaks, as the base64 command wraps it": [
        ("encrypt/k", {"plaintext": WRAPPED}),
        ("hmac/k", {"input": WRAPPED}),
        ("hash", {"input": WRAPPED}),
        ("encrypt/k", {"plaintext": WRAPPED.replace("\n", "\r\n") + "\n"}),
        ("encrypt/k", {"plaintext": WRAPPED.replace("\n", " ")}),
    ],
    "a null is the field's zero value, given": [
        ROTATE,
        ROTATE,
        _config(min_decryption_version=2),
        _config(min_decryption_version=None),
        _config(deletion_allowed=None, auto_rotate_period=None, exportable=None),
        ("keys/nulled", {"derived": None, "allow_plaintext_backup": None, "type": None}),
        ("encrypt/k", {"plaintext": None}),
        ("encrypt/k", {"plaintext": TEXT, "batch_input": None, "key_version": None}),
        ("hmac/k", {"input": None}),
        ("hash", {"input": None, "format": None}),
        ("datakey/plaintext/k", {"bits": None}),
    ],
    "trim without min_encryption_version": [
        ROTATE,
        ROTATE,
        _config(min_decryption_version=2),
        _trim(2),
    ],
    "trim within the bounds, then never back": [
        ROTATE,
        ROTATE,
        ROTATE,
        _config(min_decryption_version=3, min_encryption_version=4),
        _trim("2"),
        _trim(2),
        _trim(1),
        _trim(3),
    ],
    "trim past min_encryption_version": [
        ROTATE,
        _config(min_decryption_version=2, min_encryption_version=2),
        _trim(3),
    ],
    "trim past min_decryption_version": [ROTATE, _config(min_encryption_version=2), _trim(2)],
    "trim to zero": [ROTATE, _config(min_decryption_version=2, min_encryption_version=2), _trim(0)],
}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, httpx.Client]]:
    work = tmp_path_factory.mktemp("transit-fields")
    env = {"CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN}
    with (
        running(work / "cipherd", env=env) as cipherd,
        running_openbao(work) as openbao,
        httpx.Client(base_url=openbao.url, headers={"X-Vault-Token": openbao.token}) as bao,
        httpx.Client(base_url=cipherd.url, headers={"X-Vault-Token": ADMIN_TOKEN}) as ours,
    ):
        yield {"openbao": bao, "cipherd": ours}


def _values(path: str, data: dict[str, Any]) -> Any:
    """What an accepted request's answer is compared on (not ids, times or ciphertexts)."""
    if "random_bytes" in data:
        return len(base64.b64decode(data["random_bytes"]))
    if path.startswith("datakey/"):
        return len(base64.b64decode(data.get("plaintext", ""))), data["key_version"]
    if "batch_results" in data:
        return [sorted(result) for result in data["batch_results"]]
    if path.startswith("encrypt/"):
        return data["key_version"]
    return {name: data.get(name) for name in SETTINGS}


def _outcomes(client: httpx.Client, steps: list[Step]) -> list[Any]:
    mount = "fields-" + secrets.token_hex(4)
    assert client.post(f"/v1/sys/mounts/{mount}", json={"type": "transit"}).status_code == 204
    try:
        client.post(f"/v1/{mount}/keys/k", json={}).raise_for_status()
        seen = []
        for path, body in steps:
            answer = client.post(f"/v1/{mount}/{path}", json=body)
            data = answer.json().get("data") if answer.status_code == 200 else None
            warned = len(answer.json().get("warnings") or [])
            seen.append((path, answer.status_code, data and _values(path, data), warned))
        key = client.get(f"/v1/{mount}/keys/k").json()["data"]
        return [*seen, ("keys/k", 200, _values("keys/k", key), 0)]
    finally:
        client.delete(f"/v1/sys/mounts/{mount}")


@pytest.mark.parametrize("case", sorted(CASES))
def test_fields_read_as_openbao_reads_them(servers: dict[str, httpx.Client], case: str) -> None:
    seen = {name: _outcomes(client, CASES[case]) for name, client in servers.items()}
    assert seen["cipherd"] == seen["openbao"]


def test_a_batch_entry_is_read_strictly(servers: dict[str, httpx.Client]) -> None:
    """A `batch_input` entry's `key_version` of "1" is refused, as Vault refuses it; OpenBao
    answers 500 where cipherd answers 400."""
    body = {"batch_input": [{"plaintext": TEXT, "key_version": "1"}]}
    statuses = {}
    for name, client in servers.items():
        mount = "fields-" + secrets.token_hex(4)
        client.post(f"/v1/sys/mounts/{mount}", json={"type": "transit"}).raise_for_status()
        client.post(f"/v1/{mount}/keys/k", json={}).raise_for_status()
        statuses[name] = client.post(f"/v1/{mount}/encrypt/k", json=body).status_code
        client.delete(f"/v1/sys/mounts/{mount}")
    assert statuses == {"openbao": 500, "cipherd": 400}


def test_a_salt_longer_than_the_key_allows_is_refused(servers: dict[str, httpx.Client]) -> None:
    """A PSS signature with a salt longer than an rsa-2048 key and SHA-256 allow (222 bytes) is
    refused; OpenBao answers 500 where cipherd answers 400, with the bounds."""
    seen = {}
    for name, client in servers.items():
        mount = "fields-" + secrets.token_hex(4)
        client.post(f"/v1/sys/mounts/{mount}", json={"type": "transit"}).raise_for_status()
        client.post(f"/v1/{mount}/keys/rsa", json={"type": "rsa-2048"}).raise_for_status()
        answer = client.post(f"/v1/{mount}/sign/rsa", json={"input": TEXT, "salt_length": 223})
        seen[name] = answer.status_code, answer.json()["errors"]
        client.delete(f"/v1/sys/mounts/{mount}")
    assert seen["openbao"] == (
        500,
        ["1 error occurred:\n\t* requested salt length 223 is invalid\n\n"],
    )
    assert seen["cipherd"] == (
        400,
        ["a PSS salt of rsa-2048 with sha256 is 0 to 222 bytes, not 223"],
    )


def _entries(client: httpx.Client, path: str, items: list[dict[str, Any]]) -> Any:
    answer = client.post(path, json={"batch_input": items})
    results = answer.json()["data"]["batch_results"]
    # The fields of each entry, with the values that do not vary from server to server.
    kept = ("valid", "reference", "plaintext", "key_version")
    return answer.status_code, [
        {k: v if k in kept and v in ("", 0, True, False, "r-1") else "…" for k, v in r.items()}
        for r in results
    ]


def _made(client: httpx.Client, path: str, field: str, **body: Any) -> str:
    return str(client.post(path, json=body).json()["data"][field])


def _batches(client: httpx.Client, verb: str) -> Any:
    """The verb's batch of a good item, a bad one and a good one with a `reference`, then of the
    bad one alone, in a fresh mount: statuses and entries."""
    mount = "batches-" + secrets.token_hex(4)
    client.post(f"/v1/sys/mounts/{mount}", json={"type": "transit"}).raise_for_status()
    try:
        for key, key_type in (("k", "aes256-gcm96"), ("p", "ecdsa-p256"), ("e", "ed25519")):
            client.post(f"/v1/{mount}/keys/{key}", json={"type": key_type}).raise_for_status()
        ciphertext = _made(client, f"/v1/{mount}/encrypt/k", "ciphertext", plaintext=TEXT)
        mac = _made(client, f"/v1/{mount}/hmac/k", "hmac", input=TEXT)
        signature = _made(client, f"/v1/{mount}/sign/p", "signature", input=TEXT)
        good, bad, path = {
            "encrypt": ({"plaintext": TEXT}, {"plaintext": "!!"}, "encrypt/k"),
            "decrypt": ({"ciphertext": ciphertext}, {"ciphertext": "vault:vx:AA"}, "decrypt/k"),
            "rewrap": ({"ciphertext": ciphertext}, {"ciphertext": "junk"}, "rewrap/k"),
            "hmac": ({"input": TEXT}, {"input": "!!"}, "hmac/k"),
            "verify-hmac": (
                {"input": TEXT, "hmac": mac},
                {"input": TEXT, "hmac": "vault:v1:AAAA"},
                "verify/k",
            ),
            "sign": ({"input": TEXT}, {"input": "!!"}, "sign/p"),
            "sign-ed25519": ({"input": TEXT}, {"input": "!!"}, "sign/e"),
            "verify": (
                {"input": TEXT, "signature": signature},
                {"input": TEXT, "signature": "junk"},
                "verify/p",
            ),
        }[verb]
        items = [good, bad, {**good, "reference": "r-1"}]
        return [
            _entries(client, f"/v1/{mount}/{path}", items),
            _entries(client, f"/v1/{mount}/{path}", [bad]),
        ]
    finally:
        client.delete(f"/v1/sys/mounts/{mount}")


@pytest.mark.parametrize(
    "verb",
    ["encrypt", "decrypt", "rewrap", "hmac", "verify-hmac", "sign", "sign-ed25519", "verify"],
)
def test_batch_results_are_written_as_openbao_writes_them(
    servers: dict[str, httpx.Client], verb: str
) -> None:
    seen = {name: _batches(client, verb) for name, client in servers.items()}
    assert seen["cipherd"] == seen["openbao"]


MISSING_KEY = [
    ("POST", "keys/absent/config", {}),
    ("POST", "keys/absent/rotate", {}),
    ("POST", "keys/absent/trim", {"min_available_version": 1}),
    ("DELETE", "keys/absent", {}),
    ("POST", "decrypt/absent", {"ciphertext": "vault:v1:AAAA"}),
    ("POST", "rewrap/absent", {"ciphertext": "vault:v1:AAAA"}),
    ("POST", "datakey/plaintext/absent", {}),
    ("POST", "hmac/absent", {"input": TEXT}),
    ("POST", "sign/absent", {"input": TEXT}),
    ("POST", "verify/absent", {"input": TEXT, "signature": "vault:v1:AAAA"}),
    ("POST", "verify/absent", {"input": TEXT, "hmac": "vault:v1:AAAA"}),
    ("GET", "keys/absent", None),
]


@pytest.mark.parametrize(("method", "path", "body"), MISSING_KEY)
def test_a_key_that_does_not_exist_is_answered_as_openbao_answers(
    servers: dict[str, httpx.Client], method: str, path: str, body: Any
) -> None:
    """A change or a use is a 400 with Vault's words (hvac raises InvalidRequest), a read a 404."""
    seen = {}
    for name, client in servers.items():
        answer = client.request(method, f"/v1/transit/{path}", json=body)
        errors = answer.json()["errors"]
        seen[name] = (answer.status_code, errors if answer.status_code == 400 else None)
    assert seen["cipherd"] == seen["openbao"]


def test_a_deleted_key_is_gone_for_transit_until_restored(servers: dict[str, httpx.Client]) -> None:
    """Deletion is scheduled (and undoable) here: Transit reads the key as absent, and its name
    is not taken again by a new key of another kind before the purge, which would mislead."""
    client = servers["cipherd"]
    name = "deleted-" + secrets.token_hex(3)
    client.post(f"/v1/transit/keys/{name}", json={}).raise_for_status()
    client.post(f"/v1/transit/keys/{name}/config", json={"deletion_allowed": True})
    assert client.delete(f"/v1/transit/keys/{name}").status_code == 204
    assert client.get(f"/v1/transit/keys/{name}").status_code == 404
    again = client.post(f"/v1/transit/keys/{name}", json={"type": "rsa-2048"})
    assert again.status_code == 400
    assert "scheduled for deletion" in again.json()["errors"][0]
    restored = client.post(
        f"/v1/keys/{name}/restore", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    assert restored.status_code == 200, restored.text
    assert client.get(f"/v1/transit/keys/{name}").json()["data"]["type"] == "aes256-gcm96"


def test_an_encryption_vault_refuses_creates_no_key(servers: dict[str, httpx.Client]) -> None:
    """Encrypting under a new name creates the key, but not when the request is refused first
    (an empty batch, contexts given in part)."""
    mixed = [{"plaintext": TEXT, "context": CONTEXT}, {"plaintext": TEXT}]
    for client in servers.values():
        for name, items in (
            ("empty-" + secrets.token_hex(3), []),
            ("mixed-" + secrets.token_hex(3), mixed),
        ):
            refused = client.post(f"/v1/transit/encrypt/{name}", json={"batch_input": items})
            assert refused.status_code == 400, refused.text
            assert client.get(f"/v1/transit/keys/{name}").status_code == 404


@pytest.mark.parametrize("key_type", ["ed25519", "rsa-2048"])
def test_what_a_file_gives_with_its_line_break_opens_and_verifies(
    servers: dict[str, httpx.Client], key_type: str
) -> None:
    """`ciphertext=@file` sends the file's last line break, and `base64` wraps its lines: Go's
    decoder skips both, on every base64 field."""
    for client in servers.values():
        mount = "breaks-" + secrets.token_hex(4)
        assert client.post(f"/v1/sys/mounts/{mount}", json={"type": "transit"}).is_success
        try:
            client.post(f"/v1/{mount}/keys/{key_type}", json={"type": key_type}).raise_for_status()
            ciphertext = _made(client, f"/v1/{mount}/encrypt/k", "ciphertext", plaintext=WRAPPED)
            opened = client.post(f"/v1/{mount}/decrypt/k", json={"ciphertext": ciphertext + "\n"})
            assert opened.json()["data"]["plaintext"] == WRAPPED.replace("\n", "")
            signature = _made(client, f"/v1/{mount}/sign/{key_type}", "signature", input=WRAPPED)
            mac = _made(client, f"/v1/{mount}/hmac/k", "hmac", input=TEXT)
            for path, body in (
                (f"verify/{key_type}", {"input": WRAPPED, "signature": signature + "\r\n"}),
                ("verify/k", {"input": TEXT, "hmac": mac + "\n"}),
            ):
                answer = client.post(f"/v1/{mount}/{path}", json=body)
                assert answer.json()["data"]["valid"] is True, (client.base_url, answer.text)
        finally:
            client.delete(f"/v1/sys/mounts/{mount}")


def test_a_path_ending_in_a_slash_is_read_as_openbao_reads_it(
    servers: dict[str, httpx.Client],
) -> None:
    """A listing of `keys/` is the listing; a write to a path ending in '/' is 400 and any other
    request 404, where a redirect would have a client write at the other path."""
    seen = {}
    for name, client in servers.items():
        client.post("/v1/transit/keys/slashed").raise_for_status()
        answers = [
            client.request(method, f"/v1/{path}", json={"plaintext": TEXT})
            for method, path in (
                ("LIST", "transit/keys/"),
                ("GET", "transit/keys/?list=true"),
                ("POST", "transit/encrypt/slashed/"),
                ("PUT", "transit/keys/slashed-2/"),
                ("GET", "transit/keys/slashed/"),
                ("DELETE", "transit/keys/slashed/"),
                ("GET", "sys/mounts/"),
                ("POST", "sys/mounts/elsewhere/"),
            )
        ]
        seen[name] = [(a.status_code, "slashed" in a.text) for a in answers]
        assert all(not a.is_redirect for a in answers), name
    assert seen["cipherd"] == seen["openbao"]
    assert seen["cipherd"][0] == (200, True)
    assert servers["cipherd"].get("/v1/transit/keys/slashed-2").status_code == 404


def test_an_export_holds_no_retired_version(servers: dict[str, httpx.Client]) -> None:
    """Versions below min_decryption_version are retired: an export leaves them out, and asking
    for one by number is refused, as Vault does (cipherd handed them over)."""
    seen = {}
    for name, client in servers.items():
        key = "retired-" + secrets.token_hex(3)
        client.post(f"/v1/transit/keys/{key}", json={"exportable": True}).raise_for_status()
        for _ in range(2):
            client.post(f"/v1/transit/keys/{key}/rotate").raise_for_status()
        client.post(f"/v1/transit/keys/{key}/config", json={"min_decryption_version": 3})
        outcomes = []
        for suffix in ("", "/1", "/3", "/v3", "/latest", "/x", "/9"):
            answer = client.get(f"/v1/transit/export/encryption-key/{key}{suffix}")
            data = answer.json().get("data") if answer.status_code == 200 else None
            outcomes.append((suffix, answer.status_code, data and sorted(data["keys"])))
        seen[name] = outcomes
    assert seen["cipherd"] == seen["openbao"]
    assert seen["cipherd"][0] == ("", 200, ["3"]) and seen["cipherd"][1][1] == 400


def test_a_batch_on_a_key_that_cannot_sign_is_refused_whole(
    servers: dict[str, httpx.Client],
) -> None:
    """A signature or its verification asked of a key that cannot sign is the request's 400,
    batched or not, as on OpenBao (cipherd answered each entry's error under a 200)."""
    seen = {}
    for name, client in servers.items():
        key = "cannot-sign-" + secrets.token_hex(3)
        client.post(f"/v1/transit/keys/{key}", json={}).raise_for_status()
        signature = "vault:v1:" + TEXT
        outcomes = []
        for verb, body in (
            ("sign", {"input": TEXT}),
            ("verify", {"input": TEXT, "signature": signature}),
        ):
            single = client.post(f"/v1/transit/{verb}/{key}", json=body)
            batch = client.post(f"/v1/transit/{verb}/{key}", json={"batch_input": [body, body]})
            outcomes.append((verb, single.status_code, batch.status_code))
        seen[name] = outcomes
    assert seen["cipherd"] == seen["openbao"]
    assert seen["cipherd"] == [("sign", 400, 400), ("verify", 400, 400)]


@pytest.mark.parametrize("key_type", ["aes256-gcm96", "ed25519"])
def test_a_retired_version_makes_nothing(servers: dict[str, httpx.Client], key_type: str) -> None:
    """An encryption, data key, HMAC or signature naming a version below min_decryption_version
    is refused, single or batched, as OpenBao refuses it (cipherd made them, and then could not
    decrypt or verify what it made); the versions from it on work."""
    verbs = {
        "aes256-gcm96": (("encrypt", {"plaintext": TEXT}), ("datakey/plaintext", {})),
        "ed25519": (("sign", {"input": TEXT}),),
    }[key_type] + (("hmac", {"input": TEXT}),)
    seen = {}
    for name, client in servers.items():
        key = f"retiring-{key_type}-" + secrets.token_hex(3)
        client.post(f"/v1/transit/keys/{key}", json={"type": key_type}).raise_for_status()
        for _ in range(2):
            client.post(f"/v1/transit/keys/{key}/rotate").raise_for_status()
        client.post(f"/v1/transit/keys/{key}/config", json={"min_decryption_version": 2})
        outcomes = []
        for verb, body in verbs:
            for version in (1, 2, 3):
                named = {**body, "key_version": version}
                single = client.post(f"/v1/transit/{verb}/{key}", json=named)
                # The version in the entry (encrypt reads it there) and beside the batch (sign
                # and hmac read it there; datakey takes no batch and reads it there too).
                batch = client.post(
                    f"/v1/transit/{verb}/{key}",
                    json={"batch_input": [named], "key_version": version},
                )
                results = batch.json().get("data", {}).get("batch_results", [{}])
                # Refused as a whole (OpenBao's HMAC) or in its entry (cipherd's) alike.
                refused = batch.status_code == 400 or "error" in results[0]
                outcomes.append((verb, version, single.status_code, refused))
        seen[name] = outcomes
    # OpenBao answers a retired version's signature with a 500, the caller's error here.
    vault = [(*o[:2], 400 if o[2] == 500 else o[2], o[3]) for o in seen["openbao"]]
    assert seen["cipherd"] == vault
    assert [o[2:] for o in seen["cipherd"] if o[1] == 1] == [(400, True)] * len(verbs)


@pytest.mark.parametrize("key_type", ["ecdsa-p256", "rsa-2048", "ed25519"])
@pytest.mark.parametrize("marshaling", ["asn1", "jws"])
def test_a_malformed_signature_is_answered_as_openbao_answers(
    servers: dict[str, httpx.Client], key_type: str, marshaling: str
) -> None:
    """Text that is no base64 of the marshaling asked for is a 400, an ECDSA signature that is
    no DER too, and the rest a verdict of false, as OpenBao answers each."""
    texts = ("@@@", "", "AA$A", "AAAA", "AA-_", "AA+/", "AAA=")
    seen = {}
    for name, client in servers.items():
        key = f"signer-{key_type}"
        client.post(f"/v1/transit/keys/{key}", json={"type": key_type}).raise_for_status()
        outcomes = []
        for text in texts:
            body = {"input": TEXT, "signature": f"vault:v1:{text}"}
            body["marshaling_algorithm"] = marshaling
            answer = client.post(f"/v1/transit/verify/{key}", json=body)
            content = answer.json()
            outcomes.append((text, answer.status_code, content.get("errors") or content["data"]))
        seen[name] = outcomes
    assert seen["cipherd"] == seen["openbao"]


def test_upserts_disabled_as_the_bao_command_writes_it(
    servers: dict[str, httpx.Client], tmp_path: Path
) -> None:
    """`bao write <mount>/config/keys disable_upsert=true`: an encryption under a name no key
    has is then refused, single or batched, and creates nothing, in that mount only; `bao read`
    shows the setting, and a write without the field (`-f`) sets it back."""
    seen = {}
    for name, client in servers.items():
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "BAO_ADDR": str(client.base_url).rstrip("/"),
            "BAO_TOKEN": client.headers["X-Vault-Token"],
        }

        def bao(verb: str, *args: str, env: dict[str, str] = env) -> Any:
            done = subprocess.run(
                [bao_binary(), verb, "-format=json", *args],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0, done.stderr
            return json.loads(done.stdout)["data"]

        mount = "upsert-" + secrets.token_hex(4)
        assert client.post(f"/v1/sys/mounts/{mount}", json={"type": "transit"}).status_code == 204
        try:
            written = bao("write", f"{mount}/config/keys", "disable_upsert=true")
            single = client.post(f"/v1/{mount}/encrypt/new", json={"plaintext": TEXT})
            batch = [{"plaintext": TEXT}]
            batched = client.post(f"/v1/{mount}/encrypt/new", json={"batch_input": batch})
            elsewhere = client.post(f"/v1/transit/encrypt/{mount}", json={"plaintext": TEXT})
            seen[name] = (
                written,
                bao("read", f"{mount}/config/keys"),
                [(a.status_code, a.json().get("errors")) for a in (single, batched, elsewhere)],
                client.get(f"/v1/{mount}/keys/new").status_code,
                bao("write", "-f", f"{mount}/config/keys"),
                client.post(f"/v1/{mount}/encrypt/new", json={"plaintext": TEXT}).status_code,
            )
        finally:
            client.delete(f"/v1/sys/mounts/{mount}")
    assert seen["cipherd"] == seen["openbao"]
    refused = (400, ["encryption key not found"])
    assert seen["cipherd"] == (
        {"disable_upsert": True},
        {"disable_upsert": True},
        [refused, refused, (200, None)],
        404,
        {"disable_upsert": False},
        200,
    )


def test_a_form_body_is_read_as_openbao_reads_it(servers: dict[str, httpx.Client]) -> None:
    """`curl -d plaintext=...` sends a form: its fields are read as strings, as the `bao` command
    sends them; a field given twice is its values joined by a comma; a body that looks like JSON
    is JSON whatever it declares; a form that does not decode is a 400."""
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    seen = {}
    for name, client in servers.items():
        mount = "form-" + secrets.token_hex(4)
        assert client.post(f"/v1/sys/mounts/{mount}", json={"type": "transit"}).is_success
        try:
            made = client.post(
                f"/v1/{mount}/keys/k", content="type=aes256-gcm96&exportable=true", headers=form
            )
            config = client.post(
                f"/v1/{mount}/keys/k/config",
                content="deletion_allowed=1&allow_plaintext_backup=t",
                headers=form,
            )
            key = client.get(f"/v1/{mount}/keys/k").json()["data"]
            sealed = client.post(
                f"/v1/{mount}/encrypt/k",
                content=f"plaintext={TEXT.replace('=', '%3D')}&reference=a&reference=b",
                headers=form,
            )
            opened = client.post(
                f"/v1/{mount}/decrypt/k",
                content=json.dumps({"ciphertext": sealed.json()["data"]["ciphertext"]}),
                headers=form,
            )
            broken = client.post(f"/v1/{mount}/encrypt/k", content="plaintext=%ff", headers=form)
            seen[name] = (
                made.status_code,
                config.status_code,
                {setting: key.get(setting) for setting in SETTINGS},
                sealed.status_code,
                opened.json()["data"]["plaintext"],
                broken.status_code,
            )
        finally:
            client.delete(f"/v1/sys/mounts/{mount}")
    assert seen["cipherd"] == seen["openbao"]
    assert seen["cipherd"][4] == TEXT
    assert seen["cipherd"][2]["exportable"] is True


def test_a_mount_s_cache_config_reads_as_openbao_s(servers: dict[str, httpx.Client]) -> None:
    """`cache-config` keeps the size written (0, or 10 and more) and reads it back, each mount
    its own, beside its `config/keys`."""
    steps: list[tuple[str, str, dict[str, Any] | None]] = [
        ("GET", "cache-config", None),
        ("POST", "cache-config", {"size": 5}),
        ("POST", "cache-config", {"size": "25"}),
        ("POST", "config/keys", {"disable_upsert": True}),
        ("GET", "cache-config", None),
        ("POST", "cache-config", {}),
        ("GET", "config/keys", None),
        ("POST", "cache-config", {"size": -1}),
        ("GET", "cache-config", None),
    ]
    seen = {}
    for name, client in servers.items():
        mount = "cache-" + secrets.token_hex(4)
        assert client.post(f"/v1/sys/mounts/{mount}", json={"type": "transit"}).is_success
        try:
            answers = [
                client.request(method, f"/v1/{mount}/{path}", json=body)
                for method, path, body in steps
            ]
            other = client.get("/v1/transit/cache-config").json()["data"]
        finally:
            client.delete(f"/v1/sys/mounts/{mount}")
        seen[name] = (
            [(a.status_code, a.json().get("data")) for a in answers],
            other,
        )
    assert seen["cipherd"] == seen["openbao"]
    assert seen["cipherd"][0][4] == (200, {"size": 25})


def test_a_key_shows_its_last_backup_and_restore_as_on_openbao(
    servers: dict[str, httpx.Client],
) -> None:
    """A backup leaves its time and version in the key's `backup_info`; a restore its own in
    `restore_info` and the backup's in `backup_info`."""
    seen = {}
    for name, client in servers.items():
        key = "recorded-" + secrets.token_hex(4)
        options = {"exportable": True, "allow_plaintext_backup": True}
        client.post(f"/v1/transit/keys/{key}", json=options).raise_for_status()
        before = client.get(f"/v1/transit/keys/{key}").json()["data"]
        client.post(f"/v1/transit/keys/{key}/rotate").raise_for_status()
        backup = client.get(f"/v1/transit/backup/{key}").json()["data"]["backup"]
        client.post(f"/v1/transit/keys/{key}/rotate").raise_for_status()
        after = client.get(f"/v1/transit/keys/{key}").json()["data"]
        restored = client.post(f"/v1/transit/restore/{key}-copy", json={"backup": backup})
        assert restored.status_code == 204, restored.text
        copy = client.get(f"/v1/transit/keys/{key}-copy").json()["data"]
        seen[name] = (
            ("backup_info" in before, "restore_info" in before),
            after["backup_info"]["version"],
            after.get("restore_info"),
            copy["backup_info"]["version"],
            copy["restore_info"]["version"],
            sorted(copy["restore_info"]),
        )
        assert copy["backup_info"]["time"] == after["backup_info"]["time"], name
    assert seen["cipherd"] == seen["openbao"]
    assert seen["cipherd"][:2] == ((False, False), 2)
