"""Keys moving between a real OpenBao and cipherd through Transit's backup and restore.

For each key type, both ways: a key with two versions is made on one server, which encrypts,
makes data keys, signs (JWS-marshaled too) and HMACs under each version; its `transit/backup` is
restored into the other server (`transit/restore`), which must open every ciphertext, accept
every signature and HMAC, and make the same HMACs; then the other server does the same under the
migrated key, and the first one must open and accept all of it. Everything goes through hvac, as
an application moving from one to the other would call them. A key moved from OpenBao is then
backed up by cipherd's own backup and imported under another name, which must still open and
accept what OpenBao made: OpenBao's HMAC keys, one per version, go with it.
"""

import base64
import hashlib
import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import hvac
import pytest

from tests.e2e.openbao import running_openbao
from tests.e2e.server import running

pytestmark = pytest.mark.e2e

ADMIN_TOKEN = "migration-admin-" + secrets.token_urlsafe(16)
CONTEXT = base64.b64encode(b"tenant-7").decode()


@dataclass(frozen=True)
class Kind:
    """A key type and what Transit does with it."""

    transit_type: str
    encrypts: bool = False
    signatures: tuple[dict[str, str], ...] = ()
    derived: bool = False
    convergent: bool = False
    key_size: int = 64  # an hmac key's


# The input signed as it is (a digest the caller made): for RSA, with no DigestInfo.
UNHASHED = {"signature_algorithm": "pkcs1v15", "hash_algorithm": "none", "prehashed": True}

KINDS = {
    "aes256-gcm96": Kind("aes256-gcm96", encrypts=True),
    "aes128-gcm96": Kind("aes128-gcm96", encrypts=True),
    "chacha20-poly1305": Kind("chacha20-poly1305", encrypts=True),
    "xchacha20-poly1305": Kind("xchacha20-poly1305", encrypts=True),
    "xchacha20-poly1305 convergent": Kind(
        "xchacha20-poly1305", encrypts=True, derived=True, convergent=True
    ),
    "aes256-gcm96 derived": Kind("aes256-gcm96", encrypts=True, derived=True),
    "aes256-gcm96 convergent": Kind("aes256-gcm96", encrypts=True, derived=True, convergent=True),
    "ed25519": Kind("ed25519", signatures=({}, {"marshaling_algorithm": "jws"})),
    "ed25519 derived": Kind(
        "ed25519",
        signatures=({"context": CONTEXT}, {"context": CONTEXT, "marshaling_algorithm": "jws"}),
        derived=True,
    ),
    "ecdsa-p256": Kind(
        "ecdsa-p256",
        signatures=(
            {},
            {"marshaling_algorithm": "jws"},
            {"hash_algorithm": "sha2-384"},
            {"hash_algorithm": "sha1"},
            {"hash_algorithm": "sha2-224"},
            {"hash_algorithm": "sha3-256"},
            UNHASHED,
        ),
    ),
    "ecdsa-p384": Kind("ecdsa-p384", signatures=({"hash_algorithm": "sha2-384"}, UNHASHED)),
    "rsa-2048": Kind(
        "rsa-2048",
        encrypts=True,
        signatures=(
            {},
            {"salt_length": "hash"},
            {"signature_algorithm": "pkcs1v15", "hash_algorithm": "sha2-512"},
            {"signature_algorithm": "pkcs1v15", "marshaling_algorithm": "jws"},
            {"signature_algorithm": "pkcs1v15", "hash_algorithm": "sha1"},
            {"signature_algorithm": "pkcs1v15", "hash_algorithm": "sha3-256"},
            UNHASHED,
            {"hash_algorithm": "sha2-224"},
            {"hash_algorithm": "sha3-512"},
        ),
    ),
    "hmac": Kind("hmac"),
}
# OpenBao's hmac keys may be of 32 to 512 bytes; cipherd makes keys of 64.
FROM_OPENBAO = {**KINDS, "hmac 32-byte": Kind("hmac", key_size=32)}


