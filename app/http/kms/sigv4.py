"""AWS Signature Version 4, as a service checks it: the canonical request, the string to sign,
the signing key derived from the secret access key, and the signature compared in constant
time. Read from AWS's description of the algorithm ("Create a signed AWS API request").

A request is signed for a date, a region and a service (`<date>/<region>/<service>/aws4_request`,
the credential scope); the service takes any region its client names, but only its own
service name, and a date within `MAX_SKEW_SECONDS` of its clock (AWS's five minutes), so that
a captured request cannot be replayed later than that.
"""

import functools
import hashlib
import hmac
import itertools
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote

from app.ops.kms.errors import KmsError

ALGORITHM = "AWS4-HMAC-SHA256"
MAX_SKEW_SECONDS = 300
# Derived signing keys kept per process (a key pair signing for one region a day uses one).
SIGNING_KEYS_CACHED = 1024
# Names a request may sign: botocore (so boto3, the AWS CLI and the AWS Encryption SDK) signs
# every header it sends, five for KMS (content-type;host;x-amz-date;x-amz-security-token;
# x-amz-target); 64 leaves room for a client's own headers and bounds the work done for a
# request before its signature is checked.
MAX_SIGNED_HEADERS = 64
_DATE_FORMAT = "%Y%m%dT%H%M%SZ"
_AMZ_DATE = re.compile(r"[0-9]{8}T[0-9]{6}Z")
_REGION = re.compile(r"^[a-z0-9-]{1,64}$")
_ACCESS_KEY_ID = re.compile(r"^[A-Z0-9]{16,128}$")
_DAY = re.compile(r"[0-9]{8}")
# The header as AWS's SDKs write it, read in one match; any other form goes through the
# member-by-member reading, which says what is wrong.
_USUAL = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[A-Z0-9]+)/(?P<date>[0-9]{8})/"
    r"(?P<region>[a-z0-9-]{1,64})/(?P<service>[a-z0-9-]+)/aws4_request, ?"
    r"SignedHeaders=(?P<headers>[a-z0-9;-]+), ?Signature=(?P<signature>[0-9a-f]{64})"
)
_SIGNATURE = re.compile(r"[0-9a-f]{64}")
_ALGORITHM_NAME = re.compile(r"AWS[0-9]?-[A-Z0-9-]{1,32}")


def incomplete(message: str) -> KmsError:
    return KmsError("IncompleteSignatureException", message)


def invalid(message: str) -> KmsError:
    return KmsError("InvalidSignatureException", message)


def _well_listed(signed: tuple[str, ...]) -> bool:
    """Whether SignedHeaders names at most MAX_SIGNED_HEADERS headers, each once, sorted, as
    AWS's algorithm lists them (botocore signs `sorted(set(names))`): each header's values
    then appear once in the canonical request, which stays within the size of the request's
    head."""
    return len(signed) <= MAX_SIGNED_HEADERS and all(a < b for a, b in itertools.pairwise(signed))


def _unlisted() -> KmsError:
    return incomplete(
        f"SignedHeaders should list at most {MAX_SIGNED_HEADERS} header names, each once, "
        "sorted (lowercase)."
    )


@dataclass(frozen=True, slots=True)
class Authorization:
    """A request's `Authorization: AWS4-HMAC-SHA256 Credential=..., SignedHeaders=...,
    Signature=...`, parsed."""

    access_key_id: str
    date: str  # YYYYMMDD, the credential scope's
    region: str
    service: str
    signed_headers: tuple[str, ...]
    signature: str

    @property
    def scope(self) -> str:
        return f"{self.date}/{self.region}/{self.service}/aws4_request"


