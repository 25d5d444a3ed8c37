"""KMS's cryptographic actions with boto3 against a real server: Encrypt, Decrypt, ReEncrypt,
the data keys and key pairs, GenerateRandom, Sign, Verify, GetPublicKey, GenerateMac and
VerifyMac, with AWS's documented results and errors; public keys, signatures and key pairs
checked with pyca/cryptography, and every answer's members checked against botocore's own
model of the action's output."""

import base64
import hashlib
import hmac
import json
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, mldsa, padding, rsa, utils

from tests.e2e.kms import (
    ACCOUNT,
    REGION,
    Credentials,
    credentials,
    error_of,
    kms_client,
    signed_post,
    started,
)
from tests.e2e.server import Server

pytestmark = pytest.mark.e2e
MESSAGE = b"a message of the KMS door's tests"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from started(tmp_path_factory.mktemp("kms-crypto"))


@pytest.fixture(scope="module")
def creds(server: Server) -> Credentials:
    return credentials(server)


@pytest.fixture(scope="module")
def kms(server: Server, creds: Credentials) -> Any:
    return kms_client(server, creds)


def native_key(server: Server, name: str, key_type: str) -> str:
    with server.client() as http:
        created = http.post("/v1/keys", json={"name": name, "type": key_type})
    assert created.status_code == 201, created.text
    return name


def created_key(kms: Any, spec: str, usage: str) -> str:
    return str(kms.create_key(KeySpec=spec, KeyUsage=usage)["KeyMetadata"]["KeyId"])


def arn(name: str) -> str:
    return f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{name}"


_PYTHON_TYPES = {
    "blob": bytes,
    "string": str,
    "boolean": bool,
    "list": list,
    "integer": int,
    "structure": dict,
    "timestamp": object,
}


def conforms(kms: Any, operation: str, answer: dict[str, Any]) -> dict[str, Any]:
    """`answer` (less boto3's metadata), once each member is one of the action's output shape
    in botocore's model, of the shape's type, and each string of an enum one of its values."""
    shape = kms.meta.service_model.operation_model(operation).output_shape
    members = {k: v for k, v in answer.items() if k != "ResponseMetadata"}
    for name, value in members.items():
        assert name in shape.members, f"{operation} answers {name}, not in AWS's model"
        member = shape.members[name]
        assert isinstance(value, _PYTHON_TYPES[member.type_name]), (name, type(value))
        if member.type_name == "string" and member.enum:
            assert value in member.enum, (name, value)
        if member.type_name == "list" and member.member.enum:
            assert set(value) <= set(member.member.enum), (name, value)
    return members


def fails(call: Any, **kwargs: Any) -> tuple[str, int]:
    with pytest.raises(ClientError) as exc:
        call(**kwargs)
    return error_of(exc)


# Encrypt and Decrypt, symmetric


def test_encrypt_decrypt_round_trip(server: Server, kms: Any) -> None:
    name = native_key(server, "kms-sym", "aes256-gcm")
    context = {"tenant": "blue", "purpose": "test"}
    for key_id in (
        name,
        arn(name),
        f"alias/{name}",
        f"arn:aws:kms:{REGION}:{ACCOUNT}:alias/{name}",
    ):
        sealed = conforms(
            kms, "Encrypt", kms.encrypt(KeyId=key_id, Plaintext=MESSAGE, EncryptionContext=context)
        )
        assert sealed["KeyId"] == arn(name)
        assert sealed["EncryptionAlgorithm"] == "SYMMETRIC_DEFAULT"
        # No KeyId: the blob names its key. The context's order does not matter.
        opened = conforms(
            kms,
            "Decrypt",
            kms.decrypt(
                CiphertextBlob=sealed["CiphertextBlob"],
                EncryptionContext=dict(reversed(context.items())),
            ),
        )
        assert opened == {
            "KeyId": arn(name),
            "Plaintext": MESSAGE,
            "EncryptionAlgorithm": "SYMMETRIC_DEFAULT",
        }
        assert (
            kms.decrypt(
                CiphertextBlob=sealed["CiphertextBlob"], EncryptionContext=context, KeyId=key_id
            )["Plaintext"]
            == MESSAGE
        )


def test_blob_format_and_rotation(server: Server, kms: Any) -> None:
    """The blob is the documented format (format 1, the key's name, its version, then nonce,
    ciphertext and tag); after a rotation new blobs name version 2 and old ones still open."""
    name = native_key(server, "kms-rotated", "aes256-gcm")
    blob = kms.encrypt(KeyId=name, Plaintext=MESSAGE)["CiphertextBlob"]
    size = len(name)
    assert blob[0] == 1 and blob[1] == size and blob[2 : 2 + size] == name.encode()
    assert struct.unpack(">I", blob[2 + size : 6 + size]) == (1,)
    assert len(blob) == 6 + size + 12 + len(MESSAGE) + 16
    with server.client() as http:
        assert http.post(f"/v1/keys/{name}/rotate").status_code == 200
    newer = kms.encrypt(KeyId=name, Plaintext=MESSAGE)["CiphertextBlob"]
    assert struct.unpack(">I", newer[2 + size : 6 + size]) == (2,)
    for each in (blob, newer):
        assert kms.decrypt(CiphertextBlob=each)["Plaintext"] == MESSAGE


