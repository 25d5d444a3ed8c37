"""Settings that list things: each item is checked when the settings are read, so a typo stops
the start instead of trusting no proxy or no signer without a word."""

import base64

import pytest
from pydantic import ValidationError

from app.settings import Settings


def test_trusted_proxies_are_addresses_or_networks() -> None:
    settings = Settings(trusted_proxies=" 10.0.0.0/8, 127.0.0.1,::1 ,")
    assert settings.trusted_proxy_list == ["10.0.0.0/8", "127.0.0.1", "::1"]
    assert Settings().trusted_proxy_list == []
    for wrong in ("*", "proxy.internal", "10.0.0.0/33"):
        with pytest.raises(ValidationError, match="not an IP address or network"):
            Settings(trusted_proxies=wrong)


def test_backup_signers_are_ed25519_public_keys() -> None:
    keys = [bytes([i]) * 32 for i in (1, 2)]
    listed = ",".join(base64.b64encode(key).decode() for key in keys)
    assert Settings(backup_signers=listed).backup_signer_keys == frozenset(keys)
    for wrong in ("not base64!", base64.b64encode(bytes(31)).decode()):
        with pytest.raises(ValidationError, match="not base64 of 32 bytes"):
            Settings(backup_signers=wrong)