def parse_authorization(value: str | None) -> Authorization:
    """The parts of an Authorization header (IncompleteSignatureException when one is missing
    or malformed, SignedHeaders among them when it is not at most MAX_SIGNED_HEADERS names,
    each once, sorted; MissingAuthenticationTokenException when there is none)."""
    if not value:
        raise KmsError("MissingAuthenticationTokenException", "Missing Authentication Token")
    usual = _USUAL.fullmatch(value)
    if usual is not None and _ACCESS_KEY_ID.fullmatch(usual["key"]):
        signed = tuple(usual["headers"].split(";", MAX_SIGNED_HEADERS))
        if "host" in signed and _well_listed(signed):
            return Authorization(
                usual["key"],
                usual["date"],
                usual["region"],
                usual["service"],
                signed,
                usual["signature"],
            )
    algorithm, _, rest = value.strip().partition(" ")
    if algorithm != ALGORITHM:
        # Named only if it looks like one: a header of a token alone would echo the token.
        named = f": '{algorithm}'" if _ALGORITHM_NAME.fullmatch(algorithm) else ""
        raise incomplete(f"Unsupported AWS 'algorithm'{named}")
    fields: dict[str, str] = {}
    for part in rest.split(","):
        name, equals, content = part.strip().partition("=")
        if equals:
            fields[name] = content.strip()
    missing = [f for f in ("Credential", "SignedHeaders", "Signature") if not fields.get(f)]
    if missing:
        raise incomplete(
            "Authorization header requires "
            + ", ".join(f"'{name}' parameter" for name in missing)
            + f". Authorization={ALGORITHM}"
        )
    credential = fields["Credential"].split("/")
    if len(credential) != 5 or credential[4] != "aws4_request":
        raise incomplete(
            "Credential should be of the form "
            "<access key id>/<date>/<region>/<service>/aws4_request"
        )
    access_key_id, date, region, service, _ = credential
    if not _ACCESS_KEY_ID.fullmatch(access_key_id):
        raise KmsError(
            "UnrecognizedClientException", "The security token included in the request is invalid."
        )
    if not _DAY.fullmatch(date) or not _REGION.fullmatch(region):
        raise incomplete("Credential has a malformed date or region")
    signed = tuple(fields["SignedHeaders"].lower().split(";", MAX_SIGNED_HEADERS))
    if not _well_listed(signed):
        raise _unlisted()
    if "host" not in signed:
        raise invalid("'Host' must be a 'SignedHeader' in the AWS Authorization.")
    if not _SIGNATURE.fullmatch(fields["Signature"]):
        raise invalid("The request signature is not 64 hexadecimal digits.")
    return Authorization(access_key_id, date, region, service, signed, fields["Signature"])


@functools.lru_cache(maxsize=64)
def _moment(amz_date: str) -> float:
    """The seconds of a YYYYMMDDTHHMMSSZ date (ValueError for anything else), read by its
    fixed positions; the requests of one second share the answer."""
    if _AMZ_DATE.fullmatch(amz_date) is None:
        raise ValueError(amz_date)
    fields = (amz_date[0:4], amz_date[4:6], amz_date[6:8], amz_date[9:11], amz_date[11:13])
    year, month, day, hour, minute = map(int, fields)
    return datetime(year, month, day, hour, minute, int(amz_date[13:15]), tzinfo=UTC).timestamp()


def check_date(auth: Authorization, amz_date: str | None, now: float) -> str:
    """The request's X-Amz-Date, once it is well formed, the credential scope's date and
    within MAX_SKEW_SECONDS of `now` (InvalidSignatureException otherwise, as AWS answers a
    stale request)."""
    if amz_date is None or "x-amz-date" not in auth.signed_headers:
        raise incomplete("Authorization header requires existence of a signed 'X-Amz-Date' header.")
    try:
        signed_at = _moment(amz_date)
    except ValueError:
        raise incomplete(
            f"X-Amz-Date {amz_date[:32]!r} is not of the form YYYYMMDDTHHMMSSZ"
        ) from None
    if amz_date[:8] != auth.date:
        raise invalid(
            f"Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date "
            f"from HTTP: '{auth.date}' != '{amz_date[:8]}', from '{amz_date}'."
        )
    if abs(now - signed_at) > MAX_SKEW_SECONDS:
        current = datetime.fromtimestamp(now, UTC).strftime(_DATE_FORMAT)
        relation = "earlier" if signed_at < now else "later"
        raise invalid(
            f"Signature expired: {amz_date} is now {relation} than {current} "
            f"({current} {'-' if relation == 'earlier' else '+'} 5 min.)"
        )
    if auth.service != "kms":
        raise invalid("Credential should be scoped to correct service: 'kms'.")
    return amz_date