def test_a_key_named_with_a_leading_underscore(server: Server, kms: Any) -> None:
    """A name Transit takes (`_` first) is a key id, and the blob naming it opens without one."""
    name = native_key(server, "_kms-under", "aes256-gcm")
    blob = kms.encrypt(KeyId=name, Plaintext=MESSAGE)["CiphertextBlob"]
    assert blob[2 : 2 + len(name)] == name.encode()
    opened = kms.decrypt(CiphertextBlob=blob)
    assert opened["Plaintext"] == MESSAGE and opened["KeyId"] == arn(name)


def test_decrypt_failures(server: Server, kms: Any) -> None:
    name = native_key(server, "kms-decrypt-failures", "aes256-gcm")
    other = native_key(server, "kms-decrypt-other", "aes256-gcm")
    blob = kms.encrypt(KeyId=name, Plaintext=MESSAGE, EncryptionContext={"a": "1"})[
        "CiphertextBlob"
    ]
    invalid = ("InvalidCiphertextException", 400)
    # Another context, none, or one more pair: the blob names its version, so the message
    # speaks of none (it spoke of passing an earlier key_version).
    for context in ({"a": "2"}, {}, {"a": "1", "b": "2"}):
        with pytest.raises(ClientError) as exc:
            kms.decrypt(CiphertextBlob=blob, EncryptionContext=context)
        assert error_of(exc) == invalid
        assert exc.value.response["Error"]["Message"] == "The ciphertext is not valid."
    # A changed byte anywhere: in the header (another version, name length, format) or payload.
    size = len(name)
    for at in (0, 1, 2 + size + 2, 2 + size + 3, len(blob) - 1, 6 + size):
        changed = bytearray(blob)
        changed[at] ^= 1
        code = fails(kms.decrypt, CiphertextBlob=bytes(changed), EncryptionContext={"a": "1"})
        assert code == invalid, (at, code)
    assert fails(kms.decrypt, CiphertextBlob=b"\x01", EncryptionContext={"a": "1"}) == invalid
    # A KeyId other than the blob's key.
    assert fails(kms.decrypt, CiphertextBlob=blob, EncryptionContext={"a": "1"}, KeyId=other) == (
        "IncorrectKeyException",
        400,
    )
    assert fails(kms.decrypt, CiphertextBlob=blob, KeyId="nonexistent-key") == (
        "NotFoundException",
        400,
    )
    # A well-formed blob naming a key there is not: a bad blob, which confirms no name.
    renamed = bytearray(blob)
    renamed[2 : 2 + size] = b"z" * size
    assert fails(kms.decrypt, CiphertextBlob=bytes(renamed), EncryptionContext={"a": "1"}) == (
        invalid
    )


def test_key_states(server: Server, kms: Any) -> None:
    """A disabled key: DisabledException; a key pending deletion: KMSInvalidStateException."""
    name = created_key(kms, "SYMMETRIC_DEFAULT", "ENCRYPT_DECRYPT")
    blob = kms.encrypt(KeyId=name, Plaintext=MESSAGE)["CiphertextBlob"]
    kms.disable_key(KeyId=name)
    disabled = ("DisabledException", 400)
    assert fails(kms.encrypt, KeyId=name, Plaintext=MESSAGE) == disabled
    assert fails(kms.decrypt, CiphertextBlob=blob) == disabled
    assert fails(kms.generate_data_key, KeyId=name, KeySpec="AES_256") == disabled
    kms.enable_key(KeyId=name)
    assert kms.decrypt(CiphertextBlob=blob)["Plaintext"] == MESSAGE
    kms.schedule_key_deletion(KeyId=name, PendingWindowInDays=7)
    invalid_state = ("KMSInvalidStateException", 400)
    assert fails(kms.encrypt, KeyId=name, Plaintext=MESSAGE) == invalid_state
    assert fails(kms.decrypt, CiphertextBlob=blob) == invalid_state
    kms.cancel_key_deletion(KeyId=name)


def test_scope(server: Server, kms: Any) -> None:
    """A token scoped to one key gets AccessDeniedException on another, a blob naming it
    included; a token without decrypt cannot decrypt its own key's blobs."""
    mine = native_key(server, "kms-scope-mine", "aes256-gcm")
    theirs = native_key(server, "kms-scope-theirs", "aes256-gcm")
    scoped = kms_client(server, credentials(server, keys=[mine], operations=["encrypt", "decrypt"]))
    blob = scoped.encrypt(KeyId=mine, Plaintext=MESSAGE)["CiphertextBlob"]
    assert scoped.decrypt(CiphertextBlob=blob)["Plaintext"] == MESSAGE
    denied = ("AccessDeniedException", 400)
    assert fails(scoped.encrypt, KeyId=theirs, Plaintext=MESSAGE) == denied
    their_blob = kms.encrypt(KeyId=theirs, Plaintext=MESSAGE)["CiphertextBlob"]
    assert fails(scoped.decrypt, CiphertextBlob=their_blob) == denied
    encrypt_only = kms_client(server, credentials(server, keys=[mine], operations=["encrypt"]))
    assert fails(encrypt_only.decrypt, CiphertextBlob=blob) == denied


