"""Quadratic functional encryption: a key for F decrypts a ciphertext of (x, y) to xᵀFy.

Public-key schemes with the verbs of `core.fe.ipfe` plus a `PublicKey` returned by `setup`.
Keys carry F in the clear.
"""

from core.fe.qfe import bcfg, sgp

__all__ = ["bcfg", "sgp"]
