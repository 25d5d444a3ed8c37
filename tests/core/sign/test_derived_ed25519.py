"""Ed25519 keys derived per context as Vault Transit derives them, against the signatures a
real OpenBao made (tests/vectors/transit/README.md)."""

import json
from pathlib import Path
from typing import Any

import pytest

from core.sign import ed25519

VECTORS = json.loads(
    (Path(__file__).parents[2] / "vectors" / "transit" / "ed25519_derived.json").read_text()
)


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda v: v["context"][:16])
def test_a_context_derives_openbaos_key(vector: dict[str, Any]) -> None:
    seed = bytes.fromhex(VECTORS["seed"])
    base = ed25519.SigningKey(seed)
    assert base.public.hex() == VECTORS["public_key"]
    derived = ed25519.derive(base, seed, bytes.fromhex(vector["context"]))
    assert derived.public.hex() == vector["public_key"]
    message = bytes.fromhex(vector["message"])
    assert derived.sign(message).hex() == vector["signature"]
    assert ed25519.verify(derived.public, message, bytes.fromhex(vector["signature"]))
    assert not ed25519.verify(base.public, message, bytes.fromhex(vector["signature"]))


def test_contexts_derive_different_keys() -> None:
    seed = bytes.fromhex(VECTORS["seed"])
    base = ed25519.SigningKey(seed)
    keys = {ed25519.derive(base, seed, context).public for context in (b"a", b"b", b"a\x00")}
    assert len(keys) == 3 and base.public not in keys
