"""A cipherd server for the KMS tests, and boto3 clients signed with a scoped token's AWS key
pair (`POST /v1/tokens` with `aws_credentials`)."""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import ReadOnlyCredentials

from tests.e2e.server import Server, running

# Every operation a token may have: such a token may do to keys all the admin may.
EVERY_OPERATION = [
    "read",
    "public",
    "encrypt",
    "decrypt",
    "keygen",
    "sign",
    "verify",
    "hmac",
    "create",
    "configure",
    "rotate",
    "delete",
]
REGION = "eu-west-3"
AMZ_JSON = "application/x-amz-json-1.1"


@dataclass(frozen=True)
class Credentials:
    token_id: str
    access_key_id: str
    secret_access_key: str


def credentials(
    server: Server,
    keys: Sequence[str] = ("*",),
    operations: Sequence[str] = EVERY_OPERATION,
    **token: Any,
) -> Credentials:
    """A new scoped token's AWS key pair (`token`: more of POST /v1/tokens's fields)."""
    with server.client() as http:
        body = {"keys": list(keys), "operations": list(operations), "aws_credentials": True}
        answer = http.post("/v1/tokens", json=body | token)
    assert answer.status_code == 201, answer.text
    body = answer.json()
    return Credentials(body["id"], body["aws_access_key_id"], body["aws_secret_access_key"])


def kms_client(
    server: Server,
    creds: Credentials,
    region: str = REGION,
    validate: bool = True,
    **overrides: Any,
) -> Any:
    """boto3's KMS client for `server`, signing with `creds` (or `overrides`'s keys), without
    retries, so that an error is seen as the server gave it; with `validate` false, botocore
    sends what its own checks would refuse, for the server to refuse."""
    options: dict[str, Any] = {
        "aws_access_key_id": creds.access_key_id,
        "aws_secret_access_key": creds.secret_access_key,
        **overrides,
    }
    return boto3.client(
        "kms",
        endpoint_url=server.url,
        region_name=region,
        config=Config(
            retries={"max_attempts": 1, "mode": "standard"}, parameter_validation=validate
        ),
        **options,
    )


ACCOUNT = "123456789012"


def started(work: Path, **settings: str) -> Iterator[Server]:
    """A server whose ARNs name ACCOUNT, with short key caches and the CIPHERD_* `settings`."""
    env = {"CIPHERD_AWS_ACCOUNT_ID": ACCOUNT, "CIPHERD_KEY_CACHE_SECONDS": "0.05", **settings}
    with running(work, env=env) as server:
        yield server


def signed_post(
    server: Server,
    creds: Credentials,
    target: str | None,
    body: bytes,
    content_type: str | None = AMZ_JSON,
    signed: dict[str, str] | None = None,
    unsigned: dict[str, str] | None = None,
    sent: bytes | None = None,
    query: str = "",
    sent_query: str | None = None,
) -> httpx.Response:
    """`POST /?query` with `X-Amz-Target: target` and `content_type` (None: no such header)
    and `body`, signed by botocore's own SigV4 signer with the `signed` headers too, for what
    boto3's client would not send; then the `unsigned` headers added, and `sent` in the body's
    place and `sent_query` in the query's, if given."""
    given = {"X-Amz-Target": target, "Content-Type": content_type}
    headers = {name: value for name, value in given.items() if value is not None}
    headers.update(signed or {})
    request = AWSRequest("POST", f"{server.url}/?{query}".rstrip("?"), data=body, headers=headers)
    SigV4Auth(
        ReadOnlyCredentials(creds.access_key_id, creds.secret_access_key, None), "kms", REGION
    ).add_auth(request)
    prepared = request.prepare()
    headers = {**dict(prepared.headers), **(unsigned or {})}
    url = prepared.url if sent_query is None else f"{server.url}/?{sent_query}"
    return httpx.post(url, headers=headers, content=body if sent is None else sent)


def error_of(exc: pytest.ExceptionInfo[Any]) -> tuple[str, int]:
    """A botocore ClientError's KMS exception name and HTTP status."""
    response = exc.value.response
    return response["Error"]["Code"], response["ResponseMetadata"]["HTTPStatusCode"]
