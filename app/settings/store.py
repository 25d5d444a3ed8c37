"""Where the keys are kept and what opens them: the data directory, the database, the root key,
and how long a process may serve keys from memory."""

from pathlib import Path

from pydantic import BaseModel, Field

from app.settings.fields import Budget, Staleness


class StoreSettings(BaseModel):
    data_dir: Path = Field(
        Path("var"),
        description="The data directory: the embedded SQLite store, the generated root key and "
        "admin token, the audit journal. `cipherd serve` and the store commands make what they "
        "create there readable by their user only (umask 077), and at start set the directory "
        "to 0700 and what is already in it to 0600 (folders 0700), whatever made it.",
    )
    database_url: str | None = Field(
        None,
        description="The key store: `sqlite:///relative/path`, `sqlite:////absolute/path` or "
        "`postgresql://user@host/db`. Unset: the SQLite file `cipherd.sqlite3` in the data "
        "directory. A PostgreSQL URL may name several hosts, libpq's way "
        "(`postgresql://user@db1:5432,db2:5432/db?target_session_attrs=read-write`): the "
        "service connects to the first that answers and takes writes, and after a failover "
        "finds the promoted one (see Operations, replicas).",
    )
    database_connect_timeout_seconds: int = Field(
        3,
        ge=2,
        le=60,
        description="How long a connection to one PostgreSQL host may take, in whole seconds "
        "(at least 2, as libpq counts them), before the next host of the URL is tried (or, "
        "with one host, the attempt fails): a host that has vanished from the network without "
        "refusing is passed over this quickly, at start and whenever connections are replaced. "
        "A `connect_timeout` in the URL takes precedence.",
    )
    max_clock_skew_seconds: float = Field(
        5.0,
        gt=0,
        allow_inf_nan=False,
        description="How far this machine's clock may be from the database's. The service "
        "takes its time from the database (so every replica dates and decides by one clock); a "
        "replica whose own clock is further off is not ready (`/readyz` 503), says so in its "
        "log and in `cipherd_clock_skew_seconds`, and destroys or rotates nothing by the time "
        "until it agrees again.",
    )
    root_key: str | None = Field(
        None,
        description="Base64 of the 32-byte root key that wraps the keyring. A process given it "
        "here cannot read it again after a root rotation: restart it with the new one. With "
        "none of the root key settings, one is generated once into `<data dir>/root-key` "
        "(0600).",
    )
    root_key_file: Path | None = Field(
        None,
        description="A file holding the base64 root key (a Docker secret, say); read again when "
        "the root key is rotated. It must be private to its owner (mode 0600 or 0400): one its "
        "group or others may read or write stops the start (and `cipherd root rotate "
        "--new-root-key-file`) with one line naming it.",
    )
    root_key_file_ignore_mode: bool = Field(
        False,
        description="`true`: use `CIPHERD_ROOT_KEY_FILE` whatever its mode (a Kubernetes secret "
        "volume mounts files 0644 unless its `defaultMode` says 0400).",
    )
    root_key_pkcs11_module: Path | None = Field(
        None,
        description="The PKCS#11 module (`.so`) of the token that holds the root key, an AES "
        "key that never leaves it. Needs the other three `CIPHERD_ROOT_KEY_PKCS11_*` settings "
        "and excludes `CIPHERD_ROOT_KEY` and `CIPHERD_ROOT_KEY_FILE`.",
    )
    root_key_pkcs11_token: str | None = Field(
        None, description="The label of the PKCS#11 token that holds the root key."
    )
    root_key_pkcs11_key: str | None = Field(
        None,
        description="The label of the root key on the token: an AES key, sensitive, not "
        "extractable, allowed to wrap and unwrap.",
    )
    root_key_pkcs11_pin_file: Path | None = Field(
        None, description="A file holding the token's user PIN (a trailing newline is ignored)."
    )
    key_cache_seconds: Staleness = Field(
        2.0,
        description="How long a process reuses an unwrapped key. It bounds how long another "
        "replica's rotation goes unseen, and how long a deletion waits before it is answered.",
    )
    key_cache_bytes: Budget = Field(
        64 * 1024 * 1024,
        description="Memory for unwrapped keys (their secret and public parts) per process.",
    )
    outage_grace_seconds: Staleness = Field(
        60.0,
        description="While the store does not answer, how long after a process last unwrapped "
        "a key version (or looked a scoped token up) it still serves it from memory. It bounds "
        "how long a change made elsewhere meanwhile goes unseen; 0: no longer than "
        "`CIPHERD_KEY_CACHE_SECONDS`.",
    )
    keyring_rewrap_per_second: int = Field(
        200,
        ge=1,
        le=100_000,
        description="Key versions each process moves onto the keyring's newest term per second, "
        "at most, after a keyring rotation.",
    )

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'cipherd.sqlite3'}"

    @property
    def sqlite_path(self) -> Path | None:
        """The SQLite store's file, or None for PostgreSQL."""
        url = self.resolved_database_url
        return Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:///") else None

    @property
    def audit_journal_dir(self) -> Path:
        return self.data_dir / "audit-journal"

    @property
    def admin_token_file(self) -> Path:
        return self.data_dir / "admin-token"

    @property
    def generated_root_key_file(self) -> Path:
        return self.data_dir / "root-key"
