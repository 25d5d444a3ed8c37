"""Backups in process: signed by their source, pinned by the target, and as strict on import as
a creation, a PATCH and BYOK. Every forged document is a 4xx that stores nothing and leaves
`GET /v1/keys` answering 200; the FE ledger travels with the backup, so the budget holds.

The forgeries are signed by a key the target trusts (`backup_signers`): the signature proves
where a backup comes from, and these checks keep a trusted source's mistakes (or another
version's documents) out of the store."""

import base64
import copy
import hmac
import json
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.ops.backup import BACKUP_MAGIC
from app.ops.transit.hmac_keys import sealed
from app.settings import Settings
from core import ecies
from core.sign import ecdsa_nist, ed25519, mldsa, rsa
from tests.app.routers.backup_documents import FORGER, b64, document, fe_version, seal
from tests.conftest import ADMIN_TOKEN

SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141


def instance(tmp_path: Path, name: str, signers: Sequence[bytes] = ()) -> TestClient:
    settings = Settings(
        data_dir=tmp_path / name,
        admin_token=ADMIN_TOKEN,
        fe_processes=0,
        fe_max_dimension=16,
        backup_signers=",".join(b64(s) for s in signers),
    )
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    return TestClient(create_app(settings), headers=headers)


@pytest.fixture
def target(tmp_path: Path) -> Iterator[TestClient]:
    """An instance that takes backups signed by the forger's key, besides its own."""
    with instance(tmp_path, "target", [FORGER.public]) as client:
        yield client


def wrapping(client: TestClient) -> dict[str, bytes]:
    answer = client.get("/v1/sys/wrapping-key").json()
    return {k: base64.b64decode(v) for k, v in answer.items()}


def test_a_well_formed_document_from_a_pinned_signer_imports(target: TestClient) -> None:
    recipient = wrapping(target)["public_key"]
    answer = target.post("/v1/keys/import", json={"backup": seal(document(recipient), recipient)})
    assert answer.status_code == 201, answer.text
    assert [v["version"] for v in answer.json()["versions"]] == [1, 2]
    record = target.get("/v1/audit", params={"operation": "keys_import_key"}).json()["records"]
    assert record[-1]["details"]["signer"] == b64(FORGER.public)


def _key(name: str, key_type: str = "ecies-secp256k1", **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "type": key_type,
        "exportable": False,
        "allow_backup": True,
        "deletion_protection": False,
        **fields,
    }


# Drawn once: RSA keys take a while.
KEYS = {
    "p256": ecdsa_nist.generate("p256"),
    "other_p256": ecdsa_nist.generate("p256"),
    "p384": ecdsa_nist.generate("p384"),
    "rsa2048": rsa.generate(2048),
    "mldsa44": mldsa.generate("44"),
}


# Two aes256-gcm versions' secrets, and an HMAC key sealed under each as a Transit restore keeps
# it (3: under version 1's secret, for a version the documents do not hold).
AES_SECRETS = {1: os.urandom(32), 2: os.urandom(32)}
HMAC_KEY = os.urandom(32)
SEALED = {
    **{number: sealed(secret, number, HMAC_KEY) for number, secret in AES_SECRETS.items()},
    3: sealed(AES_SECRETS[1], 3, HMAC_KEY),
}


def aes_versions() -> list[dict[str, Any]]:
    return [
        {"version": number, "created_at": time.time() - 100, "secret": b64(secret), "public": None}
        for number, secret in AES_SECRETS.items()
    ]


