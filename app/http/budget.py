"""A request's body against the limits of this worker: its bytes (413), the worker's memory for
bodies in progress (503), and for a JSON body, the members, containers and values whose parsing
costs far more than their bytes (413). Counted as the bytes arrive, before any is parsed."""

from starlette.types import Message, Receive, Scope

from app.http.body import header
from app.http.problems import BodyMemoryFull, BodyTooLarge
from app.server.metrics import REFUSED

# A JSON body's share of the body memory budget per byte: parsed, it takes about ten times its
# size (docs/performance/choices.md); raw bytes go to the crypto as they are.
JSON_MEMORY_FACTOR = 8
# A JSON body's object members and containers, counted by its colons and opening brackets
# (inside strings too): each member a model refuses is an error of some 400 bytes, each it
# keeps a dictionary entry, and 2.5 million of them in 31 MB took a worker 1.4 GB; a body of
# empty and nested arrays, which has no colon, took 62 s and 5.8 GB. Requests hold far fewer:
# a batch of 10,000 items of a dozen fields, or of 10,000 Transit ciphertexts.
MAX_JSON_MEMBERS = 250_000
# A JSON body's values, counted by its commas: 16 million small ones in 32 MiB took 1.3 GB to
# parse, five times what the body memory budget counts. An FE body may need more (`json_values`).
MAX_JSON_VALUES = 2_000_000


def json_values(fe_max_dimension: int, fe_max_request_work: int) -> int:
    """The most values a JSON body may hold: MAX_JSON_VALUES, or the largest FE body the FE
    bounds admit, a keygen's n × n matrix or as many as the request's work allows (n + 1 each).
    """
    n = fe_max_dimension
    return max(MAX_JSON_VALUES, n * n, fe_max_request_work * n)


class BodyMemory:
    """The memory the request bodies of this worker hold at once, against a budget: past it a
    request is answered 503 rather than read, so memory does not grow with the number of
    clients. Used only from the event loop."""

    __slots__ = ("budget", "held")

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.held = 0

    def take(self, amount: int) -> None:
        if self.held + amount > self.budget:
            REFUSED.labels("body-memory").inc()
            raise BodyMemoryFull()
        self.held += amount


class BodyBudget:
    """One request's body, counted as `receive` hands it over: against its limit (413), and
    against the worker's body memory (503), which holds the whole declared length before any
    of it is read, and what arrives beyond it as it arrives, until `release`.

    The limit is the JSON one unless the route says it reads raw bytes before it reads any
    (`allow_raw`; the budget is in `scope["state"]["body_budget"]`): a client's Content-Type
    alone must not lift it, or a route that parses its body could be made to parse up to the
    raw limit. Raw bytes go straight to the crypto; a JSON body is parsed first, and parsing a
    large one of many small values costs seconds and gigabytes.
    """

    __slots__ = (
        "_declared",
        "_held",
        "_max_values",
        "_members",
        "_memory",
        "_raw_limit",
        "_receive",
        "_received",
        "_restricted",
        "_values",
        "limit",
        "raw",
    )

    def __init__(
        self,
        scope: Scope,
        receive: Receive,
        memory: BodyMemory,
        json_limit: int,
        raw_limit: int,
        json_values: int = MAX_JSON_VALUES,
    ) -> None:
        self._receive = receive
        self._memory = memory
        self.limit = json_limit
        self._max_values = json_values
        self._raw_limit = raw_limit
        self.raw = False
        self._restricted = False
        length = header(scope, b"content-length")  # the client's claim: 0 if not a number
        self._declared = int(length) if length is not None and length.isdigit() else 0
        self._received = 0
        self._members = self._values = 0
        self._held = 0

    def allow_raw(self) -> None:
        self.limit, self.raw = self._raw_limit, True

    def _too_large(self, limit: int) -> BodyTooLarge:
        return BodyTooLarge(limit, hint=not (self.raw or self._restricted))

    def restrict(self, limit: int) -> None:
        """Hold this request's body to `limit` bytes, before any of it is read."""
        self.limit, self._restricted = min(self.limit, limit), True

    async def receive(self) -> Message:
        limit = self.limit  # read now: the route may have allowed raw bytes
        if self._declared > limit:
            raise self._too_large(limit)
        factor = 1 if self.raw else JSON_MEMORY_FACTOR
        self._hold(self._declared * factor)  # the whole declared body, before any of it
        message = await self._receive()
        if message["type"] == "http.request":
            body = message.get("body", b"")
            self._received += len(body)
            if self._received > limit:
                raise self._too_large(limit)
            if not self.raw:
                self._members += body.count(b":") + body.count(b"[") + body.count(b"{")
                if self._members > MAX_JSON_MEMBERS:
                    raise BodyTooLarge(MAX_JSON_MEMBERS, hint=False, unit="JSON members and arrays")
                self._values += body.count(b",")
                if self._values > self._max_values:
                    raise BodyTooLarge(self._max_values, hint=False, unit="JSON values")
            self._hold(self._received * factor)  # a body longer than declared, or chunked
        return message

    def _hold(self, amount: int) -> None:
        """Hold `amount` of the worker's body memory for this body, if it holds less (503 when
        the worker's is full)."""
        if amount > self._held:
            self._memory.take(amount - self._held)
            self._held = amount

    def release(self) -> None:
        """Give the memory this body held back to the worker's, and let go of the server's
        `receive`: the server's connection holds the request's scope, which holds this budget,
        and a cycle left behind by every request would have the cyclic garbage collector run
        every few hundred requests."""
        self._memory.held -= self._held
        self._held = 0
        self._receive = _request_over


async def _request_over() -> Message:
    """`receive` once the request is over."""
    return {"type": "http.disconnect"}
