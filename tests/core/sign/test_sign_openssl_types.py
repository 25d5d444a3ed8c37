"""`core.sign.ecdsa_nist`, `core.sign.rsa` and `core.sign.mldsa` beside pyca/cryptography used
directly: each verifies the other's signatures, keys go in and out as PKCS#8 (and ML-DSA's
seed) and refuse what is not a key of their type."""

import hashlib
import os

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, mldsa, padding, rsa, utils

from core.errors import EncodingError, InvalidKeyError
from core.sign import ecdsa_nist, pkcs8
from core.sign import mldsa as core_mldsa
from core.sign import rsa as core_rsa

HASHES = {"sha256": hashes.SHA256(), "sha384": hashes.SHA384(), "sha512": hashes.SHA512()}
CURVES = {"p256": ec.SECP256R1(), "p384": ec.SECP384R1(), "p521": ec.SECP521R1()}
NO_ENCRYPTION = serialization.NoEncryption()


def der(
    key: object, form: serialization.PrivateFormat = serialization.PrivateFormat.PKCS8
) -> bytes:
    return key.private_bytes(serialization.Encoding.DER, form, NO_ENCRYPTION)  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def rsa_2048() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(65537, 2048)


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("hash", HASHES)
def test_ecdsa_both_ways_with_pyca(curve: str, hash: str) -> None:
    peer = ec.generate_private_key(CURVES[curve])
    stored, public = ecdsa_nist.take(curve, der(peer))
    point = serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    assert public == peer.public_key().public_bytes(*point)
    key = ecdsa_nist.signing_key(stored)
    verifying = ecdsa_nist.parse_public(curve, public)
    assert verifying is not None
    algorithm = ec.ECDSA(HASHES[hash])
    signature = ecdsa_nist.sign(key, b"message", hash)
    peer.public_key().verify(signature, b"message", algorithm)
    assert ecdsa_nist.verify(verifying, b"message", peer.sign(b"message", algorithm), hash)
    assert not ecdsa_nist.verify(verifying, b"massage", signature, hash)
    compact = ecdsa_nist.sign(key, b"message", hash, format="compact")
    size = ecdsa_nist.scalar_bytes(curve)
    assert len(compact) == 2 * size
    r, s = int.from_bytes(compact[:size]), int.from_bytes(compact[size:])
    peer.public_key().verify(utils.encode_dss_signature(r, s), b"message", algorithm)
    assert ecdsa_nist.verify(verifying, b"message", compact, hash, format="compact")
    assert not ecdsa_nist.verify(verifying, b"message", compact[:-1], hash, format="compact")
    digest = hashes.Hash(HASHES[hash])
    digest.update(b"message")
    prehashed = ecdsa_nist.sign(key, digest.finalize(), hash, prehashed=True)
    peer.public_key().verify(prehashed, b"message", algorithm)


def test_ecdsa_public_keys_as_callers_give_them() -> None:
    peer = ec.generate_private_key(ec.SECP384R1())
    public = peer.public_key()
    spki = public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    compressed = public.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint
    )
    assert ecdsa_nist.parse_public("p384", spki) == public
    assert ecdsa_nist.parse_public("p384", compressed) == public
    assert ecdsa_nist.parse_public("p256", spki) is None  # a key of another curve
    assert ecdsa_nist.parse_public("p384", compressed[:-1]) is None
    assert ecdsa_nist.parse_public("p384", b"") is None