def _forgeries(recipient: bytes) -> dict[str, dict[str, Any]]:
    """Each a backup that must not be stored, by what is wrong with it."""
    good = document(recipient)
    v1, v2 = good["versions"]
    opt = fe_version(3)

    def with_version(index: int, **fields: Any) -> dict[str, Any]:
        versions = copy.deepcopy(good["versions"])
        versions[index].update(fields)
        return document(recipient, versions=versions)

    def with_policies(**fields: Any) -> dict[str, Any]:
        return document(recipient, policies={**good["policies"], **fields})

    def fe(policy: Any = None, ledger: Any = (), versions: Any = None, **key: Any) -> dict:
        fields = {"dimension": 3, "curve": "bls12-381", **key}
        if policy is not None:
            fields["fe_policy"] = policy
        return document(
            recipient,
            key=_key("forged", "ipfe-opt", **fields),
            versions=versions or [opt],
            ledger=list(ledger),
        )

    def entry(function: Any, rank: int, version: int = 1) -> dict[str, Any]:
        return {
            "version": version,
            "function": function,
            "principal": "admin",
            "time": time.time(),
            "rank": rank,
        }

    def with_hmac_keys(sealed_keys: Any, key_type: str = "aes256-gcm") -> dict[str, Any]:
        return document(
            recipient,
            key=_key("forged", key_type),
            versions=aes_versions(),
            transit_hmac_keys=sealed_keys,
        )

    other_secret, _ = ecies.generate_keypair("secp256k1")
    p256, other_p256, p384 = KEYS["p256"], KEYS["other_p256"], KEYS["p384"]
    rsa2048, mldsa44 = KEYS["rsa2048"], KEYS["mldsa44"]
    return {
        "fe_policy-not-a-policy": fe(policy={"max_rank": "all of it"}),
        "fe_policy-unknown-field": fe(policy={"max_rank": 1, "leak": True}),
        "fe_policy-wrong-shape": fe(policy={"allowed_functions": [[1, 2]]}),
        "fe_policy-on-aez": document(
            recipient,
            key=_key("forged", "aez", fe_policy={"max_rank": 1}),
            versions=[{**v1, "secret": b64(bytes(48)), "public": None}],
        ),
        "version-true": with_version(0, version=True),
        "version-2**63": with_version(1, version=2**63),
        "version-0": with_version(0, version=0),
        "version-string": with_version(0, version="1"),
        "versions-decreasing": document(recipient, versions=[v2, v1]),
        "versions-repeated": document(recipient, versions=[v1, {**v2, "version": 1}]),
        "versions-none": document(recipient, versions=[]),
        "created_at-far-ahead": with_version(1, created_at=time.time() + 10 * 86400),
        "created_at-negative": with_version(1, created_at=-1),
        "auto_rotate_seconds-negative": with_policies(auto_rotate_seconds=-5),
        # Under CIPHERD_MIN_AUTO_ROTATE_SECONDS: a version every maintenance pass.
        "auto_rotate_seconds-a-second": with_policies(auto_rotate_seconds=1),
        "min_decryption_version-above-latest": with_policies(min_decryption_version=3),
        "min_decryption_version-below-oldest": document(
            recipient,
            versions=[{**v2, "version": 5}],
            policies={**good["policies"], "min_decryption_version": 2},
        ),
        "min_encryption_version-below-min_decryption": with_policies(
            min_decryption_version=2, min_encryption_version=1
        ),
        "policies-smuggle-exportable": with_policies(exportable=True),
        # Carried as false only, for a disabled key.
        "policies-enabled-true": with_policies(enabled=True),
        "secp256k1-secret-0": with_version(0, secret=b64(bytes(32))),
        "secp256k1-secret-n": with_version(0, secret=b64(SECP256K1_N.to_bytes(32, "big"))),
        "secp256k1-public-not-its-secret": with_version(
            1, public=b64(ecies.public_key(other_secret, "secp256k1"))
        ),
        "secp256k1-public-missing": with_version(1, public=None),
        "secp256k1-secret-short": with_version(1, secret=b64(bytes(31))),
        "secret-not-base64": with_version(1, secret="not base64!"),
        "aez-5-byte-key": document(
            recipient,
            key=_key("forged", "aez"),
            versions=[{**v1, "secret": b64(bytes(5)), "public": None}],
        ),
        "aez-with-a-public-part": document(
            recipient,
            key=_key("forged", "aez"),
            versions=[{**v1, "secret": b64(bytes(48))}],
        ),
        "ed25519-public-not-its-seed": document(
            recipient,
            key=_key("forged", "ed25519"),
            versions=[{**v1, "secret": b64(bytes(32)), "public": b64(bytes(32))}],
        ),
        "type-unknown": document(recipient, key=_key("forged", "rsa-1024")),
        "ecdsa-p256-public-not-its-secret": document(
            recipient,
            key=_key("forged", "ecdsa-p256"),
            versions=[{**v1, "secret": b64(p256[0]), "public": b64(other_p256[1])}],
        ),
        "ecdsa-p256-secret-of-p384": document(
            recipient,
            key=_key("forged", "ecdsa-p256"),
            versions=[{**v1, "secret": b64(p384[0]), "public": b64(p384[1])}],
        ),
        "rsa-3072-secret-of-2048-bits": document(
            recipient,
            key=_key("forged", "rsa-3072"),
            versions=[{**v1, "secret": b64(rsa2048[0]), "public": b64(rsa2048[1])}],
        ),
        "ml-dsa-44-public-of-another-seed": document(
            recipient,
            key=_key("forged", "ml-dsa-44"),
            versions=[{**v1, "secret": b64(bytes(32)), "public": b64(mldsa44[1])}],
        ),
        "name-bad": document(recipient, key=_key("../etc/passwd")),
        "not-allow_backup": document(recipient, key=_key("forged", allow_backup=False)),
        "exportable-a-string": document(recipient, key=_key("forged", exportable="yes")),
        "dimension-on-ecies": document(recipient, key=_key("forged", dimension=3)),
        "fe-dimension-over-the-maximum": fe(dimension=17),
        "fe-master-of-another-dimension": fe(dimension=4),
        "fe-master-of-another-curve": fe(curve="bn254"),
        "fe-master-not-a-master-key": fe(versions=[{**opt, "secret": b64(b"CFE" + bytes(40))}]),
        "fe-tao-base-not-its-master's": document(
            recipient,
            key=_key("forged", "ipfe-tao", dimension=2, curve="bls12-381"),
            versions=[{**fe_version(2, key_type="ipfe-tao"), "public": b64(bytes(576))}],
        ),
        "qfe-public-key-not-its-master's": document(
            recipient,
            key=_key("forged", "qfe-sgp", dimension=2, curve="bls12-381"),
            versions=[
                {
                    **fe_version(2, key_type="qfe-sgp"),
                    "public": fe_version(2, key_type="qfe-sgp")["public"],
                }
            ],
        ),
        "ledger-rank-understated": fe(
            policy={"max_rank": 1}, ledger=[entry([1, 0, 0], 1), entry([0, 1, 0], 1)]
        ),
        "ledger-rank-overstated": fe(ledger=[entry([1, 0, 0], 1), entry([2, 0, 0], 2)]),
        "ledger-function-wrong-shape": fe(ledger=[entry([1, 0], 1)]),
        "ledger-of-a-missing-version": fe(ledger=[entry([1, 0, 0], 1, version=2)]),
        "ledger-on-ecies": document(recipient, ledger=[entry([1, 0, 0], 1)]),
        # A release time past year 9999 was stored, then every listing of the key's functions
        # answered 500, and its next backup carried it on.
        "ledger-time-past-9999": fe(ledger=[{**entry([1, 0, 0], 1), "time": 253402300800.0}]),
        # PostgreSQL text holds no NUL: taken by SQLite alone, the key could not move on.
        "ledger-principal-with-a-nul": fe(ledger=[{**entry([1, 0, 0], 1), "principal": "a\x00"}]),
        "ledger-principal-with-a-line-break": fe(
            ledger=[{**entry([1, 0, 0], 1), "principal": "a\nb"}]
        ),
        "ledger-time-1e300": fe(ledger=[{**entry([1, 0, 0], 1), "time": 1e300}]),
        "ledger-time-far-ahead": fe(
            ledger=[{**entry([1, 0, 0], 1), "time": time.time() + 10 * 86400}]
        ),
        "made_at-far-ahead": document(recipient, made_at=time.time() + 10 * 86400),
        "transit_hmac_keys-not-an-object": with_hmac_keys([SEALED[1]]),
        "transit_hmac_keys-null": with_hmac_keys(None),
        "transit_hmac_keys-a-number": with_hmac_keys({"1": 7}),
        "transit_hmac_keys-of-a-missing-version": with_hmac_keys({"3": SEALED[3]}),
        "transit_hmac_keys-version-01": with_hmac_keys({"01": SEALED[1]}),
        "transit_hmac_keys-not-base64": with_hmac_keys({"1": "not base64!"}),
        "transit_hmac_keys-too-short-to-open": with_hmac_keys({"1": b64(bytes(11))}),
        "transit_hmac_keys-of-another-secret": with_hmac_keys(
            {"1": sealed(os.urandom(32), 1, HMAC_KEY)}
        ),
        "transit_hmac_keys-of-another-version": with_hmac_keys({"2": SEALED[1]}),
        "transit_hmac_keys-on-ecies": document(
            recipient, transit_hmac_keys={"1": sealed(base64.b64decode(v1["secret"]), 1, HMAC_KEY)}
        ),
        "transit_hmac_keys-on-hmac": with_hmac_keys({"1": SEALED[1]}, "hmac"),
        "unknown-field": document(recipient, comment="hello"),
    }


