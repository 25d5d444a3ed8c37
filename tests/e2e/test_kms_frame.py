"""The KMS protocol's frame with boto3: SigV4 checked as AWS checks it (unknown key id, wrong
secret, stale or future date, missing or incomplete signature), errors in AWS's shape, a token's
AWS key pair revoked with it."""

import datetime
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.auth
import httpx
import pytest
from botocore.exceptions import ClientError

from tests.e2e.kms import AMZ_JSON, credentials, error_of, kms_client, signed_post, started
from tests.e2e.server import Server, wait_for

pytestmark = pytest.mark.e2e
LIMIT = 64 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from started(tmp_path_factory.mktemp("kms-frame"), CIPHERD_MAX_JSON_BODY_BYTES=str(LIMIT))


def test_signed_request_lists_keys(server: Server) -> None:
    kms = kms_client(server, credentials(server))
    answer = kms.list_keys()
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert answer["Truncated"] is False
    assert isinstance(answer["Keys"], list)


def test_unknown_access_key_id(server: Server) -> None:
    kms = kms_client(server, credentials(server), aws_access_key_id="AKIA" + "A" * 16)
    with pytest.raises(ClientError) as exc:
        kms.list_keys()
    assert error_of(exc) == ("UnrecognizedClientException", 400)
    assert exc.value.response["Error"]["Message"] == (
        "The security token included in the request is invalid."
    )


def test_wrong_secret(server: Server) -> None:
    creds = credentials(server)
    kms = kms_client(server, creds, aws_secret_access_key=creds.secret_access_key[::-1])
    with pytest.raises(ClientError) as exc:
        kms.list_keys()
    assert error_of(exc) == ("InvalidSignatureException", 400)


