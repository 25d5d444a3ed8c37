"""A Transit mount moved on a service of two workers is moved for both once the move is
answered: each worker keeps its mount table as long as a key (`CIPHERD_KEY_CACHE_SECONDS`), and
the answer waits that out, so that no request after it reaches the old path or misses the new."""

import base64
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import running

pytestmark = pytest.mark.e2e

PLAINTEXT = base64.b64encode(b"order 1001").decode()


def test_once_answered_a_move_holds_in_every_worker(tmp_path: Path) -> None:
    with running(tmp_path / "data", workers_count=2) as server:
        headers = {"X-Vault-Token": server.admin_token}
        with httpx.Client(base_url=server.url, headers=headers) as admin:
            admin.post("/v1/sys/mounts/pay", json={"type": "transit"}).raise_for_status()
            admin.post("/v1/pay/keys/orders").raise_for_status()

        def each_on_a_new_connection(path: str, count: int = 40) -> list[int]:
            """Statuses of `count` encryptions, each on a connection of its own (so the two
            workers both take some)."""
            statuses = []
            for _ in range(count):
                with httpx.Client(base_url=server.url, headers=headers) as client:
                    answer = client.post(path, json={"plaintext": PLAINTEXT})
                    statuses.append(answer.status_code)
            return statuses

        assert set(each_on_a_new_connection("/v1/pay/encrypt/orders")) == {200}  # tables warm
        with httpx.Client(base_url=server.url, headers=headers) as admin:
            moved = admin.post("/v1/sys/remount", json={"from": "pay", "to": "payments"})
        assert moved.status_code == 200, moved.text
        assert set(each_on_a_new_connection("/v1/payments/encrypt/orders")) == {200}
        assert set(each_on_a_new_connection("/v1/pay/encrypt/orders")) == {404}
