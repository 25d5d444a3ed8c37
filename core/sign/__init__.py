"""Signatures: ECDSA on secp256k1 (`core.sign.ecdsa`), on P-256, P-384 and P-521
(`core.sign.ecdsa_nist`), Ed25519 (`core.sign.ed25519`), RSA (`core.sign.rsa`) and ML-DSA
(`core.sign.mldsa`); `core.sign.pkcs8` reads and writes the private keys of the last three.

Verification answers a bool: a signature or public key that is malformed merely fails to
verify. Only a malformed request (a prehashed digest of the wrong length, an unknown option)
raises.
"""

from core.sign import ecdsa, ecdsa_nist, ed25519, mldsa, pkcs8, rsa

__all__ = ["ecdsa", "ecdsa_nist", "ed25519", "mldsa", "pkcs8", "rsa"]