def test_encrypt_refusals(server: Server, kms: Any, creds: Credentials) -> None:
    name = native_key(server, "kms-refusals", "aes256-gcm")
    signing = native_key(server, "kms-refusals-p256", "ecdsa-p256")
    usage = ("InvalidKeyUsageException", 400)
    assert fails(kms.encrypt, KeyId=signing, Plaintext=MESSAGE) == usage
    assert (
        fails(kms.encrypt, KeyId=name, Plaintext=MESSAGE, EncryptionAlgorithm="RSAES_OAEP_SHA_256")
        == usage
    )
    # DryRun: every check passes, nothing is encrypted.
    assert fails(kms.encrypt, KeyId=name, Plaintext=MESSAGE, DryRun=True)[0] == (
        "DryRunOperationException"
    )
    assert fails(kms.encrypt, KeyId=signing, Plaintext=MESSAGE, DryRun=True) == usage
    # Bounds, checked by the service itself (botocore checks only minimums).
    too_long = json.dumps({"KeyId": name, "Plaintext": base64.b64encode(b"x" * 4097).decode()})
    answer = signed_post(server, creds, "TrentService.Encrypt", too_long.encode())
    assert answer.status_code == 400 and answer.json()["__type"] == "ValidationException"
    huge_context = {"k": "v" * 9000}
    assert fails(kms.encrypt, KeyId=name, Plaintext=MESSAGE, EncryptionContext=huge_context) == (
        "ValidationException",
        400,
    )


# RSA encryption


def test_rsa_encryption(server: Server, kms: Any) -> None:
    name = created_key(kms, "RSA_2048", "ENCRYPT_DECRYPT")
    public = conforms(kms, "GetPublicKey", kms.get_public_key(KeyId=name))
    assert public["KeyUsage"] == "ENCRYPT_DECRYPT" and public["KeySpec"] == "RSA_2048"
    assert public["EncryptionAlgorithms"] == ["RSAES_OAEP_SHA_256"]
    key = serialization.load_der_public_key(public["PublicKey"])
    assert isinstance(key, rsa.RSAPublicKey) and key.key_size == 2048
    oaep = padding.OAEP(padding.MGF1(hashes.SHA256()), hashes.SHA256(), None)
    sealed = conforms(
        kms,
        "Encrypt",
        kms.encrypt(KeyId=name, Plaintext=MESSAGE, EncryptionAlgorithm="RSAES_OAEP_SHA_256"),
    )
    assert len(sealed["CiphertextBlob"]) == 256
    # Made here with the public key, opened by the service; and the service's own.
    for blob in (key.encrypt(MESSAGE, oaep), sealed["CiphertextBlob"]):
        opened = kms.decrypt(
            CiphertextBlob=blob, KeyId=name, EncryptionAlgorithm="RSAES_OAEP_SHA_256"
        )
        assert opened["Plaintext"] == MESSAGE and opened["KeyId"] == arn(name)
    assert fails(
        kms.decrypt,
        CiphertextBlob=sealed["CiphertextBlob"],
        EncryptionAlgorithm="RSAES_OAEP_SHA_256",
    ) == ("ValidationException", 400)  # no KeyId
    assert fails(
        kms.encrypt, KeyId=name, Plaintext=MESSAGE, EncryptionAlgorithm="RSAES_OAEP_SHA_1"
    ) == ("ValidationException", 400)
    assert fails(kms.encrypt, KeyId=name, Plaintext=MESSAGE) == ("InvalidKeyUsageException", 400)
    assert fails(
        kms.encrypt,
        KeyId=name,
        Plaintext=MESSAGE,
        EncryptionAlgorithm="RSAES_OAEP_SHA_256",
        EncryptionContext={"a": "b"},
    ) == ("ValidationException", 400)
    assert fails(
        kms.encrypt, KeyId=name, Plaintext=b"x" * 191, EncryptionAlgorithm="RSAES_OAEP_SHA_256"
    ) == ("ValidationException", 400)
    changed = bytearray(sealed["CiphertextBlob"])
    changed[10] ^= 1
    assert fails(
        kms.decrypt,
        CiphertextBlob=bytes(changed),
        KeyId=name,
        EncryptionAlgorithm="RSAES_OAEP_SHA_256",
    ) == ("InvalidCiphertextException", 400)


# Data keys, key pairs, ReEncrypt, random


def test_data_keys(server: Server, kms: Any) -> None:
    name = native_key(server, "kms-datakeys", "aes256-gcm")
    context = {"file": "a.txt"}
    for spec, size in (("AES_256", 32), ("AES_128", 16)):
        made = conforms(
            kms,
            "GenerateDataKey",
            kms.generate_data_key(KeyId=name, KeySpec=spec, EncryptionContext=context),
        )
        assert len(made["Plaintext"]) == size and made["KeyId"] == arn(name)
        opened = kms.decrypt(CiphertextBlob=made["CiphertextBlob"], EncryptionContext=context)
        assert opened["Plaintext"] == made["Plaintext"]
    for count in (1, 1024):
        made = kms.generate_data_key(KeyId=name, NumberOfBytes=count)
        assert len(made["Plaintext"]) == count
    bare = conforms(
        kms,
        "GenerateDataKeyWithoutPlaintext",
        kms.generate_data_key_without_plaintext(KeyId=name, KeySpec="AES_256"),
    )
    assert "Plaintext" not in bare
    assert len(kms.decrypt(CiphertextBlob=bare["CiphertextBlob"])["Plaintext"]) == 32
    validation = ("ValidationException", 400)
    assert fails(kms.generate_data_key, KeyId=name) == validation
    assert (
        fails(kms.generate_data_key, KeyId=name, KeySpec="AES_256", NumberOfBytes=32) == validation
    )
    assert fails(kms.generate_data_key, KeyId=name, NumberOfBytes=1025) == validation
    rsa_key = created_key(kms, "RSA_2048", "ENCRYPT_DECRYPT")
    assert fails(kms.generate_data_key, KeyId=rsa_key, KeySpec="AES_256") == (
        "InvalidKeyUsageException",
        400,
    )


