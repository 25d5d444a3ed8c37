"""Durations as Vault's clients write them: seconds, or Go durations (`"90s"`, `"1h30m"`); and
times as Vault writes them."""

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BeforeValidator

# Go's duration units.
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d)")
MAX_SECONDS = 10 * 365 * 86400
# The most separators a comma-separated string may hold: more than any list field of Vault's
# takes (the most is 256). 30 MB of "a," took 1.5 s and 231 MB to split before the field's
# own limit refused it.
MAX_STRINGS = 1024


def duration_seconds(value: Any) -> int:
    """Seconds from a number, a numeric string or a Go duration (ValueError otherwise, or
    outside 0 to ten years)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        # Nor written out to say so: a list of millions of entries took seconds to.
        raise ValueError("a duration is a number of seconds or a string like '1h30m'")
    if isinstance(value, int):
        seconds: float = value  # compared as an integer: one of 310 digits has no float
    elif isinstance(value, float):
        seconds = value
    else:
        text = value.strip()
        if re.fullmatch(r"\d+(\.\d+)?", text):
            seconds = float(text)
        else:
            parts = _DURATION.findall(text)
            if not text or "".join(n + u for n, u in parts) != text:
                raise ValueError(f"{text[:32]!r} is not a duration (seconds, or like '1h30m')")
            seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if not 0 <= seconds <= MAX_SECONDS:  # NaN too
        raise ValueError("a duration is from 0 to ten years")
    return int(seconds)


def vault_time(seconds: float | None) -> str:
    """A time as Vault writes one (RFC 3339, UTC); None as Go's zero time, Vault's "never"."""
    if seconds is None:
        return "0001-01-01T00:00:00Z"
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _strings(value: Any) -> Any:
    """A list as Vault takes one: a JSON list, or a comma-separated string (of at most
    MAX_STRINGS separators, counted before it is split)."""
    if not isinstance(value, str):
        return value
    if value.count(",") > MAX_STRINGS:
        raise ValueError(f"a comma-separated list holds at most {MAX_STRINGS} items")
    return [item.strip() for item in value.split(",") if item.strip()]


# Fields of Vault's requests: a duration in seconds, a list of strings.
Duration = Annotated[int, BeforeValidator(duration_seconds)]
Strings = Annotated[list[str], BeforeValidator(_strings)]
