"""Writes docs/configuration.md from `app.settings.Settings`: every field's environment variable,
description, type, bounds and default, so the page cannot drift from the code that reads them.

    .venv/bin/python scripts/settings_page.py > docs/configuration.md     (or: make settings-page)

`tests/docs/test_settings_page.py` fails when the committed page is not what this prints.
"""

import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import annotated_types
from pydantic.fields import FieldInfo

from app.settings import Settings

PREFIX = "CIPHERD_"

# The page's sections, in order, and the settings each one holds. A setting no section names
# goes under "Other settings", so a new one is on the page before anyone places it here.
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Address and storage", ("host", "port", "data_dir", "database_url")),
    (
        "Root key and admin token",
        (
            "root_key",
            "root_key_file",
            "root_key_file_ignore_mode",
            "root_key_pkcs11_module",
            "root_key_pkcs11_token",
            "root_key_pkcs11_key",
            "root_key_pkcs11_pin_file",
            "admin_token",
        ),
    ),
    (
        "TLS and reverse proxies",
        ("tls_cert_file", "tls_key_file", "tls_client_ca_file", "trusted_proxies"),
    ),
    ("Backups", ("backup_signers",)),
    ("Front page", ("documentation_url",)),
    (
        "Requests and connections",
        (
            "max_body_bytes",
            "max_json_body_bytes",
            "max_batch_items",
            "head_timeout_seconds",
            "body_timeout_seconds",
            "min_body_bytes_per_second",
            "max_connections",
            "body_memory_bytes",
            "auth_failures_burst",
            "auth_failures_per_second",
        ),
    ),
    (
        "Caches, replicas and outages",
        ("key_cache_seconds", "key_cache_bytes", "token_cache_seconds", "outage_grace_seconds"),
    ),
    (
        "Key lifecycle",
        (
            "deletion_window_seconds",
            "deletion_min_window_seconds",
            "maintenance_seconds",
            "bare_payload_versions",
            "keyring_rewrap_per_second",
        ),
    ),
    ("Audit trail", ("audit_file", "audit_sync", "audit_reserve_bytes", "audit_backlog_bytes")),
    (
        "Workers, logs and metrics",
        ("worker_unresponsive_seconds", "metrics_dir", "log_format", "log_level"),
    ),
    (
        "Functional encryption",
        (
            "fe_max_dimension",
            "fe_max_range",
            "fe_max_request_work",
            "fe_table_cache_bytes",
            "fe_prepared_cache_entries",
            "fe_prepared_cache_bytes",
            "fe_master_cache_bytes",
            "fe_processes",
        ),
    ),
)

INTRO = """\
# Configuration

cipherd reads its settings from environment variables whose names begin with `CIPHERD_`, once
per process. `cipherd serve` checks them all before any worker starts: a value out of bounds
stops it with one line naming the variable, never its value. The command line's `--host`,
`--port` and `--tls-*` flags of `cipherd serve` win over the variables of the same meaning.

This page is written from the descriptions in `app/settings/` by `scripts/settings_page.py`
(`make settings-page`), and a test fails when the two differ.
"""

_UNITS = ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))
_SPANS = ((365 * 86400, "year"), (86400, "day"), (3600, "hour"), (60, "minute"))


def env_name(field: str) -> str:
    return PREFIX + field.upper()


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _kind(annotation: Any) -> str:
    """What a value looks like, in a user's words."""
    if get_origin(annotation) is Literal:
        choices = [f"`{choice}`" for choice in get_args(annotation)]
        return ", ".join(choices[:-1]) + " or " + choices[-1]
    if isinstance(annotation, types.UnionType) or get_origin(annotation) is typing.Union:
        (inner,) = (arg for arg in get_args(annotation) if arg is not type(None))
        return _kind(inner)
    return {str: "text", int: "integer", float: "number", bool: "boolean", Path: "path"}[annotation]


def _bounds(name: str, info: FieldInfo) -> str:
    low = high = ""
    for constraint in info.metadata:
        if isinstance(constraint, annotated_types.Ge):
            low = f"at least {_amount(name, constraint.ge)}"
        elif isinstance(constraint, annotated_types.Gt):
            low = f"above {_amount(name, constraint.gt)}"
        elif isinstance(constraint, annotated_types.Le):
            high = f"at most {_amount(name, constraint.le)}"
    return ", ".join(part for part in (low, high) if part)


def _default(name: str, value: Any) -> str:
    if value is None or value == "":
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, Path | str):
        return f"`{value}`"
    return _amount(name, value)


def _amount(name: str, value: Any) -> str:
    """A number as written in the variable, and in bytes or time when it is a round amount."""
    text = f"`{_number(value)}`"
    if not value:
        return text
    if name.endswith("_bytes"):
        for size, unit in _UNITS:
            if value >= size and value % size == 0:
                return f"{text} ({value // size} {unit})"
    if name.endswith("_seconds"):
        for span, unit in _SPANS:
            if value >= span and value % span == 0:
                count = int(value // span)
                return f"{text} ({count} {unit}{'s' if count > 1 else ''})"
    if isinstance(value, int) and value >= 1 << 16 and value & (value - 1) == 0:
        return f"{text} (2^{value.bit_length() - 1})"
    return text


def _setting(name: str, info: FieldInfo) -> str:
    kind = _kind(info.annotation)
    bounds = _bounds(name, info)
    facts = f"{kind[0].upper()}{kind[1:]}{', ' + bounds if bounds else ''}."
    return (
        f"### `{env_name(name)}` {{#{env_name(name).lower()}}}\n\n"
        f"{info.description}\n\n"
        f"{facts} Default: {_default(name, info.default)}.\n"
    )


def render() -> str:
    fields = Settings.model_fields
    placed = {name for _, names in SECTIONS for name in names}
    unknown = placed - set(fields)
    if unknown:
        raise SystemExit(f"scripts/settings_page.py names settings that do not exist: {unknown}")
    others = tuple(name for name in fields if name not in placed)
    sections = SECTIONS + ((("Other settings", others),) if others else ())
    parts = [INTRO]
    for title, names in sections:
        parts.append(f"## {title}\n")
        parts.extend(_setting(name, fields[name]) for name in names)
    return "\n".join(parts)


if __name__ == "__main__":
    sys.stdout.write(render())
