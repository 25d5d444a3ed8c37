"""The KMS door's symmetric blob header and canonical encryption context, byte for byte."""

import pytest

from app.ops.kms import ciphertext


def test_header_round_trip() -> None:
    head = ciphertext.header("orders-2", 7)
    assert head.raw == b"\x01\x08orders-2\x00\x00\x00\x07"
    parsed = ciphertext.parse(head.raw + b"payload")
    assert parsed == (head, b"payload")


@pytest.mark.parametrize(
    "blob",
    [
        b"",
        b"\x01",
        b"\x02\x01a\x00\x00\x00\x01",  # another format
        b"\x01\x00\x00\x00\x00\x01",  # no name
        b"\x01\x05ab\x00\x00\x00\x01",  # shorter than its name says
        b"\x01\x01a\x00\x00\x00\x00",  # version 0
        b"\x01\x02a/\x00\x00\x00\x01",  # not a key name
        b"\x01\x01\xff\x00\x00\x00\x01",
    ],
)
def test_malformed_blobs(blob: bytes) -> None:
    assert ciphertext.parse(blob) is None


def test_context_is_canonical() -> None:
    assert ciphertext.context_bytes(None) == ciphertext.context_bytes({}) == b"\x00\x00"
    one = ciphertext.context_bytes({"b": "2", "a": "1"})
    assert one == ciphertext.context_bytes({"a": "1", "b": "2"})
    assert one == b"\x00\x02" + b"\x00\x01a\x00\x011" + b"\x00\x01b\x00\x012"
    # Lengths keep pairs apart: "a"="bc" is not "ab"="c".
    assert ciphertext.context_bytes({"a": "bc"}) != ciphertext.context_bytes({"ab": "c"})
    assert ciphertext.context_bytes({"é": "ü"}) == b"\x00\x01\x00\x02\xc3\xa9\x00\x02\xc3\xbc"


def test_context_bound() -> None:
    ciphertext.context_bytes({"k": "v" * (ciphertext.MAX_CONTEXT_BYTES - 7)})
    with pytest.raises(ValueError, match="EncryptionContext"):
        ciphertext.context_bytes({"k": "v" * (ciphertext.MAX_CONTEXT_BYTES - 6)})