def test_ecdsa_refuses_what_is_not_a_key_of_its_curve(rsa_2048: rsa.RSAPrivateKey) -> None:
    p384 = ec.generate_private_key(ec.SECP384R1())
    for material, why in (
        (der(p384), "secp384r1"),
        (der(ec.generate_private_key(ec.SECP256K1())), "secp256k1"),
        (der(rsa_2048), "not EC"),
        (der(p384, serialization.PrivateFormat.TraditionalOpenSSL), "PKCS#8"),
        (b"\x30\x03\x02\x01\x00", "PKCS#8"),
        (b"", "PKCS#8"),
    ):
        with pytest.raises(InvalidKeyError, match=why):
            ecdsa_nist.take("p256", material)
    encrypted = p384.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"pass"),
    )
    with pytest.raises(InvalidKeyError, match="PKCS#8"):
        ecdsa_nist.take("p384", encrypted)
    # The public point in the PKCS#8 is another key's: OpenSSL refuses the pair.
    other = ec.generate_private_key(ec.SECP384R1()).public_key()
    point = serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    mixed = der(p384).replace(p384.public_key().public_bytes(*point), other.public_bytes(*point))
    with pytest.raises(InvalidKeyError, match="does not load"):
        ecdsa_nist.take("p384", mixed)


def test_ecdsa_prehashed_digests_have_the_hash_length() -> None:
    key = ecdsa_nist.signing_key(ecdsa_nist.generate("p256")[0])
    with pytest.raises(EncodingError, match="48-byte sha384"):
        ecdsa_nist.sign(key, bytes(32), "sha384", prehashed=True)
    with pytest.raises(EncodingError):
        ecdsa_nist.sign(key, b"m", "md5")
    with pytest.raises(EncodingError):
        ecdsa_nist.sign(key, b"m", "sha256", format="recoverable")


# A standard hash whose digest holds any integer each curve's ECDSA reads (P-521's order has
# 521 bits; SHA-512's 512 hold those of a digest of 64 bytes or less).
_HOLDING = {"p256": hashes.SHA256(), "p384": hashes.SHA384(), "p521": hashes.SHA512()}
_ORDER_BITS = {"p256": 256, "p384": 384, "p521": 521}


@pytest.mark.parametrize("curve", ["p256", "p384", "p521"])
def test_ecdsa_signs_a_prehashed_digest_of_any_length_with_no_hash(curve: str) -> None:
    """With hash none, the digest is the caller's, of any length. What is signed is its
    leftmost bits, as many as the order has (FIPS 186-5's bits2int): the same integer written
    as a standard hash's digest verifies with pyca's own prehashed check. (P-521 with 65 bytes
    or more, whose integer no standard digest holds, is checked against OpenBao in
    tests/e2e/test_transit_import.py.)"""
    key = ecdsa_nist.signing_key(ecdsa_nist.generate(curve)[0])
    holding, bits = _HOLDING[curve], _ORDER_BITS[curve]
    for length in (1, 20, 31, 32, 33, 48, 64, 65, 66, 67, 200):
        digest = os.urandom(length)
        signature = ecdsa_nist.sign(key, digest, "none", prehashed=True)
        assert ecdsa_nist.verify(key.public_key(), digest, signature, "none", prehashed=True)
        assert not ecdsa_nist.verify(key.public_key(), bytes(length), signature, "none", True)
        signed = int.from_bytes(digest) >> max(0, 8 * length - bits)
        if signed.bit_length() <= 8 * holding.digest_size:
            same = signed.to_bytes(holding.digest_size)
            key.public_key().verify(signature, same, ec.ECDSA(utils.Prehashed(holding)))
    for message, prehashed in ((b"digest", False), (b"", True)):
        with pytest.raises(EncodingError, match="one byte or more"):
            ecdsa_nist.sign(key, message, "none", prehashed=prehashed)