FORGERY_IDS = list(_forgeries(bytes(65)))  # the ids only: the documents need the recipient


def test_the_hmac_keys_the_forgeries_start_from_import_and_mac(target: TestClient) -> None:
    """The document the `transit_hmac_keys` forgeries change imports, and the key MACs with the
    HMAC key it carried."""
    recipient = wrapping(target)["public_key"]
    made = document(
        recipient,
        key=_key("forged", "aes256-gcm"),
        versions=aes_versions(),
        transit_hmac_keys={"1": SEALED[1]},
    )
    assert target.post("/v1/keys/import", json={"backup": seal(made, recipient)}).status_code == 201
    answer = target.post("/v1/transit/hmac/forged", json={"input": b64(b"m"), "key_version": 1})
    expected = b64(hmac.digest(HMAC_KEY, b"m", "sha256"))
    assert answer.json()["data"]["hmac"] == f"vault:v1:{expected}"


@pytest.mark.parametrize("case", FORGERY_IDS)
def test_a_forged_document_is_refused_and_nothing_stored(target: TestClient, case: str) -> None:
    recipient = wrapping(target)["public_key"]
    forged = _forgeries(recipient)[case]
    answer = target.post("/v1/keys/import", json={"backup": seal(forged, recipient)})
    assert 400 <= answer.status_code < 500, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert target.get("/v1/keys/forged").status_code == 404
    listing = target.get("/v1/keys")
    assert listing.status_code == 200 and listing.json()["keys"] == []


