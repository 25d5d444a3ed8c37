"""Versioned byte encodings of FE master keys, public keys, functional keys and ciphertexts.

Every object starts with the same 19-byte header: magic ``CFE``, format version (3), scheme id,
object kind, curve id (1 BLS12-381, 2 BN254), the dimension n (4 bytes, big-endian) and the
8-byte id of the master key the object comes from (`master_id`). The fields follow in
declaration order, each element in its curve's fixed size from `core.fe.group` (scalars, G1,
G2, GT) or as a signed 64-bit big-endian integer (function entries of QFE keys). The header's n
and curve fix every length, so the total is checked before anything is parsed; points are
validated (curve and subgroup) by group.

The master id lets decryption refuse a functional key and a ciphertext of different master
keys (a rotated key's old and new versions, say), which would otherwise "decrypt" to no value
in any range, indistinguishable from a value outside the range searched. Version 2 encodings
(an 11-byte header without the id) and version 1 (10 bytes, no curve byte, BLS12-381 only) are
still read: their keys and ciphertexts have an unknown id (`UNKNOWN_MASTER`), which matches any,
and a master key gets back the id its setup would have given.
"""

from __future__ import annotations

import dataclasses
import hashlib
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from itertools import chain
from typing import Any, ClassVar, Self, TypeVar

from core.errors import EncodingError, KeyMismatchError
from core.fe import group

MAGIC = b"CFE"
FORMAT_VERSION = 3
MASTER_ID_BYTES = 8
UNKNOWN_MASTER = bytes(MASTER_ID_BYTES)
SCHEME_IDS = {"bjk": 1, "tao": 2, "kim": 3, "lin": 4, "kks": 5, "opt": 6, "bcfg": 7, "sgp": 8}
CURVE_IDS = {group.BLS12_381: 1, group.BN254: 2}

MASTER_KEY = 1
PUBLIC_KEY = 2
KEY = 3
CIPHERTEXT = 4

_HEADER = struct.Struct(f">3sBBBBI{MASTER_ID_BYTES}s")
_HEADER_V2 = struct.Struct(">3sBBBBI")
_HEADER_V1 = struct.Struct(">3sBBBI")
HEADER_BYTES = _HEADER.size


@dataclass(frozen=True)
class _Codec:
    """How one kind of field is written, resolved against the object's curve."""

    size: Callable[[group.Curve], int]
    encode: Callable[[group.Curve, Iterable[Any]], bytes]  # a run of values, back to back
    read: Callable[[group.Curve, bytes, int, int], list[Any]]


def _i64_to_bytes(value: int) -> bytes:
    return value.to_bytes(8, "big", signed=True)


def _encode_each(encode: Callable[[group.Curve, Any], bytes]) -> Callable[..., bytes]:
    return lambda c, values: b"".join([encode(c, v) for v in values])


def _encode_scalars(c: group.Curve, values: Iterable[int]) -> bytes:
    """Reduced mod r, big-endian: `scalar_to_bytes` over a run, without a call per value
    (a bjk master key at n = 100 holds 83,240 scalars)."""
    size, order = c.scalar_bytes, c.order
    return b"".join([(v % order).to_bytes(size, "big") for v in values])


def _read_each(decode: Callable[[bytes], Any], size: int) -> Callable[..., list[Any]]:
    def read(data: bytes, count: int, offset: int) -> list[Any]:
        return [decode(data[i : i + size]) for i in range(offset, offset + count * size, size)]

    return read


SCALAR = _Codec(
    lambda c: c.scalar_bytes,
    _encode_scalars,
    lambda c, *run: _read_each(c.scalar_from_bytes, c.scalar_bytes)(*run),
)
G1 = _Codec(
    lambda c: c.g1_bytes,
    _encode_each(lambda c, v: c.g1_to_bytes(v)),
    lambda c, *run: c.g1_vector_from_bytes(*run),
)
G2 = _Codec(
    lambda c: c.g2_bytes,
    _encode_each(lambda c, v: c.g2_to_bytes(v)),
    lambda c, *run: c.g2_vector_from_bytes(*run),
)
GT = _Codec(
    lambda c: c.gt_bytes,
    _encode_each(lambda c, v: c.gt_to_bytes(v)),
    lambda c, *run: _read_each(c.gt_from_bytes, c.gt_bytes)(*run),
)
I64 = _Codec(
    lambda c: 8,
    _encode_each(lambda c, v: _i64_to_bytes(v)),
    lambda c, *run: _read_each(lambda b: int.from_bytes(b, "big", signed=True), 8)(*run),
)