@pytest.mark.parametrize("hash", HASHES)
def test_rsa_both_ways_with_pyca(rsa_2048: rsa.RSAPrivateKey, hash: str) -> None:
    stored, spki = core_rsa.take(2048, der(rsa_2048))
    key = core_rsa.signing_key(stored)
    verifying = core_rsa.parse_public(2048, spki)
    assert verifying is not None and verifying == rsa_2048.public_key()
    digest_length = HASHES[hash].digest_size
    pss = padding.PSS(padding.MGF1(HASHES[hash]), digest_length)
    signature = core_rsa.sign(key, b"message", hash)
    rsa_2048.public_key().verify(signature, b"message", pss, HASHES[hash])
    assert core_rsa.verify(
        verifying, b"message", rsa_2048.sign(b"message", pss, HASHES[hash]), hash
    )
    pkcs1 = core_rsa.sign(key, b"message", hash, padding="pkcs1v15")
    assert pkcs1 == rsa_2048.sign(b"message", padding.PKCS1v15(), HASHES[hash])  # deterministic
    assert core_rsa.verify(verifying, b"message", pkcs1, hash, padding="pkcs1v15")
    assert not core_rsa.verify(verifying, b"message", pkcs1, hash)  # not PSS
    # PSS takes exactly the digest's length of salt: none, or the most there is room for, fails.
    for salt in (0, padding.PSS.MAX_LENGTH):
        other = padding.PSS(padding.MGF1(HASHES[hash]), salt)
        assert not core_rsa.verify(
            verifying, b"message", rsa_2048.sign(b"message", other, HASHES[hash]), hash
        )


@pytest.mark.parametrize("hash", HASHES)
def test_rsa_pss_with_a_salt_length_in_bytes(rsa_2048: rsa.RSAPrivateKey, hash: str) -> None:
    """A salt of a number of bytes (Transit's `salt_length`): from 0 to the encoded message's
    length less the digest's and 2 (RFC 8017 9.1.1), exactly that length both ways."""
    key = core_rsa.signing_key(core_rsa.take(2048, der(rsa_2048))[0])
    public = rsa_2048.public_key()
    longest = 256 - HASHES[hash].digest_size - 2
    for salt in (0, 20, longest):
        pss = padding.PSS(padding.MGF1(HASHES[hash]), salt)
        signature = core_rsa.sign(key, b"message", hash, salt=salt)
        public.verify(signature, b"message", pss, HASHES[hash])
        assert core_rsa.verify(public, b"message", signature, hash, salt=salt)
        assert core_rsa.verify(public, b"message", signature, hash, salt="auto")
        other = salt + 1 if salt < longest else salt - 1
        assert not core_rsa.verify(public, b"message", signature, hash, salt=other)
        pyca_signature = rsa_2048.sign(b"message", pss, HASHES[hash])
        assert core_rsa.verify(public, b"message", pyca_signature, hash, salt=salt)
    for salt in (-1, longest + 1):
        with pytest.raises(EncodingError, match=f"0 to {longest} bytes, not {salt}"):
            core_rsa.sign(key, b"message", hash, salt=salt)
        with pytest.raises(EncodingError, match=f"0 to {longest} bytes, not {salt}"):
            core_rsa.verify(public, b"message", b"x" * 256, hash, salt=salt)
    # PKCS#1 v1.5 takes no salt: a length given is not read.
    pkcs1 = core_rsa.sign(key, b"message", hash, padding="pkcs1v15", salt=longest + 1)
    assert core_rsa.verify(public, b"message", pkcs1, hash, padding="pkcs1v15", salt=10_000)


def test_rsa_pkcs1_signs_prehashed_bytes_as_given_with_no_hash(
    rsa_2048: rsa.RSAPrivateKey,
) -> None:
    key = core_rsa.signing_key(core_rsa.take(2048, der(rsa_2048))[0])
    public = rsa_2048.public_key()
    # A DigestInfo built by the caller: the same signature as pyca's over the digest's hash.
    digest = hashlib.sha256(b"message").digest()
    digest_info = bytes.fromhex("3031300d060960864801650304020105000420") + digest
    signature = core_rsa.sign(key, digest_info, "none", prehashed=True, padding="pkcs1v15")
    assert signature == rsa_2048.sign(b"message", padding.PKCS1v15(), hashes.SHA256())
    longest = bytes(range(245))  # 256 - 11 bytes (RFC 8017 9.2)
    signature = core_rsa.sign(key, longest, "none", prehashed=True, padding="pkcs1v15")
    public.verify(signature, longest, padding.PKCS1v15(), utils.NoDigestInfo())
    assert core_rsa.verify(public, longest, signature, "none", True, "pkcs1v15")
    assert not core_rsa.verify(public, longest[:-1], signature, "none", True, "pkcs1v15")
    with pytest.raises(EncodingError, match="at most 245 bytes, not 246"):
        core_rsa.sign(key, longest + b"x", "none", prehashed=True, padding="pkcs1v15")
    for prehashed, scheme in ((False, "pkcs1v15"), (True, "pss")):
        with pytest.raises(EncodingError, match="prehashed, pkcs1v15 only"):
            core_rsa.sign(key, digest, "none", prehashed=prehashed, padding=scheme)
        with pytest.raises(EncodingError, match="prehashed, pkcs1v15 only"):
            core_rsa.verify(public, digest, signature, "none", prehashed, scheme)


