"""Backup documents as an instance makes them, for the tests that import them: well-formed or
forged, signed by a key the tests hold (`FORGER`), encrypted to the importing instance."""

import base64
import json
import time
from typing import Any

from app.ops.backup import BACKUP_MAGIC
from core import ecies
from core.fe.schemes import SCHEMES
from core.sign import ed25519

FORGER_SEED = bytes(range(32))
FORGER = ed25519.SigningKey(FORGER_SEED)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def seal(document: dict[str, Any], recipient: bytes, signer: ed25519.SigningKey = FORGER) -> str:
    """A backup blob as an instance makes it: signed, then encrypted to `recipient`."""
    head = BACKUP_MAGIC + signer.public
    body = json.dumps(document).encode()
    return b64(ecies.encrypt(recipient, head + signer.sign(head + body) + body))


def secp256k1_version(number: int, secret: bytes | None = None) -> dict[str, Any]:
    if secret is None:
        secret, _ = ecies.generate_keypair("secp256k1")
    return {
        "version": number,
        "created_at": time.time() - 100,
        "secret": b64(secret),
        "public": b64(ecies.public_key(secret, "secp256k1")),
    }


def document(recipient: bytes, **changes: Any) -> dict[str, Any]:
    """A well-formed backup of a 2-version ecies-secp256k1 key named `forged`."""
    made = {
        "recipient": b64(recipient),
        "made_at": time.time(),
        "key": {
            "name": "forged",
            "type": "ecies-secp256k1",
            "exportable": False,
            "allow_backup": True,
            "deletion_protection": False,
        },
        "policies": {
            "min_decryption_version": 1,
            "min_encryption_version": 0,
            "auto_rotate_seconds": 0,
        },
        "versions": [secp256k1_version(1), secp256k1_version(2)],
        "ledger": [],
    }
    made.update(changes)
    return made


def fe_version(n: int, number: int = 1, key_type: str = "ipfe-opt") -> dict[str, Any]:
    secret, public = SCHEMES[key_type].setup_bytes(n)
    return {
        "version": number,
        "created_at": time.time(),
        "secret": b64(secret),
        "public": None if public is None else b64(public),
    }
