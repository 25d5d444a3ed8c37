"""A token's rate counts a batch's items: a batch needs as many requests' worth as it has items
(the whole bucket, a second's worth, for a larger one, which then leaves the token owing the
rest), after its admission charged it as one. Little is earned back during a test: the
assertions allow for it."""

import pytest

from app.ops.errors import Problem
from app.ops.ratelimit import RateLimits
from app.ops.tokens import MIN_RATE_PER_SECOND, TokenCreate

RATE = 5.0  # a burst of 5
SLOW = 0.001


def limits() -> RateLimits:
    return RateLimits(failures_burst=20, failures_per_second=1.0)


def batch(rate_limits: RateLimits, items: int, rate: float = RATE) -> None:
    """A batch as the service charges it: one request at admission, the other items after."""
    rate_limits.charge("t", rate)
    rate_limits.charge("t", rate, items - 1, taken=1)


def test_single_requests_take_one_each() -> None:
    rate_limits = limits()
    for _ in range(5):
        rate_limits.charge("t", RATE)
    with pytest.raises(Problem) as refused:
        rate_limits.charge("t", RATE)
    assert refused.value.slug == "rate-limited" and refused.value.retry_after == 1


def test_a_batch_counts_its_items() -> None:
    rate_limits = limits()
    batch(rate_limits, 3, rate=5.0)
    batch(rate_limits, 2, rate=5.0)
    with pytest.raises(Problem):  # 5 of 5 spent, in two batches
        rate_limits.charge("t", 5.0)


def test_a_batch_larger_than_the_bucket_needs_it_full_and_leaves_a_debt() -> None:
    rate_limits = limits()
    batch(rate_limits, 1000, rate=SLOW)  # a bucket of one request's worth
    with pytest.raises(Problem) as refused:
        rate_limits.charge("t", SLOW)
    # 999 owed and one more to take, at 0.001 a second
    assert refused.value.retry_after == pytest.approx(1_000_000, rel=0.01)


def test_a_batch_that_does_not_fit_is_refused_with_the_time_until_it_does() -> None:
    rate_limits = limits()
    batch(rate_limits, 4, rate=RATE)  # 1 of 5 left
    with pytest.raises(Problem) as refused:
        batch(rate_limits, 3, rate=RATE)
    assert refused.value.slug == "rate-limited"
    assert refused.value.retry_after == 1  # 3 needed, 0 left after its admission: 0.6 s


def test_a_batch_of_one_is_one_request() -> None:
    rate_limits = limits()
    for _ in range(5):
        batch(rate_limits, 1)
    with pytest.raises(Problem):
        batch(rate_limits, 1)


def test_a_rate_is_at_least_one_a_day_so_its_retry_after_stays_short() -> None:
    """A batch of the most items at the slowest rate waits 1,000 days: 9 digits, not 300."""
    with pytest.raises(ValueError):
        TokenCreate(keys=["k"], operations=["encrypt"], rate_per_second=1e-300)
    slowest = TokenCreate(keys=["k"], operations=["encrypt"], rate_per_second=1 / 86400)
    assert slowest.rate_per_second == MIN_RATE_PER_SECOND
    rate_limits = limits()
    batch(rate_limits, 1000, rate=MIN_RATE_PER_SECOND)  # the whole bucket, and a debt
    with pytest.raises(Problem) as refused:
        rate_limits.charge("t", MIN_RATE_PER_SECOND)
    assert refused.value.retry_after is not None and refused.value.retry_after > 999 * 86400
    assert len(str(refused.value.retry_after)) <= 9
