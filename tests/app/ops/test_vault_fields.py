"""Vault's durations, comma-separated lists, integers and booleans at their edges: a duration
past what a float holds is out of range like any other, a string of millions of items is refused
before it is split, and integers and booleans are read as Go's strconv reads them."""

import json

import pytest
from pydantic import BaseModel, Field, ValidationError

from app.ops.vault_fields import (
    MAX_SECONDS,
    MAX_STRINGS,
    Duration,
    Strings,
    VaultBool,
    VaultInt,
    duration_seconds,
    json_document,
    nulls_as_zeros,
    vault_boolean,
    vault_integer,
    zero_values,
)

OUT_OF_RANGE = "a duration is from 0 to ten years"


@pytest.mark.parametrize(
    "value",
    [10**309, 10**400, -(10**309), MAX_SECONDS + 1, -1, float("inf"), float("nan"), "9" * 400],
    ids=["1e309", "1e400", "-1e309", "ten-years-and-1", "-1", "inf", "nan", "400-nines"],
)
def test_a_duration_out_of_range_is_refused_alike(value: object) -> None:
    """10**309 was an OverflowError (a 500) in `float(value)`."""
    with pytest.raises(ValueError, match=OUT_OF_RANGE):
        duration_seconds(value)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(0, 0), (MAX_SECONDS, MAX_SECONDS), (90.9, 90), ("90", 90), ("1h30m", 5400), ("", 0)],
)
def test_a_duration_in_range_is_its_seconds(value: object, seconds: int) -> None:
    assert duration_seconds(value) == seconds


@pytest.mark.parametrize(
    "value", [[0] * 100_000, {"h": 1}, None, True], ids=["list", "object", "null", "true"]
)
def test_a_duration_of_another_type_is_refused_without_being_written_out(value: object) -> None:
    """`str()` of a list of millions of entries took seconds before it could be refused."""
    with pytest.raises(ValueError, match=r"a number of seconds or a string like '1h30m'$"):
        duration_seconds(value)


class Listed(BaseModel):
    names: Strings = Field(default_factory=list, max_length=64)
    blocks: Strings = []


def test_a_string_of_more_separators_than_a_list_takes_is_not_split() -> None:
    """30 MB of "a," took 1.5 s and 231 MB to split before the field's limit refused it."""
    with pytest.raises(ValidationError, match=f"holds at most {MAX_STRINGS} items"):
        Listed.model_validate({"names": "a," * 1_000_000})


def test_a_string_within_the_bound_is_read_as_before() -> None:
    with pytest.raises(ValidationError) as refused:
        Listed.model_validate({"names": "a," * 100})
    (error,) = refused.value.errors()
    assert error["msg"] == "List should have at most 64 items after validation, not 100"
    assert Listed.model_validate({"blocks": "a," * MAX_STRINGS}).blocks == ["a"] * MAX_STRINGS
    assert Listed.model_validate({"names": " a ,,\tb\u2003,"}).names == ["a", "b"]


# Go's strconv.ParseInt in base 0 and strconv.ParseBool, as Vault's framework reads a string for
# an integer or boolean field (each answer checked against OpenBao 2.x's transit/random and
# transit/keys/:name/config).
@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2", 2),
        ("+7", 7),
        ("-5", -5),
        ("", 0),
        ("0x1F", 31),
        ("0X1f", 31),
        ("0o17", 15),
        ("017", 15),
        ("0_7", 7),
        ("0b101", 5),
        ("1_000", 1000),
        ("0x_1f", 31),
        ("9223372036854775807", 2**63 - 1),
        (True, 1),
        (False, 0),
        (12, 12),
    ],
)
def test_an_integer_is_read_as_vault_reads_it(text: object, value: int) -> None:
    assert vault_integer(text) == value


