"""The store's tables, one schema for both backends, and what a store made by older code gains
when it is opened (columns added since; the keyring, `app.store.keyring`)."""

from app.store.database import Cursor, Database
from app.store.keyring import Terms

TABLES = """
CREATE TABLE IF NOT EXISTS keys (
    name TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    params TEXT NOT NULL,
    exportable INTEGER NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    latest_version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS key_versions (
    name TEXT NOT NULL REFERENCES keys(name) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    wrapped {blob} NOT NULL,
    public {blob},
    term INTEGER,
    PRIMARY KEY (name, version)
);
CREATE TABLE IF NOT EXISTS root_key_check (
    id INTEGER PRIMARY KEY,
    wrapped {blob} NOT NULL
);
CREATE TABLE IF NOT EXISTS keyring (
    term INTEGER PRIMARY KEY,
    wrapped {blob} NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
    id TEXT PRIMARY KEY,
    token_hash {blob} NOT NULL UNIQUE,
    description TEXT NOT NULL,
    key_patterns TEXT NOT NULL,
    operations TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION,
    rate_per_second DOUBLE PRECISION,
    policies TEXT NOT NULL DEFAULT '[]',
    parent_id TEXT,
    ttl_seconds DOUBLE PRECISION,
    explicit_max_seconds DOUBLE PRECISION,
    max_expires_at DOUBLE PRECISION,
    period_seconds DOUBLE PRECISION,
    renewable INTEGER NOT NULL DEFAULT 0,
    uses_left INTEGER,
    metadata TEXT NOT NULL DEFAULT '{{}}',
    method TEXT NOT NULL DEFAULT 'token',
    mount TEXT NOT NULL DEFAULT 'token',
    role TEXT NOT NULL DEFAULT '',
    identity TEXT NOT NULL DEFAULT 'token:admin',
    path TEXT NOT NULL DEFAULT '',
    renewed_at DOUBLE PRECISION,
    bound_cidrs TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS policies (
    name TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    document TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS auth_state (
    id INTEGER PRIMARY KEY,
    generation INTEGER NOT NULL,
    admin_token_hash {blob}
);
CREATE TABLE IF NOT EXISTS auth_mounts (
    accessor TEXT PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    description TEXT NOT NULL,
    config TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS aws_credentials (
    access_key_id TEXT PRIMARY KEY,
    token_id TEXT NOT NULL REFERENCES tokens(id) ON DELETE CASCADE,
    term INTEGER NOT NULL,
    sealed {blob} NOT NULL
);
CREATE INDEX IF NOT EXISTS aws_credentials_token ON aws_credentials (token_id);
CREATE TABLE IF NOT EXISTS kms_aliases (
    name TEXT PRIMARY KEY,
    key_name TEXT NOT NULL REFERENCES keys(name) ON DELETE CASCADE,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS kms_aliases_key ON kms_aliases (key_name);
CREATE TABLE IF NOT EXISTS fe_bases (
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    basis TEXT NOT NULL,
    PRIMARY KEY (name, version),
    FOREIGN KEY (name, version) REFERENCES key_versions(name, version) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS fe_functions (
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    function TEXT NOT NULL,
    principal TEXT NOT NULL,
    time DOUBLE PRECISION NOT NULL,
    rank INTEGER NOT NULL,
    PRIMARY KEY (name, version, seq),
    FOREIGN KEY (name, version) REFERENCES key_versions(name, version) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS audit (
    chain TEXT NOT NULL,
    seq INTEGER NOT NULL,
    time DOUBLE PRECISION NOT NULL,
    request_id TEXT NOT NULL,
    client TEXT,
    principal TEXT,
    operation TEXT NOT NULL,
    key_name TEXT,
    key_version TEXT,
    status INTEGER NOT NULL,
    problem TEXT,
    details TEXT NOT NULL,
    mac {blob} NOT NULL,
    PRIMARY KEY (chain, seq)
);
CREATE INDEX IF NOT EXISTS audit_time ON audit (time, chain, seq);
CREATE INDEX IF NOT EXISTS audit_by_key ON audit (key_name, time, chain, seq);
CREATE TABLE IF NOT EXISTS audit_heads (
    chain TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    tag {blob} NOT NULL
);
CREATE TABLE IF NOT EXISTS audit_key (
    id INTEGER PRIMARY KEY,
    wrapped {blob} NOT NULL
);
CREATE TABLE IF NOT EXISTS secret_mounts (
    accessor TEXT PRIMARY KEY,
    path TEXT UNIQUE,
    former_path TEXT,
    type TEXT NOT NULL,
    key_prefix TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    detached_at DOUBLE PRECISION
);
CREATE TABLE IF NOT EXISTS mount_migrations (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS secret_mount_keys_config (
    accessor TEXT PRIMARY KEY,
    config TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS wrapping_key (
    id INTEGER PRIMARY KEY,
    wrapped {blob} NOT NULL,
    public {blob} NOT NULL
);
CREATE TABLE IF NOT EXISTS transit_import_key (
    id INTEGER PRIMARY KEY,
    wrapped {blob} NOT NULL,
    public {blob} NOT NULL
);
CREATE TABLE IF NOT EXISTS approle_roles (
    mount TEXT NOT NULL,
    name TEXT NOT NULL,
    role_id TEXT NOT NULL,
    settings TEXT NOT NULL,
    hmac_key {blob} NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (mount, name),
    UNIQUE (mount, role_id)
);
CREATE TABLE IF NOT EXISTS approle_secret_ids (
    accessor TEXT PRIMARY KEY,
    mount TEXT NOT NULL,
    role TEXT NOT NULL,
    secret_hash {blob} NOT NULL,
    uses_left INTEGER NOT NULL,
    ttl_seconds INTEGER NOT NULL,
    expires_at DOUBLE PRECISION,
    metadata TEXT NOT NULL,
    cidr_list TEXT NOT NULL,
    token_bound_cidrs TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    UNIQUE (mount, role, secret_hash)
);
CREATE INDEX IF NOT EXISTS approle_secret_ids_expiry ON approle_secret_ids (expires_at);
CREATE TABLE IF NOT EXISTS wrapped_responses (
    accessor TEXT PRIMARY KEY,
    token_hash {blob} NOT NULL UNIQUE,
    creation_path TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    ttl_seconds INTEGER NOT NULL,
    wrapped_accessor TEXT NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    term INTEGER NOT NULL,
    sealed {blob} NOT NULL
);
CREATE INDEX IF NOT EXISTS wrapped_responses_expiry ON wrapped_responses (expires_at);
CREATE TABLE IF NOT EXISTS auth_roles (
    mount TEXT NOT NULL,
    name TEXT NOT NULL,
    settings TEXT NOT NULL,
    PRIMARY KEY (mount, name)
);
CREATE TABLE IF NOT EXISTS auth_role_revisions (
    mount TEXT PRIMARY KEY,
    revision INTEGER NOT NULL
)
"""

