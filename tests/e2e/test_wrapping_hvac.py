"""Response wrapping (`X-Vault-Wrap-TTL`, `sys/wrapping/*`) against cipherd and against a real
OpenBao, compared as the Transit tests compare hvac's answers (`tests/e2e/test_transit_hvac.py`):
each case's outcome is the answer's shape (field names and JSON types, recursively) or the hvac
exception it raised, and must be the same on both servers, but where `DIFFERENCES` says
otherwise and why. Then what only cipherd promises: a wrapped answer is stored sealed, and
bounded.
"""

import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import hvac
import pytest
import requests
from hvac import exceptions

from tests.e2e.openbao import running_openbao, shape
from tests.e2e.server import running, wait_for

pytestmark = pytest.mark.e2e

ADMIN_TOKEN = "wrapping-admin-" + secrets.token_urlsafe(16)
SERVERS = ("openbao", "cipherd")
Case = Callable[[hvac.Client], Any]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("wrapping")


@pytest.fixture(scope="module")
def targets(work: Path) -> Iterator[dict[str, tuple[str, str]]]:
    env = {"CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN}
    with running(work / "cipherd", env=env) as cipherd, running_openbao(work) as openbao:
        yield {"openbao": (openbao.url, openbao.token), "cipherd": (cipherd.url, ADMIN_TOKEN)}


def outcome(case: Case, url: str, token: str) -> Any:
    try:
        answer = case(hvac.Client(url=url, token=token))
    except exceptions.VaultError as error:
        return ("raised", type(error).__name__)
    if isinstance(answer, requests.Response):
        return ("status", answer.status_code)
    return ("answer", shape(answer))


def _wrap(client: hvac.Client) -> Any:
    return client.sys.wrap(payload={"zip": "zap"}, ttl=60)


def _wrap_without_ttl(client: hvac.Client) -> Any:
    return client.adapter.post("/v1/sys/wrapping/wrap", json={"zip": "zap"})


def _wrap_bad_ttl(client: hvac.Client) -> Any:
    headers = {"X-Vault-Wrap-TTL": "a while"}
    return client.adapter.post("/v1/sys/wrapping/wrap", json={"zip": "zap"}, headers=headers)


def _wrap_empty_ttl(client: hvac.Client) -> Any:
    """An empty TTL is none: the answer is not wrapped."""
    answer = client.adapter.get("/v1/sys/mounts", headers={"X-Vault-Wrap-TTL": ""})
    return [answer["wrap_info"], "transit/" in answer["data"]]


def _wrap_too_long(client: hvac.Client) -> Any:
    headers = {"X-Vault-Wrap-TTL": "9999h"}
    return client.adapter.post("/v1/sys/wrapping/wrap", json={"zip": "zap"}, headers=headers)


def _wrapped_token(client: hvac.Client, ttl: int = 60) -> str:
    return str(client.sys.wrap(payload={"zip": "zap"}, ttl=ttl)["wrap_info"]["token"])


def _lookup(client: hvac.Client) -> Any:
    token = _wrapped_token(client)
    return requests.post(f"{client.url}/v1/sys/wrapping/lookup", json={"token": token}).json()


def _lookup_unknown(client: hvac.Client) -> Any:
    return client.adapter.post("/v1/sys/wrapping/lookup", json={"token": "unknown"})


def _unwrap(client: hvac.Client) -> Any:
    return client.sys.unwrap(_wrapped_token(client))


def _unwrap_with_its_own_token(client: hvac.Client) -> Any:
    """The wrapping token as the request's token, no other needed."""
    token = _wrapped_token(client)
    return requests.post(f"{client.url}/v1/sys/wrapping/unwrap", headers={"X-Vault-Token": token})


def _unwrap_twice(client: hvac.Client) -> Any:
    token = _wrapped_token(client)
    client.sys.unwrap(token)
    return client.sys.unwrap(token)


def _unwrap_unknown(client: hvac.Client) -> Any:
    return client.sys.unwrap("not-a-wrapping-token")


def _unwrap_a_plain_token(client: hvac.Client) -> Any:
    """A client's own token, not a wrapping one, as the request's token."""
    return client.sys.unwrap()


def _rewrap(client: hvac.Client) -> Any:
    token = _wrapped_token(client)
    rewrapped = client.adapter.post("/v1/sys/wrapping/rewrap", json={"token": token})
    return [rewrapped, client.sys.unwrap(rewrapped["wrap_info"]["token"])]


def _rewrap_spends_the_old_one(client: hvac.Client) -> Any:
    token = _wrapped_token(client)
    client.adapter.post("/v1/sys/wrapping/rewrap", json={"token": token})
    return client.sys.unwrap(token)


def _expired(client: hvac.Client) -> Any:
    """A wrapping token past its TTL is refused (wait for it, on each server's own clock)."""
    token = _wrapped_token(client, ttl=1)
    client.adapter.post("/v1/sys/wrapping/lookup", json={"token": token})

    def refused() -> bool:
        answer = requests.post(f"{client.url}/v1/sys/wrapping/lookup", json={"token": token})
        return answer.status_code == 400

    wait_for(refused, 30, "the wrapping token expiring")
    return client.sys.unwrap(token)


def _wrapped_error(client: hvac.Client) -> Any:
    """An error is not wrapped."""
    headers = {"X-Vault-Wrap-TTL": "60"}
    return client.adapter.get("/v1/transit/keys/missing", headers=headers)


def _wrapped_transit(client: hvac.Client) -> Any:
    """A Transit answer wrapped, and unwrapped once."""
    key = "wrapped-" + secrets.token_hex(4)
    client.secrets.transit.create_key(key)
    body = {"plaintext": "aGk="}
    headers = {"X-Vault-Wrap-TTL": "60"}
    wrapped = client.adapter.post(f"/v1/transit/encrypt/{key}", json=body, headers=headers)
    return [wrapped, client.sys.unwrap(wrapped["wrap_info"]["token"])]


def _wrapped_mounts(client: hvac.Client) -> Any:
    """Any answer may be wrapped: the secrets engines mounted."""
    wrapped = client.adapter.get("/v1/sys/mounts", headers={"X-Vault-Wrap-TTL": "60"})
    unwrapped = client.sys.unwrap(wrapped["wrap_info"]["token"])
    envelope = ("request_id", "lease_id", "renewable", "wrap_info", "warnings", "auth")
    return [wrapped, {key: unwrapped[key] for key in envelope}, "transit/" in unwrapped["data"]]


CASES: dict[str, Case] = {
    "wrap": _wrap,
    "wrap without a ttl": _wrap_without_ttl,
    "wrap bad ttl": _wrap_bad_ttl,
    "wrap empty ttl": _wrap_empty_ttl,
    "wrap ttl longer than allowed": _wrap_too_long,
    "wrapping lookup": _lookup,
    "wrapping lookup unknown": _lookup_unknown,
    "unwrap": _unwrap,
    "unwrap with its own token": _unwrap_with_its_own_token,
    "unwrap twice": _unwrap_twice,
    "unwrap unknown": _unwrap_unknown,
    "unwrap a plain token": _unwrap_a_plain_token,
    "rewrap": _rewrap,
    "rewrap spends the old token": _rewrap_spends_the_old_one,
    "wrapping token expired": _expired,
    "wrapped error": _wrapped_error,
    "wrapped transit encrypt": _wrapped_transit,
    "wrapped sys/mounts": _wrapped_mounts,
}

# Where cipherd answers otherwise on purpose: (OpenBao's outcome, cipherd's, why).
DIFFERENCES: dict[str, tuple[Any, Any, str]] = {
    "wrap ttl longer than allowed": (
        ("answer", "wrap_info"),
        ("raised", "InvalidRequest"),
        "a wrapped answer is kept at most CIPHERD_WRAP_MAX_TTL_SECONDS (32 days by default)",
    ),
}


def _summary(seen: Any) -> Any:
    """An answer's outcome reduced to whether it is a wrap, for the differences above."""
    if seen[0] == "answer" and isinstance(seen[1], dict) and seen[1].get("wrap_info"):
        return ("answer", "wrap_info")
    return seen


@pytest.mark.parametrize("case", sorted(CASES))
def test_wrapping_case_as_on_openbao(targets: dict[str, tuple[str, str]], case: str) -> None:
    seen = {server: outcome(CASES[case], *targets[server]) for server in SERVERS}
    if case in DIFFERENCES:
        openbao, cipherd, _why = DIFFERENCES[case]
        assert (_summary(seen["openbao"]), seen["cipherd"]) == (openbao, cipherd)
        return
    assert seen["cipherd"] == seen["openbao"]


def test_a_wrapped_answer_is_stored_sealed(targets: dict[str, tuple[str, str]], work: Path) -> None:
    """What a wrapping token wraps is in no file of the service's data directory in the
    clear, and its token neither."""
    marker = "sealed-" + secrets.token_hex(16)
    client = hvac.Client(url=targets["cipherd"][0], token=ADMIN_TOKEN)
    token = client.sys.wrap(payload={"marker": marker}, ttl=60)["wrap_info"]["token"]
    data = work / "cipherd"
    stored = b"".join(path.read_bytes() for path in data.rglob("*") if path.is_file())
    assert marker.encode() not in stored and token.encode() not in stored
    assert client.sys.unwrap(token)["data"] == {"marker": marker}


def test_wrapping_is_bounded_and_only_for_vaults_routes(
    targets: dict[str, tuple[str, str]],
) -> None:
    url = targets["cipherd"][0]
    large = {"blob": "x" * (1024 * 1024)}
    answer = httpx.post(
        f"{url}/v1/sys/wrapping/wrap",
        json=large,
        headers={"X-Vault-Token": ADMIN_TOKEN, "X-Vault-Wrap-TTL": "60"},
    )
    assert answer.status_code == 413 and "CIPHERD_WRAP_MAX_BYTES" in answer.text
    # A native route's answer is never wrapped: the header changes nothing.
    native = httpx.get(
        f"{url}/v1/keys",
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "X-Vault-Wrap-TTL": "60"},
    )
    assert native.status_code == 200 and "wrap_info" not in native.json()


def test_unknown_wrapping_tokens_count_toward_the_throttle(tmp_path: Path) -> None:
    env = {
        "CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN,
        "CIPHERD_AUTH_FAILURES_BURST": "3",
        "CIPHERD_AUTH_FAILURES_PER_SECOND": "0.01",
    }
    with running(tmp_path / "data", env=env) as throttled:
        client = hvac.Client(url=throttled.url, token=ADMIN_TOKEN)
        token = client.sys.wrap(payload={"kept": "yes"}, ttl=60)["wrap_info"]["token"]
        for _ in range(3):
            with pytest.raises(exceptions.InvalidRequest):
                client.sys.unwrap("cdw_guessed")
        refused = httpx.post(
            f"{throttled.url}/v1/sys/wrapping/unwrap", headers={"X-Vault-Token": "cdw_guessed"}
        )
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
        # The real wrapping token is never refused by the throttle.
        assert client.sys.unwrap(token)["data"] == {"kept": "yes"}