@pytest.mark.parametrize(
    "text",
    ["abc", "1.0", "1e3", " 1", "1 ", "0x", "_1", "1_", "1__0", "08", "٣", "１", 2.0, 1e3, None],
)
def test_what_vault_does_not_read_as_an_integer_is_refused(text: object) -> None:
    with pytest.raises(ValueError):
        vault_integer(text)


@pytest.mark.parametrize("text", ["9223372036854775808", 2**63, -(2**63) - 1, "9" * 5000])
def test_an_integer_past_64_bits_is_refused(text: object) -> None:
    """Go's ParseInt refuses it (a range error); a string of thousands of digits is refused by
    its length, before any parsing."""
    with pytest.raises(ValueError):
        vault_integer(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [(w, True) for w in ("1", "t", "T", "TRUE", "true", "True", 1, True)]
    + [(w, False) for w in ("0", "f", "F", "FALSE", "false", "False", "", 0, False)],
)
def test_a_boolean_is_read_as_vault_reads_it(text: object, value: bool) -> None:
    assert vault_boolean(text) is value


@pytest.mark.parametrize("text", ["yes", "on", "tRue", " true", "2", 2, 1.0, 0.0, None, [True]])
def test_what_vault_does_not_read_as_a_boolean_is_refused(text: object) -> None:
    with pytest.raises(ValueError):
        vault_boolean(text)


class Fields(BaseModel):
    plaintext: str | None = None
    prehashed: VaultBool = True
    key_version: VaultInt | None = None
    policies: Strings = ["default"]
    ttl: Duration = 60
    batch_input: list[dict[str, str]] | None = None
    described: BaseModel | None = None


def test_a_null_is_the_zero_value_of_its_fields_type() -> None:
    """As Go's weak decoding reads a JSON null; `batch_input`, which Vault reads raw, is no
    field at all when null, nor is one of a type with no zero."""
    zeros = zero_values(Fields)
    assert zeros == {
        "plaintext": "",
        "prehashed": False,
        "key_version": 0,
        "policies": [],
        "ttl": 0,
    }
    body = b'{"plaintext": null, "batch_input": null, "unknown": null, "ttl": 5}'
    assert json.loads(nulls_as_zeros(body, Fields)) == {
        "plaintext": "",
        "batch_input": None,
        "unknown": None,
        "ttl": 5,
    }
    deep = b'{"plaintext": null, "x": ' + b"[" * 1000 + b"]" * 1000 + b"}"
    in_base64 = b'{"plaintext": "bnVsbA==null"}'
    for untouched in (
        b"null",
        b"[null]",
        b'{"a": nul',
        b'{"ttl": 1}',
        b'{"described": null}',
        deep,  # past the parser's depth: as sent, for pydantic's own parse to refuse
        in_base64,
    ):
        assert nulls_as_zeros(untouched, Fields) is untouched


@pytest.mark.parametrize(
    "text",
    [
        '"\\ud800"',
        '{"a": ["\\udfff"]}',
        b'"\xed\xa0\x80"',  # a surrogate's bytes, which Python's reader of bytes lets through
        "NaN",
        '{"a": -Infinity}',
        "[1e400]",
        "{",
        "[" * 100_000,  # refused by the parser's depth bound, far below the interpreter's
    ],
    ids=[
        "lone-high",
        "lone-low",
        "surrogate-bytes",
        "nan",
        "infinity",
        "1e400",
        "malformed",
        "deep",
    ],
)
def test_a_document_with_what_json_has_not_is_refused(text: str | bytes) -> None:
    with pytest.raises(ValueError):
        json_document(text)


def test_a_document_of_json_is_read_as_json() -> None:
    text = '{"a": ["\\ud83d\\ude80", 1e300, -0.5, 10000000000000000000000], "b": null}'
    assert (
        json_document(text)
        == json.loads(text)
        == {
            "a": ["\N{ROCKET}", 1e300, -0.5, 10**22],
            "b": None,
        }
    )
    assert json_document(text.encode()) == json.loads(text)