# Columns added after their tables, which a store made before them lacks: table, column,
# definition.
ADDED_COLUMNS = (
    ("key_versions", "term", "INTEGER"),
    ("key_versions", "rotation", "TEXT"),
    ("keys", "state", "TEXT NOT NULL DEFAULT 'active'"),
    ("keys", "deletion_date", "DOUBLE PRECISION"),
    ("keys", "deletion_protection", "INTEGER NOT NULL DEFAULT 0"),
    ("keys", "min_decryption_version", "INTEGER NOT NULL DEFAULT 1"),
    ("keys", "min_encryption_version", "INTEGER NOT NULL DEFAULT 0"),
    ("keys", "auto_rotate_seconds", "DOUBLE PRECISION"),
    ("tokens", "rate_per_second", "DOUBLE PRECISION"),
    ("tokens", "policies", "TEXT NOT NULL DEFAULT '[]'"),
    ("tokens", "parent_id", "TEXT"),
    ("tokens", "ttl_seconds", "DOUBLE PRECISION"),
    ("tokens", "explicit_max_seconds", "DOUBLE PRECISION"),
    ("tokens", "max_expires_at", "DOUBLE PRECISION"),
    ("tokens", "period_seconds", "DOUBLE PRECISION"),
    ("tokens", "renewable", "INTEGER NOT NULL DEFAULT 0"),
    ("tokens", "uses_left", "INTEGER"),
    ("tokens", "metadata", "TEXT NOT NULL DEFAULT '{}'"),
    ("tokens", "method", "TEXT NOT NULL DEFAULT 'token'"),
    ("tokens", "mount", "TEXT NOT NULL DEFAULT 'token'"),
    ("tokens", "role", "TEXT NOT NULL DEFAULT ''"),
    ("tokens", "identity", "TEXT NOT NULL DEFAULT 'token:admin'"),
    ("tokens", "path", "TEXT NOT NULL DEFAULT ''"),
    ("tokens", "renewed_at", "DOUBLE PRECISION"),
    ("tokens", "bound_cidrs", "TEXT NOT NULL DEFAULT '[]'"),
)


def create(database: Database, terms: Terms) -> None:
    """The tables, brought up to date, and the check that the root key is this store's
    (RootKeyMismatchError), all in one transaction."""

    def create_in(cursor: Cursor) -> None:
        for statement in TABLES.format(blob=database.dialect.blob).split(";"):
            if statement.strip():
                cursor.execute(statement)
        for table, column, definition in ADDED_COLUMNS:
            if not database.has_column(cursor, table, column):
                cursor.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
        # The index of a column an older store gains just above.
        cursor.execute("CREATE INDEX IF NOT EXISTS tokens_by_parent ON tokens (parent_id)")
        cursor.execute(
            "INSERT INTO auth_state (id, generation) VALUES (1, 0) ON CONFLICT (id) DO NOTHING"
        )
        terms.open(cursor)

    database.create_schema(create_in)
