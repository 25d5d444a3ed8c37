"""Request and crypto metrics made on an event loop are written at the end of its turn, and
come out as `inc` and `observe` one by one would have written them."""

import asyncio
import threading

from prometheus_client import CollectorRegistry, Counter, Histogram

from app.server import metrics

AMOUNTS = [0.0001, 0.0005, 0.0007, 0.001, 0.004, 0.004, 0.3, 2.5, 7.0, 11.0, 0.0]


def _samples(registry: CollectorRegistry, label: str) -> dict[str, float]:
    return {
        sample.name + str(sorted((k, v) for k, v in sample.labels.items() if k != "path")): (
            sample.value
        )
        for family in registry.collect()
        for sample in family.samples
        if sample.labels.get("path") == label and not sample.name.endswith("_created")
    }


def test_a_turns_observations_come_out_as_one_by_one() -> None:
    registry = CollectorRegistry()
    histogram = Histogram(
        "seconds", "test", ["path"], buckets=metrics.LATENCY_BUCKETS, registry=registry
    )
    counter = Counter("answers", "test", ["path"], registry=registry)
    for amount in AMOUNTS:
        histogram.labels("direct").observe(amount)
        counter.labels("direct").inc()

    async def one_turn() -> dict[str, float]:
        pending = metrics._pending_for_turn()
        assert pending is not None
        for amount in AMOUNTS:
            pending.observed.setdefault(histogram.labels("batched"), []).append(amount)
            pending.counts[counter.labels("batched")] = (
                pending.counts.get(counter.labels("batched"), 0) + 1
            )
        during = _samples(registry, "batched")
        await asyncio.sleep(0)
        return during

    during = asyncio.run(one_turn())
    assert not any(during.values())  # nothing written during the turn
    direct, batched = _samples(registry, "direct"), _samples(registry, "batched")
    assert direct.keys() == batched.keys()
    for name, value in direct.items():
        assert batched[name] == value or abs(batched[name] - value) < 1e-9, name


def test_requests_count_at_once_off_the_event_loop() -> None:
    seen: list[object] = []
    thread = threading.Thread(target=lambda: seen.append(metrics._pending_for_turn()))
    thread.start()
    thread.join()
    assert seen == [None]


def test_the_request_counter_counts_a_turns_requests() -> None:
    def served() -> float:
        return metrics.REQUESTS.labels("/test/turn", "GET", "200")._value.get()

    before = served()

    async def one_turn() -> float:
        for _ in range(5):
            metrics.count_request("/test/turn", "GET", 200, 0.001)
        during = served()
        await asyncio.sleep(0)
        return during

    assert asyncio.run(one_turn()) == before
    assert served() == before + 5


def test_after_an_event_loop_ends_counts_are_written_at_once() -> None:
    """A loop that stopped with its turn's additions unwritten does not keep later ones
    waiting: a thread without a running loop writes at once."""

    def served() -> float:
        return metrics.REQUESTS.labels("/test/ended", "GET", "200")._value.get()

    loop = asyncio.new_event_loop()

    async def count() -> None:
        metrics.count_request("/test/ended", "GET", 200, 0.001)

    loop.run_until_complete(count())
    loop.close()
    before = served()
    metrics.count_request("/test/ended", "GET", 200, 0.001)
    assert served() == before + 1
