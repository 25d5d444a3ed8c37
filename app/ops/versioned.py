"""One key, resolved once per request: what a family's per-item verbs run on.

A family's `key(name)` reads the key's latest version once, refusing a key of another family
(409) or an unknown one (404) before any item is looked at. Its verbs (encrypt, decrypt, sign,
...) then run on that object once for a single call and once per item for a batch, reading
another version only when an item names one or its payload's envelope does
(`app.ops.envelope`).

The verbs are plain functions, run on the event loop for a small single call: `warm` first
brings what such an item will read into the keyring's cache from a coroutine, so that the verb
never waits on the store there.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from app.ops import envelope
from app.ops.envelope import Sealed
from app.ops.errors import decryptable, encryptable, key_disabled, wrong_key_type
from app.ops.keyring import Keyring
from app.store import KeyMaterial


class RequestKey(Protocol):
    """What the declaration of a key operation (`app.http.operation`) asks of a family's key."""

    def admit(self, items: Sequence[object]) -> None:
        """Refuse a request whose items would be too much work, before any of it is done."""

    async def warm(self, payload: bytes | None, version: int | None) -> None:
        """Bring into the keyring's cache what a small single call will read on the event
        loop."""


# The parameter a disabled key carries (`PATCH /v1/keys/{name}` with `enabled: false`).
DISABLED = "disabled"


def disabled(params: Mapping[str, Any]) -> bool:
    return bool(params.get(DISABLED))


def enabled(material: KeyMaterial) -> KeyMaterial:
    """The material, if its key is enabled: a disabled key's every use is refused (409
    key-disabled), its public part and key set included, as KMS's GetPublicKey refuses it."""
    if disabled(material.params):
        raise key_disabled(material.name)
    return material


class VersionedKey:
    """A key of one family: its latest version and, on demand, the others.

    Subclasses name the key types they take (`types`) and what those are for (`used_for`, in
    the 409 a key of another type gets)."""

    types: ClassVar[frozenset[str]]
    used_for: ClassVar[str]

    def __init__(self, keyring: Keyring, latest: KeyMaterial, trial_versions: int) -> None:
        self.keyring = keyring
        self.name = latest.name
        self.latest = self.checked(latest)
        self.trial_versions = trial_versions

    def admit(self, items: Sequence[object]) -> None:
        """Nothing to bound: an item's work follows its size, which the body limit bounds."""

    def checked(self, material: KeyMaterial) -> KeyMaterial:
        """The material, if its type is the family's (409 otherwise) and its key is enabled
        (409 key-disabled otherwise)."""
        if material.type not in self.types:
            raise wrong_key_type(material.name, material.type, self.used_for)
        return enabled(material)

    def version(self, version: int | None = None) -> KeyMaterial:
        """One version's material (the latest for None); may query the store."""
        if version is None or version == self.latest.version:
            return self.latest
        return self.checked(self.keyring.material(self.name, version))

    def encryption(self, version: int | None) -> KeyMaterial:
        """The version to encrypt, sign or MAC under: `version` or the latest, at least the
        key's min_encryption_version (400)."""
        return encryptable(self.version(version))

    def opened(
        self, payload: bytes, version: int | None, attempt: Callable[[KeyMaterial, bytes], bytes]
    ) -> Sealed:
        """`attempt(material, bare payload)` with the version the caller or the envelope names,
        or for a bare payload with each version it is tried against, newest first: the result
        and the version that gave it."""
        named, bare = envelope.parse(payload)
        wanted = envelope.wanted_version(named, version)
        if wanted is not None:
            material = decryptable(self.version(wanted))
            return Sealed(attempt(material, bare), material.version)
        return Sealed(
            *envelope.open_bare(
                decryptable(self.latest),
                self.trial_versions,
                self.version,
                lambda material: attempt(material, bare),
            )
        )

    def verified(
        self, data: bytes, version: int | None, check: Callable[[KeyMaterial, bytes], bool]
    ) -> bool:
        """Whether `check(material, bare data)` holds for the version the caller or the envelope
        names, or, for bare data, for any version it would be tried against."""
        named, bare = envelope.parse(data)
        wanted = envelope.wanted_version(named, version)
        if wanted is not None:
            return check(decryptable(self.version(wanted)), bare)
        latest = decryptable(self.latest)
        return any(
            check(self.version(v), bare)
            for v in envelope.trial_versions(latest, self.trial_versions)
        )

    async def warm(self, payload: bytes | None, version: int | None) -> None:
        """Bring into the keyring's cache the versions an item will read: `version`, else the
        one `payload`'s envelope names, else the versions a bare payload is tried against."""
        wanted = envelope.wanted_version(envelope.parse(payload)[0] if payload else None, version)
        if wanted is not None:
            if wanted != self.latest.version:
                await self.keyring.fetch(self.name, wanted)
            return
        if payload is not None:
            for candidate in envelope.trial_versions(self.latest, self.trial_versions):
                await self.keyring.fetch(self.name, candidate)


KeyT = TypeVar("KeyT", bound=VersionedKey)


class Keys(Generic[KeyT]):
    """One family's keys (`kind`) in one keyring; `trial_versions` bounds how many versions a
    bare payload, signature or MAC is tried against (`app.ops.envelope`)."""

    def __init__(self, kind: type[KeyT], keyring: Keyring, trial_versions: int) -> None:
        self.kind = kind
        self.keyring = keyring
        self.trial_versions = trial_versions

    async def key(self, name: str) -> KeyT:
        return self.kind(self.keyring, await self.keyring.fetch(name), self.trial_versions)
