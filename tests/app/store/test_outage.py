"""PostgreSQL misbehaving under a running store: dropped connections, an outage and the way
back, a lock held too long, a session frozen inside a transaction.

The outage is real: the store talks to PostgreSQL through a TCP forwarder that the test cuts
(every connection closed, the port refusing new ones) and restores.
"""

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.ops.keyring import Keyring
from app.settings import Settings
from app.store import KeyStore, KeyWrapper, StoreUnavailableError, postgres
from app.store.postgres import STORE_WAIT_SECONDS, PostgresDatabase
from tests.conftest import ADMIN_TOKEN

pytestmark = pytest.mark.postgres

ROOT_KEY = bytes(range(32))


class Forwarder:
    """127.0.0.1:`port` forwarded to `target`; `cut` drops every connection and refuses new
    ones until `restore`."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self.restore()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen()
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        assert self._listener is not None
        # shutdown, not only close: a listener closed under a blocked accept() keeps listening.
        self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            for connection in self._open:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
                connection.close()
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # closed by `cut`
                return
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(source, sink), daemon=True).start()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass


@pytest.fixture
def forwarder(postgres_url: str) -> Iterator[Forwarder]:
    parts = urlsplit(postgres_url)
    opened = Forwarder((parts.hostname or "127.0.0.1", parts.port or 5432))
    yield opened
    opened.cut()


def _through(url: str, forwarder: Forwarder) -> str:
    parts = urlsplit(url)
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{forwarder.port}"))


def _eventually(check: object, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            check()  # type: ignore[operator]
            return
        except (AssertionError, StoreUnavailableError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_connections_the_server_dropped_are_replaced(postgres_url: str) -> None:
    store = KeyStore(PostgresDatabase(postgres_url), lambda: KeyWrapper(ROOT_KEY))
    try:
        store.keys.create("orders", "aez", {}, False, b"s" * 48, None)
        database = urlsplit(postgres_url).path.lstrip("/")
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            dropped = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (database,),
            ).fetchone()
        assert dropped is not None and dropped[0] >= 1
        # The first call after the drop succeeds: the pool checks before it lends.
        assert store.keys.material("orders").secret == b"s" * 48
    finally:
        store.close()


def test_an_outage_is_store_unavailable_and_passes(postgres_url: str, forwarder: Forwarder) -> None:
    store = KeyStore(
        PostgresDatabase(_through(postgres_url, forwarder)), lambda: KeyWrapper(ROOT_KEY)
    )
    try:
        created = store.keys.create("orders", "aez", {}, False, b"s" * 48, None)
        forwarder.cut()
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError, match="retry"):
            store.keys.material("orders")
        assert time.monotonic() - started < STORE_WAIT_SECONDS + 10
        with pytest.raises(StoreUnavailableError):
            store.keys.rotate("orders", b"t" * 48, None, created.created_at)

        forwarder.restore()
        _eventually(lambda: store.keys.material("orders"))
        assert store.keys.material("orders").version == 1  # the failed rotation left nothing
    finally:
        store.close()


def test_the_api_answers_503_with_retry_after_then_recovers(
    tmp_path: Path, postgres_url: str, forwarder: Forwarder
) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        admin_token=ADMIN_TOKEN,
        database_url=_through(postgres_url, forwarder),
    )
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(settings), headers=headers) as client:
        assert client.post("/v1/keys", json={"name": "orders", "type": "aez"}).status_code == 201
        forwarder.cut()
        answer = client.get("/v1/keys/orders")
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "1"
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["type"] == "urn:cipherd:problem:store-unavailable"
        assert client.get("/readyz").status_code == 503

        forwarder.restore()

        def serves() -> None:
            assert client.get("/v1/keys/orders").status_code == 200

        _eventually(serves)


def test_a_lock_held_too_long_is_store_unavailable(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres, "LOCK_WAIT_SECONDS", 0.5)
    store = KeyStore(PostgresDatabase(postgres_url), lambda: KeyWrapper(ROOT_KEY))
    locked, released = threading.Event(), threading.Event()

    def hold_the_row() -> None:
        with psycopg.connect(postgres_url) as holder:
            holder.execute("SELECT name FROM keys WHERE name = 'orders' FOR UPDATE")
            locked.set()
            # Were there no lock limit, the rotation would wait for this and then succeed.
            released.wait(30)

    holder = threading.Thread(target=hold_the_row)
    try:
        created = store.keys.create("orders", "aez", {}, False, b"s" * 48, None)
        holder.start()
        assert locked.wait(30)
        with pytest.raises(StoreUnavailableError):
            store.keys.rotate("orders", b"t" * 48, None, created.created_at)
        released.set()
        holder.join(30)
        assert store.keys.rotate("orders", b"t" * 48, None, created.created_at).latest_version == 2
    finally:
        released.set()
        store.close()


def test_a_session_frozen_in_a_transaction_is_ended_and_frees_its_locks(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres, "IDLE_IN_TRANSACTION_SECONDS", 1.0)
    frozen, other = (
        KeyStore(PostgresDatabase(postgres_url), lambda: KeyWrapper(ROOT_KEY)) for _ in range(2)
    )
    rotated, locked = threading.Event(), threading.Event()
    outcome: list[BaseException] = []

    def freeze_mid_rotation() -> None:
        try:
            with frozen.database.transaction(write=True) as cursor:
                cursor.execute("SELECT name FROM keys WHERE name = ? FOR UPDATE", ("orders",))
                locked.set()
                rotated.wait(30)  # frozen, holding the row, until the other replica got through
        except BaseException as exc:  # asserted below
            outcome.append(exc)

    try:
        created = frozen.keys.create("orders", "aez", {}, False, b"s" * 48, None)
        thread = threading.Thread(target=freeze_mid_rotation)
        thread.start()
        assert locked.wait(30)
        # Waits on the frozen session's lock until PostgreSQL ends that session.
        assert other.keys.rotate("orders", b"t" * 48, None, created.created_at).latest_version == 2
        rotated.set()
        thread.join(30)
        assert len(outcome) == 1 and isinstance(outcome[0], StoreUnavailableError)
    finally:
        rotated.set()
        frozen.close()
        other.close()


def test_keys_unwrapped_lately_serve_through_an_outage_for_the_grace_only(
    postgres_url: str, forwarder: Forwarder
) -> None:
    store = KeyStore(
        PostgresDatabase(_through(postgres_url, forwarder)), lambda: KeyWrapper(ROOT_KEY)
    )
    keyring = Keyring(store, cache_seconds=0.2, grace_seconds=2.0)
    try:
        store.keys.create("hot", "aez", {}, False, b"h" * 48, None)
        store.keys.create("cold", "aez", {}, False, b"c" * 48, None)
        assert keyring.material("hot").secret == b"h" * 48
        unwrapped = time.monotonic()
        forwarder.cut()
        time.sleep(0.3)  # past the cache time
        assert keyring.cached("hot") is None  # the event loop leaves it to a thread

        started = time.monotonic()
        assert keyring.material("hot").secret == b"h" * 48  # asked the store, which failed
        assert time.monotonic() - started < STORE_WAIT_SECONDS + 0.5
        # The store is known to be down: the next lookups do not wait for it.
        started = time.monotonic()
        assert keyring.cached("hot") is not None
        assert keyring.material("hot").secret == b"h" * 48
        assert time.monotonic() - started < 0.1
        # A key not unwrapped lately fails fast.
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError):
            keyring.material("cold")
        assert time.monotonic() - started < STORE_WAIT_SECONDS + 0.5

        # Past the grace, the key fails closed like any other.
        time.sleep(max(0.0, unwrapped + 2.0 - time.monotonic()) + 0.1)
        assert keyring.cached("hot") is None
        with pytest.raises(StoreUnavailableError):
            keyring.material("hot")

        forwarder.restore()
        _eventually(lambda: keyring.material("cold"))
        assert keyring.material("hot").secret == b"h" * 48
    finally:
        store.close()


def test_readyz_answers_within_a_second_while_the_store_is_down(
    tmp_path: Path, postgres_url: str, forwarder: Forwarder
) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        admin_token=ADMIN_TOKEN,
        database_url=_through(postgres_url, forwarder),
    )
    with TestClient(create_app(settings)) as client:
        assert client.get("/readyz").status_code == 200
        forwarder.cut()
        for _ in range(3):
            started = time.monotonic()
            assert client.get("/readyz").status_code == 503
            assert time.monotonic() - started < 1.0
        forwarder.restore()
        _eventually(lambda: _assert_status(client.get("/readyz"), 200))


def _assert_status(answer: object, status: int) -> None:
    assert getattr(answer, "status_code", None) == status


def test_scoped_tokens_used_lately_serve_through_an_outage(
    tmp_path: Path, postgres_url: str, forwarder: Forwarder
) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        admin_token=ADMIN_TOKEN,
        database_url=_through(postgres_url, forwarder),
        key_cache_seconds=0.2,
        token_cache_seconds=0.2,
        outage_grace_seconds=30,
    )
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(settings)) as client:
        assert client.post("/v1/keys", json={"name": "k", "type": "aez"}, headers=admin).is_success
        scope = {"keys": ["k"], "operations": ["encrypt"]}
        issued = [
            client.post("/v1/tokens", json=scope, headers=admin).json()["token"] for _ in range(2)
        ]
        used, unused = ({"Authorization": f"Bearer {token}"} for token in issued)
        assert client.post("/v1/aez/k/encrypt", json={"plaintext": ""}, headers=used).is_success
        forwarder.cut()
        time.sleep(0.3)  # past both caches' time
        for _ in range(5):
            answer = client.post("/v1/aez/k/encrypt", json={"plaintext": ""}, headers=used)
            assert answer.status_code == 200
        # A token this process has not looked up lately cannot be told from a revoked one.
        answer = client.post("/v1/aez/k/encrypt", json={"plaintext": ""}, headers=unused)
        assert answer.status_code == 503
        assert answer.json()["type"] == "urn:cipherd:problem:store-unavailable"
        forwarder.restore()
        _eventually(
            lambda: _assert_status(
                client.post("/v1/aez/k/encrypt", json={"plaintext": ""}, headers=unused), 200
            )
        )
