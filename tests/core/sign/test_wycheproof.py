"""Every Wycheproof case of tests/vectors/wycheproof gives its expected verdict through
`core.sign` (either verdict where Wycheproof finds the case acceptable): ECDSA on secp256k1
(DER and IEEE P1363, our compact form), P-256, P-384 and P-521, Ed25519, RSA PKCS#1 v1.5 and
PSS, ML-DSA; and ML-DSA's seeds give FIPS 204's public keys."""

from typing import Any

import pytest

from core.errors import InvalidKeyError
from core.sign import ecdsa, ecdsa_nist, ed25519, mldsa, rsa
from tests.core.sign.wycheproof import (
    ECDSA_DER,
    ECDSA_P1363,
    ED25519,
    ML_DSA,
    ML_DSA_SEEDS,
    ML_DSA_SIGNED,
    NIST_ECDSA,
    OPENSSL_CASES,
    RSA_PKCS1,
    RSA_PSS,
    RSA_PSS_OTHER_SALTS,
    RSA_PSS_SALTED,
    Case,
    Seed,
    agrees,
)


def test_counts() -> None:
    assert (len(ECDSA_DER), len(ECDSA_P1363), len(ED25519)) == (476, 252, 151)
    assert sum(c.valid is True for c in ECDSA_DER + ECDSA_P1363 + ED25519) == 168 + 167 + 88
    assert (len(NIST_ECDSA), len(RSA_PKCS1), len(RSA_PSS), len(RSA_PSS_OTHER_SALTS)) == (
        4608,
        2330,
        788,
        15,
    )
    assert sum(c.valid is None for c in RSA_PKCS1) == 9  # one acceptable case per file
    # Salts of 0, 20, 28, 32, 48 and 64 bytes but the digest's, with SHA-256, -384 and -512.
    assert sorted({c.options["salt"] for c in RSA_PSS_SALTED}) == [0, 20, 28, 32, 48, 64]
    assert sum(c.valid is True for c in RSA_PSS_SALTED) == 15
    assert (len(ML_DSA), len(ML_DSA_SIGNED), len(ML_DSA_SEEDS)) == (610, 490, 106)


@pytest.mark.parametrize("case", ECDSA_DER, ids=[c.id for c in ECDSA_DER])
def test_ecdsa_der(case: Case) -> None:
    assert ecdsa.verify(case.public_key, case.message, case.signature, format="der") is case.valid


@pytest.mark.parametrize("case", ECDSA_P1363, ids=[c.id for c in ECDSA_P1363])
def test_ecdsa_compact(case: Case) -> None:
    verdict = ecdsa.verify(case.public_key, case.message, case.signature, format="compact")
    assert verdict is case.valid


@pytest.mark.parametrize("case", ED25519, ids=[c.id for c in ED25519])
def test_ed25519(case: Case) -> None:
    assert ed25519.verify(case.public_key, case.message, case.signature) is case.valid


def _verify(case: Case) -> bool:
    """`core.sign`'s verdict, with the key the case gives read as the service reads a key in a
    request (a key of another type or size: False)."""
    options: dict[str, Any] = dict(case.options)
    family, _, size = case.key_type.rpartition("-")
    if family == "ecdsa":
        key: Any = ecdsa_nist.parse_public(size, case.public_key)
        check = ecdsa_nist.verify
    elif family == "rsa":
        key = rsa.parse_public(int(size), case.public_key)
        check = rsa.verify
    else:
        key = mldsa.parse_public(size, case.public_key)
        check = mldsa.verify
    return key is not None and check(key, case.message, case.signature, **options)


@pytest.mark.parametrize("case", OPENSSL_CASES, ids=[c.id for c in OPENSSL_CASES])
def test_openssl_types(case: Case) -> None:
    assert agrees(_verify(case), case)


@pytest.mark.parametrize("seed", ML_DSA_SEEDS, ids=[s.id for s in ML_DSA_SEEDS])
def test_ml_dsa_seeds_give_fips_204_public_keys(seed: Seed) -> None:
    level = seed.key_type.removeprefix("ml-dsa-")
    if seed.public_key is None:
        with pytest.raises(InvalidKeyError):
            mldsa.take(level, seed.seed)
        return
    assert mldsa.take(level, seed.seed) == (seed.seed, seed.public_key)


@pytest.mark.parametrize("case", RSA_PSS_SALTED, ids=[c.id for c in RSA_PSS_SALTED])
def test_rsa_pss_with_the_salt_length_given(case: Case) -> None:
    """A salt length in bytes (Transit's `salt_length`) verifies exactly that length."""
    assert agrees(_verify(case), case)