Shape = Callable[[int], tuple[int, ...]]


def one(n: int) -> tuple[int, ...]:
    """Shape of a single element."""
    return ()


def dimension(n: int) -> int:
    """A length equal to the object's dimension n."""
    return n


def fixed(length: int) -> Callable[[int], int]:
    """A length that does not depend on n."""
    return lambda n: length


def vector(length: Callable[[int], int]) -> Shape:
    """Shape of a vector whose length depends on n."""
    return lambda n: (length(n),)


def matrix(rows: Callable[[int], int], cols: Callable[[int], int]) -> Shape:
    """Shape of a matrix (a tuple of rows) whose size depends on n."""
    return lambda n: (rows(n), cols(n))


def _nbytes(table: Any) -> int:
    """Bytes of a table object (`nbytes`) or of a tuple of them."""
    if isinstance(table, tuple):
        return sum(map(_nbytes, table))
    return int(table.nbytes)


def _count(shape: tuple[int, ...]) -> int:
    total = 1
    for d in shape:
        total *= d
    return total


def _flatten(value: Any, depth: int) -> Iterable[Any]:
    if depth == 0:
        return (value,)
    if depth == 1:
        return value
    return chain.from_iterable(_flatten(item, depth - 1) for item in value)


def _nest(items: list[Any], shape: tuple[int, ...]) -> Any:
    if not shape:
        return items[0]
    if len(shape) == 1:
        return tuple(items)
    width = _count(shape[1:])
    return tuple(_nest(items[i * width : (i + 1) * width], shape[1:]) for i in range(shape[0]))


@dataclass(frozen=True)
class Header:
    """What an encoding's header says: its curve, its dimension n, the id of the master key it
    comes from (`UNKNOWN_MASTER` for formats 1 and 2) and the header's own size."""

    curve: str
    n: int
    master_id: bytes
    size: int


