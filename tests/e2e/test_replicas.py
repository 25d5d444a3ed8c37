"""Two `cipherd serve` replicas on one PostgreSQL database, as in a deployment behind a balancer.

Both take the root key and the admin token from the environment and share nothing but the
database: a key made on one must work on the other, a rotation must reach the other within
CIPHERD_KEY_CACHE_SECONDS, a change that narrows tokens from the next request (with
CIPHERD_AUTH_CHECK_SECONDS set, within it, and the replica that made it at once), and rotations
racing on both must all land as distinct versions.
"""

import base64
import json
import os
import secrets
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from core import ecies
from tests.e2e.kms import Credentials, credentials, signed_post
from tests.e2e.server import Server, running

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

KEY_CACHE_SECONDS = 1.0
# The default (0: the auth generation read for every request), and a bound an operator may set.
AUTH_CHECKS = pytest.mark.parametrize("replicas", [0.0, 0.5], indirect=True, ids=["read", "0.5s"])
# What a request may add to the cache bound on a loaded 2-core machine.
REQUEST_SLACK_SECONDS = 0.5


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def replicas(
    request: pytest.FixtureRequest, tmp_path: Path, postgres_url: str
) -> Iterator[tuple[Server, Server]]:
    auth_check_seconds = getattr(request, "param", 0.0)
    env = {
        "CIPHERD_DATABASE_URL": postgres_url,
        "CIPHERD_ROOT_KEY": b64(secrets.token_bytes(32)),
        "CIPHERD_ADMIN_TOKEN": "replica-admin-" + secrets.token_urlsafe(16),
        "CIPHERD_KEY_CACHE_SECONDS": str(KEY_CACHE_SECONDS),
        "CIPHERD_AUTH_CHECK_SECONDS": str(auth_check_seconds),
        # Long: a change that narrows a token must not wait for it.
        "CIPHERD_TOKEN_CACHE_SECONDS": "600",
    }
    with (
        running(tmp_path / "a", env=env) as first,
        running(tmp_path / "b", env=env) as second,
    ):
        assert first.url != second.url
        yield first, second


def create_key(client: httpx.Client, name: str, key_type: str) -> dict:
    response = client.post("/v1/keys", json={"name": name, "type": key_type})
    assert response.status_code == 201, response.text
    return response.json()


def test_key_made_on_one_replica_works_on_the_other_at_once(
    replicas: tuple[Server, Server],
) -> None:
    a, b = replicas
    with a.client() as on_a, b.client() as on_b:
        for name, key_type, family in (
            ("orders", "ecies-secp256k1", "ecies"),
            ("sessions", "aez", "aez"),
        ):
            create_key(on_a, name, key_type)
            plaintext = os.urandom(100)
            sealed = on_a.post(f"/v1/{family}/{name}/encrypt", json={"plaintext": b64(plaintext)})
            assert sealed.status_code == 200, sealed.text
            opened = on_b.post(
                f"/v1/{family}/{name}/decrypt", json={"ciphertext": sealed.json()["ciphertext"]}
            )
            assert opened.status_code == 200, opened.text
            assert base64.b64decode(opened.json()["plaintext"]) == plaintext
            assert on_b.get(f"/v1/keys/{name}").json()["latest_version"] == 1


def test_rotation_on_one_replica_reaches_the_other_within_the_cache_bound(
    replicas: tuple[Server, Server],
) -> None:
    a, b = replicas
    with a.client() as on_a, b.client() as on_b:
        create_key(on_a, "rotating", "aez")

        def version_used_by_b() -> int:
            response = on_b.post("/v1/aez/rotating/encrypt", json={"plaintext": b64(b"x")})
            assert response.status_code == 200, response.text
            return response.json()["key_version"]

        assert version_used_by_b() == 1  # B now holds version 1 in its cache
        rotated = on_a.post("/v1/keys/rotating/rotate")
        assert rotated.status_code == 200 and rotated.json()["latest_version"] == 2
        started = time.monotonic()
        while version_used_by_b() != 2:
            assert time.monotonic() - started < 10 * KEY_CACHE_SECONDS, "rotation never seen"
            time.sleep(0.02)
        lag = time.monotonic() - started
        assert lag <= KEY_CACHE_SECONDS + REQUEST_SLACK_SECONDS, lag
        # An explicit version is read from the store when not cached: no lag at all.
        sealed = on_a.post("/v1/aez/rotating/encrypt", json={"plaintext": b64(b"y")}).json()
        assert sealed["key_version"] == 2
        opened = on_b.post(
            "/v1/aez/rotating/decrypt", json={"ciphertext": sealed["ciphertext"], "key_version": 2}
        )
        assert opened.status_code == 200 and base64.b64decode(opened.json()["plaintext"]) == b"y"


