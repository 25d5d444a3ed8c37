"""A token whose policies hold thousands of key patterns (up to MAX_PATTERNS in all) lists the
keys it may read, by `GET /v1/keys` and by KMS ListKeys, on SQLite and PostgreSQL: SQLite
answered 500 from 1,000 patterns (an expression too deep), PostgreSQL from some thousands of
long ones (one regular expression, too complex)."""

import fnmatch
import json
from pathlib import Path

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials
from fastapi import FastAPI
from fastapi.testclient import TestClient
from httpx import Response

from app.main import create_app
from app.ops.grants import MAX_PATTERNS
from app.settings import Settings
from tests.app.store.stores import LISTED_NAMES, MATCHING_GLOBS, many_globs
from tests.conftest import ADMIN_TOKEN, STORES


@pytest.fixture(params=STORES)
def service(request: pytest.FixtureRequest, tmp_path: Path) -> FastAPI:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    settings = Settings(
        data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, database_url=url, fe_processes=0
    )
    return create_app(settings)


def list_keys(client: TestClient, access_key_id: str, secret: str, limit: int) -> Response:
    """KMS ListKeys, signed with the token's AWS key pair."""
    body = json.dumps({"Limit": limit}).encode()
    request = AWSRequest(
        "POST",
        "http://testserver/",
        data=body,
        headers={
            "X-Amz-Target": "TrentService.ListKeys",
            "Content-Type": "application/x-amz-json-1.1",
        },
    )
    credentials = ReadOnlyCredentials(access_key_id, secret, None)
    SigV4Auth(credentials, "kms", "eu-west-3").add_auth(request)
    return client.post("/", headers=dict(request.prepare().headers), content=body)


@pytest.mark.parametrize("count", [1_500, MAX_PATTERNS])
def test_a_token_of_thousands_of_patterns_lists_what_it_may_read(
    service: FastAPI, count: int
) -> None:
    with TestClient(service, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        for name in LISTED_NAMES:
            assert client.post("/v1/keys", json={"name": name, "type": "aez"}).status_code == 201
        globs = many_globs(count)
        rules = [{"keys": globs[i : i + 100], "operations": ["read"]} for i in range(0, count, 100)]
        written = client.post("/v1/policies/many", json={"rules": rules})
        assert written.status_code == 200, written.text
        made = client.post("/v1/tokens", json={"policies": ["many"], "aws_credentials": True})
        assert made.status_code == 201, made.text
        token = made.json()
        allowed = [
            n
            for n in sorted(LISTED_NAMES)
            if any(fnmatch.fnmatchcase(n, g) for g in MATCHING_GLOBS)
        ]
        assert len(allowed) == 40
        scoped = {"Authorization": f"Bearer {token['token']}"}
        listed = client.get("/v1/keys", params={"limit": 1000}, headers=scoped)
        assert listed.status_code == 200, listed.text
        assert [k["name"] for k in listed.json()["keys"]] == allowed
        assert listed.json()["next"] is None
        page = client.get("/v1/keys", params={"limit": 9, "after": allowed[20]}, headers=scoped)
        assert [k["name"] for k in page.json()["keys"]] == allowed[21:30]
        assert page.json()["next"] == allowed[29]
        listed = list_keys(client, token["aws_access_key_id"], token["aws_secret_access_key"], 1000)
        assert listed.status_code == 200, listed.text
        kms = listed.json()
        assert [k["KeyId"] for k in kms["Keys"]] == allowed
        assert kms["Truncated"] is False
