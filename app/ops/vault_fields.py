"""Fields as Vault's clients write them, and times as Vault writes them.

Vault's framework decodes a request's fields weakly: the `bao` command sends every `key=value` as
a string, so `min_decryption_version=2` arrives as "2" and `derived=true` as "true". Integers,
booleans, durations (seconds, or Go durations: `"90s"`, `"1h30m"`) and lists (a JSON list or a
comma-separated string) are read here as Vault reads them; what Vault refuses is refused.
"""

import functools
import json
import re
import types
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin
from urllib.parse import parse_qsl

from pydantic import BaseModel, BeforeValidator, ConfigDict
from pydantic_core import from_json

# Go's duration units.
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d)")
MAX_SECONDS = 10 * 365 * 86400
# The most separators a comma-separated string may hold: more than any list field of Vault's
# takes (the most is 256). 30 MB of "a," took 1.5 s and 231 MB to split before the field's
# own limit refused it.
MAX_STRINGS = 1024


class VaultBody(BaseModel):
    """A body as Vault reads it: a field it does not know is dropped, not refused, so a client
    of a newer Vault, which sends fields this service lacks, still works (the native API refuses
    them: `RequestBody`)."""

    model_config = ConfigDict(extra="ignore")


def duration_seconds(value: Any) -> int:
    """Seconds from a number, a numeric string or a Go duration, the empty string 0 as Vault
    reads it (`bao write ... ttl=` sends it); ValueError otherwise, or outside 0 to ten
    years."""
    if value == "":
        return 0
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


