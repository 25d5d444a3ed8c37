"""The KMS door with AWS's own programs, unchanged: the `aws` command (awscli) encrypting and
decrypting with credentials from the environment and `--endpoint-url`, and the AWS Encryption
SDK for Python round-tripping 1 MiB through a KMS master key provider whose key is a key's ARN,
its botocore client pointed at the server (AWS_ENDPOINT_URL_KMS)."""

import base64
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aws_encryption_sdk
import botocore.session
import pytest
from aws_encryption_sdk import CommitmentPolicy
from aws_encryption_sdk.exceptions import DecryptKeyError

from tests.e2e.kms import ACCOUNT, REGION, Credentials, credentials, started
from tests.e2e.server import Server

pytestmark = pytest.mark.e2e
AWS = Path(sys.executable).parent / "aws"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from started(tmp_path_factory.mktemp("kms-clients"))


@pytest.fixture(scope="module")
def creds(server: Server) -> Credentials:
    return credentials(server)


@pytest.fixture(scope="module")
def key_arn(server: Server) -> str:
    """An AES-256-GCM key made through the native API: its name is its KMS key id."""
    with server.client() as http:
        created = http.post("/v1/keys", json={"name": "esdk-and-cli", "type": "aes256-gcm"})
    assert created.status_code == 201, created.text
    return f"arn:aws:kms:{REGION}:{ACCOUNT}:key/esdk-and-cli"


def aws_environment(creds: Credentials, home: Path) -> dict[str, str]:
    """Credentials and region from the environment only: no configuration file of the
    machine's is read."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return {
        **keep,
        "HOME": str(home),
        "AWS_CONFIG_FILE": str(home / "no-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "no-credentials"),
        "AWS_ACCESS_KEY_ID": creds.access_key_id,
        "AWS_SECRET_ACCESS_KEY": creds.secret_access_key,
        "AWS_DEFAULT_REGION": REGION,
    }


def aws(server: Server, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [str(AWS), "kms", *args, "--endpoint-url", server.url, "--output", "text"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_aws_command_round_trip(
    server: Server, creds: Credentials, key_arn: str, tmp_path: Path
) -> None:
    env = aws_environment(creds, tmp_path)
    secret = os.urandom(300)
    (tmp_path / "plain").write_bytes(secret)
    sealed = aws(
        server,
        env,
        "encrypt",
        "--key-id",
        key_arn,
        "--plaintext",
        f"fileb://{tmp_path / 'plain'}",
        "--encryption-context",
        "app=billing,stage=test",
        "--query",
        "CiphertextBlob",
    )
    (tmp_path / "sealed").write_bytes(base64.b64decode(sealed))
    opened = aws(
        server,
        env,
        "decrypt",
        "--ciphertext-blob",
        f"fileb://{tmp_path / 'sealed'}",
        "--encryption-context",
        "stage=test,app=billing",
        "--query",
        "[KeyId, Plaintext]",
    )
    key_id, plaintext = opened.split("\t")
    assert key_id == key_arn and base64.b64decode(plaintext) == secret
    # Another context: the command fails with the service's error.
    refused = subprocess.run(
        [
            str(AWS),
            "kms",
            "decrypt",
            "--ciphertext-blob",
            f"fileb://{tmp_path / 'sealed'}",
            "--encryption-context",
            "app=billing",
            "--endpoint-url",
            server.url,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0 and "InvalidCiphertextException" in refused.stderr


def test_aws_command_lists_a_keys_rotations(
    server: Server, creds: Credentials, tmp_path: Path
) -> None:
    env = aws_environment(creds, tmp_path)
    key_id = aws(server, env, "create-key", "--query", "KeyMetadata.KeyId")
    for _ in range(3):
        aws(server, env, "rotate-key-on-demand", "--key-id", key_id)
    # The command follows NextMarker itself: three pages of one.
    listed = aws(
        server,
        env,
        "list-key-rotations",
        "--key-id",
        key_id,
        "--page-size",
        "1",
        "--query",
        "Rotations[].RotationType",
    )
    assert listed.split() == ["ON_DEMAND"] * 3


def _provider(creds: Credentials, key_arn: str) -> Any:
    session = botocore.session.Session()
    session.set_credentials(creds.access_key_id, creds.secret_access_key)
    return aws_encryption_sdk.StrictAwsKmsMasterKeyProvider(
        key_ids=[key_arn], botocore_session=session
    )


def test_encryption_sdk_round_trips_one_mebibyte(
    server: Server, creds: Credentials, key_arn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_KMS", server.url)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    client = aws_encryption_sdk.EncryptionSDKClient(
        commitment_policy=CommitmentPolicy.REQUIRE_ENCRYPT_REQUIRE_DECRYPT
    )
    message = os.urandom(1024 * 1024)
    context = {"tenant": "blue"}
    sealed, header = client.encrypt(
        source=message, key_provider=_provider(creds, key_arn), encryption_context=context
    )
    assert len(sealed) > len(message)
    (data_key,) = header.encrypted_data_keys
    assert data_key.key_provider.key_info.decode() == key_arn
    opened, decrypted_header = client.decrypt(source=sealed, key_provider=_provider(creds, key_arn))
    assert opened == message
    assert decrypted_header.encryption_context["tenant"] == "blue"
    # The data key's blob is the service's: a token scoped to another key cannot open it.
    other = credentials(server, keys=["not-this-key"], operations=["decrypt"])
    with pytest.raises(DecryptKeyError):
        client.decrypt(source=sealed, key_provider=_provider(other, key_arn))