@pytest.mark.parametrize("shift", [-360, 360])
def test_date_beyond_five_minutes(
    server: Server, shift: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request signed six minutes ago (a replay) or six minutes ahead is refused; one
    four minutes off is taken."""
    kms = kms_client(server, credentials(server))
    real = datetime.datetime

    def moved(seconds: int) -> Any:
        class Moved(real):
            @classmethod
            def utcnow(cls) -> Any:
                return real.utcnow() + datetime.timedelta(seconds=seconds)

            @classmethod
            def now(cls, tz: Any = None) -> Any:
                return real.now(tz) + datetime.timedelta(seconds=seconds)

        return Moved

    monkeypatch.setattr(botocore.auth.datetime, "datetime", moved(shift))
    with pytest.raises(ClientError) as exc:
        kms.list_keys()
    assert error_of(exc) == ("InvalidSignatureException", 400)
    assert "Signature expired" in exc.value.response["Error"]["Message"]
    monkeypatch.setattr(botocore.auth.datetime, "datetime", moved(shift * 4 // 6))
    assert kms.list_keys()["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_unsigned_and_incomplete(server: Server) -> None:
    headers = {
        "X-Amz-Target": "TrentService.ListKeys",
        "Content-Type": "application/x-amz-json-1.1",
    }
    answer = httpx.post(server.url + "/", headers=headers, content=b"{}")
    assert answer.status_code == 403  # as AWS's common errors give it
    assert answer.headers["content-type"] == "application/x-amz-json-1.1"
    assert answer.json()["__type"] == "MissingAuthenticationTokenException"
    headers["Authorization"] = (
        "AWS4-HMAC-SHA256 Credential=AKIAAAAAAAAAAAAAAAAA/20260101/x/kms/aws4_request"
    )
    answer = httpx.post(server.url + "/", headers=headers, content=b"{}")
    assert answer.status_code == 400
    assert answer.json()["__type"] == "IncompleteSignatureException"
    # Another scheme is named when it looks like one; a token in its place is not echoed.
    for authorization, said in (
        ("AWS4-HMAC-SHA1 Credential=x", "'AWS4-HMAC-SHA1'"),
        ("cdt_FAKESECRETFAKESECRETFAKESECRET", "Unsupported AWS 'algorithm'"),
        ("Bearer cdt_FAKESECRETFAKESECRETFAKESECRET", "Unsupported AWS 'algorithm'"),
    ):
        headers["Authorization"] = authorization
        answer = httpx.post(server.url + "/", headers=headers, content=b"{}")
        assert answer.json()["__type"] == "IncompleteSignatureException", answer.text
        assert said in answer.json()["message"] and "FAKESECRET" not in answer.text


def test_members_checked_by_the_server(server: Server) -> None:
    kms = kms_client(server, credentials(server), validate=False)
    for wrong in ({"Limit": 0}, {"Limit": "10"}, {"Marker": ""}):
        with pytest.raises(ClientError) as exc:
            kms.list_keys(**wrong)
        assert error_of(exc) == ("ValidationException", 400)
        assert "1 validation error detected" in exc.value.response["Error"]["Message"]


def test_a_bad_blob_is_described_without_its_characters(server: Server) -> None:
    """Base64's own error names a symbol of the value and its offset; the answer names the
    member only."""
    answer = signed_post(
        server, credentials(server), "TrentService.Decrypt", b'{"CiphertextBlob": "ab c"}'
    )
    assert (answer.status_code, answer.json()["__type"]) == (400, "ValidationException")
    assert answer.json()["message"] == (
        "1 validation error detected: Value at 'CiphertextBlob' failed to satisfy constraint: "
        "Member must be valid base64"
    )


def test_unknown_action_member_and_body(server: Server) -> None:
    creds = credentials(server)
    for target, body, wanted in (
        ("TrentService.MakeCoffee", b"{}", "UnknownOperationException"),
        ("Other.ListKeys", b"{}", "UnknownOperationException"),
        ("TrentService.ListKeys", b'{"Limit": 5, "Colour": "blue"}', "ValidationException"),
        ("TrentService.ListKeys", b"[1, 2", "ValidationException"),
    ):
        answer = signed_post(server, creds, target, body)
        assert answer.status_code == 400, target
        assert answer.headers["content-type"] == AMZ_JSON
        assert answer.json()["__type"] == wanted, (target, body)
    answer = signed_post(server, creds, "TrentService.ListKeys", b"{}", "text/plain")
    assert answer.json()["__type"] == "UnknownOperationException"


def test_many_unknown_members_are_counted_and_ten_described(server: Server) -> None:
    members = ", ".join(f'"M{i}": {i}' for i in range(4_000))
    body = ("{" + members + "}").encode()
    answer = signed_post(server, credentials(server), "TrentService.ListKeys", body)
    assert answer.status_code == 400, answer.text
    message = answer.json()["message"]
    assert message.startswith("4000 validation errors detected: Value at 'M0'"), message
    assert message.count("Value at") == 10
    assert len(answer.content) < 2_000


@pytest.mark.parametrize(
    "member",
    [
        '"DryRunModifiers": [' + ", ".join(["1"] * 5_000) + "]",
        '"EncryptionContext": {' + ", ".join(f'"k{i}": {i}' for i in range(4_000)) + "}",
    ],
)
def test_a_long_list_or_map_of_wrong_members_is_one_error(server: Server, member: str) -> None:
    """Each wrong entry was an error kept in memory: 16.8 MB of them took 3.4 GB."""
    body = ('{"CiphertextBlob": "AAAA", ' + member + "}").encode()
    answer = signed_post(server, credentials(server), "TrentService.Decrypt", body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["message"].startswith("1 validation error detected"), answer.text


def test_revoking_the_token_revokes_its_key_pair(server: Server) -> None:
    creds = credentials(server)
    kms = kms_client(server, creds)
    assert kms.list_keys()["ResponseMetadata"]["HTTPStatusCode"] == 200
    with server.client() as http:
        assert http.delete(f"/v1/tokens/{creds.token_id}").status_code == 204
    with pytest.raises(ClientError) as exc:
        kms.list_keys()
    assert error_of(exc) == ("UnrecognizedClientException", 400)


def test_body_over_the_limit(server: Server) -> None:
    """A signed body over the JSON body limit is refused as it arrives (413, KMS's shape)."""
    body = b'{"Marker": "' + b"m" * LIMIT + b'"}'
    answer = signed_post(server, credentials(server), "TrentService.ListKeys", body)
    assert answer.status_code == 413, answer.text
    assert answer.json()["__type"] == "ValidationException"


def test_audited_as_the_native_operation(server: Server) -> None:
    """Each KMS request has its audit record: the native operation, the token, the action; a
    refused signature one too, and no record carries the secret."""
    creds = credentials(server)
    kms = kms_client(server, creds)
    request_id = kms.list_keys()["ResponseMetadata"]["RequestId"]
    wrong = kms_client(server, creds, aws_secret_access_key="x" * 40)
    with pytest.raises(ClientError) as exc:
        wrong.list_keys()
    refused_id = exc.value.response["ResponseMetadata"]["RequestId"]
    with server.client() as http:
        records = http.get("/v1/audit", params={"limit": 1000}).json()["records"]
    by_id = {record["request_id"]: record for record in records}
    listed = by_id[request_id]
    assert listed["operation"] == "keys_list_keys"
    assert listed["principal"] == creds.token_id
    assert listed["details"] == {"action": "ListKeys"}
    refused = by_id[refused_id]
    assert (refused["operation"], refused["status"]) == ("kms", 400)
    assert refused["problem"] == "InvalidSignatureException"
    assert creds.secret_access_key not in repr(records)


def test_expired_token(server: Server) -> None:
    """ExpiredTokenException once the token's life is over, and only to a good signature: with
    a wrong one, an expired token's key id is refused as any other (the id alone tells
    nothing)."""
    creds = credentials(server, ttl_seconds=1)
    kms = kms_client(server, creds)
    wrong = kms_client(server, creds, aws_secret_access_key=creds.secret_access_key[::-1])
    assert kms.list_keys()["ResponseMetadata"]["HTTPStatusCode"] == 200

    def refused() -> bool:
        try:
            kms.list_keys()
        except ClientError as exc:
            assert exc.response["Error"]["Code"] == "ExpiredTokenException"
            return True
        return False

    wait_for(refused, 10, "the token's expiry")
    with pytest.raises(ClientError) as exc:
        wrong.list_keys()
    assert error_of(exc) == ("InvalidSignatureException", 400)


def test_the_body_is_signed_always(server: Server) -> None:
    """S3's UNSIGNED-PAYLOAD leaves the body out of the signature: KMS refuses it, with the
    body it was sent with or another."""
    creds = credentials(server)
    unsigned_body = {"X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD"}
    for sent in (b'{"Limit":1}', b'{"Limit":3}'):
        answer = signed_post(
            server, creds, "TrentService.ListKeys", b'{"Limit":1}', signed=unsigned_body, sent=sent
        )
        assert (answer.status_code, answer.json()["__type"]) == (400, "InvalidSignatureException")
    digest = {"X-Amz-Content-SHA256": hashlib.sha256(b'{"Limit":1}').hexdigest()}
    answer = signed_post(server, creds, "TrentService.ListKeys", b'{"Limit":1}', signed=digest)
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize(
    "header", ["X-Amz-Target", "Content-Type", "X-Amz-Security-Token", "X-Amz-Anything"]
)
def test_the_action_type_and_amz_headers_are_signed_always(server: Server, header: str) -> None:
    """A header that names the action, the body's type or any X-Amz-* must be signed: else a
    good signature of one action would do for another."""
    given: dict[str, str | None] = {"X-Amz-Target": "TrentService.ListKeys"}
    given["Content-Type"] = AMZ_JSON
    unsigned = {header: "TrentService.ListAliases" if header == "X-Amz-Target" else AMZ_JSON}
    if header in given:
        given[header] = None
    answer = signed_post(
        server,
        credentials(server),
        given["X-Amz-Target"],
        b"{}",
        content_type=given["Content-Type"],
        unsigned=unsigned,
    )
    assert (answer.status_code, answer.json()["__type"]) == (400, "InvalidSignatureException")
    assert f"does not sign: {header.lower()}" in answer.json()["message"]


def test_a_query_is_signed_and_else_ignored(server: Server) -> None:
    """A query on `POST /` is answered in AWS's shape: signed, it is taken (and ignored);
    changed after signing, InvalidSignatureException; a presigned request (its signature in the
    query, no Authorization header), MissingAuthenticationTokenException. It was a 422 problem
    document before any of this, which botocore could not read."""
    creds = credentials(server)
    taken = signed_post(server, creds, "TrentService.ListKeys", b"{}", query="Action=x&b=%20")
    assert taken.status_code == 200, taken.text
    changed = signed_post(
        server, creds, "TrentService.ListKeys", b"{}", query="Action=x", sent_query="Action=y"
    )
    assert (changed.status_code, changed.json()["__type"]) == (400, "InvalidSignatureException")
    presigned = httpx.post(
        server.url + "/?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=" + "0" * 64,
        headers={"X-Amz-Target": "TrentService.ListKeys", "Content-Type": AMZ_JSON},
        content=b"{}",
    )
    assert presigned.headers["content-type"] == AMZ_JSON
    assert (presigned.status_code, presigned.json()["__type"]) == (
        403,
        "MissingAuthenticationTokenException",
    )


def test_a_wrong_body_digest_counts_as_a_failed_signature(tmp_path: Path) -> None:
    """A signed X-Amz-Content-SHA256 that is not the body's is a failed signature, counted
    against the address as the others are: past the allowance, ThrottlingException. It was
    never counted."""
    burst = {"CIPHERD_AUTH_FAILURES_BURST": "3", "CIPHERD_AUTH_FAILURES_PER_SECOND": "0.01"}
    for started_server in started(tmp_path, **burst):
        creds = credentials(started_server)
        wrong = {"X-Amz-Content-SHA256": hashlib.sha256(b"other").hexdigest()}
        types = [
            signed_post(started_server, creds, "TrentService.ListKeys", b"{}", signed=wrong).json()[
                "__type"
            ]
            for _ in range(5)
        ]
    assert types == ["InvalidSignatureException"] * 3 + ["ThrottlingException"] * 2


def test_token_rate(server: Server) -> None:
    """A signed request is charged to its token's rate: past it ThrottlingException."""
    kms = kms_client(server, credentials(server, rate_per_second=1))
    codes = []
    for _ in range(5):
        try:
            kms.list_keys()
            codes.append("ok")
        except ClientError as exc:
            codes.append(exc.response["Error"]["Code"])
    assert codes[0] == "ok"
    assert "ThrottlingException" in codes


def _signing(server: Server, signed_headers: str, **extra: str) -> httpx.Response:
    """`ListKeys` with a known access key id, a fresh X-Amz-Date, `SignedHeaders` as given and
    a signature of zeros (no secret needed to ask this much of the server)."""
    now = datetime.datetime.now(datetime.UTC)
    headers = {
        "X-Amz-Target": "TrentService.ListKeys",
        "Content-Type": AMZ_JSON,
        "X-Amz-Date": now.strftime("%Y%m%dT%H%M%SZ"),
        "Authorization": (
            f"AWS4-HMAC-SHA256 Credential={credentials(server).access_key_id}/"
            f"{now:%Y%m%d}/eu-west-3/kms/aws4_request, "
            f"SignedHeaders={signed_headers}, Signature={'0' * 64}"
        ),
        **extra,
    }
    return httpx.post(server.url + "/", headers=headers, content=b"{}", timeout=60)


def _refused_as_malformed(answer: httpx.Response) -> None:
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"] == AMZ_JSON
    assert answer.json()["__type"] == "IncompleteSignatureException", answer.text
    assert "SignedHeaders should list at most 64" in answer.json()["message"]


def test_signed_headers_listed_twice_are_refused(server: Server) -> None:
    """AWS lists each signed header once (botocore signs `sorted(set(names))`)."""
    _refused_as_malformed(_signing(server, "host;host;x-amz-date"))
    _refused_as_malformed(_signing(server, "content-type;host;x-amz-date;x-amz-date"))


def test_unsorted_signed_headers_are_refused(server: Server) -> None:
    _refused_as_malformed(_signing(server, "x-amz-date;host"))
    _refused_as_malformed(_signing(server, "host;content-type;x-amz-date"))


def test_more_signed_headers_than_the_bound_are_refused(server: Server) -> None:
    names = [f"x-h{i:03d}" for i in range(60)]  # with the four botocore signs, 64 names
    extra = {name: "v" for name in names}
    botocore_signs = ["content-type", "host", "x-amz-date", "x-amz-target"]
    answer = _signing(server, ";".join(sorted([*botocore_signs, *names])), **extra)
    # 64 are read, and the zero signature is then wrong.
    assert answer.json()["__type"] == "InvalidSignatureException", answer.text
    assert "does not match" in answer.json()["message"]
    names.append("x-h999")
    extra["x-h999"] = "v"
    _refused_as_malformed(_signing(server, ";".join(sorted([*botocore_signs, *names])), **extra))


def test_one_header_listed_thousands_of_times_is_refused_before_any_work(server: Server) -> None:
    """The probe's shape: a header of 5,000 bytes named 5,000 times in SignedHeaders would
    make a canonical request of 25 MB (1.6 GB for 30,000); it is refused as malformed."""
    started_at = datetime.datetime.now()
    answer = _signing(server, "a;" * 5_000 + "host;x-amz-date", a="v" * 5_000)
    _refused_as_malformed(answer)
    assert datetime.datetime.now() - started_at < datetime.timedelta(seconds=10)
