"""What `cipherd serve` runs in each worker beyond `create_app`."""

import gc
from pathlib import Path

import pytest

from app.main import create_served_app
from tests.conftest import ADMIN_TOKEN


def test_a_worker_leaves_what_it_made_at_start_out_of_the_collectors_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CIPHERD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CIPHERD_ADMIN_TOKEN", ADMIN_TOKEN)
    monkeypatch.setenv("CIPHERD_FE_PROCESSES", "0")
    # Text: JSON logs would take over this process's stdout and stderr, which pytest holds.
    monkeypatch.setenv("CIPHERD_LOG_FORMAT", "text")
    assert gc.get_freeze_count() == 0
    try:
        app = create_served_app()
        # The modules, the app and its routes: well over the 10,000 objects of a bare
        # interpreter, and none of them walked by a full collection from here on.
        frozen = gc.get_freeze_count()
        assert frozen > 50_000
        assert app.routes
        gc.collect()
        # Still frozen after a full collection; only objects freed meanwhile (by other threads
        # of the test process) leave the count.
        assert frozen - 1_000 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()