def test_concurrent_rotations_on_both_replicas_give_consecutive_versions(
    replicas: tuple[Server, Server],
) -> None:
    a, b = replicas
    rotations = 50
    with a.client() as on_a, b.client() as on_b:
        create_key(on_a, "hot", "ecies-secp256k1")
        clients = (on_a, on_b)

        def rotate(i: int) -> int:
            response = clients[i % 2].post("/v1/keys/hot/rotate")
            assert response.status_code == 200, response.text
            return response.json()["latest_version"]

        def encrypt(i: int) -> tuple[bytes, dict]:
            plaintext = i.to_bytes(2, "big") + os.urandom(30)
            response = clients[i % 2].post(
                "/v1/ecies/hot/encrypt", json={"plaintext": b64(plaintext)}
            )
            assert response.status_code == 200, response.text
            return plaintext, response.json()

        with ThreadPoolExecutor(max_workers=16) as pool:
            rotated = pool.map(rotate, range(rotations))
            sealed = pool.map(encrypt, range(rotations))
            versions = sorted(rotated)
            messages = list(sealed)

        assert versions == list(range(2, rotations + 2))  # distinct, consecutive, none lost
        listed = on_b.get("/v1/keys/hot").json()
        assert [v["version"] for v in listed["versions"]] == list(range(1, rotations + 2))

        # What was encrypted during the storm decrypts under the version it reported.
        for i, (plaintext, response) in enumerate(messages):
            opened = clients[(i + 1) % 2].post(
                "/v1/ecies/hot/decrypt",
                json={"ciphertext": response["ciphertext"], "key_version": response["key_version"]},
            )
            assert opened.status_code == 200, opened.text
            assert base64.b64decode(opened.json()["plaintext"]) == plaintext

        # Every version is its own key pair, and its secret opens what its public part sealed.
        publics = set()
        for version in range(1, rotations + 2):
            client = clients[version % 2]
            public = client.get("/v1/keys/hot/public", params={"version": version})
            assert public.status_code == 200, public.text
            public_key = base64.b64decode(public.json()["public_key"])
            publics.add(public_key)
            plaintext = f"version {version}".encode()
            payload = ecies.encrypt(public_key, plaintext, ecies.Config())
            opened = clients[(version + 1) % 2].post(
                "/v1/ecies/hot/decrypt", json={"ciphertext": b64(payload), "key_version": version}
            )
            assert opened.status_code == 200, opened.text
            assert base64.b64decode(opened.json()["plaintext"]) == plaintext
        assert len(publics) == rotations + 1


def answers_within(
    bound: float, server: Server, token: str | None, path: str, expected: int
) -> bool:
    """Whether `server` answers `expected` to `token` (None: the admin token) at `path` (an
    encryption of a few bytes, or a GET): with CIPHERD_AUTH_CHECK_SECONDS at `bound` 0, to the
    first request; above 0, within the bound and the slack."""
    deadline = time.monotonic() + bound + REQUEST_SLACK_SECONDS if bound else 0.0
    with server.client(token) as client:
        while True:
            if path.endswith("/encrypt"):
                response = client.post(path, json={"plaintext": b64(b"order")})
            else:
                response = client.get(path)
            if response.status_code == expected:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)