@pytest.mark.parametrize(
    "spec",
    [
        "RSA_2048",
        "RSA_3072",
        "RSA_4096",
        "ECC_NIST_P256",
        "ECC_NIST_P384",
        "ECC_NIST_P521",
        "ECC_SECG_P256K1",
    ],
)
def test_data_key_pairs(server: Server, kms: Any, spec: str) -> None:
    name = f"kms-pairs-{spec.lower().replace('_', '-')}"
    native_key(server, name, "aes256-gcm")
    context = {"pair": spec}
    made = conforms(
        kms,
        "GenerateDataKeyPair",
        kms.generate_data_key_pair(KeyId=name, KeyPairSpec=spec, EncryptionContext=context),
    )
    assert made["KeyPairSpec"] == spec and made["KeyId"] == arn(name)
    private = serialization.load_der_private_key(made["PrivateKeyPlaintext"], None)
    assert (
        private.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        == made["PublicKey"]
    )
    if spec.startswith("RSA_"):
        assert isinstance(private, rsa.RSAPrivateKey) and private.key_size == int(spec[4:])
    else:
        curves = {"P256": "secp256r1", "P384": "secp384r1", "P521": "secp521r1"}
        assert isinstance(private, ec.EllipticCurvePrivateKey)
        assert private.curve.name == curves.get(spec[-4:], "secp256k1")
    opened = kms.decrypt(CiphertextBlob=made["PrivateKeyCiphertextBlob"], EncryptionContext=context)
    assert opened["Plaintext"] == made["PrivateKeyPlaintext"]
    if spec == "ECC_NIST_P256":
        bare = conforms(
            kms,
            "GenerateDataKeyPairWithoutPlaintext",
            kms.generate_data_key_pair_without_plaintext(KeyId=name, KeyPairSpec=spec),
        )
        assert "PrivateKeyPlaintext" not in bare
        private = serialization.load_der_private_key(
            kms.decrypt(CiphertextBlob=bare["PrivateKeyCiphertextBlob"])["Plaintext"], None
        )
        assert (
            private.public_key().public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            == bare["PublicKey"]
        )
        assert fails(kms.generate_data_key_pair, KeyId=name, KeyPairSpec="SM2") == (
            "UnsupportedOperationException",
            400,
        )


def test_re_encrypt(server: Server, kms: Any) -> None:
    source = native_key(server, "kms-reencrypt-from", "aes256-gcm")
    destination = native_key(server, "kms-reencrypt-to", "aes256-gcm")
    blob = kms.encrypt(KeyId=source, Plaintext=MESSAGE, EncryptionContext={"v": "1"})[
        "CiphertextBlob"
    ]
    moved = conforms(
        kms,
        "ReEncrypt",
        kms.re_encrypt(
            CiphertextBlob=blob,
            SourceEncryptionContext={"v": "1"},
            DestinationKeyId=destination,
            DestinationEncryptionContext={"v": "2"},
        ),
    )
    assert moved["SourceKeyId"] == arn(source) and moved["KeyId"] == arn(destination)
    assert moved["SourceEncryptionAlgorithm"] == moved["DestinationEncryptionAlgorithm"]
    assert (
        kms.decrypt(CiphertextBlob=moved["CiphertextBlob"], EncryptionContext={"v": "2"})[
            "Plaintext"
        ]
        == MESSAGE
    )
    assert fails(kms.re_encrypt, CiphertextBlob=blob, DestinationKeyId=destination) == (
        "InvalidCiphertextException",
        400,
    )
    assert fails(
        kms.re_encrypt,
        CiphertextBlob=blob,
        SourceKeyId=destination,
        SourceEncryptionContext={"v": "1"},
        DestinationKeyId=destination,
    ) == ("IncorrectKeyException", 400)
    # Into an RSA key and back.
    rsa_key = created_key(kms, "RSA_3072", "ENCRYPT_DECRYPT")
    to_rsa = kms.re_encrypt(
        CiphertextBlob=blob,
        SourceEncryptionContext={"v": "1"},
        DestinationKeyId=rsa_key,
        DestinationEncryptionAlgorithm="RSAES_OAEP_SHA_256",
    )
    assert len(to_rsa["CiphertextBlob"]) == 384
    back = kms.re_encrypt(
        CiphertextBlob=to_rsa["CiphertextBlob"],
        SourceKeyId=rsa_key,
        SourceEncryptionAlgorithm="RSAES_OAEP_SHA_256",
        DestinationKeyId=source,
    )
    assert back["SourceKeyId"] == arn(rsa_key)
    assert kms.decrypt(CiphertextBlob=back["CiphertextBlob"])["Plaintext"] == MESSAGE


