"""The machine's PostgreSQL stopped under a running `cipherd serve` and started again.

While it is down, keys unwrapped in the last seconds go on encrypting and decrypting, signing
and verifying from memory, for the admin token and for a scoped token used in those seconds,
their audit records waiting in the workers' journals until the store is back; what needs the
store (a new key, metadata, a key not used lately) answers 503 with Retry-After within a second,
and /readyz 503 within one; once it is back, everything serves again without a restart.
Other tests use that server: the outage is kept short, and the server is started again whatever
happens (here, and once more at the end of the session).
"""

import base64
import itertools
import os
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import Server, running

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.serial]

KEY_CACHE_SECONDS = 2.0
FAIL_FAST_SECONDS = 1.0
READY_SECONDS = 1.0
RECOVERY_SECONDS = 30.0
NO_REUSE = httpx.Limits(max_keepalive_connections=0)  # every request to either worker
HOT_KEYS = {"hot-aez", "hot-ecies", "hot-ed"}


def _cluster(action: str) -> subprocess.CompletedProcess[str]:
    version = sorted(os.listdir("/etc/postgresql"))[-1]
    return subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", action],
        capture_output=True,
        text=True,
        timeout=60,
    )


def postgres_running() -> bool:
    return _cluster("status").returncode == 0


def start_postgres() -> None:
    if not postgres_running():
        started = _cluster("start")
        assert started.returncode == 0, started.stderr


@pytest.fixture(scope="session", autouse=True)
def postgres_started_at_the_end() -> Iterator[None]:
    """The safety net: whatever became of a test, PostgreSQL runs when the session ends."""
    yield
    start_postgres()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def timed(call: Callable[[], httpx.Response]) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    answer = call()
    return answer, time.monotonic() - started


def round_trip(client: httpx.Client, family: str, name: str) -> tuple[int, float]:
    """Encrypt and decrypt under `name`: the worse status and the longer time."""
    plaintext = os.urandom(24)
    sealed, sealing = timed(
        lambda: client.post(f"/v1/{family}/{name}/encrypt", json={"plaintext": b64(plaintext)})
    )
    if sealed.status_code != 200:
        return sealed.status_code, sealing
    body = {"ciphertext": sealed.json()["ciphertext"]}
    opened, opening = timed(lambda: client.post(f"/v1/{family}/{name}/decrypt", json=body))
    if opened.status_code == 200:
        assert base64.b64decode(opened.json()["plaintext"]) == plaintext
    return opened.status_code, max(sealing, opening)


def sign_and_verify(client: httpx.Client, name: str) -> tuple[int, float]:
    """Sign under `name` and verify the bare signature: the worse status and the longer time."""
    message = {"message": b64(os.urandom(24))}
    signed, signing = timed(lambda: client.post(f"/v1/sign/{name}", json=message))
    if signed.status_code != 200:
        return signed.status_code, signing
    body = {**message, "signature": signed.json()["signature"]}
    verified, verifying = timed(lambda: client.post(f"/v1/verify/{name}", json=body))
    if verified.status_code == 200:
        assert verified.json()["valid"] is True
    return verified.status_code, max(signing, verifying)


def assert_fails_fast(answer: httpx.Response, seconds: float) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.headers["retry-after"] == "1"
    assert answer.json()["type"] == "urn:cipherd:problem:store-unavailable"
    assert seconds < FAIL_FAST_SECONDS, seconds


@pytest.fixture
def server(tmp_path: Path, postgres_url: str) -> Iterator[Server]:
    env = {
        "CIPHERD_DATABASE_URL": postgres_url,
        "CIPHERD_KEY_CACHE_SECONDS": str(KEY_CACHE_SECONDS),
        "CIPHERD_ROOT_KEY": b64(os.urandom(32)),
    }
    with running(tmp_path / "data", workers_count=2, env=env) as started:
        yield started


