"""The data directory's file system full: writes answer 503 `storage-full` with Retry-After,
reads are served (their audit records go to the space each worker's journal set aside), /readyz
answers 503, no worker dies, the service does not fill the disk by itself, and writes work again
once space is freed, without a restart.

The data directory is a small tmpfs the test mounts (it needs root), filled by a file of the
test's own.
"""

import base64
import contextlib
import errno
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.store.sqlite import WAL_CHECKPOINT_PAGES
from tests.e2e.server import Server, running, workers

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root"),
]

DISK_BYTES = 8 * 1024 * 1024
NO_REUSE = httpx.Limits(max_keepalive_connections=0)  # every request to either worker


@contextlib.contextmanager
def tmpfs(mount_point: Path, size: int) -> Iterator[Path]:
    """A tmpfs of `size` bytes mounted at `mount_point` (made here) while the block runs."""
    mount_point.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)], check=True
    )
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "disk", DISK_BYTES) as mount_point:
        yield mount_point


def fill(path: Path) -> None:
    """Write `path` until the file system has no room left."""
    chunk = b"\0" * 4096
    with path.open("wb", buffering=0) as filler:
        try:
            while True:
                filler.write(chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    # The last blocks: what a 4 KiB write could not take.
    with path.open("ab", buffering=0) as filler:
        try:
            while True:
                filler.write(b"\0")
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def writes(client: httpx.Client, round_: int) -> list[httpx.Response]:
    return [
        client.post("/v1/keys", json={"name": f"new-{round_}", "type": "aez"}),
        client.post("/v1/keys/a/rotate"),
        client.post("/v1/tokens", json={"keys": ["a"], "operations": ["encrypt"]}),
    ]


def reads(client: httpx.Client) -> list[httpx.Response]:
    sealed = client.post("/v1/aez/a/encrypt", json={"plaintext": b64(b"kept")})
    answers = [sealed, client.get("/v1/keys/a"), client.get("/v1/keys")]
    if sealed.status_code == 200:
        body = {"ciphertext": sealed.json()["ciphertext"]}
        answers.append(client.post("/v1/aez/a/decrypt", json=body))
    return answers


# Each worker sets this much aside for its audit journal, of the 8 MiB: some 1,700 records.
RESERVE_BYTES = 512 * 1024


def assert_storage_full(answer: httpx.Response) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.headers["retry-after"] == "1"
    assert answer.json()["type"] == "urn:cipherd:problem:storage-full"


def ready_statuses(server: Server, count: int = 8) -> set[int]:
    with httpx.Client(base_url=server.url, limits=NO_REUSE, timeout=5) as client:
        return {client.get("/readyz").status_code for _ in range(count)}


def test_a_full_disk_fails_writes_only_and_passes(small_disk: Path) -> None:
    # No key cache: every read below is a read of the store.
    env = {
        "CIPHERD_KEY_CACHE_SECONDS": "0",
        "CIPHERD_TOKEN_CACHE_SECONDS": "0",
        "CIPHERD_AUDIT_RESERVE_BYTES": str(RESERVE_BYTES),
    }
    with running(small_disk, workers_count=2, env=env) as server:
        pids = sorted(workers(server.process.pid))
        with server.client(limits=NO_REUSE) as client:
            assert client.post("/v1/keys", json={"name": "a", "type": "aez"}).status_code == 201
            fill(small_disk / "filler")

            # Writes that still fit in the log's reused pages may pass; soon none does.
            refused = 0
            for round_ in range(300):
                answers = writes(client, round_)
                for answer in answers:
                    assert answer.status_code in (200, 201, 503), answer.text
                    if answer.status_code == 503:
                        assert_storage_full(answer)
                refused = refused + 1 if all(a.status_code == 503 for a in answers) else 0
                if refused == 5:
                    break
            assert refused == 5, "writes kept passing on a full disk"
            assert ready_statuses(server) == {503}
            for _ in range(20):
                got = reads(client)
                assert [a.status_code for a in got] == [200] * 4, [a.text[:300] for a in got]
            for answer in writes(client, 1000):
                assert_storage_full(answer)

            # Nothing of the service's own grows on the full disk, and nothing died.
            assert sorted(workers(server.process.pid)) == pids
            assert not (small_disk / "metrics").exists()
            wal = small_disk / "cipherd.sqlite3-wal"
            assert wal.stat().st_size <= (WAL_CHECKPOINT_PAGES + 16) * 4096
            journals = list((small_disk / "audit-journal").iterdir())
            assert len(journals) == 2  # a worker's each, within what it set aside
            assert all(path.stat().st_size < RESERVE_BYTES for path in journals)

            (small_disk / "filler").unlink()
            deadline = time.monotonic() + 10
            while ready_statuses(server) != {200}:
                assert time.monotonic() < deadline, "not ready again after space was freed"
                time.sleep(0.2)
            for answer in writes(client, 2000):
                assert answer.status_code in (200, 201), answer.text
            assert [answer.status_code for answer in reads(client)] == [200] * 4
        assert sorted(workers(server.process.pid)) == pids
    assert "exited with" not in server.output(), server.output()[-3000:]
