"""The key types a client can create, and how each makes its material.

A key type knows how to draw fresh secret material and what public part (if any) goes with it.
Families (ECIES, AEZ, FE) check the type of a key before using it.
"""

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.fe_schemes import FE_SCHEMES, FeScheme
from core import ecies
from core.fe.group import DEFAULT_CURVE

AEZ_KEY_BYTES = 48


@dataclass(frozen=True)
class KeyType:
    name: str
    family: str
    # Draws (secret, public part or None) for the key's creation parameters.
    generate: Callable[[dict[str, Any]], tuple[bytes, bytes | None]]


def _ecies(curve: str) -> KeyType:
    def generate(params: dict[str, Any]) -> tuple[bytes, bytes | None]:
        return ecies.generate_keypair(curve)

    return KeyType(f"ecies-{curve}", "ecies", generate)


def _aez(params: dict[str, Any]) -> tuple[bytes, bytes | None]:
    return os.urandom(AEZ_KEY_BYTES), None


def _fe(scheme: FeScheme) -> KeyType:
    def generate(params: dict[str, Any]) -> tuple[bytes, bytes | None]:
        return scheme.setup(params["dimension"], params.get("curve", DEFAULT_CURVE))

    return KeyType(scheme.key_type, "fe", generate)


KEY_TYPES: dict[str, KeyType] = {
    kt.name: kt
    for kt in (
        _ecies("secp256k1"),
        _ecies("x25519"),
        _ecies("ed25519"),
        KeyType("aez", "aez", _aez),
        *(_fe(scheme) for scheme in FE_SCHEMES.values()),
    )
}
