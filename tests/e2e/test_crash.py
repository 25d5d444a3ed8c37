"""Crash safety: a write the server acknowledged survives a SIGKILL of every server process.

Threads create and rotate keys and encrypt under each new version as fast as the server takes
them; the test kills the process group in the middle of that stream, starts the server again on
the same store, and checks every acknowledged write: the key is there with that version, what
was encrypted under it decrypts, and every version of every key still opens what its public
part seals. Writes in flight at the kill may or may not have landed; whatever landed must be
whole.
"""

import base64
import itertools
import os
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from core import ecies
from tests.e2e.server import Server, restart, start

pytestmark = pytest.mark.e2e

THREADS = 6
ACKS_BEFORE_KILL = 60
KEY_TYPES = ("ecies-secp256k1", "aez")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@dataclass
class Acknowledged:
    """What the server confirmed before the kill, appended to by every writer thread."""

    versions: list[tuple[str, str, int]] = field(default_factory=list)  # name, type, version
    sealed: list[tuple[str, str, int, bytes, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self) -> int:
        with self.lock:
            return len(self.versions)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    env = {"CIPHERD_ROOT_KEY": b64(secrets.token_bytes(32))}
    if request.param == "postgresql":
        env["CIPHERD_DATABASE_URL"] = request.getfixturevalue("postgres_url")
    started = start(tmp_path / "data", workers_count=2, env=env)
    yield started
    started.stop()


def write_stream(
    url: str, token: str, worker: int, stop: threading.Event, acked: Acknowledged
) -> None:
    """Create a key, rotate it a few times, encrypt under each version; repeat until stopped."""
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        for serial in itertools.count():
            key_type = KEY_TYPES[serial % len(KEY_TYPES)]
            name = f"w{worker}-k{serial}"
            family = key_type.split("-")[0]
            for step in range(4):
                if stop.is_set():
                    return
                try:
                    if step == 0:
                        response = client.post("/v1/keys", json={"name": name, "type": key_type})
                        assert response.status_code == 201, response.text
                    else:
                        response = client.post(f"/v1/keys/{name}/rotate")
                        assert response.status_code == 200, response.text
                    version = response.json()["latest_version"]
                    with acked.lock:
                        acked.versions.append((name, key_type, version))
                    plaintext = os.urandom(40)
                    sealed = client.post(
                        f"/v1/{family}/{name}/encrypt", json={"plaintext": b64(plaintext)}
                    )
                    assert sealed.status_code == 200, sealed.text
                    body = sealed.json()
                    with acked.lock:
                        acked.sealed.append(
                            (name, family, body["key_version"], plaintext, body["ciphertext"])
                        )
                except httpx.TransportError:
                    return  # the server is gone: this write was never acknowledged


def check_key(client: httpx.Client, name: str, key_type: str) -> int:
    """Every version of the key is stored whole; returns the latest version."""
    info = client.get(f"/v1/keys/{name}")
    assert info.status_code == 200, info.text
    latest = info.json()["latest_version"]
    assert [v["version"] for v in info.json()["versions"]] == list(range(1, latest + 1))
    for version in range(1, latest + 1):
        if key_type == "aez":
            continue  # AEZ keys have no public part; the sealed messages check them
        public = client.get(f"/v1/keys/{name}/public", params={"version": version})
        assert public.status_code == 200, public.text
        plaintext = f"{name} v{version}".encode()
        payload = ecies.encrypt(base64.b64decode(public.json()["public_key"]), plaintext)
        opened = client.post(
            f"/v1/ecies/{name}/decrypt", json={"ciphertext": b64(payload), "key_version": version}
        )
        assert opened.status_code == 200, opened.text
        assert base64.b64decode(opened.json()["plaintext"]) == plaintext
    return latest


def test_acknowledged_writes_survive_sigkill(server: Server) -> None:
    stop = threading.Event()
    acked = Acknowledged()
    threads = [
        threading.Thread(
            target=write_stream, args=(server.url, server.admin_token, i, stop, acked), daemon=True
        )
        for i in range(THREADS)
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    while acked.count() < ACKS_BEFORE_KILL and time.monotonic() < deadline:
        time.sleep(0.01)
    assert all(thread.is_alive() for thread in threads), "a writer failed before the kill"
    server.kill()  # in the middle of the stream: every writer has a request in flight or next
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    assert acked.count() >= ACKS_BEFORE_KILL

    revived = restart(server)
    try:
        with revived.client() as client:
            listed = {key["name"]: key for key in client.get("/v1/keys").json()["keys"]}
            for name, key_type, version in acked.versions:
                assert name in listed, f"acknowledged key {name} is gone"
                assert listed[name]["type"] == key_type
                assert listed[name]["latest_version"] >= version, (name, version)
            for name, key in listed.items():
                check_key(client, name, key["type"])
            for name, family, version, plaintext, ciphertext in acked.sealed:
                opened = client.post(
                    f"/v1/{family}/{name}/decrypt",
                    json={"ciphertext": ciphertext, "key_version": version},
                )
                assert opened.status_code == 200, (name, version, opened.text)
                assert base64.b64decode(opened.json()["plaintext"]) == plaintext
    finally:
        revived.stop()
