"""Which keys are derived: the flag counts on the types that may be derived (the AEAD types and
Ed25519). Older restores of Transit backups stored it on any type; on another it means nothing,
and such a key signs as it always did."""

import pytest

from app.ops.errors import Problem
from app.ops.keytypes import KEY_TYPES, is_derived, stored_key
from app.ops.sign import check_context, for_context, underived
from app.store import KeyMaterial


def flagged(key_type: str) -> KeyMaterial:
    secret, public = KEY_TYPES[key_type].generate({})
    prepared = stored_key(key_type, secret)
    return KeyMaterial(
        "k", key_type, 1, {"derived": True}, secret, public, False, prepared=prepared
    )


def test_the_flag_counts_on_the_types_that_may_be_derived() -> None:
    assert is_derived("ed25519", {"derived": True})
    assert is_derived("aes256-gcm", {"derived": True})
    assert not is_derived("ecdsa-p256", {"derived": True})
    assert not is_derived("ed25519", {})


def test_a_flagged_key_of_another_type_signs_as_before() -> None:
    ecdsa = flagged("ecdsa-p256")
    assert for_context(ecdsa, None) is ecdsa
    assert underived(ecdsa) is ecdsa
    with pytest.raises(Problem, match="not derived: it takes no context"):
        check_context(ecdsa, b"tenant")


def test_a_derived_ed25519_key_needs_its_context() -> None:
    ed25519 = flagged("ed25519")
    with pytest.raises(Problem, match="missing 'context'"):
        check_context(ed25519, None)
    derived = for_context(ed25519, b"tenant")
    assert derived.public != ed25519.public and derived.secret == b""
    with pytest.raises(Problem, match="each context has its own public key"):
        underived(ed25519)
