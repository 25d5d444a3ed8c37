"""The root key in a PKCS#11 token (an HSM, or SoftHSM2): a non-extractable AES key that only
wraps and unwraps the keyring's terms and the store's check value.

The key never leaves the token. A term goes in as a session object, is wrapped by the token with
AES key wrap with padding (RFC 5649, CKM_AES_KEY_WRAP_PAD), and comes back out of an unwrap as a
session object made readable for this process, destroyed at once. Key wrap carries no associated
data, so the wrapped value starts with the identity the AES-GCM wrapping binds (name, version,
type), then the secret's length: a blob moved to another row fails as it does under a root key
held in memory, and padding a token leaves on an unwrapped value (SoftHSM2 does) is told apart
from the secret.

A token can go away under a running process (removed, its session lost): a call that fails for
that drops the process's session and opens one again, once; while the token stays out of reach,
calls raise RootKeyUnreachableError (503 root-key-unavailable) and the next one tries again, so
the process recovers by itself when the token is back.
"""

import contextlib
import threading
from collections.abc import Callable
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
    UserAlreadyLoggedIn,
)

from app.server.bootstrap import BootstrapError
from app.store.errors import RootKeyUnreachableError, UnwrapError
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


def _restart_module(settings: Pkcs11Settings) -> None:
    """Drop every session of the module and initialise it again: a token that went away stays
    unusable to the process that had it open until then (SoftHSM2 answers CKR_GENERAL_ERROR for
    it, back or not). Other root keys on the module open a new session at their next call."""
    with _sessions_lock:
        for module, token in list(_sessions):
            if module == str(settings.module):
                del _sessions[(module, token)]
        # A failure here is the next session's opening's to name.
        with contextlib.suppress(PKCS11Error, RuntimeError, OSError):
            pkcs11.lib(str(settings.module)).reinitialize()


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
        except UnicodeDecodeError:  # its message would show a byte of the PIN
            raise HsmError(
                f"CIPHERD_ROOT_KEY_PKCS11_PIN_FILE: {settings.pin_file} is not text (UTF-8)"
            ) from None
        try:
            try:
                session = token.open(user_pin=pin)
            except UserAlreadyLoggedIn:  # by a session dropped after a failure, still open
                session = token.open()
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
        self._settings = settings
        self._lock = threading.Lock()
        self._session, self._key = self._opened()

    def _opened(self) -> tuple[Any, Any]:
        """A logged-in session on the token and the root key's handle in it (HsmError, naming
        the setting, when the settings give none)."""
        settings = self._settings
        session = _session(settings)
        try:
            key = session.get_key(
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
        return session, key

    def _on_token(self, act: Callable[[Any, Any], bytes]) -> bytes:
        """`act(session, key)`, one call at a time. When it fails and the token no longer
        answers for the key, the session is dropped and `act` tried once more on a new one; a
        token that cannot be reached: RootKeyUnreachableError, and the next call tries anew. A
        failure while the token answers is `act`'s own (PKCS11Error: data it refuses)."""
        with self._lock:
            if self._key is not None:
                try:
                    return act(self._session, self._key)
                except PKCS11Error:
                    if self._answers():
                        raise
                    _restart_module(self._settings)
                    self._session = self._key = None
            try:
                self._session, self._key = self._opened()
            except (HsmError, PKCS11Error):
                raise RootKeyUnreachableError() from None
            return act(self._session, self._key)

    def _answers(self) -> bool:
        """Whether the token still answers for the root key's handle."""
        try:
            self._key[Attribute.LABEL]
        except PKCS11Error:
            return False
        return True

    def wrap(self, secret: bytes, name: str, version: int, key_type: str) -> bytes:
        value = associated_data(name, version, key_type) + len(secret).to_bytes(4, "big") + secret

        def wrapped(session: Any, key: Any) -> bytes:
            carried = session.create_object(
                {
                    Attribute.CLASS: ObjectClass.SECRET_KEY,
                    Attribute.KEY_TYPE: KeyType.GENERIC_SECRET,
                    Attribute.VALUE: value,
                    **_READABLE,
                }
            )
            try:
                return bytes(key.wrap_key(carried, mechanism=_MECHANISM))
            finally:
                carried.destroy()

        try:
            return self._on_token(wrapped)
        except PKCS11Error:  # the token answers, yet does not wrap: as good as unreachable
            raise RootKeyUnreachableError() from None

    def unwrap(self, blob: bytes, name: str, version: int, key_type: str) -> bytes:
        identity = associated_data(name, version, key_type)

        def unwrapped(session: Any, key: Any) -> bytes:
            carried = key.unwrap_key(
                ObjectClass.SECRET_KEY,
                KeyType.GENERIC_SECRET,
                blob,
                mechanism=_MECHANISM,
                template=_READABLE,
            )
            try:
                return bytes(carried[Attribute.VALUE])
            finally:
                carried.destroy()

        try:
            value = self._on_token(unwrapped)
        except PKCS11Error as exc:
            raise UnwrapError(
                f"stored secret of {name!r} version {version} does not authenticate"
            ) from exc
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