def test_origin_is_checked_before_the_document(target: TestClient, tmp_path: Path) -> None:
    recipient = wrapping(target)["public_key"]
    stranger = ed25519.SigningKey(bytes(32))
    answer = target.post(
        "/v1/keys/import", json={"backup": seal(document(recipient), recipient, stranger)}
    )
    assert answer.status_code == 403
    assert answer.json()["type"] == "urn:cipherd:problem:backup-signer-not-trusted"
    assert b64(stranger.public) in answer.json()["detail"]

    # A signature over another document; an unsigned document as backups once were; a backup
    # made for another instance and encrypted again to this one.
    head = BACKUP_MAGIC + FORGER.public
    body = json.dumps(document(recipient)).encode()
    other = FORGER.sign(head + body + b" ")
    tampered = b64(ecies.encrypt(recipient, head + other + body))
    unsigned = b64(ecies.encrypt(recipient, body))
    elsewhere = seal(document(wrapping(target)["public_key"][:1] + bytes(64)), recipient)
    for blob, words in ((tampered, "signature"), (unsigned, "signed"), (elsewhere, "another")):
        answer = target.post("/v1/keys/import", json={"backup": blob})
        assert answer.status_code == 422 and words in answer.json()["detail"], answer.text
    assert target.get("/v1/keys").json()["keys"] == []


def test_instances_take_their_own_backups_and_those_of_the_signers_they_pin(
    tmp_path: Path,
) -> None:
    with instance(tmp_path, "a") as a, instance(tmp_path, "unpinned") as unpinned:
        signer_a = wrapping(a)["signing_key"]
        assert len(signer_a) == 32
        body = {"name": "k", "type": "aez", "allow_backup": True}
        assert a.post("/v1/keys", json=body).status_code == 201
        with instance(tmp_path, "pinned", [signer_a]) as pinned:
            for target, status in ((a, 409), (unpinned, 403), (pinned, 201)):
                to = {"wrapping_key": b64(wrapping(target)["public_key"])}
                blob = a.post("/v1/keys/k/backup", json=to).json()["backup"]
                answer = target.post("/v1/keys/import", json={"backup": blob})
                assert answer.status_code == status, answer.text
            # The signing key is the store's: a restart (another process) signs with it too.
        with instance(tmp_path, "a") as again:
            assert wrapping(again)["signing_key"] == signer_a


def test_signing_keys_travel_with_every_version(tmp_path: Path) -> None:
    """ECDSA, RSA and ML-DSA keys arrive with both versions: the target verifies what the
    source signed with each, and shows the same public keys."""
    with instance(tmp_path, "source") as source:
        signer = wrapping(source)["signing_key"]
        with instance(tmp_path, "target", [signer]) as target:
            to = {"wrapping_key": b64(wrapping(target)["public_key"])}
            for key_type in ("ecdsa-p521", "rsa-2048", "ml-dsa-65"):
                body = {"name": key_type, "type": key_type, "allow_backup": True}
                assert source.post("/v1/keys", json=body).status_code == 201
                message = {"message": b64(b"m")}
                first = source.post(f"/v1/sign/{key_type}", json=message).json()["signature"]
                source.post(f"/v1/keys/{key_type}/rotate")
                second = source.post(f"/v1/sign/{key_type}", json=message).json()["signature"]
                blob = source.post(f"/v1/keys/{key_type}/backup", json=to).json()["backup"]
                answer = target.post("/v1/keys/import", json={"backup": blob})
                assert answer.status_code == 201, answer.text
                for signature in (first, second):
                    check = {**message, "signature": signature}
                    assert target.post(f"/v1/verify/{key_type}", json=check).json() == {
                        "valid": True
                    }
                for version in (1, 2):
                    path = f"/v1/keys/{key_type}/public"
                    query = {"version": version, "format": "der"}
                    assert (
                        target.get(path, params=query).json()
                        == source.get(path, params=query).json()
                    )


