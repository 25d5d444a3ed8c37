"""The bounds several settings share, declared once: a setting of one of these kinds takes its
type from here and gives only its default and description."""

from typing import Annotated

from pydantic import Field

TEN_YEARS = 10 * 365 * 86400

# A token's or a deletion's span: whole seconds, at most ten years.
Lifetime = Annotated[int, Field(ge=1, le=TEN_YEARS)]
Window = Annotated[int, Field(ge=0, le=TEN_YEARS)]
# Finite and at most an hour: each bounds how long another replica's change goes unseen.
Staleness = Annotated[float, Field(ge=0, le=3600)]
# A wait or a period that must pass at all, and within an hour.
Interval = Annotated[float, Field(gt=0, le=3600)]
# Memory (or entries) a process may give a cache; 0 gives it none.
Budget = Annotated[int, Field(ge=0)]
# Request bodies, never below a kibibyte.
BodyBytes = Annotated[int, Field(ge=1024)]


def items(value: str) -> list[str]:
    """The non-empty items of a comma-separated setting."""
    return [item for item in (part.strip() for part in value.split(",")) if item]
