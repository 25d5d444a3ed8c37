"""The keys' life and the calls on them: batches, deletion windows, scheduled destruction and
rotation, payloads without an envelope, the AWS KMS account, the backups imported."""

import base64
from typing import Self

from pydantic import BaseModel, Field, field_validator, model_validator

from app.settings.fields import Interval, Window, items

# The most items a batch may have whatever CIPHERD_MAX_BATCH_ITEMS says.
MAX_BATCH_ITEMS = 10_000


class KeySettings(BaseModel):
    max_batch_items: int = Field(
        1000, ge=1, le=MAX_BATCH_ITEMS, description="The most items one batch call may carry."
    )
    deletion_window_seconds: Window = Field(
        604800,
        description="How long a deleted key waits, restorable, before it is destroyed, when "
        "the deletion asks for no `window_seconds`. At least "
        "`CIPHERD_DELETION_MIN_WINDOW_SECONDS`.",
    )
    deletion_min_window_seconds: Window = Field(
        86400,
        description="The shortest `window_seconds` a deletion may ask for; 0 allows immediate "
        "destruction.",
    )
    maintenance_seconds: Interval = Field(
        10.0,
        description="How often each process destroys keys whose deletion date has come and "
        "rotates keys whose `auto_rotate_seconds` has passed.",
    )
    min_auto_rotate_seconds: int = Field(
        3600,
        ge=1,
        le=10 * 365 * 86400,
        description="The shortest `auto_rotate_seconds` a key may have (Vault's floor, an "
        "hour): each rotation adds a version that the key keeps, so a shorter period would "
        "grow it without bound.",
    )
    bare_payload_versions: int = Field(
        8,
        ge=1,
        le=100,
        description="How many versions, newest first, a payload without an envelope is tried "
        "against.",
    )
    aws_account_id: str = Field(
        "000000000000",
        pattern=r"^[0-9]{12}$",
        description="The 12-digit account id in the ARNs the AWS KMS API (`POST /`) names keys "
        "and aliases by (`arn:aws:kms:<region>:<account>:key/<id>`); ARNs of another account "
        "name no key of this service.",
    )
    backup_signers: str = Field(
        "",
        description="The signing keys (`GET /v1/sys/wrapping-key`'s `signing_key`, base64 Ed25519 "
        "public keys), comma-separated, of the other instances whose backups this one imports; "
        "its own backups are always taken. Unset: only its own.",
    )

    @model_validator(mode="after")
    def _window_above_minimum(self) -> Self:
        if self.deletion_window_seconds < self.deletion_min_window_seconds:
            raise ValueError("deletion_window_seconds must be at least deletion_min_window_seconds")
        return self

    @field_validator("backup_signers")
    @classmethod
    def _signer_keys(cls, value: str) -> str:
        for item in items(value):
            try:
                key = base64.b64decode(item, validate=True)
            except ValueError:
                key = b""
            if len(key) != 32:
                raise ValueError(f"backup_signers: {item!r} is not base64 of 32 bytes")
        return value

    @property
    def backup_signer_keys(self) -> frozenset[bytes]:
        """The Ed25519 public keys `backup_signers` names."""
        return frozenset(base64.b64decode(item) for item in items(self.backup_signers))
