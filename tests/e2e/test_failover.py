"""PostgreSQL failover under a running `cipherd serve`, with clusters of the test's own: a
primary and a synchronous hot standby (`initdb`, `pg_basebackup`), the service given both in a
multi-host URL.

The primary is stopped with `-m immediate` (as a crash would) and the standby promoted while
clients create keys and encrypt: no acknowledged key is lost, no answer is a 500 (the requests
caught in the failover answer 503 with Retry-After), and keys are created again within 10 s of
the promotion. And with the URL's first host a socket that accepts and never answers (a host
vanished from the network), the service starts and creates keys within 15 s.
"""

import base64
import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e import clusters
from tests.e2e.server import free_port, running, start

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not clusters.available(), reason="PostgreSQL's server binaries"),
]

RESUME_SECONDS = 10.0
START_SECONDS = 15.0
CLIENTS = 4


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def primary() -> Iterator[clusters.Cluster]:
    with clusters.cluster() as made:
        yield made


@pytest.fixture
def standby(primary: clusters.Cluster) -> Iterator[clusters.Cluster]:
    replica = primary.standby(synchronous=True)
    try:
        yield replica
    finally:
        replica.remove()


@pytest.fixture
def silent_host() -> Iterator[str]:
    """host:port of a socket that accepts connections and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", free_port()))
    listener.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:  # closed at the end
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
        for connection in held:
            connection.close()


def _env(hosts: list[str]) -> dict[str, str]:
    return {
        "CIPHERD_DATABASE_URL": f"postgresql://postgres@{','.join(hosts)}/postgres",
        "CIPHERD_ROOT_KEY": _b64(os.urandom(32)),
        "CIPHERD_ADMIN_TOKEN": "failover-" + _b64(os.urandom(12)),
    }


class Load:
    """Clients creating keys and encrypting under them, each on its own connection, until
    stopped: every answer's status and time, and the keys whose creation was acknowledged."""

    def __init__(self, url: str, token: str) -> None:
        self._url, self._token = url, token
        self.statuses: Counter[int] = Counter()
        self.created: list[str] = []
        self.created_at: list[float] = []  # monotonic, of each acknowledged creation
        self.problems: list[str] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(i,)) for i in range(CLIENTS)]

    def __enter__(self) -> "Load":
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)

    def _run(self, client_id: int) -> None:
        headers = {"Authorization": f"Bearer {self._token}"}
        with httpx.Client(base_url=self._url, headers=headers, timeout=60) as client:
            for n in range(1_000_000):
                if self._stop.is_set():
                    return
                name = f"c{client_id}-{n}"
                answer = client.post("/v1/keys", json={"name": name, "type": "aez"})
                self._note(answer)
                if answer.status_code == 201:
                    with self._lock:
                        self.created.append(name)
                        self.created_at.append(time.monotonic())
                    sealed = client.post(f"/v1/aez/{name}/encrypt", json={"plaintext": "AA=="})
                    self._note(sealed)
                elif answer.status_code == 503:
                    time.sleep(0.05)  # as a client honouring Retry-After would, but sooner

    def _note(self, answer: httpx.Response) -> None:
        with self._lock:
            self.statuses[answer.status_code] += 1
            unexpected = answer.status_code >= 300 and answer.status_code != 503
            if unexpected or (answer.status_code == 503 and "retry-after" not in answer.headers):
                self.problems.append(f"{answer.status_code} {answer.headers} {answer.text}")


def test_a_promoted_standby_takes_over_without_losing_an_acknowledged_write(
    tmp_path: Path, primary: clusters.Cluster, standby: clusters.Cluster
) -> None:
    env = _env([primary.host, standby.host])
    with running(tmp_path / "data", env=env, workers_count=2) as server:
        with Load(server.url, server.admin_token) as load:
            deadline = time.monotonic() + 60
            while len(load.created) < 50:  # under load before the failover
                assert time.monotonic() < deadline, load.statuses
                time.sleep(0.1)
            primary.stop("immediate")
            stopped = time.monotonic()
            standby.promote()
            promoted = time.monotonic()
            acknowledged_before = len(load.created)
            deadline = promoted + 60
            while not any(at > promoted for at in load.created_at[acknowledged_before:]):
                assert time.monotonic() < deadline, load.statuses
                time.sleep(0.05)
            resumed = min(at for at in load.created_at if at > promoted) - promoted
            settled = len(load.created) + 50
            while len(load.created) < settled:  # and on, on the new primary
                assert time.monotonic() < deadline, load.statuses
                time.sleep(0.1)
        print(
            f"failover: promoted {promoted - stopped:.1f} s after the stop, writes again"
            f" {resumed:.2f} s after the promotion; answers {dict(load.statuses)}"
        )
        assert load.statuses[500] == 0 and not load.problems, load.problems[:5]
        assert resumed < RESUME_SECONDS
        # Every acknowledged creation is on the new primary, and its key serves.
        stored = {row[0] for row in standby.execute("SELECT name FROM keys")}
        lost = [name for name in load.created if name not in stored]
        assert not lost, f"{len(lost)} of {len(load.created)} acknowledged keys lost: {lost[:5]}"
        with server.client() as client:
            for name in load.created[:: max(1, len(load.created) // 20)]:
                sealed = client.post(f"/v1/aez/{name}/encrypt", json={"plaintext": "AA=="})
                assert sealed.status_code == 200, sealed.text


def test_a_first_host_that_never_answers_is_passed_over(
    tmp_path: Path, primary: clusters.Cluster, silent_host: str
) -> None:
    started = time.monotonic()
    server = start(tmp_path / "data", env=_env([silent_host, primary.host]), workers_count=2)
    try:
        with server.client() as client:
            created = client.post("/v1/keys", json={"name": "first", "type": "aez"})
            seconds = time.monotonic() - started
            assert created.status_code == 201, created.text
            print(f"started and created a key in {seconds:.1f} s")
            assert seconds < START_SECONDS
            # At run time too: new connections (one per creation here, with the pool grown)
            # go to the host that answers.
            for n in range(20):
                answer = client.post("/v1/keys", json={"name": f"k{n}", "type": "aez"})
                assert answer.status_code == 201, answer.text
    finally:
        server.stop()
