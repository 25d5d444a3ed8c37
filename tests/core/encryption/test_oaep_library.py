"""core.oaep: Wycheproof's RSA-OAEP (SHA-256, MGF1-SHA-256) verdicts, ciphertexts pyca's OAEP
opens and makes, and one error for every failure."""

import os
from functools import cache

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from core import oaep
from core.errors import DecryptionError
from tests.core.encryption.vectors import RSA_OAEP, OaepCase

PYCA_OAEP = padding.OAEP(padding.MGF1(hashes.SHA256()), hashes.SHA256(), None)


def test_the_vectors_cover_every_size() -> None:
    assert len(RSA_OAEP) == 87
    kinds = {(case.key_type, case.valid) for case in RSA_OAEP}
    assert kinds == {
        (f"rsa-{bits}", valid) for bits in (2048, 3072, 4096) for valid in (True, False)
    }


@cache  # OpenSSL checks a key as it reads it: tens of milliseconds for 4096 bits
def private_key(der: bytes) -> rsa.RSAPrivateKey:
    key = serialization.load_der_private_key(der, None)
    assert isinstance(key, rsa.RSAPrivateKey)
    return key


@pytest.mark.parametrize("case", RSA_OAEP, ids=lambda case: case.id)
def test_wycheproof(case: OaepCase) -> None:
    key = private_key(case.private_key)
    if case.valid:
        assert oaep.decrypt(key, case.ciphertext) == case.plaintext
    else:
        with pytest.raises(DecryptionError):
            oaep.decrypt(key, case.ciphertext)


def test_ciphertexts_open_both_ways_with_pyca() -> None:
    key = rsa.generate_private_key(65537, 2048)
    assert oaep.max_plaintext(key.public_key()) == 190
    for size in (0, 1, 190):
        plaintext = os.urandom(size)
        ciphertext = oaep.encrypt(key.public_key(), plaintext)
        assert len(ciphertext) == 256
        assert key.decrypt(ciphertext, PYCA_OAEP) == plaintext
        assert oaep.decrypt(key, key.public_key().encrypt(plaintext, PYCA_OAEP)) == plaintext
    with pytest.raises(ValueError, match="at most 190 bytes for a 2048-bit key"):
        oaep.encrypt(key.public_key(), bytes(191))
    ciphertext = oaep.encrypt(key.public_key(), b"m")
    for bad in (ciphertext[:-1], ciphertext + b"\x00", b"", bytes(256), b"\xff" * 256):
        with pytest.raises(DecryptionError):
            oaep.decrypt(key, bad)