def test_rsa_keys_have_their_types_size_and_an_exponent_in_range(
    rsa_2048: rsa.RSAPrivateKey,
) -> None:
    for material, bits, why in (
        (der(rsa_2048), 3072, "3072-bit modulus, not 2048"),
        (der(rsa.generate_private_key(3, 2048)), 2048, "exponent"),
        (der(rsa_2048, serialization.PrivateFormat.TraditionalOpenSSL), 2048, "PKCS#8"),
        (der(ec.generate_private_key(ec.SECP256R1())), 2048, "RSA"),
    ):
        with pytest.raises(InvalidKeyError, match=why):
            core_rsa.take(bits, material)
    spki = rsa_2048.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert core_rsa.parse_public(3072, spki) is None
    assert core_rsa.parse_public(2048, spki[:-1]) is None


@pytest.mark.parametrize("level", ["44", "65", "87"])
def test_ml_dsa_both_ways_with_pyca(level: str) -> None:
    kinds = {
        "44": mldsa.MLDSA44PrivateKey,
        "65": mldsa.MLDSA65PrivateKey,
        "87": mldsa.MLDSA87PrivateKey,
    }
    peer = kinds[level].generate()
    seed, public = core_mldsa.take(level, peer.private_bytes_raw())
    assert seed == peer.private_bytes_raw()
    assert public == peer.public_key().public_bytes_raw()
    assert len(public) == core_mldsa.PUBLIC_BYTES[level]
    assert core_mldsa.take(level, der(peer)) == (seed, public)
    assert core_mldsa.export(level, seed) == der(peer)
    key = core_mldsa.signing_key(level, seed)
    verifying = core_mldsa.parse_public(level, public)
    signature = core_mldsa.sign(key, b"message")
    assert len(signature) == core_mldsa.SIGNATURE_BYTES[level]
    peer.public_key().verify(signature, b"message")
    assert core_mldsa.verify(verifying, b"message", peer.sign(b"message"))
    assert not core_mldsa.verify(verifying, b"massage", signature)
    assert not core_mldsa.verify(verifying, b"message", signature[:-1])
    # mu computed where the message is: the service's signature of it is the message's.
    hasher = mldsa.MLDSAMuHasher(peer.public_key())
    hasher.update(b"message")
    mu = hasher.finalize()
    peer.public_key().verify(core_mldsa.sign(key, mu, mu=True), b"message")
    assert core_mldsa.verify(verifying, mu, peer.sign(b"message"), mu=True)
    with pytest.raises(EncodingError, match="64-byte"):
        core_mldsa.sign(key, mu[:-1], mu=True)
    spki = peer.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert core_mldsa.parse_public(level, spki) == peer.public_key()
    other = "65" if level == "44" else "44"
    assert core_mldsa.parse_public(other, spki) is None
    with pytest.raises(InvalidKeyError, match=f"ML-DSA-{other}"):
        core_mldsa.take(other, der(peer))
    with pytest.raises(InvalidKeyError, match="32-byte seed or PKCS#8"):
        core_mldsa.take(level, seed + b"\x00")


def test_pkcs8_round_trip() -> None:
    key = ec.generate_private_key(ec.SECP521R1())
    assert pkcs8.dump(pkcs8.load(der(key), "a key")) == der(key)