def test_a_dry_run_may_ignore_the_ciphertext(server: Server, kms: Any) -> None:
    """DryRunModifiers IGNORE_CIPHERTEXT: a Decrypt or ReEncrypt checks the key its KeyId
    names and the token's scope, with no ciphertext or whatever one, and answers
    DryRunOperationException, as AWS does (botocore sends none). Without the modifier a
    ciphertext is required; a dry run ignoring it needs a KeyId."""
    source = native_key(server, "kms-dry-source", "aes256-gcm")
    destination = native_key(server, "kms-dry-destination", "aes256-gcm")
    signing = native_key(server, "kms-dry-p256", "ecdsa-p256")
    ignoring = {"DryRun": True, "DryRunModifiers": ["IGNORE_CIPHERTEXT"]}
    dry = ("DryRunOperationException", 400)
    assert fails(kms.decrypt, KeyId=source, **ignoring) == dry
    assert fails(kms.decrypt, KeyId=source, CiphertextBlob=b"\x01bad", **ignoring) == dry
    again = {"SourceKeyId": source, "DestinationKeyId": destination, **ignoring}
    assert fails(kms.re_encrypt, **again) == dry
    validation = ("ValidationException", 400)
    assert fails(kms.decrypt, **ignoring) == validation
    assert fails(kms.decrypt, KeyId=source, DryRun=True) == validation
    assert fails(kms.decrypt, KeyId=signing, **ignoring) == ("InvalidKeyUsageException", 400)
    assert fails(kms.re_encrypt, **{**again, "DestinationKeyId": signing}) == (
        "InvalidKeyUsageException",
        400,
    )
    encrypt_only = kms_client(
        server, credentials(server, keys=["kms-dry-*"], operations=["encrypt"])
    )
    assert fails(encrypt_only.decrypt, KeyId=source, **ignoring) == ("AccessDeniedException", 400)
    unknown = {"DryRun": True, "DryRunModifiers": ["IGNORE_EVERYTHING"]}
    assert fails(kms.decrypt, KeyId=source, CiphertextBlob=b"\x01", **unknown) == validation


def test_generate_random(server: Server, kms: Any, creds: Credentials) -> None:
    for count in (1, 1024):
        made = conforms(kms, "GenerateRandom", kms.generate_random(NumberOfBytes=count))
        assert len(made["Plaintext"]) == count
    assert kms.generate_random(NumberOfBytes=32) != kms.generate_random(NumberOfBytes=32)
    for body in ({"NumberOfBytes": 1025}, {"NumberOfBytes": 0}, {}):
        answer = signed_post(
            server, creds, "TrentService.GenerateRandom", json.dumps(body).encode()
        )
        assert answer.status_code == 400 and answer.json()["__type"] == "ValidationException"
    assert fails(kms.generate_random, NumberOfBytes=8, CustomKeyStoreId="cks-1") == (
        "CustomKeyStoreNotFoundException",
        400,
    )


# Sign, Verify, GetPublicKey


def _local_verify(
    public: Any, algorithm: str, message: bytes, signature: bytes, digest: bool
) -> None:
    """pyca's verification of a KMS signature (raises InvalidSignature)."""
    if algorithm in ("ML_DSA_SHAKE_256", "ED25519_SHA_512"):
        public.verify(signature, message)
        return
    chosen = {"256": hashes.SHA256(), "384": hashes.SHA384(), "512": hashes.SHA512()}[
        algorithm[-3:]
    ]
    prehashed: Any = utils.Prehashed(chosen) if digest else chosen
    if algorithm.startswith("ECDSA"):
        public.verify(signature, message, ec.ECDSA(prehashed))
    elif algorithm.startswith("RSASSA_PSS"):
        pss = padding.PSS(padding.MGF1(chosen), padding.PSS.DIGEST_LENGTH)
        public.verify(signature, message, pss, prehashed)
    else:
        public.verify(signature, message, padding.PKCS1v15(), prehashed)


def _local_sign(private: Any, algorithm: str, message: bytes) -> bytes:
    if algorithm in ("ML_DSA_SHAKE_256", "ED25519_SHA_512"):
        return bytes(private.sign(message))
    chosen = {"256": hashes.SHA256(), "384": hashes.SHA384(), "512": hashes.SHA512()}[
        algorithm[-3:]
    ]
    if algorithm.startswith("ECDSA"):
        return bytes(private.sign(message, ec.ECDSA(chosen)))
    if algorithm.startswith("RSASSA_PSS"):
        return bytes(
            private.sign(message, padding.PSS(padding.MGF1(chosen), chosen.digest_size), chosen)
        )
    return bytes(private.sign(message, padding.PKCS1v15(), chosen))


