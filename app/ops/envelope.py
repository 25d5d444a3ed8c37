"""Payloads that know their key version: the envelope, and the opening of payloads without one.

An enveloped payload is `cipherd:v<N>:` (ASCII, N the key version in decimal, no leading zero)
followed by the bare payload: the bytes eciespy, eciesjs or the npm `aez` package make and read.
ECIES and AEZ encryptions with a stored key answer enveloped payloads unless asked not to.

Decryption uses, in this order: the `key_version` the caller gives, exactly (an envelope naming
another is a 422); the envelope's version; or, for a bare payload, the versions from the newest
down to `min_decryption_version`, at most `CIPHERD_BARE_PAYLOAD_VERSIONS` of them, answering
the one that opened it. A bare AEZ payload with tau below 8 is never tried that way: with so
short a tag another version "opens" it with probability up to 2^-8 per try. Signatures and
HMACs are checked (`verified`) against the same versions, in the same order.
"""

import re
from collections.abc import Callable
from typing import NamedTuple

from app.ops.errors import Problem, decryptable, invalid_input
from app.store import KeyMaterial

PREFIX = b"cipherd:v"
_ENVELOPE = re.compile(rb"cipherd:v([1-9][0-9]{0,9}):")
# Failures that mean "not this version": any other problem ends the search.
_WRONG_VERSION = frozenset({"decryption-failed", "authentication-failed"})
# AEZ payloads with a tag shorter than this are not tried against several versions.
MIN_TRIAL_TAU = 8


class Sealed(NamedTuple):
    """The bytes an operation produced and the key version that produced them (a tuple: made on
    every request, and cheaper to build than a frozen dataclass)."""

    data: bytes
    version: int


def seal(version: int, payload: bytes) -> bytes:
    return b"%s%d:%s" % (PREFIX, version, payload)


def sealed(version: int, payload: bytes, enveloped: bool) -> Sealed:
    """An encryption's answer: its payload, enveloped unless the caller asked for it bare."""
    return Sealed(seal(version, payload) if enveloped else payload, version)


def parse(data: bytes) -> tuple[int | None, bytes]:
    """The version an enveloped payload names and the bare payload; (None, data) for a bare
    one."""
    if not data.startswith(PREFIX):
        return None, data
    match = _ENVELOPE.match(data)
    if match is None:
        return None, data
    return int(match.group(1)), data[match.end() :]


def wanted_version(named: int | None, given: int | None) -> int | None:
    """The version to use, if the caller or the envelope says (422 if they disagree)."""
    if given is not None and named is not None and named != given:
        raise invalid_input(f"key_version: {given}, but the payload's envelope names {named}")
    return given if given is not None else named


def trial_versions(latest: KeyMaterial, limit: int) -> range:
    """The versions a bare payload is tried against, newest first."""
    low = max(latest.min_decryption_version, latest.version - limit + 1, 1)
    return range(latest.version, low - 1, -1)


def open_bare(
    latest: KeyMaterial,
    limit: int,
    material: Callable[[int], KeyMaterial],
    attempt: Callable[[KeyMaterial], bytes],
) -> tuple[bytes, int]:
    """Open a bare payload with the first version that takes it (newest first): the
    plaintext and that version."""
    versions = trial_versions(latest, limit)
    failure: Problem | None = None
    for version in versions:
        candidate = latest if version == latest.version else decryptable(material(version))
        try:
            return attempt(candidate), version
        except Problem as problem:
            if problem.slug not in _WRONG_VERSION:
                raise
            failure = problem
    assert failure is not None  # the latest version is always tried
    if len(versions) == 1:
        raise failure
    tried = (
        f"version {versions[0]}"
        if len(versions) == 1
        else (f"versions {versions[0]} down to {versions[-1]}")
    )
    raise Problem(
        400,
        failure.slug,
        failure.title,
        f"{failure.title.lower()} with {tried} of key {latest.name!r}; a payload made under "
        "an older version needs its key_version",
    )