def _must_sign(name: bytes) -> bool:
    """Whether a header a request carries must be signed: Host, the body's type and every
    X-Amz-* (the action, the date, the token), so that none changes under a good signature."""
    return name in (b"host", b"content-type") or name.startswith(b"x-amz-")


def canonical_request(
    method: str,
    raw_path: str,
    raw_query: str,
    headers: list[tuple[bytes, bytes]],
    signed_headers: tuple[str, ...],
    payload_hash: str,
) -> str:
    """The canonical request of AWS's algorithm: the path as sent, URI-encoded once more (as
    AWS's SDKs sign every service but S3), the query's parameters as sent, sorted, the signed
    headers' values trimmed and joined, and the payload's SHA-256."""
    if not _well_listed(signed_headers):
        raise _unlisted()
    pairs = sorted(item.partition("=")[::2] for item in raw_query.split("&") if item)
    wanted = {name.encode("latin-1"): name for name in signed_headers}
    values: dict[str, list[str]] = {}
    for name, value in headers:
        signed = wanted.get(name.lower())
        if signed is not None:
            values.setdefault(signed, []).append(" ".join(value.decode("latin-1").split()))
    missing = [name for name in signed_headers if name not in values]
    if missing:
        raise invalid(f"The request signs headers it does not carry: {', '.join(missing)}")
    unsigned = sorted(
        {name.lower() for name, _ in headers if _must_sign(name.lower())} - wanted.keys()
    )
    if unsigned:
        names = ", ".join(name.decode("latin-1") for name in unsigned)
        raise invalid(f"The request carries headers it does not sign: {names}")
    return "\n".join(
        (
            method,
            "/" if raw_path in ("", "/") else quote(raw_path, safe="/~"),
            "&".join(f"{name}={value}" for name, value in pairs),
            "".join(f"{name}:{','.join(values[name])}\n" for name in signed_headers),
            ";".join(signed_headers),
            payload_hash,
        )
    )


@functools.lru_cache(maxsize=SIGNING_KEYS_CACHED)
def signing_key(secret: bytes, date: str, region: str, service: str) -> bytes:
    """The key a day's requests for a region and service are signed with: four HMACs, made
    once per secret, day, region and service while they are among the last
    SIGNING_KEYS_CACHED used (held only in this process's memory, beside the secret itself)."""
    key = hmac.digest(b"AWS4" + secret, date.encode(), "sha256")
    for part in (region, service, "aws4_request"):
        key = hmac.digest(key, part.encode(), "sha256")
    return key


def signature(secret: bytes, auth: Authorization, amz_date: str, canonical: str) -> str:
    """The signature of a canonical request with the secret access key."""
    string_to_sign = "\n".join(
        (ALGORITHM, amz_date, auth.scope, hashlib.sha256(canonical.encode()).hexdigest())
    )
    key = signing_key(secret, auth.date, auth.region, auth.service)
    return hmac.new(key, string_to_sign.encode(), "sha256").hexdigest()


def verify(secret: bytes, auth: Authorization, amz_date: str, canonical: str) -> None:
    """InvalidSignatureException unless the request's signature is the one the secret makes;
    compared in constant time."""
    expected = signature(secret, auth, amz_date, canonical)
    if not hmac.compare_digest(expected, auth.signature):
        raise invalid(
            "The request signature we calculated does not match the signature you provided. "
            "Check your AWS Secret Access Key and signing method. Consult the service "
            "documentation for details."
        )