SIGNING = [
    ("ECC_NIST_P256", "ECDSA_SHA_256"),
    ("ECC_NIST_P384", "ECDSA_SHA_384"),
    ("ECC_NIST_P521", "ECDSA_SHA_512"),
    ("ECC_SECG_P256K1", "ECDSA_SHA_256"),
    ("RSA_2048", "RSASSA_PSS_SHA_256"),
    ("RSA_2048", "RSASSA_PSS_SHA_384"),
    ("RSA_2048", "RSASSA_PSS_SHA_512"),
    ("RSA_2048", "RSASSA_PKCS1_V1_5_SHA_256"),
    ("RSA_2048", "RSASSA_PKCS1_V1_5_SHA_384"),
    ("RSA_2048", "RSASSA_PKCS1_V1_5_SHA_512"),
    ("ML_DSA_44", "ML_DSA_SHAKE_256"),
    ("ML_DSA_65", "ML_DSA_SHAKE_256"),
    ("ML_DSA_87", "ML_DSA_SHAKE_256"),
    ("ECC_NIST_EDWARDS25519", "ED25519_SHA_512"),
]
_SIGNING_KEYS: dict[str, str] = {}


def signing_key(kms: Any, spec: str) -> str:
    if spec not in _SIGNING_KEYS:
        _SIGNING_KEYS[spec] = created_key(kms, spec, "SIGN_VERIFY")
    return _SIGNING_KEYS[spec]


