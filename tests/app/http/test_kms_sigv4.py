"""SigV4's SignedHeaders as AWS lists them: lowercase names, each once, sorted, at most
MAX_SIGNED_HEADERS of them; anything else is a malformed Authorization header
(IncompleteSignatureException), refused before a canonical request is made."""

import pytest

from app.http.kms import sigv4
from app.ops.kms.errors import KmsError

KEY = "AKIAAAAAAAAAAAAAAAAA"
SIGNATURE = "0" * 64


def _authorization(signed_headers: str, separator: str = ", ") -> str:
    return (
        f"AWS4-HMAC-SHA256 Credential={KEY}/20260101/eu-west-3/kms/aws4_request{separator}"
        f"SignedHeaders={signed_headers}{separator}Signature={SIGNATURE}"
    )


# The SDKs' form (one match) and another spacing (member by member) are held alike.
SEPARATORS = [", ", " , "]


@pytest.mark.parametrize("separator", SEPARATORS)
def test_botocore_list_is_taken(separator: str) -> None:
    listed = "content-type;host;x-amz-date;x-amz-security-token;x-amz-target"
    auth = sigv4.parse_authorization(_authorization(listed, separator))
    assert auth.signed_headers == tuple(listed.split(";"))
    assert auth.signature == SIGNATURE


@pytest.mark.parametrize("separator", SEPARATORS)
@pytest.mark.parametrize(
    "listed",
    [
        "host;host;x-amz-date",
        "content-type;host;x-amz-date;x-amz-date",
        "Host;host;x-amz-date",
    ],
)
def test_a_name_listed_twice_is_refused(listed: str, separator: str) -> None:
    with pytest.raises(KmsError) as exc:
        sigv4.parse_authorization(_authorization(listed, separator))
    assert exc.value.type == "IncompleteSignatureException"
    assert "each once, sorted" in exc.value.message


@pytest.mark.parametrize("separator", SEPARATORS)
@pytest.mark.parametrize("listed", ["x-amz-date;host", "host;content-type;x-amz-date"])
def test_unsorted_names_are_refused(listed: str, separator: str) -> None:
    with pytest.raises(KmsError) as exc:
        sigv4.parse_authorization(_authorization(listed, separator))
    assert exc.value.type == "IncompleteSignatureException"


@pytest.mark.parametrize("separator", SEPARATORS)
def test_at_most_max_signed_headers(separator: str) -> None:
    names = ["host", "x-amz-date"] + [f"x-h{i:03d}" for i in range(sigv4.MAX_SIGNED_HEADERS - 2)]
    auth = sigv4.parse_authorization(_authorization(";".join(sorted(names)), separator))
    assert len(auth.signed_headers) == sigv4.MAX_SIGNED_HEADERS
    names.append("x-h999")
    with pytest.raises(KmsError) as exc:
        sigv4.parse_authorization(_authorization(";".join(sorted(names)), separator))
    assert exc.value.type == "IncompleteSignatureException"


def test_the_probe_is_refused_before_a_canonical_request() -> None:
    """30,000 times one name: refused by the parsing, at no cost near the 1.6 GB its
    canonical request would have taken."""
    with pytest.raises(KmsError) as exc:
        sigv4.parse_authorization(_authorization("a;" * 30_000 + "host;x-amz-date"))
    assert exc.value.type == "IncompleteSignatureException"


def test_canonical_request_takes_each_value_once() -> None:
    """Its size is within the head's: canonical_request refuses a list a parse would refuse."""
    headers = [(b"host", b"h"), (b"a", b"v" * 5_000), (b"x-amz-date", b"20260101T000000Z")]
    canonical = sigv4.canonical_request(
        "POST", "/", "", headers, ("a", "host", "x-amz-date"), "0" * 64
    )
    assert canonical.count("v" * 5_000) == 1
    with pytest.raises(KmsError) as exc:
        sigv4.canonical_request("POST", "/", "", headers, ("a",) * 5_000 + ("host",), "0" * 64)
    assert exc.value.type == "IncompleteSignatureException"
