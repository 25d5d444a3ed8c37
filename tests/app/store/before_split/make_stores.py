"""Makes `store.sqlite3`, `postgres.sql` and `expected.json` with the service of commit cce0936,
the last one whose store was one class over the SQL of both backends, before it became a
repository per concern (the schema on disk is meant to be the same):

    mkdir /tmp/cipherd-cce0936 && git archive cce0936 | tar -x -C /tmp/cipherd-cce0936
    (cd /tmp/cipherd-cce0936 && python setup.py build_ext --inplace)
    cd /tmp/cipherd-cce0936 && PYTHONPATH=. python /path/to/this/make_stores.py /path/to/this/dir

It drives that commit's REST API in process, once on SQLite and once on the PostgreSQL at
CIPHERD_TEST_POSTGRES_URL (dumped with pg_dump), and puts into each store something of every
concern: keys of several types, rotated, trimmed, with policies, one pending deletion; a scoped
token; FE functions released under a policy; the wrapping key; a rotated keyring; and the audit
records of all of it. For each it notes what the current code must still find and do.
"""

import base64
import importlib.util
import json
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import psycopg
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings

POSTGRES_URL = os.environ.get(
    "CIPHERD_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _ok(answer: Any, status: int = 200) -> Any:
    assert answer.status_code == status, answer.text
    return answer.json() if answer.content else None


def populate(client: TestClient) -> dict[str, Any]:
    """Something of every concern in the store, and what must hold of it afterwards."""
    post = lambda path, body=None, status=200: _ok(client.post(path, json=body), status)  # noqa: E731
    checks: dict[str, Any] = {"decrypt": [], "verify": []}
    post("/v1/keys", {"name": "session", "type": "aez", "allow_backup": True}, 201)
    for version in (1, 2):
        if version == 2:
            post("/v1/keys/session/rotate")
        plaintext = b64(os.urandom(40))
        sealed = post(
            "/v1/aez/session/encrypt", {"plaintext": plaintext, "nonce": b64(b"n"), "tau": 16}
        )
        body = {**sealed, "nonce": b64(b"n"), "tau": 16}
        checks["decrypt"].append(
            {"path": "/v1/aez/session/decrypt", "body": body, "plaintext": plaintext}
        )
    post("/v1/keys", {"name": "mail", "type": "ecies-x25519"}, 201)
    plaintext = b64(os.urandom(40))
    sealed = post("/v1/ecies/mail/encrypt", {"plaintext": plaintext})
    checks["decrypt"].append(
        {"path": "/v1/ecies/mail/decrypt", "body": sealed, "plaintext": plaintext}
    )
    post("/v1/keys", {"name": "signer", "type": "ed25519"}, 201)
    signed = post("/v1/sign/signer", {"message": b64(b"signed before")})
    checks["verify"].append(
        {"path": "/v1/verify/signer", "body": {"message": b64(b"signed before"), **signed}}
    )
    post("/v1/keys", {"name": "mac", "type": "hmac"}, 201)
    tag = post("/v1/hmac/mac", {"message": b64(b"tagged before")})
    checks["verify"].append(
        {
            "path": "/v1/hmac/mac/verify",
            "body": {"message": b64(b"tagged before"), "hmac": tag["hmac"]},
        }
    )
    policy = {"max_rank": 2}
    post(
        "/v1/keys", {"name": "scores", "type": "ipfe-opt", "dimension": 3, "fe_policy": policy}, 201
    )
    ciphertext = post("/v1/fe/scores/encrypt", {"x": [4, 5, 6]})["ciphertext"]
    checks["fe"] = []
    for y, result in (([1, 2, 3], 32), ([0, 1, 0], 5)):
        functional = post("/v1/fe/scores/keygen", {"y": y})["functional_key"]
        checks["fe"].append(
            {"functional_key": functional, "ciphertext": ciphertext, "result": result}
        )
    post("/v1/keys", {"name": "old", "type": "aez"}, 201)
    for _ in range(3):
        post("/v1/keys/old/rotate")
    _ok(
        client.patch(
            "/v1/keys/old", json={"min_decryption_version": 3, "auto_rotate_seconds": 86400}
        )
    )
    post("/v1/keys/old/trim")
    post("/v1/keys", {"name": "guarded", "type": "aez", "deletion_protection": True}, 201)
    post("/v1/keys", {"name": "doomed", "type": "aez"}, 201)
    _ok(client.delete("/v1/keys/doomed", params={"window_seconds": 86400 * 30}), 202)
    issued = post("/v1/tokens", {"keys": ["session"], "operations": ["encrypt", "decrypt"]}, 201)
    checks["scoped_token"] = issued["token"]
    checks["wrapping_key"] = _ok(client.get("/v1/sys/wrapping-key"))
    checks["keyring"] = post("/v1/sys/keyring/rotate")
    checks["keys"] = {k["name"]: k for k in _ok(client.get("/v1/keys"))["keys"]}
    checks["functions"] = _ok(client.get("/v1/fe/scores/functions"))
    return checks


def _settings(data: Path, root_key: str, token: str, url: str | None) -> Settings:
    return Settings(
        data_dir=data,
        root_key=root_key,
        admin_token=token,
        database_url=url,
        key_cache_seconds=0,
        deletion_min_window_seconds=0,
        keyring_rewrap_per_second=1,  # leave versions under the first term for the new code
        fe_processes=0,
    )


def _run(settings: Settings) -> dict[str, Any]:
    with TestClient(create_app(settings)) as client:
        client.headers["Authorization"] = f"Bearer {settings.admin_token}"
        checks = populate(client)
    # Every audit record was moved from the journal into the store when the service stopped.
    assert not any(settings.audit_journal_dir.glob("*.journal")), "records left behind"
    return checks


def main(out: Path) -> None:
    assert importlib.util.find_spec("app.store.sql") is not None, "not the code before the split"
    root_key, token = b64(os.urandom(32)), "before-split-admin-" + "0" * 8
    expected: dict[str, Any] = {"root_key": root_key, "admin_token": token}
    work = Path(tempfile.mkdtemp())
    try:
        _make(out, work, expected, root_key, token)
    finally:
        shutil.rmtree(work)
    print(f"made with the store of {sys.modules['app.store'].__file__}")


def _make(out: Path, work: Path, expected: dict[str, Any], root_key: str, token: str) -> None:
    expected["sqlite"] = _run(_settings(work / "sqlite", root_key, token, None))
    store = work / "sqlite" / "cipherd.sqlite3"
    with sqlite3.connect(store) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(store, out / "store.sqlite3")

    database = f"cipherd_before_split_{secrets.token_hex(4)}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    url = f"{POSTGRES_URL.rsplit('/', 1)[0]}/{database}"
    try:
        expected["postgres"] = _run(_settings(work / "postgres", root_key, token, url))
        dump = subprocess.run(
            ["pg_dump", "--no-owner", "--no-privileges", "--inserts", url],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    # Plain SQL: without psql's meta-commands (\restrict), which no driver runs.
    plain = [line for line in dump.splitlines() if not line.startswith("\\")]
    (out / "postgres.sql").write_text("\n".join(plain) + "\n")
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
