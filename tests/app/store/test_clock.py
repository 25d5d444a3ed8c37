"""The store's clock: the database's time, kept on this process's monotonic clock, and this
machine's skew from it judged against the bound. (A real process whose clock is days ahead:
tests/e2e/test_replica_clock.py.)"""

import itertools
import logging
import time

import pytest

from app.store import KeyStore
from app.store.clock import Clock


def test_now_is_the_databases_time(store: KeyStore) -> None:
    for _ in range(3):
        before = store.clock.now()
        database = store.database.read_clock()
        after = store.clock.now()
        # The offset was measured at the middle of a round trip: within one of it here.
        assert before - 0.5 <= database <= after + 0.5
        time.sleep(0.05)
    assert abs(store.clock.skew) < 1
    assert store.clock.agrees


def test_a_change_is_dated_by_the_clock(store: KeyStore) -> None:
    before = store.clock.now()
    created = store.keys.create("dated", "aez", {}, False, bytes(32), None)
    assert before <= created.created_at <= store.clock.now()
    assert created.versions[0].created_at == created.created_at


def test_a_clock_too_far_off_disagrees_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    offset = [0.0]
    clock = Clock(lambda: time.time() - offset[0], max_skew=5)
    clock.measure()
    assert clock.agrees
    offset[0] = 8 * 86400.0  # this machine 8 days ahead of the database
    with caplog.at_level(logging.WARNING, "cipherd.clock"):
        clock.measure()
    assert not clock.agrees
    assert clock.skew == pytest.approx(8 * 86400, abs=1)
    assert "691200" in caplog.text and "ahead of the database's" in caplog.text
    # "Now" is the database's all the same.
    assert clock.now() == pytest.approx(time.time() - 8 * 86400, abs=1)
    caplog.clear()
    offset[0] = 0.0
    with caplog.at_level(logging.WARNING, "cipherd.clock"):
        clock.measure()
    assert clock.agrees
    assert "agrees with the database's again" in caplog.text


def test_now_measures_again_on_a_thread_of_its_own_once_due() -> None:
    readings: list[float] = []

    def read() -> float:
        readings.append(time.monotonic())
        return time.time() + 30

    clock = Clock(read, max_skew=5, refresh_seconds=0.05)
    clock.measure()
    assert clock.now() == pytest.approx(time.time() + 30, abs=1)
    deadline = time.monotonic() + 10
    while len(readings) < 3:
        assert time.monotonic() < deadline, readings
        clock.now()
        time.sleep(0.01)
    # At most one reading per refresh period, whatever the number of calls.
    gaps = [later - earlier for earlier, later in itertools.pairwise(readings)]
    assert min(gaps) >= 0.04, gaps