@AUTH_CHECKS
def test_a_policy_change_narrows_every_token_that_carries_it_on_both(
    replicas: tuple[Server, Server], request: pytest.FixtureRequest
) -> None:
    """With a long token cache, a policy narrowed (then deleted) through one replica refuses
    the tokens that carry it on their very next request to that replica, and on the other from
    its next request too (with CIPHERD_AUTH_CHECK_SECONDS set, within it); a revocation and a
    rotated admin token the same."""
    a, b = replicas
    bound = request.node.callspec.params["replicas"]
    encrypt = "/v1/aead/orders-1/encrypt"
    with a.client() as on_a, b.client() as on_b:
        create_key(on_a, "orders-1", "aes256-gcm")
        rules = [{"keys": ["orders-*"], "operations": ["encrypt", "decrypt"]}]
        assert on_a.post("/v1/policies/checkout", json={"rules": rules}).status_code == 200
        made = on_a.post("/v1/tokens", json={"policies": ["checkout"]})
        assert made.status_code == 201, made.text
        token = made.json()["token"]
        body = {"plaintext": b64(b"order")}
        for server in (a, b):  # each caches the token and the policy
            with server.client(token) as user:
                assert user.post(encrypt, json=body).status_code == 200
        narrowed = [{"keys": ["orders-*"], "operations": ["decrypt"]}]
        assert on_b.post("/v1/policies/checkout", json={"rules": narrowed}).status_code == 200
        with b.client(token) as user:
            refused = user.post(encrypt, json=body)
            assert refused.status_code == 403, refused.text
        assert answers_within(bound, a, token, encrypt, 403)
        assert on_a.post("/v1/policies/checkout", json={"rules": rules}).status_code == 200
        with a.client(token) as user:
            assert user.post(encrypt, json=body).status_code == 200
        assert answers_within(bound, b, token, encrypt, 200)
        assert on_a.delete(f"/v1/tokens/{made.json()['id']}").status_code == 204
        with a.client(token) as user:
            assert user.post(encrypt, json=body).status_code == 401
        assert answers_within(bound, b, token, encrypt, 401)
        rotated = on_a.post("/v1/sys/admin-token/rotate")
        assert rotated.status_code == 200, rotated.text
        with a.client() as former:
            assert former.get("/v1/policies").status_code == 401
        assert answers_within(bound, b, None, "/v1/policies", 401)
        for server in (a, b):
            with server.client(rotated.json()["admin_token"]) as admin:
                assert admin.get("/v1/policies").status_code == 200


def kms_encrypt_status(server: Server, creds: Credentials) -> int:
    """The status of a KMS Encrypt of a few bytes under `orders-1`, signed with `creds`."""
    body = json.dumps({"KeyId": "orders-1", "Plaintext": b64(b"order")}).encode()
    return signed_post(server, creds, "TrentService.Encrypt", body).status_code


@AUTH_CHECKS
def test_a_revoked_tokens_aws_key_pair_is_refused_on_both(
    replicas: tuple[Server, Server], request: pytest.FixtureRequest
) -> None:
    """A KMS request signed with the AWS key pair of a token revoked through one replica is
    refused by that replica on its next request, and by the other on its next request too (with
    CIPHERD_AUTH_CHECK_SECONDS set, within it)."""
    a, b = replicas
    bound = request.node.callspec.params["replicas"]
    with a.client() as on_a:
        create_key(on_a, "orders-1", "aes256-gcm")
    creds = credentials(a, keys=["orders-*"], operations=["encrypt"])
    assert kms_encrypt_status(a, creds) == kms_encrypt_status(b, creds) == 200  # both cache it
    with a.client() as on_a:
        assert on_a.delete(f"/v1/tokens/{creds.token_id}").status_code == 204
    assert kms_encrypt_status(a, creds) == 400  # UnrecognizedClientException
    deadline = time.monotonic() + bound + REQUEST_SLACK_SECONDS if bound else 0.0
    while kms_encrypt_status(b, creds) != 400:
        assert time.monotonic() < deadline
        time.sleep(0.01)
