"""RSA-AES key wrapping as Vault Transit's import takes it: round trips under every OAEP hash,
a wrap under a key other than AES-256 refused (RFC 5649's own examples, under its 192-bit key),
and one failure, whatever failed. Interoperation with OpenBao's import is in
tests/e2e/test_transit_import.py."""

import pytest
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from core import keywrap
from core.errors import DecryptionError

PRIVATE = rsa.generate_private_key(65537, 2048)
# RFC 5649, section 6: the key-encryption key and two wrapped keys.
KEK = bytes.fromhex("5840df6e29b02af1ab493b705bf16ea1ae8338f4dcc176a8")
VECTORS = [
    (
        bytes.fromhex("c37b7e6492584340bed12207808941155068f738"),
        bytes.fromhex("138bdeaa9b8fa7fc61f97742e72248ee5ae6ae5360d1ae6a5f54f373fa543b6a"),
    ),
    (bytes.fromhex("466f7250617369"), bytes.fromhex("afbeb0f07dfbf5419200f2ccb50bb24f")),
]


def _carried(aes_key: bytes, hash_name: str = "SHA256") -> bytes:
    algorithm = keywrap.HASHES[hash_name]()
    oaep = padding.OAEP(mgf=padding.MGF1(algorithm), algorithm=algorithm, label=None)
    return PRIVATE.public_key().encrypt(aes_key, oaep)


@pytest.mark.parametrize("wrapped", [wrapped for _, wrapped in VECTORS])
def test_a_wrap_under_a_key_other_than_aes_256_is_refused(wrapped: bytes) -> None:
    """Vault takes only an AES-256 wrapping key: another is refused as a bad padding is."""
    with pytest.raises(DecryptionError, match="does not unwrap"):
        keywrap.unwrap(PRIVATE, _carried(KEK) + wrapped)


@pytest.mark.parametrize("hash_name", sorted(keywrap.HASHES))
def test_a_wrap_unwraps_under_its_hash_only(hash_name: str) -> None:
    material = bytes(range(200))
    wrapped = keywrap.wrap(PRIVATE.public_key(), material, hash_name)
    assert keywrap.unwrap(PRIVATE, wrapped, hash_name) == material
    other = "SHA1" if hash_name != "SHA1" else "SHA256"
    with pytest.raises(DecryptionError, match="does not unwrap"):
        keywrap.unwrap(PRIVATE, wrapped, other)


def test_every_failure_is_the_same_error() -> None:
    wrapped = keywrap.wrap(PRIVATE.public_key(), b"k" * 32)
    tampered = bytearray(wrapped)
    tampered[-1] ^= 1
    padded_badly = bytearray(wrapped)
    padded_badly[0] ^= 1
    for blob in (bytes(tampered), bytes(padded_badly), _carried(b"a" * 16) + wrapped[256:]):
        with pytest.raises(DecryptionError) as raised:
            keywrap.unwrap(PRIVATE, blob)
        assert str(raised.value) == "the key does not unwrap"
    with pytest.raises(DecryptionError, match="too short"):
        keywrap.unwrap(PRIVATE, wrapped[:256])
