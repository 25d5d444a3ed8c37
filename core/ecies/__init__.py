"""ECIES byte-compatible with eciespy 0.4.7 and eciesjs 0.5.0, in all 18 configurations.

Payload: `ephemeral_pk || nonce || tag || ciphertext`; the symmetric key is
HKDF-SHA256(ephemeral point || shared point) with empty salt and info; AES-256-GCM (12- or
16-byte nonce) or XChaCha20-Poly1305, no associated data. Curves: secp256k1, x25519 and
eciespy's "ed25519" mode (Ed25519 seeds, clamped scalar from SHA-512, Edwards-point ECDH).

Where the reference libraries disagree, this module rejects (`DecryptionError`), because
accepting would let anyone re-encode a payload or build one without knowing a key:

* secp256k1 ephemeral keys in the SEC1 "hybrid" form (prefix 06/07): eciespy decrypts them,
  eciesjs does not. Only 02/03 (compressed) and 04 (uncompressed) are read.
* x25519 ephemeral keys that are not canonical (bit 255 set, or u >= p): eciespy reduces them
  and decrypts, eciesjs fails authentication. Low-order x25519 keys are refused too.
* ed25519 ephemeral points that are the identity, of small order, or outside the prime-order
  subgroup: eciespy accepts them all (with a torsion point the shared point is the identity
  for every receiver). Only canonical points of the prime-order subgroup are read, which is
  what every honest sender produces.

The same rules apply to public keys given to `encrypt` (as InvalidKeyError).

Results are `bytes`, built in place without copying the message (see `_buffers`).
"""

from core.ecies.config import Config
from core.ecies.keys import generate_keypair, public_key
from core.ecies.scheme import decrypt, encrypt

__all__ = ["Config", "decrypt", "encrypt", "generate_keypair", "public_key"]
