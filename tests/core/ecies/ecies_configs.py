"""The 18 ECIES configurations shared by the ECIES test modules, named like the vectors'
`config_id` (for example `secp256k1-ephU-hkdfC-aes256gcm-n12`, `x25519-xchacha20`)."""

from core.ecies import Config

_SYMMETRIC = (("aes-256-gcm", 16), ("aes-256-gcm", 12), ("xchacha20", 24))


def _symmetric_id(algorithm: str, nonce_length: int) -> str:
    return "xchacha20" if algorithm == "xchacha20" else f"aes256gcm-n{nonce_length}"


def _all() -> dict[str, Config]:
    configs: dict[str, Config] = {}
    for ephemeral in (False, True):
        for hkdf in (False, True):
            for algorithm, nonce_length in _SYMMETRIC:
                name = (
                    f"secp256k1-eph{'C' if ephemeral else 'U'}-hkdf{'C' if hkdf else 'U'}-"
                    + _symmetric_id(algorithm, nonce_length)
                )
                configs[name] = Config("secp256k1", ephemeral, hkdf, algorithm, nonce_length)
    for curve in ("x25519", "ed25519"):
        for algorithm, nonce_length in _SYMMETRIC:
            name = f"{curve}-{_symmetric_id(algorithm, nonce_length)}"
            configs[name] = Config(curve, False, False, algorithm, nonce_length)
    return configs


CONFIGS = _all()
