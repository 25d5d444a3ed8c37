"""The KMS door's symmetric ciphertext blobs and encryption contexts, in cipherd's own format.

A `CiphertextBlob` of a symmetric key names the key and version it was made under, so that
Decrypt and ReEncrypt need no KeyId, as AWS's do:

    blob   = format (1 byte, 1) ‖ name length (1 byte) ‖ key name (ASCII) ‖ version (4 bytes,
             big-endian) ‖ AEAD payload (nonce 12 ‖ ciphertext ‖ tag 16, `core.aead`)

The AEAD's associated data is the header (every byte before the payload) followed by the
canonical encryption context, so that neither the key, the version nor the context can be
changed without the payload failing to open:

    context = pair count (2 bytes) ‖ for each pair, by key in UTF-8 byte order: key length
              (2 bytes) ‖ key (UTF-8) ‖ value length (2 bytes) ‖ value (UTF-8)

An absent context and an empty one are the same (no pairs), as they are to AWS.
"""

import re
import struct
from collections.abc import Mapping
from typing import NamedTuple

from app.ops.keys import KEY_NAME_PATTERN

FORMAT = 1
_HEADER = struct.Struct(">BB")
_VERSION = struct.Struct(">I")
_LENGTH = struct.Struct(">H")
_NAME = re.compile(KEY_NAME_PATTERN.encode())
# The longest serialised encryption context taken (AWS documents none; this bounds the work).
MAX_CONTEXT_BYTES = 8192


class Header(NamedTuple):
    """What a blob says of the key that made it, and the header's own bytes."""

    name: str
    version: int
    raw: bytes


def header(name: str, version: int) -> Header:
    encoded = name.encode("ascii")
    raw = _HEADER.pack(FORMAT, len(encoded)) + encoded + _VERSION.pack(version)
    return Header(name, version, raw)


def parse(blob: bytes) -> tuple[Header, bytes] | None:
    """The header and the AEAD payload of a blob; None for anything not in this format."""
    if len(blob) < _HEADER.size:
        return None
    form, size = _HEADER.unpack_from(blob)
    end = _HEADER.size + size + _VERSION.size
    if form != FORMAT or len(blob) < end:
        return None
    name = blob[_HEADER.size : _HEADER.size + size]
    (version,) = _VERSION.unpack_from(blob, end - _VERSION.size)
    if not _NAME.fullmatch(name) or version < 1:
        return None
    return Header(name.decode("ascii"), version, bytes(blob[:end])), bytes(blob[end:])


def context_bytes(context: Mapping[str, str] | None) -> bytes:
    """The canonical serialisation of an encryption context (ValueError with what is wrong for
    one too long)."""
    pairs = sorted((key.encode(), value.encode()) for key, value in (context or {}).items())
    size = _LENGTH.size + sum(2 * _LENGTH.size + len(k) + len(v) for k, v in pairs)
    if size > MAX_CONTEXT_BYTES:
        raise ValueError(
            f"EncryptionContext: at most {MAX_CONTEXT_BYTES} bytes serialised, not {size}"
        )
    parts = [_LENGTH.pack(len(pairs))]
    for key, value in pairs:
        parts += (_LENGTH.pack(len(key)), key, _LENGTH.pack(len(value)), value)
    serialised = b"".join(parts)
    return serialised


def associated_data(head: Header, context: Mapping[str, str] | None) -> bytes:
    return head.raw + context_bytes(context)
