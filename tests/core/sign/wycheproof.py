"""The Wycheproof vectors of tests/vectors/wycheproof, flattened to one case per test."""

import json
from pathlib import Path
from typing import Any, NamedTuple

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "wycheproof"


class Case(NamedTuple):
    id: str
    public_key: bytes
    message: bytes
    signature: bytes
    valid: bool


def cases(file: str, public_key: str) -> list[Case]:
    """Every case of `file`; `public_key` is the group's field that holds the key's hex.

    The files hold no "acceptable" case (every one is valid or invalid); one appearing in a
    newer copy fails here rather than being given a verdict by accident."""
    document: dict[str, Any] = json.loads((VECTORS / file).read_text())
    out = []
    for group in document["testGroups"]:
        key = bytes.fromhex(group["publicKey"][public_key])
        for test in group["tests"]:
            assert test["result"] in ("valid", "invalid"), test
            out.append(
                Case(
                    f"{file.removesuffix('_test.json')}-{test['tcId']}",
                    key,
                    bytes.fromhex(test["msg"]),
                    bytes.fromhex(test["sig"]),
                    test["result"] == "valid",
                )
            )
    assert len(out) == document["numberOfTests"]
    return out


ECDSA_DER = cases("ecdsa_secp256k1_sha256_test.json", "uncompressed")
ECDSA_P1363 = cases("ecdsa_secp256k1_sha256_p1363_test.json", "uncompressed")
ED25519 = cases("ed25519_test.json", "pk")