@dataclass(frozen=True, eq=False, repr=False)
class Encoded:
    """Base of the FE dataclasses: to_bytes/from_bytes, equality by encoding, no secret repr.

    Subclasses are dataclasses whose first field is `n`, with one `LAYOUT` entry
    (codec, shape) per further field; every object also names its curve (keyword `curve`,
    BLS12-381 by default) and the master key it comes from (keyword `master_id`). Equality and
    hashing go through the encoding, so that comparing objects never touches native group code
    outside the group layer's lock.
    """

    curve: str = field(default=group.DEFAULT_CURVE, kw_only=True)
    master_id: bytes = field(default=UNKNOWN_MASTER, kw_only=True)

    SCHEME: ClassVar[str]
    KIND: ClassVar[int]
    LAYOUT: ClassVar[tuple[tuple[_Codec, Shape], ...]]
    # Names of cached properties holding tables derived from the object for its own
    # operations (packed matrices, fixed-base tables): built on first use or by `precompute`,
    # never encoded.
    TABLES: ClassVar[tuple[str, ...]] = ()

    def precompute(self) -> Self:
        """Build every table now (the operations would on first use); returns the object."""
        for name in self.TABLES:
            getattr(self, name)
        return self

    @property
    def table_bytes(self) -> int:
        """Bytes held by the tables built so far: what a cache of keys bounded in bytes counts
        beside the encoding."""
        built = self.__dict__
        return sum(_nbytes(built[name]) for name in self.TABLES if name in built)

    def _data_fields(self) -> list[str]:
        return [f.name for f in fields(self) if f.name not in ("n", "curve", "master_id")]

    def to_bytes(self) -> bytes:
        """The versioned encoding: header, then every field in declaration order."""
        n: int = self.n  # type: ignore[attr-defined]
        c = group.curve(self.curve)
        out = [
            _HEADER.pack(
                MAGIC,
                FORMAT_VERSION,
                SCHEME_IDS[self.SCHEME],
                self.KIND,
                CURVE_IDS[c.name],
                n,
                self.master_id,
            )
        ]
        for name, (codec, shape) in zip(self._data_fields(), self.LAYOUT, strict=True):
            depth = len(shape(n))
            out.append(codec.encode(c, _flatten(getattr(self, name), depth)))
        return b"".join(out)

    @classmethod
    def header_of(cls, data: bytes) -> Header:
        """The header of an encoding of this class, checked against the class (scheme, kind),
        with its curve known and the total length the header's n and curve fix: what a caller
        compares with its key before any point is decoded. `EncodingError` otherwise."""
        if len(data) < _HEADER_V1.size:
            raise EncodingError("truncated header")
        if data[:3] != MAGIC:
            raise EncodingError("not a cipherd FE encoding")
        master_id = UNKNOWN_MASTER
        header = {1: _HEADER_V1, 2: _HEADER_V2, FORMAT_VERSION: _HEADER}.get(data[3])
        if header is None:
            raise EncodingError(f"unsupported format version {data[3]}")
        if len(data) < header.size:
            raise EncodingError("truncated header")
        if header is _HEADER_V1:
            _, _, scheme, kind, n = header.unpack_from(data)
            curve_id = CURVE_IDS[group.BLS12_381]
        elif header is _HEADER_V2:
            _, _, scheme, kind, curve_id, n = header.unpack_from(data)
        else:
            _, _, scheme, kind, curve_id, n, master_id = header.unpack_from(data)
        if scheme != SCHEME_IDS[cls.SCHEME]:
            raise EncodingError(f"encoding is not for scheme {cls.SCHEME}")
        if kind != cls.KIND:
            raise EncodingError(f"encoding is not a {cls.__name__}")
        names = {v: k for k, v in CURVE_IDS.items()}
        if curve_id not in names:
            raise EncodingError(f"unknown curve id {curve_id}")
        c = group.curve(names[curve_id])
        if n < 1:
            raise EncodingError("dimension must be at least 1")
        expected = header.size + sum(
            codec.size(c) * _count(shape(n)) for codec, shape in cls.LAYOUT
        )
        if len(data) != expected:
            raise EncodingError(f"encoding has {len(data)} bytes where {expected} are needed")
        return Header(c.name, n, master_id, header.size)

    @classmethod
    def from_bytes(cls, data: bytes) -> Self:
        """Decode and validate; any malformed input raises `EncodingError`."""
        data = bytes(data)
        header = cls.header_of(data)
        c = group.curve(header.curve)
        n, master_id = header.n, header.master_id
        shapes = [shape(n) for _, shape in cls.LAYOUT]
        sizes = [codec.size(c) for codec, _ in cls.LAYOUT]
        values: list[Any] = [n]
        offset = header.size
        for (codec, _), s, size in zip(cls.LAYOUT, shapes, sizes, strict=True):
            count = _count(s)
            values.append(_nest(codec.read(c, data, count, offset), s))
            offset += count * size
        decoded = cls(*values, curve=c.name, master_id=master_id)
        if cls.KIND == MASTER_KEY and master_id == UNKNOWN_MASTER:
            # A master key stored before ids existed gets the one its setup would have given,
            # so that what it makes from now on is checked.
            return identified(decoded)
        return decoded

    def __eq__(self, other: Any) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.to_bytes() == other.to_bytes()

    def __hash__(self) -> int:
        return hash(self.to_bytes())

    def __repr__(self) -> str:
        return f"{self.SCHEME}.{type(self).__name__}(n={self.n}, curve={self.curve})"  # type: ignore[attr-defined]


MasterT = TypeVar("MasterT", bound=Encoded)


def identified(msk: MasterT) -> MasterT:
    """A new master key with its id: the first bytes of a SHA-256 of its encoding (under a label
    of its own, so the digest serves no other purpose), so that one key always has one id (the
    same seed gives the same key and id) and two keys two ids."""
    digest = hashlib.sha256(b"cipherd FE master id\x00" + msk.to_bytes()).digest()
    return dataclasses.replace(msk, master_id=digest[:MASTER_ID_BYTES])


def same_id(a: bytes, b: bytes) -> bool:
    """Whether two master ids may name the same master key: equal, or one unknown."""
    return a == b or UNKNOWN_MASTER in (a, b)


def read_master_id(data: bytes) -> bytes:
    """The master id in an encoding's header, without decoding the rest; the header is not
    otherwise checked. Unknown for formats 1 and 2, even for a master key, whose id only
    `from_bytes` derives: a check against it is then skipped, as for any unknown id."""
    if len(data) >= _HEADER.size and data[:3] == MAGIC and data[3] == FORMAT_VERSION:
        return bytes(data[_HEADER_V2.size : _HEADER.size])
    return UNKNOWN_MASTER


def same_master(key: Any, ciphertext: Any) -> None:
    """Refuse a functional key and a ciphertext of different master keys (`KeyMismatchError`);
    an unknown id (a version 1 or 2 encoding) matches any."""
    if not same_id(key.master_id, ciphertext.master_id):
        raise KeyMismatchError(
            "the functional key and the ciphertext come from different master keys "
            "(or different versions of one)"
        )
