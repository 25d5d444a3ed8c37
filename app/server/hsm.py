"""The root key in a PKCS#11 token (an HSM, or SoftHSM2): a non-extractable AES key that only
wraps and unwraps the keyring's terms and the store's check value.

The key never leaves the token. A term goes in as a session object, is wrapped by the token with
AES key wrap with padding (RFC 5649, CKM_AES_KEY_WRAP_PAD), and comes back out of an unwrap as a
session object made readable for this process, destroyed at once. Key wrap carries no associated
data, so the wrapped value starts with the identity the AES-GCM wrapping binds (name, version,
type), then the secret's length: a blob moved to another row fails as it does under a root key
held in memory, and padding a token leaves on an unwrapped value (SoftHSM2 does) is told apart
from the secret.
"""

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pkcs11
from pkcs11 import Attribute, KeyType, Mechanism, ObjectClass
from pkcs11.exceptions import (
    MultipleObjectsReturned,
    MultipleTokensReturned,
    NoSuchKey,
    NoSuchToken,
    PinIncorrect,
    PinInvalid,
    PinLenRange,
    PinLocked,
    PKCS11Error,
)

from app.server.bootstrap import BootstrapError
from app.store.errors import UnwrapError
from app.store.wrapping import associated_data

_MECHANISM = Mechanism.AES_KEY_WRAP_PAD
# A session object, readable by this process: what a secret crossing the token becomes.
_READABLE = {
    Attribute.TOKEN: False,
    Attribute.SENSITIVE: False,
    Attribute.EXTRACTABLE: True,
}


class HsmError(BootstrapError):
    """The PKCS#11 settings do not give a usable root key; the message names the setting."""


@dataclass(frozen=True)
class Pkcs11Settings:
    module: Path
    token: str
    key: str
    pin_file: Path


# One logged-in session per token and process: PKCS#11 logs in an application, not a session.
_sessions: dict[tuple[str, str], Any] = {}
_sessions_lock = threading.Lock()


def _session(settings: Pkcs11Settings) -> Any:
    with _sessions_lock:
        cached = _sessions.get((str(settings.module), settings.token))
        if cached is not None:
            return cached
        try:
            library = pkcs11.lib(str(settings.module))
        except (PKCS11Error, RuntimeError, OSError) as exc:
            raise HsmError(
                f"CIPHERD_ROOT_KEY_PKCS11_MODULE: cannot load {settings.module}: {exc}"
            ) from None
        try:
            token = library.get_token(token_label=settings.token)
        except NoSuchToken:
            raise HsmError(
                f"CIPHERD_ROOT_KEY_PKCS11_TOKEN: no token labelled {settings.token!r}"
            ) from None
        except MultipleTokensReturned:
            raise HsmError(
                f"CIPHERD_ROOT_KEY_PKCS11_TOKEN: several tokens are labelled {settings.token!r}"
            ) from None
        try:
            pin = settings.pin_file.read_text().rstrip("\r\n")
        except OSError as exc:
            raise HsmError(
                f"CIPHERD_ROOT_KEY_PKCS11_PIN_FILE: cannot read {settings.pin_file}: {exc.strerror}"
            ) from None
        try:
            session = token.open(user_pin=pin)
        except (PinIncorrect, PinInvalid, PinLenRange):
            raise HsmError(
                f"CIPHERD_ROOT_KEY_PKCS11_PIN_FILE: the token {settings.token!r} refuses the PIN"
            ) from None
        except PinLocked:
            raise HsmError(
                f"CIPHERD_ROOT_KEY_PKCS11_PIN_FILE: the token {settings.token!r} is locked "
                "after too many wrong PINs"
            ) from None
        except PKCS11Error as exc:
            raise HsmError(
                f"CIPHERD_ROOT_KEY_PKCS11_TOKEN: cannot open a session on {settings.token!r}: "
                f"{type(exc).__name__}"
            ) from None
        _sessions[(str(settings.module), settings.token)] = session
        return session


class Pkcs11RootKey:
    """The root key: wraps and unwraps through the token, one call at a time."""

    def __init__(self, settings: Pkcs11Settings) -> None:
        self._session = _session(settings)
        self._lock = threading.Lock()
        try:
            key = self._session.get_key(
                object_class=ObjectClass.SECRET_KEY, key_type=KeyType.AES, label=settings.key
            )
        except NoSuchKey:
            raise HsmError(
                f"CIPHERD_ROOT_KEY_PKCS11_KEY: no AES key labelled {settings.key!r} on the token"
            ) from None
        except MultipleObjectsReturned:
            raise HsmError(
                f"CIPHERD_ROOT_KEY_PKCS11_KEY: several AES keys are labelled {settings.key!r}"
            ) from None
        if key[Attribute.EXTRACTABLE] or not key[Attribute.SENSITIVE]:
            raise HsmError(
                f"CIPHERD_ROOT_KEY_PKCS11_KEY: {settings.key!r} must be sensitive and "
                "non-extractable (CKA_SENSITIVE true, CKA_EXTRACTABLE false)"
            )
        if not (key[Attribute.WRAP] and key[Attribute.UNWRAP]):
            raise HsmError(
                f"CIPHERD_ROOT_KEY_PKCS11_KEY: {settings.key!r} must allow wrap and unwrap "
                "(CKA_WRAP and CKA_UNWRAP true)"
            )
        self._key = key

    def wrap(self, secret: bytes, name: str, version: int, key_type: str) -> bytes:
        with self._lock:
            carried = self._session.create_object(
                {
                    Attribute.CLASS: ObjectClass.SECRET_KEY,
                    Attribute.KEY_TYPE: KeyType.GENERIC_SECRET,
                    Attribute.VALUE: associated_data(name, version, key_type)
                    + len(secret).to_bytes(4, "big")
                    + secret,
                    **_READABLE,
                }
            )
            try:
                wrapped: bytes = self._key.wrap_key(carried, mechanism=_MECHANISM)
            finally:
                carried.destroy()
        return wrapped

    def unwrap(self, blob: bytes, name: str, version: int, key_type: str) -> bytes:
        identity = associated_data(name, version, key_type)
        with self._lock:
            try:
                carried = self._key.unwrap_key(
                    ObjectClass.SECRET_KEY,
                    KeyType.GENERIC_SECRET,
                    blob,
                    mechanism=_MECHANISM,
                    template=_READABLE,
                )
            except PKCS11Error as exc:
                raise UnwrapError(
                    f"stored secret of {name!r} version {version} does not authenticate"
                ) from exc
            try:
                value = bytes(carried[Attribute.VALUE])
            finally:
                carried.destroy()
        framed = value[len(identity) :]
        length = int.from_bytes(framed[:4], "big")
        padding = framed[4 + length :]
        if (
            not value.startswith(identity)
            or len(framed) < 4 + length
            or len(padding) >= 8
            or any(padding)
        ):
            raise UnwrapError(f"stored secret of {name!r} version {version} does not authenticate")
        return framed[4 : 4 + length]
