"""Versioned byte encodings of FE master keys, public keys, functional keys and ciphertexts.

Every object starts with the same 10-byte header: magic ``CFE``, format version, scheme id,
object kind, and the dimension n (4 bytes, big-endian). The fields follow in declaration order,
each element in its fixed size from `core.fe.group` (scalars, G1, G2, GT) or as a signed 64-bit
big-endian integer (function entries of QFE keys). The header's n fixes every length, so the
total is checked before anything is parsed; points are validated (curve and subgroup) by group.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Self

from core.errors import EncodingError
from core.fe import group

MAGIC = b"CFE"
FORMAT_VERSION = 1
SCHEME_IDS = {"bjk": 1, "tao": 2, "kim": 3, "lin": 4, "kks": 5, "opt": 6, "bcfg": 7, "sgp": 8}

MASTER_KEY = 1
PUBLIC_KEY = 2
KEY = 3
CIPHERTEXT = 4

_HEADER = struct.Struct(">3sBBBI")


@dataclass(frozen=True)
class _Codec:
    size: int
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]
    decode_run: Callable[[bytes, int, int], list[Any]] | None = None
    """Decodes `count` elements from `offset` in one call (points: one batched validation)."""

    def read(self, data: bytes, count: int, offset: int) -> list[Any]:
        if self.decode_run is not None:
            return self.decode_run(data, count, offset)
        size = self.size
        return [self.decode(data[i : i + size]) for i in range(offset, offset + count * size, size)]


def _i64_to_bytes(value: int) -> bytes:
    return value.to_bytes(8, "big", signed=True)


def _i64_from_bytes(data: bytes) -> int:
    return int.from_bytes(data, "big", signed=True)


SCALAR = _Codec(group.SCALAR_BYTES, group.scalar_to_bytes, group.scalar_from_bytes)
G1 = _Codec(group.G1_BYTES, group.g1_to_bytes, group.g1_from_bytes, group.g1_vector_from_bytes)
G2 = _Codec(group.G2_BYTES, group.g2_to_bytes, group.g2_from_bytes, group.g2_vector_from_bytes)
GT = _Codec(group.GT_BYTES, group.gt_to_bytes, group.gt_from_bytes)
I64 = _Codec(8, _i64_to_bytes, _i64_from_bytes)

Shape = Callable[[int], tuple[int, ...]]


def one(n: int) -> tuple[int, ...]:
    """Shape of a single element."""
    return ()


def vector(length: Callable[[int], int]) -> Shape:
    """Shape of a vector whose length depends on n."""
    return lambda n: (length(n),)


def matrix(rows: Callable[[int], int], cols: Callable[[int], int]) -> Shape:
    """Shape of a matrix (a tuple of rows) whose size depends on n."""
    return lambda n: (rows(n), cols(n))


def _count(shape: tuple[int, ...]) -> int:
    total = 1
    for d in shape:
        total *= d
    return total


def _flatten(value: Any, depth: int) -> Iterator[Any]:
    if depth == 0:
        yield value
    else:
        for item in value:
            yield from _flatten(item, depth - 1)


def _nest(items: list[Any], shape: tuple[int, ...]) -> Any:
    if not shape:
        return items[0]
    if len(shape) == 1:
        return tuple(items)
    width = _count(shape[1:])
    return tuple(_nest(items[i * width : (i + 1) * width], shape[1:]) for i in range(shape[0]))


class Encoded:
    """Mixin of the FE dataclasses: to_bytes/from_bytes, equality by encoding, no secret repr.

    Subclasses are dataclasses whose first field is `n`, with one `LAYOUT` entry
    (codec, shape) per further field. Equality and hashing go through the encoding, so that
    comparing objects never touches RELIC outside the group layer's lock.
    """

    SCHEME: ClassVar[str]
    KIND: ClassVar[int]
    LAYOUT: ClassVar[tuple[tuple[_Codec, Shape], ...]]
    n: int

    def to_bytes(self) -> bytes:
        """The versioned encoding: header, then every field in declaration order."""
        out = [_HEADER.pack(MAGIC, FORMAT_VERSION, SCHEME_IDS[self.SCHEME], self.KIND, self.n)]
        for field, (codec, shape) in zip(fields(self)[1:], self.LAYOUT, strict=True):
            depth = len(shape(self.n))
            out.extend(codec.encode(v) for v in _flatten(getattr(self, field.name), depth))
        return b"".join(out)

    @classmethod
    def from_bytes(cls, data: bytes) -> Self:
        """Decode and validate; any malformed input raises `EncodingError`."""
        data = bytes(data)
        if len(data) < _HEADER.size:
            raise EncodingError("truncated header")
        magic, version, scheme, kind, n = _HEADER.unpack_from(data)
        if magic != MAGIC:
            raise EncodingError("not a cipherd FE encoding")
        if version != FORMAT_VERSION:
            raise EncodingError(f"unsupported format version {version}")
        if scheme != SCHEME_IDS[cls.SCHEME]:
            raise EncodingError(f"encoding is not for scheme {cls.SCHEME}")
        if kind != cls.KIND:
            raise EncodingError(f"encoding is not a {cls.__name__}")
        if n < 1:
            raise EncodingError("dimension must be at least 1")
        shapes = [shape(n) for _, shape in cls.LAYOUT]
        expected = _HEADER.size + sum(
            codec.size * _count(s) for (codec, _), s in zip(cls.LAYOUT, shapes, strict=True)
        )
        if len(data) != expected:
            raise EncodingError(f"encoding has {len(data)} bytes where {expected} are needed")
        values: list[Any] = [n]
        offset = _HEADER.size
        for (codec, _), s in zip(cls.LAYOUT, shapes, strict=True):
            count = _count(s)
            values.append(_nest(codec.read(data, count, offset), s))
            offset += count * codec.size
        return cls(*values)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.to_bytes() == other.to_bytes()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self.to_bytes())

    def __repr__(self) -> str:
        return f"{self.SCHEME}.{type(self).__name__}(n={self.n})"