def test_a_disabled_key_travels_disabled(tmp_path: Path) -> None:
    """A key disabled (in an incident, say) is imported disabled: its backup carries `enabled`
    false, and an instance that predates that field refuses the backup rather than bring the
    key back usable. It came back enabled."""
    with instance(tmp_path, "source") as source:
        signer = wrapping(source)["signing_key"]
        with instance(tmp_path, "target", [signer]) as target:
            to = {"wrapping_key": b64(wrapping(target)["public_key"])}
            body = {"name": "off", "type": "aez", "allow_backup": True}
            assert source.post("/v1/keys", json=body).status_code == 201
            sealed_before = source.post("/v1/aez/off/encrypt", json={"plaintext": b64(b"m")})
            source.patch("/v1/keys/off", json={"enabled": False}).raise_for_status()
            blob = source.post("/v1/keys/off/backup", json=to).json()["backup"]
            imported = target.post("/v1/keys/import", json={"backup": blob})
            assert imported.status_code == 201, imported.text
            assert imported.json()["enabled"] is False
            refused = target.post("/v1/aez/off/encrypt", json={"plaintext": b64(b"m")})
            assert (refused.status_code, refused.json()["type"]) == (
                409,
                "urn:cipherd:problem:key-disabled",
            )
            target.patch("/v1/keys/off", json={"enabled": True}).raise_for_status()
            opened = target.post("/v1/aez/off/decrypt", json=sealed_before.json())
            assert opened.json()["plaintext"] == b64(b"m")


def test_the_fe_ledger_travels_so_the_budget_holds(tmp_path: Path) -> None:
    with instance(tmp_path, "source") as source:
        policy = {"max_rank": 1, "keygen_quota": {"count": 3, "period_seconds": 3600}}
        made = {
            "name": "stats",
            "type": "ipfe-opt",
            "dimension": 3,
            "allow_backup": True,
            "fe_policy": policy,
        }
        assert source.post("/v1/keys", json=made).status_code == 201
        assert source.post("/v1/fe/stats/keygen", json={"y": [1, 0, 0]}).status_code == 200
        assert source.post("/v1/fe/stats/keygen", json={"y": [2, 0, 0]}).status_code == 200
        with instance(tmp_path, "target", [wrapping(source)["signing_key"]]) as target:
            to = {"wrapping_key": b64(wrapping(target)["public_key"])}
            blob = source.post("/v1/keys/stats/backup", json=to).json()["backup"]

            renamed = target.post("/v1/keys/import", json={"backup": blob, "name": "copy"})
            assert renamed.status_code == 422 and "own name" in renamed.json()["detail"]
            assert target.post("/v1/keys/import", json={"backup": blob}).status_code == 201

            released = target.get("/v1/fe/stats/functions").json()
            assert [f["function"] for f in released["functions"]] == [[1, 0, 0], [2, 0, 0]]
            assert released["rank"] == 1
            # Rank 1 is spent: a new direction is refused, the same one still served, and the
            # token's (here the admin's) quota counts the source's releases.
            refused = target.post("/v1/fe/stats/keygen", json={"y": [0, 1, 0]})
            assert refused.status_code == 403
            assert refused.json()["type"] == "urn:cipherd:problem:leakage-budget-exceeded"
            assert target.post("/v1/fe/stats/keygen", json={"y": [3, 0, 0]}).status_code == 200
            quota = target.post("/v1/fe/stats/keygen", json={"y": [4, 0, 0]})
            assert quota.status_code == 429


