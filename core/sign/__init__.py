"""Signatures: ECDSA on secp256k1 (`core.sign.ecdsa`) and Ed25519 (`core.sign.ed25519`).

Verification answers a bool: a signature or public key that is malformed merely fails to
verify. Only a malformed request (a prehashed digest that is not 32 bytes, an unknown option)
raises.
"""

from core.sign import ecdsa, ed25519

__all__ = ["ecdsa", "ed25519"]
