"""Two replicas on one PostgreSQL write one audit trail: each its own chain, one `cipherd local
audit verify` over both, against every chain's anchor in the directory they share. A replica's
records reach the shared table moments after their answers (from its journal): a listing on
another replica finds them soon, not at once."""

import base64
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.server import running

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]


def test_records_of_both_replicas_verify_together(tmp_path: Path, postgres_url: str) -> None:
    env = {
        "CIPHERD_DATABASE_URL": postgres_url,
        "CIPHERD_ROOT_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
        "CIPHERD_ADMIN_TOKEN": "replica-admin-" + secrets.token_urlsafe(16),
        "CIPHERD_AUDIT_ANCHOR_DIR": str(tmp_path / "anchors"),
    }
    with (
        running(tmp_path / "a", env=env, workers_count=2) as first,
        running(tmp_path / "b", env=env) as second,
        first.client() as on_a,
        second.client() as on_b,
    ):
        assert on_a.post("/v1/keys", json={"name": "k", "type": "aez"}).status_code == 201
        for _ in range(20):
            assert on_a.post("/v1/aez/k/encrypt", json={"plaintext": "aGk="}).status_code == 200
            assert on_b.post("/v1/aez/k/encrypt", json={"plaintext": "aGk="}).status_code == 200
        assert on_b.get("/v1/keys", headers={"Authorization": "Bearer nope"}).status_code == 401
        deadline = time.monotonic() + 5
        while True:
            records = on_a.get("/v1/audit", params={"limit": 1000}).json()["records"]
            # The listings' own records come after each of them.
            listings = sum(r["operation"] == "audit_list_audit" for r in records)
            if len(records) - listings == 42 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    assert len(records) - listings == 42
    assert len({r["chain"] for r in records}) >= 2
    cli_env = {k: v for k, v in os.environ.items() if not k.startswith("CIPHERD_")}
    cli_env |= env | {"CIPHERD_DATA_DIR": str(tmp_path / "cli")}
    verified = subprocess.run(
        [sys.executable, "-m", "app", "local", "audit", "verify"],
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert verified.returncode == 0, verified.stderr
    report = json.loads(verified.stdout)
    assert report["records"] == 43 + listings  # and the last listing
    # Every chain anchored (the register of chains aside), both replicas' found.
    assert report["anchor"]["chains"] == report["chains"] - 1 >= 2
