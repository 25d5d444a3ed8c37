"""AWS Signature Version 4 for the load generator's KMS requests (POST / with X-Amz-Target),
computed here from the specification's steps so that the generator needs no AWS SDK: the
canonical request, the string to sign, the signing key derived from the secret, the date, the
region and the service, and the Authorization header."""

import hashlib
import hmac
import time

SERVICE = "kms"
AMZ_JSON = "application/x-amz-json-1.1"


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.digest(key, text.encode(), "sha256")


def signed_headers(
    access_key_id: str,
    secret: str,
    region: str,
    host: str,
    target: str,
    body: bytes,
    now: float | None = None,
) -> dict[str, str]:
    """The headers of a KMS request for `target` with `body`, signed at `now` (default: the
    present second); the Host header is the caller's to send as `host`."""
    moment = time.gmtime(time.time() if now is None else now)
    amz_date = time.strftime("%Y%m%dT%H%M%SZ", moment)
    day = amz_date[:8]
    headers = {
        "content-type": AMZ_JSON,
        "host": host,
        "x-amz-date": amz_date,
        "x-amz-target": target,
    }
    names = ";".join(sorted(headers))
    canonical = "\n".join(
        [
            "POST",
            "/",
            "",
            *(f"{name}:{headers[name]}" for name in sorted(headers)),
            "",
            names,
            hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = f"{day}/{region}/{SERVICE}/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = _hmac(f"AWS4{secret}".encode(), day)
    for part in (region, SERVICE, "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return {
        "Content-Type": AMZ_JSON,
        "X-Amz-Date": amz_date,
        "X-Amz-Target": target,
        "Authorization": f"AWS4-HMAC-SHA256 Credential={access_key_id}/{scope}, "
        f"SignedHeaders={names}, Signature={signature}",
    }