def test_a_database_outage_is_ridden_out(server: Server) -> None:
    hot = [("aez", "hot-aez"), ("ecies", "hot-ecies")]
    assert {name for _, name in hot} | {"hot-ed"} == HOT_KEYS
    with ExitStack() as stack:
        client = stack.enter_context(server.client(limits=NO_REUSE))
        for (_, name), key_type in zip(hot, ("aez", "ecies-secp256k1"), strict=True):
            assert client.post("/v1/keys", json={"name": name, "type": key_type}).status_code == 201
        assert (
            client.post("/v1/keys", json={"name": "hot-ed", "type": "ed25519"}).status_code == 201
        )
        assert client.post("/v1/keys", json={"name": "cold", "type": "aez"}).status_code == 201
        scope = {"keys": ["hot-*"], "operations": ["encrypt", "decrypt", "sign", "verify"]}
        token = client.post("/v1/tokens", json=scope).json()["token"]
        scoped = stack.enter_context(server.client(token, limits=NO_REUSE))
        # Each request on a new connection: both workers unwrap the hot keys and look the
        # scoped token up.
        for _ in range(20):
            for family, name in hot:
                assert round_trip(client, family, name)[0] == 200
                assert round_trip(scoped, family, name)[0] == 200
            for caller in (client, scoped):
                assert sign_and_verify(caller, "hot-ed")[0] == 200

        stopped = _cluster("stop")
        outage_started = time.monotonic()
        outage_wall = datetime.now(UTC)
        try:
            assert stopped.returncode == 0, stopped.stderr
            # Past the key cache's time: what serves now is the outage grace.
            time.sleep(KEY_CACHE_SECONDS + 0.5)
            times = []
            for _ in range(10):
                for (family, name), caller in itertools.product(hot, (client, scoped)):
                    status, seconds = round_trip(caller, family, name)
                    assert status == 200
                    times.append(seconds)
                for caller in (client, scoped):
                    status, seconds = sign_and_verify(caller, "hot-ed")
                    assert status == 200
                    times.append(seconds)
            # At most a worker's first lookup waits for the store; the rest come from memory.
            assert max(times) < FAIL_FAST_SECONDS, times
            assert statistics.median(times) < 0.1, times
            for _ in range(3):
                ready, seconds = timed(lambda: client.get("/readyz"))
                assert ready.status_code == 503
                assert seconds < READY_SECONDS, seconds
            assert_fails_fast(
                *timed(lambda: client.post("/v1/keys", json={"name": "new", "type": "aez"}))
            )
            assert_fails_fast(*timed(lambda: client.get("/v1/keys/hot-aez")))
            assert_fails_fast(
                *timed(lambda: client.post("/v1/aez/cold/encrypt", json={"plaintext": ""}))
            )
        finally:
            start_postgres()
        back = time.monotonic()

        deadline = back + RECOVERY_SECONDS
        while client.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline, "not ready after PostgreSQL came back"
            time.sleep(0.2)
        print(
            f"outage {back - outage_started:.1f} s; ready again {time.monotonic() - back:.1f} s"
            " after PostgreSQL started"
        )
        # The records of what was served meanwhile waited in the workers' journals and are in
        # the store now, every round trip's two.
        deadline = time.monotonic() + RECOVERY_SECONDS
        while True:
            since = {"since": outage_wall.isoformat(), "limit": 1000}  # a page holds them all
            listed = client.get("/v1/audit", params=since).json()
            served = [r for r in listed["records"] if r["status"] == 200 and r["key"] in HOT_KEYS]
            if len(served) >= 120 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert len(served) == 120
        # The failed creation stored nothing; everything serves again.
        assert client.get("/v1/keys/new").status_code == 404
        for _ in range(10):
            assert client.post("/v1/keys/hot-aez/rotate").status_code == 200
            assert round_trip(client, "aez", "cold")[0] == 200
        assert client.post("/v1/keys", json={"name": "new", "type": "aez"}).status_code == 201
