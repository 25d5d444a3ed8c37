"""PostgreSQL clusters of a test's own: `initdb` in a temporary directory, on a free port,
started and stopped with `pg_ctl`, so that a test may stop, kill or promote its database without
touching the machine's server (which other tests use).

A primary and a streaming-replication hot standby made from it with `pg_basebackup`
(`Cluster.standby`), optionally synchronous, let a test fail over as an operator would: stop
the primary with `-m immediate`, `pg_ctl promote` the standby.

PostgreSQL does not run as root: under root the commands run as the `postgres` user, in a
directory it owns.
"""

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tests.e2e.server import free_port

BINARIES = Path(
    os.environ.get(
        "CIPHERD_TEST_POSTGRES_BIN",
        next(
            (str(p) for p in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)),
            "/usr/lib/postgresql/15/bin",
        ),
    )
)
_AS_POSTGRES = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
COMMAND_SECONDS = 60


def available() -> bool:
    """Whether this machine can make clusters of its own (PostgreSQL's server binaries)."""
    return (BINARIES / "initdb").exists() and (not _AS_POSTGRES or bool(shutil.which("runuser")))


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*_AS_POSTGRES, *map(str, args)], capture_output=True, text=True, timeout=COMMAND_SECONDS
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))}: {done.stdout}{done.stderr}")
    return done


@dataclass
class Cluster:
    """One PostgreSQL server of a test's own: its data directory and port."""

    directory: Path
    port: int

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def log(self) -> Path:
        return self.directory / "server.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        _run(BINARIES / "pg_ctl", "start", "-w", "-D", self.data, "-l", self.log)

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (`immediate`: as a crash would, without a checkpoint)."""
        _run(BINARIES / "pg_ctl", "stop", "-w", "-m", mode, "-D", self.data)

    def running(self) -> bool:
        status = subprocess.run(
            [*_AS_POSTGRES, str(BINARIES / "pg_ctl"), "status", "-D", str(self.data)],
            capture_output=True,
            timeout=COMMAND_SECONDS,
        )
        return status.returncode == 0

    def promote(self) -> None:
        """Make this standby a primary (`pg_ctl promote`), waiting until it takes writes."""
        _run(BINARIES / "pg_ctl", "promote", "-w", "-D", self.data)

    def execute(
        self, sql: str, params: Sequence[object] = (), database: str = "postgres"
    ) -> list[tuple[object, ...]]:
        with psycopg.connect(self.url(database), autocommit=True, connect_timeout=5) as connection:
            cursor = connection.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def standby(self, synchronous: bool = True) -> "Cluster":
        """A hot standby of this (running) primary, streaming from it, started; with
        `synchronous`, the primary acknowledges a commit only once the standby has it."""
        replica = Cluster(_directory(), free_port())
        _run(
            BINARIES / "pg_basebackup",
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            "postgres",
            "-D",
            replica.data,
            "-R",  # standby.signal and primary_conninfo
            "-X",
            "stream",
            "-c",
            "fast",
        )
        _configure(replica, application_name="standby")
        replica.start()
        if synchronous:
            self.execute("ALTER SYSTEM SET synchronous_standby_names = 'standby'")
            self.execute("SELECT pg_reload_conf()")
            deadline = time.monotonic() + COMMAND_SECONDS
            while not self.execute(
                "SELECT 1 FROM pg_stat_replication"
                " WHERE application_name = 'standby' AND sync_state = 'sync'"
            ):
                assert time.monotonic() < deadline, "the standby did not become synchronous"
                time.sleep(0.1)
        return replica

    def remove(self) -> None:
        if self.running():
            self.stop("immediate")
        shutil.rmtree(self.directory, ignore_errors=True)


def _directory() -> Path:
    """A directory the server's user owns (a test's tmp_path is private to root)."""
    directory = Path(tempfile.mkdtemp(prefix="cipherd-pg-"))
    if _AS_POSTGRES:
        shutil.chown(directory, "postgres", "postgres")
    return directory


def _configure(cluster: Cluster, application_name: str | None = None) -> None:
    """Its port, no socket file outside its directory, WAL fit for a standby, and fsync on (a
    commit that returned is on disk, as on a real server)."""
    settings = {
        "port": str(cluster.port),
        "listen_addresses": "'127.0.0.1'",
        "unix_socket_directories": f"'{cluster.directory}'",
        "wal_level": "replica",
        "max_wal_senders": "4",
        "hot_standby": "on",
        "max_connections": "100",
        "shared_buffers": "32MB",
        "log_min_messages": "warning",
    }
    if application_name is not None:
        # pg_basebackup -R wrote primary_conninfo; the standby names itself in it for
        # synchronous_standby_names.
        auto = cluster.data / "postgresql.auto.conf"
        text = auto.read_text().replace(
            "primary_conninfo = '", f"primary_conninfo = 'application_name={application_name} "
        )
        auto.write_text(text)
    with (cluster.data / "postgresql.conf").open("a") as conf:
        conf.writelines(f"{name} = {value}\n" for name, value in settings.items())


def create() -> Cluster:
    """A new, stopped cluster on a free port, trusting local connections (as the machine's)."""
    cluster = Cluster(_directory(), free_port())
    _run(
        BINARIES / "initdb",
        "-D",
        cluster.data,
        "-U",
        "postgres",
        "--auth=trust",
        "--no-sync",
        "-E",
        "UTF8",
    )
    (cluster.data / "pg_hba.conf").open("a").write("host replication all 127.0.0.1/32 trust\n")
    _configure(cluster)
    return cluster


@contextmanager
def cluster() -> Iterator[Cluster]:
    """A started cluster of the test's own, removed on the way out."""
    made = create()
    try:
        made.start()
        yield made
    finally:
        made.remove()
