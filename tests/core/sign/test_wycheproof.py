"""Every Wycheproof case for ECDSA secp256k1 with SHA-256 (DER and IEEE P1363, our compact
form) and for Ed25519 gives its expected verdict through `core.sign`."""

import pytest

from core.sign import ecdsa, ed25519
from tests.core.sign.wycheproof import ECDSA_DER, ECDSA_P1363, ED25519, Case


def test_counts() -> None:
    assert (len(ECDSA_DER), len(ECDSA_P1363), len(ED25519)) == (476, 252, 151)
    assert sum(c.valid for c in ECDSA_DER + ECDSA_P1363 + ED25519) == 168 + 167 + 88


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
