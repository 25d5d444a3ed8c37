"""The key hierarchy with real `cipherd` processes: a store made before the keyring starts on this
code and serves every key; the keyring's rewrap survives a SIGKILL; the root key rotates while
two replicas on one PostgreSQL serve a mixed load."""

import base64
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import ecies  # eciespy
import httpx
import pytest

from tests.e2e import server as e2e

LEGACY = Path(__file__).resolve().parents[1] / "app" / "store" / "legacy"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def cipherd(
    env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_a_store_made_by_the_previous_layout_starts_and_serves_every_key(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copyfile(LEGACY / "store.sqlite3", data / "cipherd.sqlite3")
    root_key = tmp_path / "root-key"  # the service takes a root key file private to its user
    shutil.copyfile(LEGACY / "root-key", root_key)
    root_key.chmod(0o600)
    expected = json.loads((LEGACY / "expected.json").read_text())
    env = {
        "CIPHERD_ROOT_KEY_FILE": str(root_key),
        "CIPHERD_ADMIN_TOKEN": expected["admin_token"],
    }
    with e2e.running(data, env=env) as server, server.client() as http:
        for record in expected["ciphertexts"]:
            name, version = record["key"], record["version"]
            if record["family"] == "ecies":
                answer = http.post(
                    f"/v1/ecies/{name}/decrypt",
                    json={"ciphertext": record["ciphertext"], "key_version": version},
                )
                assert answer.status_code == 200, answer.text
                assert answer.json()["plaintext"] == record["plaintext"]
            elif record["family"] == "aez":
                body = {
                    "ciphertext": record["ciphertext"],
                    "nonce": record["nonce"],
                    "tau": record["tau"],
                    "key_version": version,
                }
                answer = http.post(f"/v1/aez/{name}/decrypt", json=body)
                assert answer.status_code == 200, answer.text
                assert answer.json()["plaintext"] == record["plaintext"]
            else:
                body = {
                    "functional_key": record["functional_key"],
                    "ciphertext": record["ciphertext"],
                    "bounds": [0, 100],
                }
                answer = http.post(f"/v1/fe/{name}/decrypt", json=body)
                assert answer.status_code == 200, answer.text
                assert answer.json()["result"] == record["result"]
        for name, key in expected["keys"].items():
            assert http.get(f"/v1/keys/{name}").json()["latest_version"] == key["versions"]
        assert http.get("/v1/keys/signing/export").status_code == 200
        # The scoped token made by the old code still works, and new writes work.
        scoped = server.client(expected["scoped_token"])
        sealed = scoped.post("/v1/ecies/orders/encrypt", json={"plaintext": b64(b"after")})
        assert sealed.status_code == 200
        opened = scoped.post("/v1/ecies/orders/decrypt", json=sealed.json())
        assert base64.b64decode(opened.json()["plaintext"]) == b"after"
        scoped.close()
        assert http.post("/v1/keys/orders/rotate").status_code == 200
        assert http.get("/v1/sys/keyring").json() == {
            "term": 1,
            "versions": 10,
            "versions_behind": 0,
        }


def test_the_keyring_rewrap_is_bounded_in_rate_and_survives_a_sigkill(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = e2e._environment(data, {"CIPHERD_KEYRING_REWRAP_PER_SECOND": "40"})
    assert cipherd(env, "local", "init").returncode == 0
    # `cipherd local keys create` for each of the 60 keys, the command's own entry point run
    # in one process: a process per key spent nearly two minutes starting Python.
    create = "\n".join(
        (
            "from app.cli import main",
            "for index in range(60):",
            "    main(['local', 'keys', 'create', f'k{index:02d}', 'aez'])",
        )
    )
    made = subprocess.run(
        [sys.executable, "-c", create], env=env, capture_output=True, text=True, timeout=120
    )
    assert made.returncode == 0, made.stderr
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "keyring", "rotate"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    rotated = json.loads(process.stdout.readline())
    first_batch = json.loads(process.stdout.readline())
    time.sleep(0.3)  # inside the second's pause that keeps 40 a second
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    assert rotated == {"term": 2, "versions": 60, "versions_behind": 60}
    assert first_batch == {"term": 2, "versions": 60, "versions_behind": 20}
    status = json.loads(cipherd(env, "keyring", "status").stdout)
    assert status == {"term": 2, "versions": 60, "versions_behind": 20}

    # The service resumes the rewrap by itself, serving every key meanwhile.
    with (
        e2e.running(data, env={"CIPHERD_KEYRING_REWRAP_PER_SECOND": "40"}) as server,
        server.client() as http,
    ):
        for index in range(60):
            sealed = http.post(f"/v1/aez/k{index:02d}/encrypt", json={"plaintext": b64(b"x")})
            assert sealed.status_code == 200
            opened = http.post(f"/v1/aez/k{index:02d}/decrypt", json=sealed.json())
            assert base64.b64decode(opened.json()["plaintext"]) == b"x"
        deadline = time.monotonic() + 30
        while http.get("/v1/sys/keyring").json()["versions_behind"]:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        metrics = http.get("/metrics").text
    assert 'cipherd_keyring_versions{term="older"} 0.0' in metrics
    assert 'cipherd_keyring_versions{term="newest"} 60.0' in metrics
    assert "cipherd_keyring_term 2.0" in metrics
    assert "cipherd_keyring_rewrapped_versions_total 20.0" in metrics


class MixedLoad:
    """ECIES and AEZ round trips on several keys, from threads, against two servers; every
    failure is recorded."""

    def __init__(self, servers: list[e2e.Server], names: list[str]) -> None:
        self.servers = servers
        self.names = names
        self.failures: list[str] = []
        self.requests = 0
        self.stop = threading.Event()
        self.sealed: list[tuple[str, str, bytes]] = []  # (family, name, plaintext) made earlier
        self._threads = [threading.Thread(target=self._run, args=(index,)) for index in range(4)]

    def __enter__(self) -> "MixedLoad":
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def _run(self, index: int) -> None:
        clients = [server.client() for server in self.servers]
        turn = index
        try:
            while not self.stop.is_set():
                turn += 1
                http = clients[turn % len(clients)]
                other = clients[(turn + 1) % len(clients)]
                name = self.names[turn % len(self.names)]
                family = "aez" if name.startswith("aez") else "ecies"
                plaintext = os.urandom(32)
                try:
                    sealed = http.post(
                        f"/v1/{family}/{name}/encrypt", json={"plaintext": b64(plaintext)}
                    )
                    opened = other.post(f"/v1/{family}/{name}/decrypt", json=sealed.json())
                    if sealed.status_code != 200 or opened.status_code != 200:
                        self.failures.append(
                            f"{sealed.status_code} {opened.status_code} {opened.text}"
                        )
                    elif base64.b64decode(opened.json()["plaintext"]) != plaintext:
                        self.failures.append("wrong plaintext")
                except httpx.HTTPError as exc:
                    self.failures.append(repr(exc))
                self.requests += 2
        finally:
            for client in clients:
                client.close()


@pytest.mark.postgres
def test_root_rotation_under_load_on_two_replicas(tmp_path: Path, postgres_url: str) -> None:
    root_file = tmp_path / "root-key"
    root_file.write_text(b64(secrets.token_bytes(32)) + "\n")
    old_root = tmp_path / "old-root-key"
    shutil.copyfile(root_file, old_root)
    new_root = tmp_path / "new-root-key"
    new_root.write_text(b64(secrets.token_bytes(32)) + "\n")
    for private in (root_file, old_root, new_root):
        private.chmod(0o600)
    env = {
        "CIPHERD_DATABASE_URL": postgres_url,
        "CIPHERD_ROOT_KEY_FILE": str(root_file),
        "CIPHERD_ADMIN_TOKEN": "replica-admin-" + secrets.token_urlsafe(16),
    }
    names = ["ecies-a", "ecies-b", "aez-a", "aez-b"]
    cli_env = e2e._environment(tmp_path / "cli", env)
    with (
        e2e.running(tmp_path / "a", env=env, workers_count=2) as a,
        e2e.running(tmp_path / "b", env=env) as b,
    ):
        earlier: list[tuple[str, str, dict[str, object], bytes]] = []
        with a.client() as http:
            for name in names:
                key_type = "aez" if name.startswith("aez") else "ecies-secp256k1"
                assert (
                    http.post("/v1/keys", json={"name": name, "type": key_type}).status_code == 201
                )
                family = "aez" if key_type == "aez" else "ecies"
                plaintext = os.urandom(20)
                sealed = http.post(
                    f"/v1/{family}/{name}/encrypt", json={"plaintext": b64(plaintext)}
                )
                earlier.append((family, name, sealed.json(), plaintext))
            # A ciphertext eciespy made to the public key, before any rotation.
            public = base64.b64decode(http.get("/v1/keys/ecies-a/public").json()["public_key"])
            local = ecies.encrypt(public, b"made by a peer")
        with MixedLoad([a, b], names) as load:
            time.sleep(1.0)
            rotated = cipherd(cli_env, "root", "rotate", "--new-root-key-file", str(new_root))
            assert rotated.returncode == 0, rotated.stderr
            assert json.loads(rotated.stdout)["terms_rewrapped"] == 1
            time.sleep(1.0)
            # The operator now gives every process the new root key.
            os.replace(new_root, root_file)
            with b.client() as http:
                status = http.post("/v1/sys/keyring/rotate")
                assert status.status_code == 200, status.text
                assert status.json()["term"] == 2
            with a.client() as http:  # a replica that did not make the term unwraps it
                for name in names:
                    assert http.post(f"/v1/keys/{name}/rotate").status_code == 200
            deadline = time.monotonic() + 30
            with a.client() as http:
                while (
                    http.get("/v1/sys/keyring").json()["versions_behind"]
                    and time.monotonic() < deadline
                ):
                    time.sleep(0.2)
                assert http.get("/v1/sys/keyring").json()["versions_behind"] == 0
            time.sleep(1.0)
        assert load.failures == [], load.failures[:5]
        assert load.requests > 50
        for server in (a, b):
            with server.client() as http:
                for family, name, sealed, plaintext in earlier:
                    opened = http.post(f"/v1/{family}/{name}/decrypt", json=sealed)
                    assert opened.status_code == 200, opened.text
                    assert base64.b64decode(opened.json()["plaintext"]) == plaintext
                opened = http.post(
                    "/v1/ecies/ecies-a/decrypt", json={"ciphertext": b64(local), "key_version": 1}
                )
                assert base64.b64decode(opened.json()["plaintext"]) == b"made by a peer"
                assert http.get("/v1/keys/aez-a").json()["latest_version"] == 2

    # A replica still given the old root key refuses to start, in one line.
    refused = cipherd({**cli_env, "CIPHERD_ROOT_KEY_FILE": str(old_root)}, "serve", "--port", "0")
    assert refused.returncode != 0
    assert refused.stderr.strip().count("\n") == 0
    assert "root key does not open this key store" in refused.stderr
    with e2e.running(tmp_path / "c", env=env) as c, c.client() as http:
        assert http.get("/v1/keys/ecies-b").status_code == 200