@dataclass
class Made:
    """What one server made under a key: (version, plaintext, ciphertext), (options, input,
    signature) and (input, HMAC)."""

    ciphertexts: list[tuple[int, str, str]] = field(default_factory=list)
    signatures: list[tuple[dict[str, str], str, str]] = field(default_factory=list)
    hmacs: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Servers:
    openbao: hvac.Client
    cipherd: hvac.Client

    def __iter__(self) -> Iterator[hvac.Client]:
        return iter((self.openbao, self.cipherd))


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    work = tmp_path_factory.mktemp("transit-migration")
    env = {"CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN}
    with running(work / "cipherd", env=env) as cipherd, running_openbao(work) as openbao:
        yield Servers(
            hvac.Client(url=openbao.url, token=openbao.token),
            hvac.Client(url=cipherd.url, token=ADMIN_TOKEN),
        )


def text(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def context(kind: Kind) -> dict[str, str]:
    return {"context": CONTEXT} if kind.derived else {}


def create(client: hvac.Client, name: str, kind: Kind) -> None:
    """The key, by Transit's own path (hvac's `create_key` refuses aes128-gcm96 and hmac)."""
    settings: dict[str, Any] = {
        "type": kind.transit_type,
        "exportable": True,
        "allow_plaintext_backup": True,
        "derived": kind.derived,
        "convergent_encryption": kind.convergent,
    }
    if kind.transit_type == "hmac":
        settings["key_size"] = kind.key_size
    client.write_data(f"transit/keys/{name}", data=settings)


def make(client: hvac.Client, name: str, kind: Kind, version: int, made: Made) -> None:
    """Encrypt, sign and HMAC under `version` of the key, into `made`."""
    transit = client.secrets.transit
    plaintext = text(f"order {secrets.token_hex(4)} under v{version}".encode())
    if kind.encrypts:
        answer = transit.encrypt_data(
            name=name, plaintext=plaintext, key_version=version, **context(kind)
        )
        ciphertext = answer["data"]["ciphertext"]
        assert ciphertext.startswith(f"vault:v{version}:")
        made.ciphertexts.append((version, plaintext, ciphertext))
    if kind.encrypts and not kind.convergent:
        # A data key's ciphertext is an encryption like the others (hvac's call takes no version).
        data_key = client.write_data(
            f"transit/datakey/plaintext/{name}", data={"key_version": version, **context(kind)}
        )["data"]
        assert data_key["ciphertext"].startswith(f"vault:v{version}:")
        made.ciphertexts.append((version, data_key["plaintext"], data_key["ciphertext"]))
    for options in kind.signatures:
        signature = signed(client, name, plaintext, version, options)
        if options.get("marshaling_algorithm") == "jws":  # unpadded base64url
            assert not set(signature.split(":")[2]) & set("+/="), signature
        made.signatures.append((options, plaintext, signature))
    mac = transit.generate_hmac(name=name, hash_input=plaintext, key_version=version)
    made.hmacs.append((plaintext, mac["data"]["hmac"]))


# The hashes hvac's own checks refuse before sending (Transit takes them): given in the path.
BEYOND_HVAC = ("sha1", "sha3-224", "sha3-256", "sha3-384", "sha3-512", "none")


def by_hvac_or_path(
    client: hvac.Client, verb: str, name: str, options: dict, body: dict, by_hvac: Any
) -> Any:
    """`by_hvac()`, or for a hash hvac refuses, the same at Transit's path that names it."""
    hash_algorithm = options.get("hash_algorithm")
    if hash_algorithm not in BEYOND_HVAC:
        return by_hvac()
    rest = {k: v for k, v in options.items() if k != "hash_algorithm"}
    return client.write_data(f"transit/{verb}/{name}/{hash_algorithm}", data={**body, **rest})


def as_signed(message: str, options: dict) -> str:
    """The input a signature with `options` is of: with no hash, a digest (of SHA-224, which
    no curve's default is)."""
    if options.get("hash_algorithm") != "none":
        return message
    return text(hashlib.sha224(base64.b64decode(message)).digest())


def signed(client: hvac.Client, name: str, message: str, version: int, options: dict) -> str:
    message = as_signed(message, options)
    body = {"input": message, "key_version": version}
    transit = client.secrets.transit
    answer = by_hvac_or_path(
        client,
        "sign",
        name,
        options,
        body,
        lambda: transit.sign_data(name=name, hash_input=message, key_version=version, **options),
    )
    return str(answer["data"]["signature"])


def verified(client: hvac.Client, name: str, message: str, signature: str, options: dict) -> bool:
    message = as_signed(message, options)
    body = {"input": message, "signature": signature}
    transit = client.secrets.transit
    answer = by_hvac_or_path(
        client,
        "verify",
        name,
        options,
        body,
        lambda: transit.verify_signed_data(
            name=name, hash_input=message, signature=signature, **options
        ),
    )
    return bool(answer["data"]["valid"])


def made_on(client: hvac.Client, name: str, kind: Kind, versions: tuple[int, ...]) -> Made:
    made = Made()
    for version in versions:
        make(client, name, kind, version, made)
    return made


def assert_opens(client: hvac.Client, name: str, kind: Kind, made: Made) -> None:
    """Every ciphertext decrypts, every signature and HMAC verifies on `client`, which also
    makes the very same HMACs (and, for a convergent key, the very same ciphertexts)."""
    transit = client.secrets.transit
    for version, plaintext, ciphertext in made.ciphertexts:
        answer = transit.decrypt_data(name=name, ciphertext=ciphertext, **context(kind))
        assert answer["data"]["plaintext"] == plaintext, (name, ciphertext)
        if kind.convergent:
            again = transit.encrypt_data(
                name=name, plaintext=plaintext, key_version=version, **context(kind)
            )
            assert again["data"]["ciphertext"] == ciphertext
    for options, message, signature in made.signatures:
        assert verified(client, name, message, signature, options), (name, options, signature)
        other = text(b"another message")
        assert not verified(client, name, other, signature, options), (name, options)
    for message, mac in made.hmacs:
        verdict = transit.verify_signed_data(name=name, hash_input=message, hmac=mac)
        assert verdict["data"]["valid"] is True, (name, mac)
        version = int(mac.split(":")[1][1:])
        again = transit.generate_hmac(name=name, hash_input=message, key_version=version)
        assert again["data"]["hmac"] == mac


def migrate(source: hvac.Client, target: hvac.Client, name: str) -> dict[str, Any]:
    """The key `name` backed up on `source` and restored into `target`; its settings there."""
    backup = source.secrets.transit.backup_key(name=name)["data"]["backup"]
    target.secrets.transit.restore_key(backup=backup, name=name)
    return target.secrets.transit.read_key(name=name)["data"]


def key_name(case: str) -> str:
    return case.replace(" ", "-") + "-" + secrets.token_hex(3)


def copied_natively(cipherd: hvac.Client, name: str) -> str:
    """The key `name` backed up by cipherd's own backup and imported under another name there;
    that name."""
    copy = f"{name}-copy"
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with httpx.Client(base_url=cipherd.url, headers=admin) as http:
        to = {"wrapping_key": http.get("/v1/sys/wrapping-key").json()["public_key"]}
        blob = http.post(f"/v1/keys/{name}/backup", json=to).json()["backup"]
        answer = http.post("/v1/keys/import", json={"backup": blob, "name": copy})
        assert answer.status_code == 201, answer.text
    return copy


def check_both_ways(
    source: hvac.Client, target: hvac.Client, kind: Kind, case: str
) -> tuple[str, Made]:
    """The module's checks for one key: its name, and what the source made under it before it
    moved."""
    name = key_name(case)
    create(source, name, kind)
    source.secrets.transit.rotate_key(name=name)
    before = made_on(source, name, kind, (1, 2))

    settings = migrate(source, target, name)
    assert settings["type"] == kind.transit_type
    assert settings["latest_version"] == 2
    if kind.transit_type == "hmac":  # Transit shows an hmac key's size, not its versions
        assert settings["key_size"] == kind.key_size
    else:
        assert sorted(settings["keys"]) == ["1", "2"]
    assert settings["exportable"] is True and settings["allow_plaintext_backup"] is True
    assert settings["derived"] is kind.derived
    assert settings.get("convergent_encryption", False) is kind.convergent
    assert_opens(target, name, kind, before)

    after = made_on(target, name, kind, (1, 2))
    assert_opens(source, name, kind, after)
    return name, before


@pytest.mark.parametrize("case", list(FROM_OPENBAO))
def test_an_openbao_key_moves_to_cipherd(servers: Servers, case: str) -> None:
    kind = FROM_OPENBAO[case]
    name, made_there = check_both_ways(servers.openbao, servers.cipherd, kind, case)
    assert_opens(servers.cipherd, copied_natively(servers.cipherd, name), kind, made_there)


@pytest.mark.parametrize("case", list(KINDS))
def test_a_cipherd_key_moves_to_openbao(servers: Servers, case: str) -> None:
    check_both_ways(servers.cipherd, servers.openbao, KINDS[case], case)


def test_a_key_goes_there_and_back(servers: Servers) -> None:
    """A key made in OpenBao, moved here, rotated here and moved back keeps all three versions
    and what each side made under them."""
    kind, name = KINDS["aes256-gcm96"], key_name("round-trip")
    create(servers.openbao, name, kind)
    servers.openbao.secrets.transit.rotate_key(name=name)
    there = made_on(servers.openbao, name, kind, (1, 2))
    migrate(servers.openbao, servers.cipherd, name)
    servers.cipherd.secrets.transit.rotate_key(name=name)
    here = made_on(servers.cipherd, name, kind, (1, 2, 3))
    backup = servers.cipherd.secrets.transit.backup_key(name=name)["data"]["backup"]
    servers.openbao.secrets.transit.restore_key(backup=backup, name=name, force=True)
    assert servers.openbao.secrets.transit.read_key(name=name)["data"]["latest_version"] == 3
    assert_opens(servers.openbao, name, kind, there)
    assert_opens(servers.openbao, name, kind, here)


def test_a_backup_cipherd_cannot_take_is_refused(servers: Servers) -> None:
    """A tampered backup (an ECDSA scalar off its public point) is a 400, and no key is made."""
    kind, name = KINDS["ecdsa-p256"], key_name("tampered")
    create(servers.openbao, name, kind)
    backup = servers.openbao.secrets.transit.backup_key(name=name)["data"]["backup"]
    document = json.loads(base64.b64decode(backup))
    document["policy"]["keys"]["1"]["ec_d"] += 1
    tampered = base64.b64encode(json.dumps(document).encode()).decode()
    with pytest.raises(hvac.exceptions.InvalidRequest, match="ec_x and ec_y"):
        servers.cipherd.secrets.transit.restore_key(backup=tampered, name=name)
    with pytest.raises(hvac.exceptions.InvalidPath):
        servers.cipherd.secrets.transit.read_key(name=name)


def test_a_derived_ed25519_key_signs_as_on_openbao(servers: Servers) -> None:
    """The same key on both (made in OpenBao, moved here) gives the same signatures and public
    keys for each context: Ed25519 is deterministic. Without a context, OpenBao answers 500
    where cipherd answers Vault's words as a 400; the key shows no public key of its own."""
    kind, name = KINDS["ed25519 derived"], key_name("derived-signing")
    create(servers.openbao, name, kind)
    servers.openbao.secrets.transit.rotate_key(name=name)
    migrate(servers.openbao, servers.cipherd, name)
    message = text(b"the same message")
    for context_text in (CONTEXT, text(b"another tenant")):
        seen = []
        for client in servers:
            transit = client.secrets.transit
            signed = transit.sign_data(name=name, hash_input=message, context=context_text)
            path = f"/v1/transit/keys/{name}"
            read = client.adapter.get(path, params={"context": context_text})["data"]["keys"]
            seen.append(
                (
                    signed["data"]["signature"],
                    signed["data"]["public_key"],
                    {version: shown["public_key"] for version, shown in read.items()},
                )
            )
        assert seen[0] == seen[1]
        assert seen[0][1] == seen[0][2]["2"]  # the latest version signed
    for client in servers:
        plain = client.secrets.transit.read_key(name=name)["data"]
        assert plain["supports_derivation"] is True
        assert {shown["public_key"] for shown in plain["keys"].values()} == {""}
        with pytest.raises((hvac.exceptions.InvalidRequest, hvac.exceptions.InternalServerError)):
            client.secrets.transit.sign_data(name=name, hash_input=message)
    with pytest.raises(hvac.exceptions.InvalidRequest, match="missing 'context'"):
        servers.cipherd.secrets.transit.sign_data(name=name, hash_input=message)


@pytest.mark.parametrize("case", ["ecdsa-p256", "rsa-2048", "ed25519", "aes256-gcm96"])
def test_exported_keys_read_as_openbaos_do(servers: Servers, case: str) -> None:
    """A key moved here exports the material OpenBao exports for it, in OpenBao's encoding (PEM
    of SEC1 and PKCS#1 for ECDSA and RSA, base64 for the others), for every export type
    OpenBao gives for its type, and the same refusals for the ones it does not (a 400 here
    where OpenBao answers some with a 500)."""
    kind, name = KINDS[case], key_name("export-" + case)
    create(servers.openbao, name, kind)
    servers.openbao.secrets.transit.rotate_key(name=name)
    migrate(servers.openbao, servers.cipherd, name)
    for export_type in ("encryption-key", "signing-key", "hmac-key", "public-key"):
        seen = {}
        for server, client in (("openbao", servers.openbao), ("cipherd", servers.cipherd)):
            refusals: tuple[type[Exception], ...] = (hvac.exceptions.InvalidRequest,)
            if server == "openbao":
                refusals += (hvac.exceptions.InternalServerError,)
            try:
                answer = client.read(f"transit/export/{export_type}/{name}")
                seen[server] = answer["data"]["keys"]
            except refusals:
                seen[server] = "refused"
        assert seen["cipherd"] == seen["openbao"], export_type
    shown = [client.secrets.transit.read_key(name=name)["data"] for client in servers]
    if kind.signatures:  # each version's name and public key, as OpenBao shows them
        versions = [
            {n: (v["name"], v["public_key"]) for n, v in data["keys"].items()} for data in shown
        ]
        assert versions[0] == versions[1]