# An integer literal as Go's strconv.ParseInt reads one in base 0 (Vault's reading of a string
# for an integer field): a sign, then 0x, 0o, 0b or a leading 0 (octal) or decimal digits, with
# underscores between digits or after the prefix.
_GO_INTEGER = re.compile(
    r"[+-]?(?:0[xX](?:_?[0-9a-fA-F])+|0[bB](?:_?[01])+|0[oO]?(?:_?[0-7])+|[1-9](?:_?[0-9])*|0)"
)
_GO_BASES = {"0x": 16, "0b": 2, "0o": 8}
# Longer than any int64 literal (64 binary digits, their underscores, a prefix and a sign).
_MAX_INTEGER_TEXT = 160
_INT64 = range(-(2**63), 2**63)
# strconv.ParseBool's words.
_BOOLEANS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True}
_BOOLEANS |= {"0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


def _go_integer(text: str) -> int:
    if len(text) > _MAX_INTEGER_TEXT or not _GO_INTEGER.fullmatch(text):
        raise ValueError(f"{text[:32]!r} cannot be parsed as an integer")
    sign = -1 if text[0] == "-" else 1
    digits = text.lstrip("+-").replace("_", "").lower()
    base = _GO_BASES.get(digits[:2])
    if base is not None:
        return sign * int(digits[2:], base)
    return sign * int(digits, 8 if len(digits) > 1 and digits[0] == "0" else 10)


def vault_integer(value: Any) -> int:
    """An integer field as Vault reads it: a JSON integer or boolean (1 or 0), or a string in
    Go's syntax ("" is 0); not a JSON number with a fraction or an exponent, nor past 64 bits."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        value = _go_integer(value) if value else 0
    if not isinstance(value, int):
        raise ValueError("an integer, or a string that holds one")
    if value not in _INT64:
        raise ValueError("an integer of at most 64 bits")
    return value


def vault_boolean(value: Any) -> bool:
    """A boolean field as Vault reads it: a JSON boolean, or one of strconv.ParseBool's words
    ("true", "1", "F", ...; "" is false), a JSON number 0 or 1 included."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        found = _BOOLEANS.get(value, False if value == "" else None)
        if found is not None:
            return found
    raise ValueError("a boolean, or a string or number that strconv.ParseBool reads")


# Fields of Vault's requests.
Duration = Annotated[int, BeforeValidator(duration_seconds)]
Strings = Annotated[list[str], BeforeValidator(_strings)]
VaultInt = Annotated[int, BeforeValidator(vault_integer)]
VaultBool = Annotated[bool, BeforeValidator(vault_boolean)]


# The fields Vault reads raw, for which a JSON null is no field at all (`batch_input`).
_READ_RAW = frozenset({"batch_input"})
_NO_ZERO = object()


def _zero_of(annotation: Any) -> Any:
    """The zero value Go's field decoding gives a JSON null of a field of this type: false, 0,
    "", an empty list or map; `_NO_ZERO` for another type (a null is then validated as sent)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _zero_of(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        zeros = (_zero_of(arg) for arg in get_args(annotation) if arg is not type(None))
        return next((zero for zero in zeros if zero is not _NO_ZERO), _NO_ZERO)
    simple = {bool: False, int: 0, float: 0, str: "", list: [], dict: {}}
    return simple.get(origin or annotation, _NO_ZERO)


@functools.cache
def zero_values(model: type[BaseModel]) -> dict[str, Any]:
    """What a JSON null of each of `model`'s fields reads as: Vault's framework decodes it
    weakly, as the field type's zero value, given (`min_decryption_version: null` is 0, which
    is 1; `plaintext: null` is the empty plaintext)."""
    zeros = {name: _zero_of(field.annotation) for name, field in model.model_fields.items()}
    return {
        name: zero for name, zero in zeros.items() if zero is not _NO_ZERO and name not in _READ_RAW
    }


ValueT = TypeVar("ValueT")


def writable_json(value: ValueT) -> ValueT:
    """`value`, if JSON can write it: ValueError for NaN or an infinity (a number too large for
    a float, 1e400, reads as one), which Python writes as `NaN` or `Infinity`, text that other
    JSON readers (Go's, the `bao` command's) refuse."""
    json.dumps(value, allow_nan=False)
    return value


def json_document(text: str | bytes) -> Any:
    """A JSON document that arrives inside a request or from an issuer rather than as a body
    (a field's JSON string, a token's claims, a backup, a key set), read as strictly as bodies
    are, by the same parser: ValueError for what is not JSON (NaN, a lone surrogate such as
    `\\ud800`, which no UTF-8 store or answer can hold), for nesting past its depth and for a
    number too large for a float."""
    return writable_json(from_json(text, allow_inf_nan=False))


# A member whose value is null, somewhere in a body: base64, which large bodies are mostly,
# holds no quote or colon, so a body without one is passed on unparsed.
_NULL_MEMBER = re.compile(rb'"\s*:\s*null\s*[,}]')


def nulls_as_zeros(content: bytes, model: type[BaseModel]) -> bytes:
    """The body with each top-level null of a field `model` takes as that field's zero value
    (`zero_values`); a body that is not an object, not JSON or nested past pydantic's limit
    (its own parse then refuses it), as sent."""
    if not _NULL_MEMBER.search(content):
        return content
    try:
        data = from_json(content)
    except ValueError:
        return content
    zeros = zero_values(model)
    if not isinstance(data, dict) or not any(v is None and k in zeros for k, v in data.items()):
        return content
    given = {k: zeros[k] if v is None and k in zeros else v for k, v in data.items()}
    return json.dumps(given).encode()


# The most fields a form body may hold: far more than any of Vault's paths takes.
MAX_FORM_FIELDS = 1024
_JSON_START = re.compile(rb"\s*[\[{]")


def is_form(content_type: str, content: bytes) -> bool:
    """Whether Vault would read the body as a form: declared one, and not looking like JSON
    (Vault leans to JSON, as its clients have always sent it, whatever they declare)."""
    media_type = content_type.partition(";")[0].strip().lower()
    return media_type == "application/x-www-form-urlencoded" and not _JSON_START.match(content)


def form_as_json(content: bytes) -> bytes:
    """A form body (`a=1&b=x`) as the JSON object of its fields' strings, which Vault's weak
    decoding then reads as it reads strings in JSON; a field given more than once is its
    values joined by commas, as Vault joins them. ValueError for an undecodable form."""
    if b";" in content:  # Go's parser refuses `;` as a separator, and so the whole form
        raise ValueError("a form's fields are separated by '&', not ';'")
    fields: dict[str, list[str]] = {}
    pairs = parse_qsl(
        content.decode("utf-8"),
        keep_blank_values=True,
        strict_parsing=False,
        encoding="utf-8",
        errors="strict",
        max_num_fields=MAX_FORM_FIELDS,
    )
    for name, value in pairs:
        fields.setdefault(name, []).append(value)
    return json.dumps({name: ",".join(values) for name, values in fields.items()}).encode()
