"""JSON documents that arrive inside a request rather than as its body (AppRole's secret id
`metadata`, a JWT's claims, a Transit backup) hold only what JSON holds: Python's reader also
takes NaN, infinities and lone surrogates (`\\ud800`), and a lone surrogate, once stored, made
every answer that showed it a 500 (the token listing, the key's Transit read). Each is a 400
that stores nothing, on either store; the listings stay readable."""

import base64
import time

import pytest
from fastapi.testclient import TestClient
from joserfc import jws

from tests.e2e.issuer import new_key, public_pem

LONE_SURROGATE = "\\ud800"  # as JSON writes it: six characters


@pytest.fixture
def vault(admin_on_both_stores: TestClient) -> TestClient:
    """The admin, at Vault's paths as at the native ones (Vault also reads a bearer token)."""
    return admin_on_both_stores


def test_secret_id_metadata_holds_only_json(vault: TestClient) -> None:
    assert vault.post("/v1/auth/approle/role/ci", json={}).status_code == 204
    for metadata in (
        '{"team": "' + LONE_SURROGATE + '"}',
        '{"team": "a' + LONE_SURROGATE + 'b"}',
        '{"team": NaN}',
        '{"team": "ok", "n": Infinity}',
    ):
        answer = vault.post("/v1/auth/approle/role/ci/secret-id", json={"metadata": metadata})
        assert answer.status_code == 400, (metadata, answer.text)
        assert answer.json()["errors"] == ["metadata: a JSON object of strings, as a string"]
    assert vault.get("/v1/auth/approle/role/ci/secret-id?list=true").status_code == 404
    paired = '{"team": "\\ud83d\\ude80"}'  # a surrogate pair is a character: taken
    answer = vault.post("/v1/auth/approle/role/ci/secret-id", json={"metadata": paired})
    assert answer.status_code == 200, answer.text
    accessor = answer.json()["data"]["secret_id_accessor"]
    looked_up = vault.post(
        "/v1/auth/approle/role/ci/secret-id-accessor/lookup",
        json={"secret_id_accessor": accessor},
    )
    assert looked_up.json()["data"]["metadata"] == {"team": "\N{ROCKET}"}


def test_a_jwt_whose_claims_are_not_json_logs_no_one_in(vault: TestClient) -> None:
    key = new_key("EC")
    assert vault.post("/v1/sys/auth/jwt", json={"type": "jwt"}).status_code == 204
    config = {"jwt_validation_pubkeys": [public_pem(key)]}
    assert vault.post("/v1/auth/jwt/config", json=config).status_code == 204
    role = {
        "role_type": "jwt",
        "user_claim": "sub",
        "bound_audiences": ["cipherd"],
        "claim_mappings": {"team": "team"},
    }
    assert vault.post("/v1/auth/jwt/role/r", json=role).status_code == 204
    now = int(time.time())
    claims = f'{{"aud": "cipherd", "iat": {now}, "exp": {now + 300}'

    def login(odd: str) -> int:
        payload = f"{claims}, {odd}}}".encode()
        token = jws.serialize_compact({"alg": "ES256", "kid": key.kid}, payload, key)
        answer = vault.post("/v1/auth/jwt/login", json={"role": "r", "jwt": token})
        return answer.status_code

    for odd in (
        f'"sub": "{LONE_SURROGATE}"',
        f'"sub": "ci", "team": "{LONE_SURROGATE}"',
        '"sub": NaN',
        '"sub": "ci", "team": Infinity',
    ):
        assert login(odd) == 400, odd
    listed = vault.get("/v1/tokens")
    assert listed.status_code == 200, listed.text
    assert login('"sub": "ci", "team": "\\ud83d\\ude80"') == 200


def test_a_transit_backup_holds_only_json(vault: TestClient) -> None:
    created = {"exportable": True, "allow_plaintext_backup": True}
    assert vault.post("/v1/transit/keys/ledger", json=created).status_code in (200, 204)
    backup = vault.get("/v1/transit/backup/ledger").json()["data"]["backup"]
    text = base64.b64decode(backup).decode()
    info = '"backup_info":{"time":"'
    assert info in text
    for changed in (
        text.replace(info, info + LONE_SURROGATE),  # the time's text, as the fields found it
        text.replace(info, '"odd":NaN,' + info),
        text.replace(info, '"odd":1e400,' + info),
    ):
        restored = base64.b64encode(changed.encode()).decode()
        answer = vault.post("/v1/transit/restore/copy", json={"backup": restored})
        assert answer.status_code == 400, answer.text
        assert vault.get("/v1/transit/keys/copy").status_code == 404


def test_numbers_json_cannot_write_back_are_refused(vault: TestClient) -> None:
    """1e400 reads as an infinity, which the answer would write as `Infinity`, text Go's JSON
    reader (the `bao` command's, Vault Agent's) refuses: data to wrap, a JWT's claims or header,
    a JWT role's bound claims. Large but finite numbers stay as they were given."""
    wrap = {"X-Vault-Wrap-TTL": "60"}
    for body in (b'{"a": 1e400}', b'{"a": [-1e400]}', b'{"a": NaN}', b'{"a": Infinity}'):
        answer = vault.post("/v1/sys/wrapping/wrap", content=body, headers=wrap)
        assert answer.status_code == 400, (body, answer.text)
    wrapped = vault.post("/v1/sys/wrapping/wrap", content=b'{"a": 1e300}', headers=wrap)
    token = wrapped.json()["wrap_info"]["token"]
    unwrapped = vault.post("/v1/sys/wrapping/unwrap", json={"token": token})
    assert unwrapped.json()["data"] == {"a": 1e300}
    assert vault.post("/v1/keys", json={"name": "signer", "type": "ed25519"}).status_code == 201
    now = int(time.time())
    claims = f'{{"sub": "s", "exp": {now + 300}, "x": 1e400}}'
    for body in (f'{{"claims": {claims}}}', '{"claims": {"sub": "s"}, "header": {"x": -1e400}}'):
        signed = vault.post(
            "/v1/jwt/signer/sign", content=body, headers={"Content-Type": "application/json"}
        )
        assert signed.status_code == 422, signed.text
    assert vault.post("/v1/sys/auth/jwt", json={"type": "jwt"}).status_code == 204
    role = b'{"role_type": "jwt", "user_claim": "sub", "bound_claims": {"level": 1e400}}'
    answer = vault.post("/v1/auth/jwt/role/r", content=role)
    assert answer.status_code == 400, answer.text
    assert vault.get("/v1/auth/jwt/role/r").status_code == 404
