"""Vault's durations and comma-separated lists at their edges: an integer past what a float
holds is out of range like any other, and a string of millions of items is refused before it
is split."""

import pytest
from pydantic import BaseModel, Field, ValidationError

from app.ops.durations import MAX_SECONDS, MAX_STRINGS, Strings, duration_seconds

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
    [(0, 0), (MAX_SECONDS, MAX_SECONDS), (90.9, 90), ("90", 90), ("1h30m", 5400)],
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
