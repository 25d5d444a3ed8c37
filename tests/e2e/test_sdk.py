"""The Python SDK (`import cipherd`) against a live service: every family round-trips, problems
come back as their exception classes, idempotent calls are retried after 429/503 as
Retry-After says (and others are not), and the package imports nothing of the server."""

import asyncio
import base64
import http.server
import io
import itertools
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import ecies as eciespy
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, mldsa, padding, rsa, utils
from ecies.keys import PrivateKey
from joserfc import jwt as joserfc_jwt
from joserfc.jwk import KeySet

import cipherd
from cipherd.fe_local import FeDecryptor, QfeEncryptor
from tests.e2e.server import Server, running

pytestmark = pytest.mark.e2e

ADMIN_TOKEN = "sdk-admin-" + secrets.token_urlsafe(16)
PREFIX = b"cipherd:v1:"  # a stored key's ciphertexts name the key version


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {"CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN, "CIPHERD_FE_MAX_DIMENSION": "8"}
    with running(tmp_path_factory.mktemp("sdk") / "data", env=env) as started:
        yield started


@pytest.fixture
def client(server: Server) -> Iterator[cipherd.Client]:
    with cipherd.Client(server.url, token=ADMIN_TOKEN) as sdk:
        yield sdk


def _name(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


def test_the_package_imports_none_of_the_server() -> None:
    probe = (
        "import sys, cipherd; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'fastapi', 'starlette', 'uvicorn', 'psycopg', 'petrelic', 'app', 'core', 'pydantic'}))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]"


def test_keys_and_tokens(client: cipherd.Client, server: Server) -> None:
    name = _name("sdk-keys")
    created = client.keys.create(name, "ecies-x25519", exportable=True)
    assert (created.name, created.type, created.latest_version) == (name, "ecies-x25519", 1)
    assert client.keys.rotate(name).latest_version == 2
    assert [v.version for v in client.keys.get(name).versions or []] == [1, 2]
    assert len(client.keys.public(name, version=1).public_key) == 32
    assert len(client.keys.export(name).secret) == 32
    with pytest.raises(cipherd.KeyExists) as exists:
        client.keys.create(name, "aez")
    assert exists.value.status == 409
    assert exists.value.type == "urn:cipherd:problem:key-exists"

    client.keys.create(f"{name}-b", "aez")
    first = client.keys.list(limit=1)
    assert len(first.keys) == 1 and first.next == first.keys[0].name
    assert name in {key.name for key in client.keys.list(limit=1000).keys}

    issued = client.tokens.create([f"{name}*"], ["public"], description="sdk", ttl_seconds=60)
    other = client.tokens.create([f"{name}*"], ["read"], ttl_seconds=60)
    first = client.tokens.list(limit=1)
    assert len(first.tokens) == 1 and first.next == first.tokens[0].id
    listed, after = [], None
    while True:
        page = client.tokens.list(limit=2, after=after)
        listed += [token.id for token in page.tokens]
        if page.next is None:
            break
        after = page.next
    assert listed == sorted(listed) and {issued.id, other.id} <= set(listed)
    client.tokens.revoke(other.id)
    with cipherd.Client(server.url, token=issued.token) as scoped:
        assert scoped.keys.public(name).version == 2
        with pytest.raises(cipherd.Forbidden):
            scoped.ecies.encrypt(name, b"x")
        with pytest.raises(cipherd.Forbidden):
            scoped.keys.create(_name("sdk-no"), "aez")
    client.tokens.revoke(issued.id)
    with (
        cipherd.Client(server.url, token=issued.token) as revoked,
        pytest.raises(cipherd.Unauthorized),
    ):
        revoked.keys.public(name)

    updated = client.keys.update(name, min_decryption_version=2)
    assert updated.min_decryption_version == 2
    assert client.keys.trim(name).versions is not None
    scheduled = client.keys.delete(name)
    assert scheduled.state == client.keys.get(name).state
    assert client.keys.restore(name).deletion_date is None
    with pytest.raises(cipherd.InvalidInput):
        client.keys.delete(name, window_seconds=0)
    with pytest.raises(cipherd.KeyNotFound) as missing:
        client.keys.get(_name("sdk-none"))
    assert missing.value.detail and missing.value.request_id
    audit = client.audit.list(key=name, limit=50)
    assert {"keys_create_key", "keys_rotate_key"} <= {r.operation for r in audit.records}
    verification = client.audit.verify()
    assert verification.verified and verification.faults == []
    assert verification.records >= len(audit.records)
    assert verification.anchor is not None and verification.anchor.source == "file"


def test_ecies(client: cipherd.Client) -> None:
    name = _name("sdk-ecies")
    client.keys.create(name, "ecies-secp256k1", exportable=True)
    sealed = client.ecies.encrypt(name, b"hello", symmetric_nonce_length=12)
    # eciespy with its matching configuration reads what the service wrote.
    secret = client.keys.export(name).secret
    eciespy.ECIES_CONFIG.symmetric_nonce_length = 12
    try:
        assert eciespy.decrypt(secret, sealed.ciphertext.removeprefix(PREFIX)) == b"hello"
    finally:
        eciespy.ECIES_CONFIG.symmetric_nonce_length = 16
    opened = client.ecies.decrypt(name, sealed.ciphertext, symmetric_nonce_length=12)
    assert (opened.plaintext, opened.key_version) == (b"hello", 1)

    items = client.ecies.encrypt_batch(name, [b"a", b"bb"])
    ciphertexts = [item.unwrap().ciphertext for item in items]
    opened_items = client.ecies.decrypt_batch(name, [*ciphertexts, b"\x00" * 80])
    assert [item.unwrap().plaintext for item in opened_items[:2]] == [b"a", b"bb"]
    assert isinstance(opened_items[2].error, cipherd.DecryptionFailed)

    public = client.keys.public(name).public_key
    to_public = client.ecies.encrypt_to_public_key(public, b"direct")
    assert client.ecies.decrypt(name, to_public).plaintext == b"direct"

    message = secrets.token_bytes(3 * 1024 * 1024 + 5)
    sealed_file, opened_file = io.BytesIO(), io.BytesIO()
    sent: list[tuple[int, int | None]] = []
    streamed = client.ecies.encrypt_stream(
        name,
        io.BytesIO(message),
        sealed_file,
        progress=lambda done, total: sent.append((done, total)),
    )
    assert (
        streamed.key_version == 1 and streamed.length == len(PREFIX) + len(message) + 65 + 16 + 16
    )
    # One report a chunk of the body (1 MiB), of a known length.
    assert sent == [(min(n << 20, len(message)), len(message)) for n in range(1, 5)]
    chunks = iter([sealed_file.getvalue()[:1000], sealed_file.getvalue()[1000:]])
    sent.clear()
    client.ecies.decrypt_stream(
        name, chunks, opened_file, key_version=1, progress=lambda d, t: sent.append((d, t))
    )
    assert opened_file.getvalue() == message
    assert sent == [(1000, None), (streamed.length, None)]

    with pytest.raises(cipherd.DecryptionFailed) as failed:
        client.ecies.decrypt(name, b"\x04" * 100)
    assert failed.value.status == 400 and len(failed.value.request_id or "") == 32


def test_aez(client: cipherd.Client) -> None:
    name = _name("sdk-aez")
    client.keys.create(name, "aez")
    options = {"nonce": b"\x00\x01\x02\x03", "ad": [b"header"], "tau": 16}
    sealed = client.aez.encrypt(name, b"hello", **options)  # type: ignore[arg-type]
    assert sealed.ciphertext == PREFIX + sealed.ciphertext[len(PREFIX) :]
    assert len(sealed.ciphertext) == len(PREFIX) + 5 + 16
    assert client.aez.decrypt(name, sealed.ciphertext, **options).plaintext == b"hello"  # type: ignore[arg-type]
    with pytest.raises(cipherd.AuthenticationFailed):
        client.aez.decrypt(name, sealed.ciphertext, nonce=b"other", ad=[b"header"], tau=16)
    batch = client.aez.encrypt_batch(name, [b"x", b"y"], nonce=b"n")
    opened = client.aez.decrypt_batch(name, [i.unwrap().ciphertext for i in batch], nonce=b"n")
    assert [item.unwrap().plaintext for item in opened] == [b"x", b"y"]

    message = secrets.token_bytes(2 * 1024 * 1024)
    sealed_file, opened_file = io.BytesIO(), io.BytesIO()
    client.aez.encrypt_stream(name, message, sealed_file, nonce=b"n", ad=[b"a", b"b"])
    client.aez.decrypt_stream(
        name, sealed_file.getvalue(), opened_file, nonce=b"n", ad=[b"a", b"b"]
    )
    assert opened_file.getvalue() == message


def test_backup_and_bring_your_own_key(client: cipherd.Client) -> None:
    """A backup restored under another name opens what the key sealed; a secret made elsewhere
    and wrapped to the service's wrapping key opens what eciespy sealed to its public part."""
    name, copy, own = _name("sdk-backed"), _name("sdk-restored"), _name("sdk-byok")
    client.keys.create(name, "aez", allow_backup=True)
    sealed = client.aez.encrypt(name, b"kept", nonce=b"n")
    wrapping_key = client.sys.wrapping_key()
    assert len(client.sys.signing_key()) == 32  # what another instance's signers would name
    backup = client.keys.backup(name, wrapping_key)
    restored = client.keys.import_backup(backup, name=copy)
    assert (restored.name, restored.type, restored.latest_version) == (copy, "aez", 1)
    assert client.aez.decrypt(copy, sealed.ciphertext, nonce=b"n").plaintext == b"kept"

    secret = PrivateKey("secp256k1")
    wrapped = eciespy.encrypt(wrapping_key, secret.secret)
    imported = client.keys.import_material(own, "ecies-secp256k1", wrapped)
    assert imported.name == own
    outside = eciespy.encrypt(secret.public_key.to_bytes(True), b"from elsewhere")
    assert client.ecies.decrypt(own, outside).plaintext == b"from elsewhere"


def test_openssl_signing_types_and_jwts(client: cipherd.Client) -> None:
    """ECDSA on P-256, RSA and ML-DSA through the SDK, checked by pyca/cryptography with the
    key from `keys.public(format="der")`; a JWT checked by joserfc against `keys.jwks`."""
    signer = _name("sdk-p256")
    client.keys.create(signer, "ecdsa-p256")
    der = client.keys.public(signer, format="der")
    assert der.format == "der" and isinstance(der.public_key, bytes)
    public = serialization.load_der_public_key(der.public_key)
    assert isinstance(public, ec.EllipticCurvePublicKey)
    signed = client.signatures.sign(signer, b"m", format="compact", envelope=False)
    r, s = int.from_bytes(signed.signature[:32]), int.from_bytes(signed.signature[32:])
    public.verify(utils.encode_dss_signature(r, s), b"m", ec.ECDSA(hashes.SHA256()))
    assert client.signatures.sign(signer, b"m").signature.startswith(PREFIX)
    mine = ec.generate_private_key(ec.SECP256R1())
    theirs = mine.sign(b"m", ec.ECDSA(hashes.SHA256()))
    spki = mine.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert client.signatures.verify_with_public_key("ecdsa-p256", spki, b"m", theirs)
    assert not client.signatures.verify(signer, b"m", theirs)

    rsa_key = _name("sdk-rsa")
    client.keys.create(rsa_key, "rsa-2048")
    rsa_public = client.keys.public(rsa_key).public_key  # der: RSA has no raw form
    assert isinstance(rsa_public, bytes)
    pkcs1 = client.signatures.sign(rsa_key, b"m", padding="pkcs1v15", envelope=False).signature
    loaded = serialization.load_der_public_key(rsa_public)
    assert isinstance(loaded, rsa.RSAPublicKey)
    loaded.verify(pkcs1, b"m", padding.PKCS1v15(), hashes.SHA256())
    assert client.signatures.verify(rsa_key, b"m", pkcs1, padding="pkcs1v15")

    pq = _name("sdk-mldsa")
    client.keys.create(pq, "ml-dsa-65")
    raw = client.keys.public(pq).public_key
    assert isinstance(raw, bytes)
    hasher = mldsa.MLDSAMuHasher(mldsa.MLDSA65PublicKey.from_public_bytes(raw))
    hasher.update(b"a large file, hashed where it is")
    mu = hasher.finalize()
    on_mu = client.signatures.sign(pq, mu, mu=True, envelope=False).signature
    mldsa.MLDSA65PublicKey.from_public_bytes(raw).verify(on_mu, b"a large file, hashed where it is")
    assert client.signatures.verify(pq, mu, on_mu, mu=True)

    token = client.jwt.sign(signer, {"sub": "alice"}, header={"typ": "at+jwt"})
    assert token.key_version == 1
    key_set = KeySet.import_key_set(client.keys.jwks(signer))
    assert joserfc_jwt.decode(token.jwt, key_set, algorithms=["ES256"]).claims == {"sub": "alice"}
    tokens = client.jwt.sign_batch(rsa_key, [{"n": 1}, {"n": 2}], alg="RS256")
    rsa_set = KeySet.import_key_set(client.keys.jwks(rsa_key))
    decoded = [joserfc_jwt.decode(t.unwrap().jwt, rsa_set, algorithms=["RS256"]) for t in tokens]
    assert [d.claims for d in decoded] == [{"n": 1}, {"n": 2}]
    with pytest.raises(cipherd.InvalidInput):
        client.jwt.sign(signer, {}, alg="RS256")


def test_signatures_hmac_data_keys_rewrap_and_random(client: cipherd.Client) -> None:
    signer = _name("sdk-eth")
    client.keys.create(signer, "ecdsa-secp256k1")
    public = client.keys.public(signer).public_key
    signed = client.signatures.sign(signer, b"m", hash="keccak256", format="recoverable")
    assert len(signed.signature) == 65 and signed.key_version == 1
    assert client.signatures.verify(
        signer, b"m", signed.signature, hash="keccak256", format="recoverable"
    )
    assert not client.signatures.verify(signer, b"n", signed.signature, format="recoverable")
    der = client.signatures.sign(signer, b"m").signature
    assert client.signatures.verify_with_public_key("ecdsa-secp256k1", public, b"m", der)
    items = client.signatures.sign_batch(signer, [b"a", b"short", b"\x00" * 32], prehashed=True)
    assert [item.error.status if item.error else None for item in items] == [422, 422, None]
    verdicts = client.signatures.verify_batch(
        signer, [cipherd.Item(b"\x00" * 32, items[2].unwrap().signature), cipherd.Item(b"x", der)]
    )
    assert [item.unwrap() for item in verdicts] == [False, False]  # prehashed: not a message
    with pytest.raises(cipherd.InvalidInput):
        client.signatures.sign(signer, b"short", prehashed=True)

    mac_key = _name("sdk-mac")
    client.keys.create(mac_key, "hmac")
    mac = client.hmac.compute(mac_key, b"m", algorithm="sha512")
    assert mac.hmac.startswith(PREFIX) and len(mac.hmac) == len(PREFIX) + 64
    assert client.hmac.verify(mac_key, b"m", mac.hmac, algorithm="sha512")
    assert not client.hmac.verify(mac_key, b"m", mac.hmac)
    macs = client.hmac.compute_batch(mac_key, [b"a", b"b"])
    checks = [
        cipherd.Item(m, item.unwrap().hmac) for m, item in zip([b"a", b"c"], macs, strict=True)
    ]
    assert [i.unwrap() for i in client.hmac.verify_batch(mac_key, checks)] == [True, False]

    box = _name("sdk-box")
    client.keys.create(box, "aez")
    key = client.aez.datakey(box, size=16)
    assert key.plaintext is not None and len(key.plaintext) == 16 and key.tau == 16
    opened = client.aez.decrypt(box, key.ciphertext, nonce=key.nonce, tau=key.tau)
    assert opened.plaintext == key.plaintext
    client.keys.rotate(box)
    moved = client.aez.rewrap(box, key.ciphertext, nonce=key.nonce, tau=key.tau)
    assert moved.key_version == 2
    assert client.aez.decrypt(box, moved.ciphertext, nonce=key.nonce).plaintext == key.plaintext

    sealed = _name("sdk-sealed")
    client.keys.create(sealed, "ecies-x25519")
    wrapped = client.ecies.datakey(sealed, plaintext=False)
    assert wrapped.plaintext is None and wrapped.nonce is None
    client.keys.rotate(sealed)
    assert client.ecies.rewrap(sealed, wrapped.ciphertext).key_version == 2
    fresh = client.ecies.datakey_batch(sealed, [cipherd.Item(size=16), cipherd.Item(size=64)])
    assert [len(item.unwrap().plaintext or b"") for item in fresh] == [16, 64]
    assert {item.unwrap().key_version for item in fresh} == {2}
    moved_items = client.ecies.rewrap_batch(sealed, [wrapped.ciphertext, b"junk"])
    assert moved_items[0].unwrap().key_version == 2 and moved_items[1].error is not None
    boxes = client.aez.datakey_batch(box, [cipherd.Item(), cipherd.Item(plaintext=False)])
    assert [item.unwrap().plaintext is None for item in boxes] == [False, True]
    assert len(client.sys.random(48)) == 48


def test_fe_through_the_service_and_locally(client: cipherd.Client) -> None:
    inner, quadratic = _name("sdk-ipfe"), _name("sdk-qfe")
    client.keys.create(inner, "ipfe-opt", dimension=3)
    key = client.fe.keygen(inner, y=[1, 2, 3])
    sealed = client.fe.encrypt(inner, [4, 5, 6])
    assert client.fe.decrypt(inner, key.functional_key, sealed.ciphertext, (0, 100)) == 32
    assert client.fe.decrypt(inner, key.functional_key, sealed.ciphertext, (0, 10)) is None
    many = client.fe.decrypt_many(inner, key.functional_key, [sealed.ciphertext] * 2, (0, 100))
    assert [item.unwrap() for item in many] == [32, 32]
    keys = client.fe.keygen_batch(inner, [[1, 0, 0], [0, 0, 1]])
    cts = client.fe.encrypt_batch(inner, [[7, 8, 9]])
    pairs = [cipherd.Item(k.unwrap().functional_key, cts[0].unwrap().ciphertext) for k in keys]
    decrypted = client.fe.decrypt_batch(inner, pairs, bounds=(0, 20))
    assert [item.unwrap() for item in decrypted] == [7, 9]
    assert client.fe.decrypt_batch(inner, pairs[:1], bounds=(0, 5))[0].unwrap() is None
    ledger = client.fe.functions(inner)
    assert [f.function for f in ledger.functions] == [[1, 2, 3], [1, 0, 0], [0, 0, 1]]
    first = client.fe.functions(inner, limit=2)
    assert [f.function for f in first.functions] == [[1, 2, 3], [1, 0, 0]]
    assert (first.next, first.rank) == (2, 3)  # the rank of all three
    last = client.fe.functions(inner, key_version=1, after=first.next)
    assert ([f.function for f in last.functions], last.next, last.rank) == ([[0, 0, 1]], None, 3)
    with pytest.raises(cipherd.ShapeMismatch):
        client.fe.encrypt(inner, [1, 2])

    # Locally: the service's ciphertexts decrypt here, and what is encrypted here decrypts there.
    local = FeDecryptor.fetch(client, inner, key.functional_key, (0, 100))
    assert local.decrypt(sealed.ciphertext) == 32
    client.keys.create(quadratic, "qfe-sgp", dimension=2)
    f = [[1, 2], [3, 4]]
    functional = client.fe.keygen(quadratic, f=f).functional_key
    here = QfeEncryptor.fetch(client, quadratic).encrypt([1, 2], [3, 4])
    expected = 1 * 1 * 3 + 1 * 2 * 4 + 2 * 3 * 3 + 2 * 4 * 4  # xᵀFy
    assert client.fe.decrypt(quadratic, functional, here.ciphertext, (0, 100)) == expected
    there = client.fe.encrypt(quadratic, [1, 2], y=[3, 4]).ciphertext
    assert FeDecryptor.fetch(client, quadratic, functional, (0, 100)).decrypt(there) == expected
    # A batch item of more than its first argument: the quadratic forms' f, and x with y.
    functionals = client.fe.keygen_batch(quadratic, [cipherd.Item(f=f)])
    both = client.fe.encrypt_batch(quadratic, [cipherd.Item([1, 2], y=[3, 4])])
    pair = cipherd.Item(functionals[0].unwrap().functional_key, both[0].unwrap().ciphertext)
    assert client.fe.decrypt_batch(quadratic, [pair], bounds=(0, 100))[0].unwrap() == expected
    with pytest.raises(ValueError, match="at least one item"):
        client.fe.encrypt_batch(quadratic, [])


def test_the_async_client(server: Server) -> None:
    async def scenario() -> None:
        async with cipherd.AsyncClient(server.url, token=ADMIN_TOKEN) as client:
            name = _name("sdk-async")
            await client.keys.create(name, "ecies-ed25519")
            results = await asyncio.gather(
                *(client.ecies.encrypt(name, bytes([i])) for i in range(8))
            )
            opened = [await client.ecies.decrypt(name, r.ciphertext) for r in results]
            assert [o.plaintext for o in opened] == [bytes([i]) for i in range(8)]
            sink = io.BytesIO()
            await client.ecies.encrypt_stream(name, io.BytesIO(b"s" * 100_000), sink)
            back = io.BytesIO()
            await client.ecies.decrypt_stream(name, sink.getvalue(), back)
            assert back.getvalue() == b"s" * 100_000
            with pytest.raises(cipherd.KeyNotFound):
                await client.keys.get(_name("sdk-none"))

    asyncio.run(scenario())


def test_names_and_tokens_no_request_can_carry_are_refused_before_one(
    client: cipherd.Client, server: Server
) -> None:
    """A name of "." or ".." moved within the path (`keys.get(".")` was `GET /v1/keys/`, the
    listing, then a TypeError); a token outside visible ASCII was a UnicodeEncodeError when
    sent, or with a line break an UnreachableError."""
    for name in ("", ".", ".."):
        with pytest.raises(ValueError, match="not a key name"):
            client.keys.get(name)
        with pytest.raises(ValueError, match="not a key name"):
            client.hmac.verify(name, b"x", b"y")
    for token in ("tök", "a\nb"):
        with pytest.raises(ValueError, match="visible ASCII"):
            cipherd.Client(server.url, token=token)


def test_settings_from_the_environment(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(ADMIN_TOKEN + "\n")
    monkeypatch.setenv("CIPHERD_ADDR", server.url)
    monkeypatch.delenv("CIPHERD_TOKEN", raising=False)
    monkeypatch.setenv("CIPHERD_TOKEN_FILE", str(token_file))
    with cipherd.Client() as client:
        assert client.sys.ready() == "ok"
        assert client.sys.keyring().term >= 1
    monkeypatch.setenv("CIPHERD_ADDR", "http://127.0.0.1:9")
    with (
        cipherd.Client(retries=cipherd.Retries(attempts=1)) as client,
        pytest.raises(cipherd.UnreachableError),
    ):
        client.keys.list()


class _Overloaded(http.server.BaseHTTPRequestHandler):
    """Answers the first `busy` requests with a 503 and Retry-After: 1, then 200."""

    busy = 2
    seen: list[tuple[str, float]] = []  # noqa: RUF012 (one server per test)

    def _answer(self) -> None:
        self.seen.append((self.command, time.monotonic()))
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if len(self.seen) <= self.busy:
            body = (
                b'{"type": "urn:cipherd:problem:store-unavailable", "title": "Store unavailable",'
            )
            body += b' "status": 503, "detail": "try later"}'
            self.send_response(503)
            self.send_header("Retry-After", "1")
            self.send_header("Content-Type", "application/problem+json")
        else:
            body = b'{"status": "ok"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def overloaded() -> Iterator[str]:
    _Overloaded.seen = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Overloaded)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


def test_idempotent_calls_wait_as_retry_after_says(overloaded: str) -> None:
    with cipherd.Client(overloaded, token="t") as client:
        assert client.sys.ready() == "ok"
    times = [when for _, when in _Overloaded.seen]
    assert len(times) == 3
    assert all(later - earlier >= 0.95 for earlier, later in itertools.pairwise(times))


def test_other_calls_are_not_retried(overloaded: str) -> None:
    with (
        cipherd.Client(overloaded, token="t") as client,
        pytest.raises(cipherd.StoreUnavailable) as busy,
    ):
        client.keys.create("k", "aez")
    assert busy.value.retry_after == 1.0 and busy.value.status == 503
    assert [method for method, _ in _Overloaded.seen] == ["POST"]


def test_b64_helper_matches_the_service() -> None:
    assert base64.b64decode(cipherd._calls.b64(b"\xff\x00")) == b"\xff\x00"


GIB = 1 << 30
STREAM_SCRIPT = """
import sys, cipherd

def kib(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])

url, token, name, plain, sealed, opened = sys.argv[1:]
with cipherd.Client(url, token=token, timeout=600) as client:
    start = kib("VmRSS")
    with open(plain, "rb") as source, open(sealed, "wb") as sink:
        client.ecies.encrypt_stream(name, source, sink)
    with open(sealed, "rb") as source, open(opened, "wb") as sink:
        client.ecies.decrypt_stream(name, source, sink)
    print(kib("VmHWM") - start)
"""


def _digest(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


@pytest.mark.slow
def test_a_gibibyte_streams_through_in_bounded_memory(tmp_path: Path) -> None:
    # A body of 1 GiB is over the default raw limit and the in-flight body budget.
    env = {
        "CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN,
        "CIPHERD_MAX_BODY_BYTES": str(GIB + (1 << 20)),
        "CIPHERD_BODY_MEMORY_BYTES": str(2 * GIB + (1 << 20)),
    }
    plain, sealed, opened = tmp_path / "plain", tmp_path / "sealed", tmp_path / "opened"
    block = secrets.token_bytes(1 << 20)
    with plain.open("wb") as file:
        for i in range(GIB >> 20):
            file.write(i.to_bytes(8, "big") + block[8:])
    try:
        with running(tmp_path / "data", env=env) as server:
            with cipherd.Client(server.url, token=ADMIN_TOKEN) as client:
                client.keys.create("big", "ecies-secp256k1")
            args = [server.url, ADMIN_TOKEN, "big", str(plain), str(sealed), str(opened)]
            run = subprocess.run(
                [sys.executable, "-c", STREAM_SCRIPT, *args],
                capture_output=True,
                text=True,
                timeout=600,
            )
        assert run.returncode == 0, run.stderr
        growth_mib = int(run.stdout) / 1024
        assert sealed.stat().st_size == len(PREFIX) + GIB + 65 + 16 + 16
        assert _digest(opened) == _digest(plain)
        assert growth_mib < 100, f"the client grew by {growth_mib:.0f} MiB"
    finally:
        for path in (plain, sealed, opened):
            path.unlink(missing_ok=True)


def test_aead_hpke_and_rsa(client: cipherd.Client) -> None:
    """The encryption families' calls: AEAD with a derived convergent key (batch, stream,
    data key, rewrap), HPKE with a stored key and to its public key, RSA-OAEP."""
    name = _name("sdk-aead")
    created = client.keys.create(name, "aes256-gcm", derived=True, convergent=True)
    assert (created.derived, created.convergent) == (True, True)
    options = {"associated_data": b"hdr", "context": b"tenant"}
    sealed = client.aead.encrypt(name, b"hello", **options)
    assert sealed.ciphertext.startswith(PREFIX) and len(sealed.ciphertext) == 11 + 12 + 5 + 16
    assert client.aead.encrypt(name, b"hello", **options) == sealed  # convergent
    assert client.aead.decrypt(name, sealed.ciphertext, **options).plaintext == b"hello"
    with pytest.raises(cipherd.DecryptionFailed):
        client.aead.decrypt(name, sealed.ciphertext, context=b"other")
    batch = client.aead.encrypt_batch(name, [b"x", b"y"], context=b"c")
    opened = client.aead.decrypt_batch(name, [i.unwrap().ciphertext for i in batch], context=b"c")
    assert [item.unwrap().plaintext for item in opened] == [b"x", b"y"]
    message = secrets.token_bytes(1024 * 1024)
    sealed_file, opened_file = io.BytesIO(), io.BytesIO()
    client.aead.encrypt_stream(name, message, sealed_file, **options)
    client.aead.decrypt_stream(name, sealed_file.getvalue(), opened_file, **options)
    assert opened_file.getvalue() == message
    key = client.aead.datakey(name, size=16, context=b"c")
    assert client.aead.decrypt(name, key.ciphertext, context=b"c").plaintext == key.plaintext
    client.keys.rotate(name)
    moved = client.aead.rewrap(name, sealed.ciphertext, **options)
    assert moved.key_version == 2

    box = _name("sdk-hpke")
    client.keys.create(box, "hpke-mlkem768-x25519")
    sealed = client.hpke.encrypt(box, b"pq", info=b"i", aad=b"a")
    assert client.hpke.decrypt(box, sealed.ciphertext, info=b"i", aad=b"a").plaintext == b"pq"
    public = client.keys.public(box).public_key
    payload = client.hpke.encrypt_to_public_key("hpke-mlkem768-x25519", public, b"to it")
    assert client.hpke.decrypt(box, payload).plaintext == b"to it"
    sealed_file, opened_file = io.BytesIO(), io.BytesIO()
    client.hpke.encrypt_stream(box, message, sealed_file, info=b"i")
    client.hpke.decrypt_stream(box, sealed_file.getvalue(), opened_file, info=b"i")
    assert opened_file.getvalue() == message
