"""RSA encryption with server-held `rsa-2048`, `rsa-3072` and `rsa-4096` keys: RSAES-OAEP with
SHA-256, MGF1-SHA-256 and the empty label (`core.oaep`), what Vault Transit's RSA keys and AWS
KMS's RSAES_OAEP_SHA_256 use.

A bare payload is the OAEP ciphertext, as long as the modulus; enveloped `cipherd:v<N>:` unless
asked not to. Every failed decryption is the same 400, whatever failed inside (Manger's attack
learns from any difference).
"""

from app.ops.errors import invalid_input
from app.ops.sealing import SealingKey
from app.server.metrics import timed
from app.store import KeyMaterial
from core import oaep

TYPES = frozenset({"rsa-2048", "rsa-3072", "rsa-4096"})


class RsaKey(SealingKey[object]):
    """An RSA key of a request; its keyring entry holds the private key, read once per
    version."""

    types = TYPES
    used_for = "RSA encryption"

    def seal(self, material: KeyMaterial, params: object, plaintext: bytes) -> bytes:
        public = material.prepared.public_key()
        with timed("rsa", "encrypt"):
            try:
                return oaep.encrypt(public, plaintext)
            except ValueError as exc:
                raise invalid_input(f"plaintext: {exc}") from None

    def unseal(self, material: KeyMaterial, params: object, payload: bytes) -> bytes:
        with timed("rsa", "decrypt"):
            return oaep.decrypt(material.prepared, payload)
