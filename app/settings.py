"""Service settings, read from `CIPHERD_*` environment variables.

Every name and default is listed in the README. Settings are read once per process; tests build
their own `Settings` and hand it to `create_app`.
"""

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# The most items a batch may have whatever CIPHERD_MAX_BATCH_ITEMS says.
MAX_BATCH_ITEMS = 10_000


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CIPHERD_", extra="ignore")

    data_dir: Path = Field(Path("var"), description="embedded store, root key and admin token")
    host: str = Field("127.0.0.1", description="the address `cipherd serve` listens on")
    port: int = Field(8000, ge=0, le=65535, description="the port `cipherd serve` listens on")
    database_url: str | None = Field(
        None,
        description="sqlite:///relative or sqlite:////absolute path, or postgresql://...; default: "
        "SQLite in data_dir",
    )
    root_key: str | None = Field(None, description="base64 of the 32-byte root key")
    root_key_file: Path | None = Field(None, description="file holding the base64 root key")
    root_key_pkcs11_module: Path | None = Field(
        None, description="PKCS#11 module (.so) of the token holding the root key"
    )
    root_key_pkcs11_token: str | None = Field(None, description="label of that token")
    root_key_pkcs11_key: str | None = Field(None, description="label of the root key (AES)")
    root_key_pkcs11_pin_file: Path | None = Field(None, description="file holding the user PIN")
    admin_token: str | None = Field(None, description="the admin bearer token")
    tls_cert_file: Path | None = Field(None, description="PEM certificate chain: serve HTTPS")
    tls_key_file: Path | None = Field(None, description="PEM private key of the certificate")
    tls_client_ca_file: Path | None = Field(
        None, description="PEM CA certificates: every client must present a certificate from one"
    )

    max_body_bytes: int = Field(
        256 * 1024 * 1024, ge=1024, description="request body limit, raw bytes"
    )
    max_json_body_bytes: int = Field(
        32 * 1024 * 1024, ge=1024, description="request body limit, JSON and anything not raw"
    )
    max_batch_items: int = Field(
        1000, ge=1, le=MAX_BATCH_ITEMS, description="items in one batch request"
    )
    # Finite and at most an hour: each bounds how long another replica's change goes unseen.
    key_cache_seconds: float = Field(
        2.0,
        ge=0,
        le=3600,
        description="how long a process reuses an unwrapped key (rotation lag bound)",
    )
    key_cache_bytes: int = Field(
        64 * 1024 * 1024,
        ge=0,
        description="memory for unwrapped keys (their secret and public parts) per process",
    )
    outage_grace_seconds: float = Field(
        60.0,
        ge=0,
        le=3600,
        description="while the store does not answer, how long after its unwrapping a cached key "
        "still serves (outage lag bound)",
    )
    token_cache_seconds: float = Field(
        2.0,
        ge=0,
        le=3600,
        description="how long a process reuses a token lookup (revocation lag bound)",
    )
    worker_unresponsive_seconds: float = Field(
        30.0,
        gt=0,
        allow_inf_nan=False,
        description="a worker whose event loop stalls this long is killed and replaced",
    )
    keyring_rewrap_per_second: int = Field(
        200, ge=1, le=100_000, description="key versions each process rewraps a second at most"
    )
    deletion_window_seconds: int = Field(
        604800, ge=0, le=10 * 365 * 86400, description="how long a deleted key can be restored"
    )
    deletion_min_window_seconds: int = Field(
        86400, ge=0, le=10 * 365 * 86400, description="the shortest window a deletion may ask for"
    )
    maintenance_seconds: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="how often each process destroys keys whose deletion is due and rotates "
        "keys whose auto_rotate_seconds has passed",
    )
    bare_payload_versions: int = Field(
        8,
        ge=1,
        le=100,
        description="how many versions, newest first, a payload without an envelope is tried "
        "against",
    )
    audit_file: Path | None = Field(
        None, description="a JSON-lines file every audit record is also appended to"
    )
    audit_sync: Literal["changes", "full"] = Field(
        "changes",
        description="changes: the audit record of a change (keys, tokens, FE functions) is on "
        "disk before its answer, any other is written before its answer (it survives a crash "
        "of the service) and on disk within 0.1 s; full: every record on disk before its answer",
    )
    audit_reserve_bytes: int = Field(
        4 << 20,
        ge=0,
        le=1 << 30,
        description="disk space each process sets aside for its audit journal, so that a disk "
        "filled by something else still takes about that many bytes of records (some 300 a "
        "request)",
    )
    audit_backlog_bytes: int = Field(
        64 << 20,
        ge=1 << 16,
        description="audit records a process keeps in its journal while the key store does "
        "not take them (an outage, a full disk); past it, requests answer 503",
    )
    metrics_dir: Path | None = Field(
        None,
        description="with several workers, where their shared metrics files go (a directory "
        "is made in it); default /dev/shm, or the system's temporary directory without it",
    )
    head_timeout_seconds: float = Field(
        15.0, gt=0, le=3600, description="time a connection has to send a whole request head"
    )
    body_timeout_seconds: float = Field(
        20.0,
        gt=0,
        le=3600,
        description="longest stall of a request body, and the grace before its pace is checked",
    )
    min_body_bytes_per_second: int = Field(
        16384, ge=0, description="slowest average pace of a request body after the grace"
    )
    max_connections: int = Field(1024, ge=1, description="open connections per worker")
    body_memory_bytes: int = Field(
        512 * 1024 * 1024,
        ge=1024,
        description="request bodies held in memory at once per worker, JSON counted 8 times",
    )
    auth_failures_burst: int = Field(
        20,
        ge=1,
        description="requests with a missing or invalid token a client address may make at once "
        "per worker before they are answered 429",
    )
    auth_failures_per_second: float = Field(
        1.0,
        gt=0,
        le=1_000_000,
        description="how fast an address earns its failures back, per worker",
    )
    log_format: str = Field("json", description="json or text")
    log_level: str = Field("INFO")

    fe_max_dimension: int = Field(128, ge=1, description="largest FE dimension a key may have")
    fe_max_range: int = Field(2**32, ge=1, description="widest decrypt range hi - lo")
    fe_max_request_work: int = Field(
        2000,
        ge=1,
        description="estimated FE work of one batch or many-ciphertext request, in units of "
        "about one pairing",
    )
    fe_table_cache_bytes: int = Field(
        256 * 1024 * 1024, ge=0, description="memory for cached discrete-log tables"
    )
    fe_prepared_cache_entries: int = Field(
        64, ge=0, description="decoded or prepared functional keys kept per process"
    )
    fe_prepared_cache_bytes: int = Field(
        64 * 1024 * 1024,
        ge=0,
        description="memory for decoded and prepared functional keys per process",
    )
    fe_master_cache_bytes: int = Field(
        64 * 1024 * 1024,
        ge=0,
        description="memory for decoded FE master and public keys per process",
    )
    fe_processes: int = Field(
        1,
        ge=0,
        le=64,
        description="processes per worker that run FE decryptions beside it (0: in the worker)",
    )

    @model_validator(mode="after")
    def _window_above_minimum(self) -> "Settings":
        if self.deletion_window_seconds < self.deletion_min_window_seconds:
            raise ValueError("deletion_window_seconds must be at least deletion_min_window_seconds")
        return self

    @field_validator("log_format")
    @classmethod
    def _known_log_format(cls, value: str) -> str:
        if value not in ("json", "text"):
            raise ValueError("log_format must be json or text")
        return value

    @field_validator("log_level")
    @classmethod
    def _known_log_level(cls, value: str) -> str:
        if value.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise ValueError("log_level must be DEBUG, INFO, WARNING, ERROR or CRITICAL")
        return value.upper()

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'cipherd.sqlite3'}"

    @property
    def audit_journal_dir(self) -> Path:
        return self.data_dir / "audit-journal"

    @property
    def sqlite_path(self) -> Path | None:
        """The SQLite store's file, or None for PostgreSQL."""
        url = self.resolved_database_url
        return Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:///") else None

    @property
    def admin_token_file(self) -> Path:
        return self.data_dir / "admin-token"

    @property
    def generated_root_key_file(self) -> Path:
        return self.data_dir / "root-key"


@lru_cache
def get_settings() -> Settings:
    return Settings()
