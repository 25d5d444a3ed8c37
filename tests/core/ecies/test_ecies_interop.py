"""Live interop with the reference libraries, both directions, all 18 configurations:
eciespy 0.4.7 in this interpreter and eciesjs 0.5.0 in one node process per session."""

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import ecies as eciespy
import pytest
from ecies.config import Config as EciespyConfig
from ecies_configs import CONFIGS

from core import ecies
from core.ecies.symmetric import ONE_SHOT_BYTES

PEER = Path(__file__).resolve().parents[2] / "interop" / "ecies_peer.js"
# Around ONE_SHOT_BYTES the payload switches from one-shot AEAD calls to in-place streaming.
LENGTHS = (0, 1, 31, 32, 33, 1000, ONE_SHOT_BYTES, ONE_SHOT_BYTES + 1, 1 << 20)


class NodePeer:
    """eciesjs behind tests/interop/ecies_peer.js: one JSON line per request."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            ["node", str(PEER)],
            cwd=PEER.parent,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def call(self, op: str, config: ecies.Config, key: bytes, data: bytes) -> bytes:
        assert self.process.stdin is not None and self.process.stdout is not None
        request = {
            "op": op,
            "config": _fields(config),
            "key": key.hex(),
            "data": data.hex(),
        }
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        reply = json.loads(self.process.stdout.readline())
        assert reply["ok"], reply["error"]
        return bytes.fromhex(reply["data"])

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def node() -> Iterator[NodePeer]:
    peer = NodePeer()
    yield peer
    peer.close()


def _fields(config: ecies.Config) -> dict[str, object]:
    return {
        "elliptic_curve": config.elliptic_curve,
        "is_ephemeral_key_compressed": config.is_ephemeral_key_compressed,
        "is_hkdf_key_compressed": config.is_hkdf_key_compressed,
        "symmetric_algorithm": config.symmetric_algorithm,
        # eciespy types this 12 | 16 and ignores it for xchacha20, as eciesjs does.
        "symmetric_nonce_length": (
            config.symmetric_nonce_length if config.symmetric_algorithm == "aes-256-gcm" else 16
        ),
    }


def _messages() -> list[bytes]:
    return [os.urandom(length) for length in LENGTHS]


def _receiver(config: ecies.Config) -> tuple[bytes, bytes]:
    """A random receiver; secp256k1 public keys alternate between the SEC1 forms."""
    secret, public = ecies.generate_keypair(config.elliptic_curve)
    if config.elliptic_curve == "secp256k1" and config.is_hkdf_key_compressed:
        public = ecies.public_key(secret, "secp256k1", compressed=True)
    return secret, public


@pytest.mark.parametrize("name", list(CONFIGS))
def test_eciespy_decrypts_ours(name: str) -> None:
    config = CONFIGS[name]
    secret, public = _receiver(config)
    for message in _messages():
        payload = ecies.encrypt(public, message, config)
        assert eciespy.decrypt(secret, payload, EciespyConfig(**_fields(config))) == message


@pytest.mark.parametrize("name", list(CONFIGS))
def test_eciespy_decrypts_ours_made_with_the_secret(name: str) -> None:
    """`receiver_sk` (the key holder's faster path) changes nothing a receiver can see."""
    config = CONFIGS[name]
    secret, public = _receiver(config)
    for message in _messages():
        payload = ecies.encrypt(public, message, config, receiver_sk=secret)
        assert eciespy.decrypt(secret, payload, EciespyConfig(**_fields(config))) == message


@pytest.mark.parametrize("name", list(CONFIGS))
def test_we_decrypt_eciespy(name: str) -> None:
    config = CONFIGS[name]
    secret, public = _receiver(config)
    for message in _messages():
        payload = eciespy.encrypt(public, message, EciespyConfig(**_fields(config)))
        assert ecies.decrypt(secret.hex(), payload, config) == message


@pytest.mark.parametrize("name", list(CONFIGS))
def test_eciesjs_decrypts_ours(node: NodePeer, name: str) -> None:
    config = CONFIGS[name]
    secret, public = _receiver(config)
    for message in _messages():
        payload = ecies.encrypt(public, message, config)
        assert node.call("decrypt", config, secret, payload) == message


@pytest.mark.parametrize("name", list(CONFIGS))
def test_we_decrypt_eciesjs(node: NodePeer, name: str) -> None:
    config = CONFIGS[name]
    secret, public = _receiver(config)
    for message in _messages():
        payload = node.call("encrypt", config, public, message)
        assert len(payload) == config.ephemeral_key_length + config.nonce_length + 16 + len(message)
        assert ecies.decrypt(secret, payload, config) == message