@pytest.mark.parametrize(("spec", "algorithm"), SIGNING)
def test_sign_and_verify(kms: Any, spec: str, algorithm: str) -> None:
    """A KMS signature verifies with pyca and the public key GetPublicKey gives; a signature
    made with pyca from a data key pair verifies through Verify only with its own key; a wrong
    one is KMSInvalidSignatureException."""
    name = signing_key(kms, spec)
    public_answer = conforms(kms, "GetPublicKey", kms.get_public_key(KeyId=name))
    assert public_answer["KeySpec"] == spec and public_answer["KeyUsage"] == "SIGN_VERIFY"
    assert algorithm in public_answer["SigningAlgorithms"]
    public = serialization.load_der_public_key(public_answer["PublicKey"])
    signed = conforms(
        kms, "Sign", kms.sign(KeyId=name, Message=MESSAGE, SigningAlgorithm=algorithm)
    )
    assert signed["KeyId"] == arn(name) and signed["SigningAlgorithm"] == algorithm
    _local_verify(public, algorithm, MESSAGE, signed["Signature"], digest=False)
    verified = conforms(
        kms,
        "Verify",
        kms.verify(
            KeyId=name, Message=MESSAGE, Signature=signed["Signature"], SigningAlgorithm=algorithm
        ),
    )
    assert verified["SignatureValid"] is True
    wrong = bytearray(signed["Signature"])
    wrong[len(wrong) // 2] ^= 1
    assert fails(
        kms.verify, KeyId=name, Message=MESSAGE, Signature=bytes(wrong), SigningAlgorithm=algorithm
    ) == ("KMSInvalidSignatureException", 400)
    assert fails(
        kms.verify,
        KeyId=name,
        Message=MESSAGE + b"!",
        Signature=signed["Signature"],
        SigningAlgorithm=algorithm,
    ) == ("KMSInvalidSignatureException", 400)
    if algorithm == "ED25519_SHA_512":
        # Pure Ed25519 signs the message itself; Ed25519ph is AWS's, not made here.
        digest = hashlib.sha512(MESSAGE).digest()
        for message_type, other in (("DIGEST", algorithm), ("RAW", "ED25519_PH_SHA_512")):
            refused = fails(
                kms.sign,
                KeyId=name,
                Message=digest,
                MessageType=message_type,
                SigningAlgorithm=other,
            )
            assert refused[1] == 400 and refused[0] in (
                "ValidationException",
                "UnsupportedOperationException",
            )
    elif algorithm != "ML_DSA_SHAKE_256":
        size = {"256": 32, "384": 48, "512": 64}[algorithm[-3:]]
        digest = hashlib.new(f"sha{algorithm[-3:]}", MESSAGE).digest()
        assert len(digest) == size
        by_digest = kms.sign(
            KeyId=name, Message=digest, MessageType="DIGEST", SigningAlgorithm=algorithm
        )["Signature"]
        _local_verify(public, algorithm, digest, by_digest, digest=True)
        # A DIGEST signature is one of the message: RAW verification takes it.
        assert kms.verify(
            KeyId=name, Message=MESSAGE, Signature=by_digest, SigningAlgorithm=algorithm
        )["SignatureValid"]
        assert fails(
            kms.sign,
            KeyId=name,
            Message=digest[:-1],
            MessageType="DIGEST",
            SigningAlgorithm=algorithm,
        ) == ("ValidationException", 400)


@pytest.mark.parametrize(
    ("key_type", "algorithm"),
    [
        ("ecdsa-p256", "ECDSA_SHA_256"),
        ("ecdsa-p384", "ECDSA_SHA_384"),
        ("ecdsa-p521", "ECDSA_SHA_512"),
        ("ecdsa-secp256k1", "ECDSA_SHA_256"),
        ("ml-dsa-65", "ML_DSA_SHAKE_256"),
        ("ed25519", "ED25519_SHA_512"),
    ],
)
def test_verify_local_signatures(server: Server, kms: Any, key_type: str, algorithm: str) -> None:
    """Signatures made here by pyca with an exportable key's exported private key verify
    through Verify; one by another key (a data key pair's) is KMSInvalidSignatureException."""
    name = f"kms-local-{key_type}"
    with server.client() as http:
        created = http.post("/v1/keys", json={"name": name, "type": key_type, "exportable": True})
        assert created.status_code == 201, created.text
        exported = http.get(f"/v1/keys/{name}/export")
    assert exported.status_code == 200, exported.text
    secret = base64.b64decode(exported.json()["secret"])
    if key_type == "ecdsa-secp256k1":
        private: Any = ec.derive_private_key(int.from_bytes(secret), ec.SECP256K1())
    elif key_type == "ed25519":
        private = ed25519.Ed25519PrivateKey.from_private_bytes(secret)
    else:
        private = serialization.load_der_private_key(secret, None)
    local = _local_sign(private, algorithm, MESSAGE)
    assert kms.verify(KeyId=name, Message=MESSAGE, Signature=local, SigningAlgorithm=algorithm)[
        "SignatureValid"
    ]
    if key_type.startswith("ecdsa-p"):
        pair = kms.generate_data_key_pair(
            KeyId=symmetric_key(kms), KeyPairSpec=f"ECC_NIST_P{key_type[7:]}"
        )
        stranger = serialization.load_der_private_key(pair["PrivateKeyPlaintext"], None)
        assert fails(
            kms.verify,
            KeyId=name,
            Message=MESSAGE,
            Signature=_local_sign(stranger, algorithm, MESSAGE),
            SigningAlgorithm=algorithm,
        ) == ("KMSInvalidSignatureException", 400)


def test_a_native_rsa_key_encrypts_and_signs(server: Server, kms: Any) -> None:
    """A key made outside KMS is bound to no usage: an `rsa-*` key is described by AWS's
    default usage, ENCRYPT_DECRYPT, with the algorithms of both, and serves both."""
    with server.client() as http:
        created = http.post("/v1/keys", json={"name": "kms-native-rsa", "type": "rsa-2048"})
        assert created.status_code == 201, created.text
    meta = kms.describe_key(KeyId="kms-native-rsa")["KeyMetadata"]
    assert (meta["KeySpec"], meta["KeyUsage"]) == ("RSA_2048", "ENCRYPT_DECRYPT")
    assert meta["EncryptionAlgorithms"] == ["RSAES_OAEP_SHA_256"]
    assert "RSASSA_PSS_SHA_256" in meta["SigningAlgorithms"]
    public = serialization.load_der_public_key(
        kms.get_public_key(KeyId="kms-native-rsa")["PublicKey"]
    )
    assert isinstance(public, rsa.RSAPublicKey)
    signature = kms.sign(
        KeyId="kms-native-rsa", Message=MESSAGE, SigningAlgorithm="RSASSA_PSS_SHA_256"
    )["Signature"]
    pss = padding.PSS(padding.MGF1(hashes.SHA256()), padding.PSS.DIGEST_LENGTH)
    public.verify(signature, MESSAGE, pss, hashes.SHA256())
    sealed = kms.encrypt(
        KeyId="kms-native-rsa", Plaintext=b"a secret", EncryptionAlgorithm="RSAES_OAEP_SHA_256"
    )["CiphertextBlob"]
    opened = kms.decrypt(
        KeyId="kms-native-rsa", CiphertextBlob=sealed, EncryptionAlgorithm="RSAES_OAEP_SHA_256"
    )
    assert opened["Plaintext"] == b"a secret"
    # One made by CreateKey keeps the one usage it was given.
    signing_only = created_key(kms, "RSA_2048", "SIGN_VERIFY")
    assert fails(
        kms.encrypt,
        KeyId=signing_only,
        Plaintext=b"x",
        EncryptionAlgorithm="RSAES_OAEP_SHA_256",
    ) == ("InvalidKeyUsageException", 400)


_SYMMETRIC: list[str] = []


def symmetric_key(kms: Any) -> str:
    if not _SYMMETRIC:
        _SYMMETRIC.append(created_key(kms, "SYMMETRIC_DEFAULT", "ENCRYPT_DECRYPT"))
    return _SYMMETRIC[0]


def test_ml_dsa_external_mu(kms: Any) -> None:
    """EXTERNAL_MU: the 64-byte representative FIPS 204 computes from the public key and the
    message (pure ML-DSA, empty context); the signature verifies with pyca over the message."""
    name = signing_key(kms, "ML_DSA_65")
    public_bytes = kms.get_public_key(KeyId=name)["PublicKey"]
    public = serialization.load_der_public_key(public_bytes)
    assert isinstance(public, mldsa.MLDSA65PublicKey)
    raw = public.public_bytes_raw()
    tr = hashlib.shake_256(raw).digest(64)
    mu = hashlib.shake_256(tr + b"\x00\x00" + MESSAGE).digest(64)
    signed = kms.sign(
        KeyId=name, Message=mu, MessageType="EXTERNAL_MU", SigningAlgorithm="ML_DSA_SHAKE_256"
    )
    public.verify(signed["Signature"], MESSAGE)
    assert kms.verify(
        KeyId=name,
        Message=mu,
        MessageType="EXTERNAL_MU",
        Signature=signed["Signature"],
        SigningAlgorithm="ML_DSA_SHAKE_256",
    )["SignatureValid"]
    validation = ("ValidationException", 400)
    assert (
        fails(
            kms.sign,
            KeyId=name,
            Message=mu[:-1],
            MessageType="EXTERNAL_MU",
            SigningAlgorithm="ML_DSA_SHAKE_256",
        )
        == validation
    )
    assert (
        fails(
            kms.sign,
            KeyId=name,
            Message=mu,
            MessageType="DIGEST",
            SigningAlgorithm="ML_DSA_SHAKE_256",
        )
        == validation
    )
    p256 = signing_key(kms, "ECC_NIST_P256")
    assert (
        fails(
            kms.sign,
            KeyId=p256,
            Message=mu,
            MessageType="EXTERNAL_MU",
            SigningAlgorithm="ECDSA_SHA_256",
        )
        == validation
    )


def test_signing_refusals(server: Server, kms: Any, creds: Credentials) -> None:
    p256 = signing_key(kms, "ECC_NIST_P256")
    usage = ("InvalidKeyUsageException", 400)
    assert fails(kms.sign, KeyId=p256, Message=MESSAGE, SigningAlgorithm="ECDSA_SHA_384") == usage
    assert (
        fails(kms.sign, KeyId=p256, Message=MESSAGE, SigningAlgorithm="RSASSA_PSS_SHA_256") == usage
    )
    encrypting = created_key(kms, "RSA_2048", "ENCRYPT_DECRYPT")
    assert (
        fails(kms.sign, KeyId=encrypting, Message=MESSAGE, SigningAlgorithm="RSASSA_PSS_SHA_256")
        == usage
    )
    assert fails(kms.get_public_key, KeyId=symmetric_key(kms)) == (
        "UnsupportedOperationException",
        400,
    )
    long = json.dumps(
        {
            "KeyId": p256,
            "Message": base64.b64encode(b"m" * 4097).decode(),
            "SigningAlgorithm": "ECDSA_SHA_256",
        }
    )
    answer = signed_post(server, creds, "TrentService.Sign", long.encode())
    assert answer.status_code == 400 and answer.json()["__type"] == "ValidationException"
    assert (
        len(
            kms.sign(KeyId=p256, Message=b"m" * 4096, SigningAlgorithm="ECDSA_SHA_256")["Signature"]
        )
        > 0
    )
    scoped = kms_client(server, credentials(server, keys=[p256], operations=["verify"]))
    assert fails(scoped.sign, KeyId=p256, Message=MESSAGE, SigningAlgorithm="ECDSA_SHA_256") == (
        "AccessDeniedException",
        400,
    )


# GenerateMac, VerifyMac


@pytest.mark.parametrize("bits", [224, 256, 384, 512])
def test_mac(server: Server, kms: Any, bits: int) -> None:
    name = created_key(kms, f"HMAC_{bits}", "GENERATE_VERIFY_MAC")
    algorithm = f"HMAC_SHA_{bits}"
    made = conforms(
        kms, "GenerateMac", kms.generate_mac(KeyId=name, Message=MESSAGE, MacAlgorithm=algorithm)
    )
    assert len(made["Mac"]) == bits // 8 and made["KeyId"] == arn(name)
    # Transit's HMAC of the same key says the same.
    with server.client() as http:
        transit = http.post(
            f"/v1/transit/hmac/{name}/sha2-{bits}",
            headers={"X-Vault-Token": http.headers["Authorization"].removeprefix("Bearer ")},
            json={"input": base64.b64encode(MESSAGE).decode()},
        )
    assert transit.status_code == 200, transit.text
    assert base64.b64decode(transit.json()["data"]["hmac"].split(":")[2]) == made["Mac"]
    verified = conforms(
        kms,
        "VerifyMac",
        kms.verify_mac(KeyId=name, Message=MESSAGE, Mac=made["Mac"], MacAlgorithm=algorithm),
    )
    assert verified["MacValid"] is True
    wrong = bytes([made["Mac"][0] ^ 1]) + made["Mac"][1:]
    assert fails(
        kms.verify_mac, KeyId=name, Message=MESSAGE, Mac=wrong, MacAlgorithm=algorithm
    ) == ("KMSInvalidMacException", 400)
    other = "HMAC_SHA_256" if bits != 256 else "HMAC_SHA_512"
    assert fails(kms.generate_mac, KeyId=name, Message=MESSAGE, MacAlgorithm=other) == (
        "InvalidKeyUsageException",
        400,
    )
    assert not hmac.compare_digest(made["Mac"], wrong)


def test_grant_tokens_are_taken(server: Server, kms: Any) -> None:
    """AWS's SDKs may send GrantTokens with any data call; there are no grants here, so they
    are taken and change nothing (they were refused as `null`-only)."""
    name = native_key(server, "kms-granted", "aes256-gcm")
    grants = ["grant-token-1", "grant-token-2"]
    blob = kms.encrypt(KeyId=name, Plaintext=MESSAGE, GrantTokens=grants)["CiphertextBlob"]
    assert kms.decrypt(CiphertextBlob=blob, GrantTokens=grants)["Plaintext"] == MESSAGE
    pair = kms.generate_data_key(KeyId=name, KeySpec="AES_256", GrantTokens=[])
    assert len(pair["Plaintext"]) == 32
    assert kms.describe_key(KeyId=name, GrantTokens=grants)["KeyMetadata"]["Enabled"] is True
