"""Keys whose payloads are sealed under one version and opened with the version the caller or
the envelope names (AEAD, AEZ, ECIES, HPKE, RSA-OAEP): the verbs they share, each family giving
only how a version seals and opens a bare payload with the request's parameters."""

from typing import Generic, TypeVar

from app.ops.envelope import Sealed, sealed
from app.ops.errors import failed_with
from app.ops.versioned import VersionedKey
from app.store import KeyMaterial
from core.errors import DecryptionError

ParamsT = TypeVar("ParamsT")


class SealingKey(VersionedKey, Generic[ParamsT]):
    """A key of a request whose family seals (`seal`) and opens (`unseal`) bare payloads; a
    payload that does not open, for whatever reason, is the same 400."""

    def seal(self, material: KeyMaterial, params: ParamsT, plaintext: bytes) -> bytes:
        raise NotImplementedError

    def unseal(self, material: KeyMaterial, params: ParamsT, payload: bytes) -> bytes:
        """The plaintext (DecryptionError if the payload does not open)."""
        raise NotImplementedError

    def encrypt(
        self, plaintext: bytes, params: ParamsT, envelope: bool = True, version: int | None = None
    ) -> Sealed:
        """Seal under `version` (default: the latest)."""
        material = self.encryption(version)
        return sealed(material.version, self.seal(material, params, plaintext), envelope)

    def decrypt(self, ciphertext: bytes, params: ParamsT, version: int | None) -> Sealed:
        return self.opened(
            ciphertext, version, lambda material, bare: self._open(material, params, bare)
        )

    def _open(self, material: KeyMaterial, params: ParamsT, payload: bytes) -> bytes:
        try:
            return self.unseal(material, params, payload)
        except DecryptionError:
            raise failed_with(material, "decryption-failed", "Decryption failed") from None

    def rewrap(
        self, ciphertext: bytes, params: ParamsT, version: int | None, enveloped: bool
    ) -> Sealed:
        """The payload's plaintext under the latest version, with the same parameters, without
        it leaving the service; a payload that does not open is refused as `decrypt` refuses
        it."""
        return self.encrypt(self.decrypt(ciphertext, params, version).data, params, enveloped)