def test_a_key_without_a_policy_may_be_renamed_and_keeps_its_ledger(tmp_path: Path) -> None:
    with instance(tmp_path, "one") as one:
        made = {"name": "q", "type": "qfe-sgp", "dimension": 2, "allow_backup": True}
        assert one.post("/v1/keys", json=made).status_code == 201
        assert one.post("/v1/fe/q/keygen", json={"f": [[1, 0], [0, 1]]}).status_code == 200
        to = {"wrapping_key": b64(wrapping(one)["public_key"])}
        blob = one.post("/v1/keys/q/backup", json=to).json()["backup"]
        answer = one.post("/v1/keys/import", json={"backup": blob, "name": "q2"})
        assert answer.status_code == 201, answer.text
        assert one.get("/v1/fe/q2/functions").json()["rank"] == 1
        assert (
            one.get("/v1/keys/q2/public").json()["public_key"]
            == (one.get("/v1/keys/q/public").json()["public_key"])
        )


def test_a_backup_is_not_opened_for_a_caller_who_could_restore_none(tmp_path: Path) -> None:
    """A token with neither `backup` nor any `create` is refused before the backup is
    decrypted, and learns nothing of the key inside."""
    with instance(tmp_path, "a") as a:
        body = {"name": "secret-name", "type": "aez", "allow_backup": True}
        assert a.post("/v1/keys", json=body).status_code == 201
        to = {"wrapping_key": b64(wrapping(a)["public_key"])}
        blob = a.post("/v1/keys/secret-name/backup", json=to).json()["backup"]
        for operations in (["encrypt", "decrypt"], ["read"]):
            made = a.post("/v1/tokens", json={"keys": ["*"], "operations": operations})
            token = made.json()["token"]
            answer = a.post(
                "/v1/keys/import",
                json={"backup": blob},
                headers={"Authorization": f"Bearer {token}"},
            )
            assert answer.status_code == 403, answer.text
            assert "secret-name" not in answer.text
            assert "'backup', or create" in answer.json()["detail"]


def test_the_hmac_keys_of_a_transit_restore_travel_with_its_native_backup(tmp_path: Path) -> None:
    """A key restored from a Transit backup MACs with each version's HMAC key of the backup (Vault
    draws one per version). Its native backup carries them, so the key imported from it verifies
    the HMACs made before and makes the same ones; before, the copy derived HMAC keys of its own
    and `verify` answered false. A version trimmed away leaves its HMAC key behind."""
    message = b64(b"invoice 42")
    with instance(tmp_path, "source") as source:
        made = {"exportable": True, "allow_plaintext_backup": True}
        assert source.post("/v1/transit/keys/vaults", json=made).status_code in (200, 204)
        assert source.post("/v1/transit/keys/vaults/rotate").status_code == 200
        backup = source.get("/v1/transit/backup/vaults").json()["data"]["backup"]
        transit = json.loads(base64.b64decode(backup))
        hmac_keys = {number: os.urandom(32) for number in transit["policy"]["keys"]}
        for number, entry in transit["policy"]["keys"].items():
            entry["hmac_key"] = b64(hmac_keys[number])
        restore = {"backup": b64(json.dumps(transit).encode())}
        assert source.post("/v1/transit/restore/orders", json=restore).status_code == 204
        macs = {}
        for version in (1, 2):
            body = {"input": message, "key_version": version}
            macs[version] = source.post("/v1/transit/hmac/orders", json=body).json()["data"]["hmac"]
            expected = b64(hmac.digest(hmac_keys[str(version)], b"invoice 42", "sha256"))
            assert macs[version] == f"vault:v{version}:{expected}"
        with instance(tmp_path, "target", [wrapping(source)["signing_key"]]) as target:
            to = {"wrapping_key": b64(wrapping(target)["public_key"])}

            def copied(name: str, versions: tuple[int, ...]) -> None:
                """The key's native backup imported as `name`, which verifies and makes again
                the HMACs of `versions`."""
                blob = source.post("/v1/keys/orders/backup", json=to).json()["backup"]
                answer = target.post("/v1/keys/import", json={"backup": blob, "name": name})
                assert answer.status_code == 201, answer.text
                for version in versions:
                    check = {"input": message, "hmac": macs[version]}
                    verified = target.post(f"/v1/transit/verify/{name}", json=check).json()
                    assert verified["data"]["valid"] is True, (name, version)
                    body = {"input": message, "key_version": version}
                    again = target.post(f"/v1/transit/hmac/{name}", json=body).json()
                    assert again["data"]["hmac"] == macs[version]

            copied("copy", (1, 2))
            raised = source.patch("/v1/keys/orders", json={"min_decryption_version": 2})
            assert raised.status_code == 200, raised.text
            assert source.post("/v1/keys/orders/trim").status_code == 200
            copied("trimmed", (2,))
