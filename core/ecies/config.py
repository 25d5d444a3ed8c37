"""ECIES configuration: the same five fields and defaults as eciespy's and eciesjs's `Config`.

Frozen and validated on construction, so a bad value fails where it is written rather than
deep inside an encryption.
"""

from dataclasses import dataclass

CURVES = ("secp256k1", "x25519", "ed25519")
SYMMETRIC_ALGORITHMS = ("aes-256-gcm", "xchacha20")
AES_NONCE_LENGTHS: tuple[int, ...] = (12, 16)
XCHACHA20_NONCE_LENGTH = 24


@dataclass(frozen=True)
class Config:
    """How a payload is built.

    `is_ephemeral_key_compressed` and `is_hkdf_key_compressed` matter for secp256k1 only.
    `symmetric_nonce_length` (12 or 16) matters for AES-256-GCM only: XChaCha20-Poly1305
    always uses 24-byte nonces, so for it 24 is accepted as well (the test vectors record 24).
    """

    elliptic_curve: str = "secp256k1"
    is_ephemeral_key_compressed: bool = False
    is_hkdf_key_compressed: bool = False
    symmetric_algorithm: str = "aes-256-gcm"
    symmetric_nonce_length: int = 16

    def __post_init__(self) -> None:
        if self.elliptic_curve not in CURVES:
            raise ValueError(f"elliptic_curve must be one of {', '.join(CURVES)}")
        for name in ("is_ephemeral_key_compressed", "is_hkdf_key_compressed"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool")
        if self.symmetric_algorithm not in SYMMETRIC_ALGORITHMS:
            raise ValueError(
                f"symmetric_algorithm must be one of {', '.join(SYMMETRIC_ALGORITHMS)}"
            )
        allowed = AES_NONCE_LENGTHS
        if self.symmetric_algorithm == "xchacha20":
            allowed = (*AES_NONCE_LENGTHS, XCHACHA20_NONCE_LENGTH)
        length = self.symmetric_nonce_length
        if isinstance(length, bool) or not isinstance(length, int) or length not in allowed:
            raise ValueError(
                f"symmetric_nonce_length must be one of {', '.join(map(str, allowed))}"
                f" for {self.symmetric_algorithm}"
            )

    @property
    def nonce_length(self) -> int:
        """Length of the nonce actually written into the payload."""
        if self.symmetric_algorithm == "xchacha20":
            return XCHACHA20_NONCE_LENGTH
        return self.symmetric_nonce_length

    @property
    def ephemeral_key_length(self) -> int:
        """Length of the ephemeral public key at the start of the payload."""
        if self.elliptic_curve == "secp256k1":
            return 33 if self.is_ephemeral_key_compressed else 65
        return 32
