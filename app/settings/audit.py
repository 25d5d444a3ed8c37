"""The audit trail: where its records go, how soon they are on disk, what a process keeps while
the store does not take them, and where the chains' anchors are published."""

from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, Field, model_validator


class AuditSettings(BaseModel):
    audit_file: Path | None = Field(
        None,
        description="A file every audit record is also appended to, one JSON object a line "
        "(0600). Unset: the records are kept in the store only.",
    )
    audit_sync: Literal["changes", "full"] = Field(
        "changes",
        description="`changes`: the audit record of a change (keys, tokens, FE functions "
        "released) is on disk (fdatasync) before its answer; any other record is written to "
        "the journal before its answer (it survives a crash of the service) and is on disk "
        "within 0.1 s. `full`: every record is on disk before its answer (concurrent requests "
        "share one fdatasync).",
    )
    audit_reserve_bytes: int = Field(
        4 << 20,
        ge=0,
        le=1 << 30,
        description="Disk space each process sets aside ahead of its audit journal, so that a "
        "disk that something else filled still takes about that many bytes of records (some "
        "300 bytes a request). Of it, 16 KiB per change in flight is kept for the changes' own "
        "records: a change is made only once its room is set aside.",
    )
    audit_backlog_bytes: int = Field(
        64 << 20,
        ge=1 << 16,
        description="Audit records a process keeps in its journal while the store does not "
        "take them (an outage, a full disk); past it, requests answer 503 `audit-unavailable`.",
    )
    audit_anchor: Literal["file", "audit-file", "log"] = Field(
        "file",
        description="Where each process publishes its audit chain's head (an anchor, MAC'd "
        "under a key derived from the root key), so that `audit verify` sees a trail cut "
        "short, wiped or put back to an older copy by someone who can write the database: "
        "`file`, a file per chain in `CIPHERD_AUDIT_ANCHOR_DIR`; `audit-file`, a line of "
        "`CIPHERD_AUDIT_FILE`; `log`, a line of the log (`cipherd local audit verify --anchors` "
        "reads it).",
    )
    audit_anchor_dir: Path | None = Field(
        None,
        description="The directory of the anchor files (`CIPHERD_AUDIT_ANCHOR=file`): out of "
        "the database writer's reach, and shared by replicas that verify each other's chains. "
        "Unset: `audit-anchors` in the data directory.",
    )
    audit_anchor_records: int = Field(
        1000,
        ge=1,
        le=1_000_000_000,
        description="An anchor is published after this many records of a chain (or "
        "`CIPHERD_AUDIT_ANCHOR_SECONDS`, whichever comes first), at a chain's first record and "
        "at a clean stop. Records after a process's last anchor are not covered by it.",
    )
    audit_anchor_seconds: float = Field(
        5.0,
        gt=0,
        le=86400,
        description="The longest a chain's newest records wait for an anchor.",
    )

    @model_validator(mode="after")
    def _anchor_file_set(self) -> Self:
        if self.audit_anchor == "audit-file" and self.audit_file is None:
            raise ValueError("CIPHERD_AUDIT_ANCHOR=audit-file needs CIPHERD_AUDIT_FILE")
        return self
