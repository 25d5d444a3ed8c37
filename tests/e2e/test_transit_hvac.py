"""hvac's Transit methods against cipherd and against a real OpenBao, compared.

Each case is one function of an hvac client and a fresh Transit mount, as hvac's own integration
tests (`tests/integration_tests/api/secrets_engines/test_transit.py`) write them: their cases are
ported here one by one (success and error cases, the parameters they vary), with the server-side
errors they leave out added. Every case runs on both servers; its outcome is the answer's shape
(every field's name and JSON type, recursively: values differ, request ids and ciphertexts) or
the hvac exception class it raised, and the two outcomes must be equal. Where cipherd answers
otherwise on purpose, `DIFFERENCES` says how and why, and the test holds it to exactly that.
"""

import base64
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hvac
import pytest
import requests
from hvac import exceptions

from tests.e2e.openbao import running_openbao, shape
from tests.e2e.server import running

pytestmark = pytest.mark.e2e

ADMIN_TOKEN = "transit-admin-" + secrets.token_urlsafe(16)
SERVERS = ("openbao", "cipherd")


@dataclass(frozen=True)
class Target:
    url: str
    token: str


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    work = tmp_path_factory.mktemp("transit")
    env = {"CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN, "CIPHERD_KEY_CACHE_SECONDS": "0.2"}
    with running(work / "cipherd", env=env) as cipherd, running_openbao(work) as openbao:
        yield {
            "openbao": Target(openbao.url, openbao.token),
            "cipherd": Target(cipherd.url, ADMIN_TOKEN),
        }


def b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


def outcome(case: Callable[[hvac.Client, str], Any], target: Target) -> Any:
    """The case's outcome on one server, in a mount of its own (enabled, then disabled)."""
    client = hvac.Client(url=target.url, token=target.token)
    mount = "transit-test-" + secrets.token_hex(4)
    client.sys.enable_secrets_engine(backend_type="transit", path=mount)
    try:
        answer = case(client, mount)
    except exceptions.VaultError as error:
        return ("raised", type(error).__name__)
    except ValueError as error:  # hvac's own checks, before any request
        return ("refused by hvac", str(error)[:40])
    finally:
        client.sys.disable_secrets_engine(path=mount)
    if isinstance(answer, requests.Response):
        return ("status", answer.status_code)
    return ("answer", shape(answer))


KEY = "testkey"
TEXT = b64("hi itsame hvac")


def created(client: hvac.Client, mount: str, **options: Any) -> Any:
    return client.secrets.transit.create_key(name=KEY, mount_point=mount, **options)


# Each case: hvac's test name and parameters, and the calls.
def _create(**options: Any) -> Callable[[hvac.Client, str], Any]:
    return lambda client, mount: created(client, mount, **options)


def _read(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    return client.secrets.transit.read_key(name=KEY, mount_point=mount)


def _read_ed25519(client: hvac.Client, mount: str) -> Any:
    created(client, mount, key_type="ed25519")
    return client.secrets.transit.read_key(name=KEY, mount_point=mount)


def _read_missing(client: hvac.Client, mount: str) -> Any:
    return client.secrets.transit.read_key(name="missing", mount_point=mount)


def _list(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    return client.secrets.transit.list_keys(mount_point=mount)


def _list_empty(client: hvac.Client, mount: str) -> Any:
    return client.secrets.transit.list_keys(mount_point=mount)


def _delete(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    client.secrets.transit.update_key_configuration(
        name=KEY, deletion_allowed=True, mount_point=mount
    )
    return client.secrets.transit.delete_key(name=KEY, mount_point=mount)


def _delete_not_allowed(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    return client.secrets.transit.delete_key(name=KEY, mount_point=mount)


def _config(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    return client.secrets.transit.update_key_configuration(
        name=KEY, exportable=True, auto_rotate_period="2h", mount_point=mount
    )


def _config_too_new(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    return client.secrets.transit.update_key_configuration(
        name=KEY, min_decryption_version=5, mount_point=mount
    )


def _rotate(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    return client.secrets.transit.rotate_key(name=KEY, mount_point=mount)


def _export(key_type: str) -> Callable[[hvac.Client, str], Any]:
    def case(client: hvac.Client, mount: str) -> Any:
        created(client, mount, exportable=True)
        return client.secrets.transit.export_key(name=KEY, key_type=key_type, mount_point=mount)

    return case


def _export_not_exportable(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    return client.secrets.transit.export_key(name=KEY, key_type="encryption-key", mount_point=mount)


def _export_signing_ed25519(client: hvac.Client, mount: str) -> Any:
    created(client, mount, key_type="ed25519", exportable=True)
    return client.secrets.transit.export_key(
        name=KEY, key_type="signing-key", version="latest", mount_point=mount
    )


def _encrypt(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    return client.secrets.transit.encrypt_data(name=KEY, plaintext=TEXT, mount_point=mount)


def _encrypt_creates(client: hvac.Client, mount: str) -> Any:
    """Transit makes a missing key on its first encryption."""
    client.secrets.transit.encrypt_data(name="upserted", plaintext=TEXT, mount_point=mount)
    return client.secrets.transit.read_key(name="upserted", mount_point=mount)


def _encrypt_batch_with_a_bad_item(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    items = [{"plaintext": TEXT}, {"plaintext": "not base64!"}]
    return client.secrets.transit.encrypt_data(name=KEY, batch_input=items, mount_point=mount)


def _encrypt_with_ed25519(client: hvac.Client, mount: str) -> Any:
    created(client, mount, key_type="ed25519")
    return client.secrets.transit.encrypt_data(name=KEY, plaintext=TEXT, mount_point=mount)


def _decrypt(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    sealed = client.secrets.transit.encrypt_data(name=KEY, plaintext=TEXT, mount_point=mount)
    ciphertext = sealed["data"]["ciphertext"]
    return client.secrets.transit.decrypt_data(name=KEY, ciphertext=ciphertext, mount_point=mount)


def _decrypt_batch(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    items = [{"plaintext": TEXT, "reference": "a"}, {"plaintext": b64("two"), "reference": "b"}]
    sealed = client.secrets.transit.encrypt_data(name=KEY, batch_input=items, mount_point=mount)
    batch = [
        {"ciphertext": r["ciphertext"], "reference": r["reference"]}
        for r in sealed["data"]["batch_results"]
    ]
    return client.secrets.transit.decrypt_data(name=KEY, batch_input=batch, mount_point=mount)


def _decrypt_derived(client: hvac.Client, mount: str) -> Any:
    created(client, mount, derived=True)
    context = b64("tenant-1")
    sealed = client.secrets.transit.encrypt_data(
        name=KEY, plaintext=TEXT, context=context, mount_point=mount
    )
    return client.secrets.transit.decrypt_data(
        name=KEY, ciphertext=sealed["data"]["ciphertext"], context=context, mount_point=mount
    )


def _decrypt_derived_without_context(client: hvac.Client, mount: str) -> Any:
    created(client, mount, derived=True)
    return client.secrets.transit.encrypt_data(name=KEY, plaintext=TEXT, mount_point=mount)


def _decrypt_no_prefix(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    return client.secrets.transit.decrypt_data(name=KEY, ciphertext="AAAA", mount_point=mount)


def _decrypt_tampered(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    sealed = client.secrets.transit.encrypt_data(name=KEY, plaintext=TEXT, mount_point=mount)
    ciphertext = sealed["data"]["ciphertext"]
    tampered = ciphertext[:-4] + ("AAAA" if not ciphertext.endswith("AAAA") else "BBBB")
    return client.secrets.transit.decrypt_data(name=KEY, ciphertext=tampered, mount_point=mount)


def _decrypt_too_new(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    return client.secrets.transit.decrypt_data(
        name=KEY, ciphertext="vault:v9:" + base64.b64encode(bytes(40)).decode(), mount_point=mount
    )


def _rewrap(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    sealed = client.secrets.transit.encrypt_data(name=KEY, plaintext=TEXT, mount_point=mount)
    client.secrets.transit.rotate_key(name=KEY, mount_point=mount)
    return client.secrets.transit.rewrap_data(
        name=KEY, ciphertext=sealed["data"]["ciphertext"], mount_point=mount
    )


def _data_key(key_type: str) -> Callable[[hvac.Client, str], Any]:
    def case(client: hvac.Client, mount: str) -> Any:
        created(client, mount)
        return client.secrets.transit.generate_data_key(
            name=KEY, key_type=key_type, mount_point=mount
        )

    return case


def _random(**options: Any) -> Callable[[hvac.Client, str], Any]:
    return lambda client, mount: client.secrets.transit.generate_random_bytes(
        mount_point=mount, **options
    )


def _hash(**options: Any) -> Callable[[hvac.Client, str], Any]:
    return lambda client, mount: client.secrets.transit.hash_data(
        hash_input=b64("hash this ish"), mount_point=mount, **options
    )


def _hmac(**options: Any) -> Callable[[hvac.Client, str], Any]:
    def case(client: hvac.Client, mount: str) -> Any:
        created(client, mount)
        return client.secrets.transit.generate_hmac(
            name=KEY, hash_input=b64("hash this ish"), mount_point=mount, **options
        )

    return case


def _verify_hmac(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    made = client.secrets.transit.generate_hmac(
        name=KEY, hash_input=b64("hash this ish"), algorithm="sha2-512", mount_point=mount
    )
    return client.secrets.transit.verify_signed_data(
        name=KEY,
        hash_input=b64("hash this ish"),
        hmac=made["data"]["hmac"],
        hash_algorithm="sha2-512",
        mount_point=mount,
    )


def _sign(**options: Any) -> Callable[[hvac.Client, str], Any]:
    def case(client: hvac.Client, mount: str) -> Any:
        created(client, mount, key_type="ed25519")
        arguments = {"hash_algorithm": "sha2-256", "signature_algorithm": "pss", **options}
        return client.secrets.transit.sign_data(
            name=KEY, hash_input=b64("hash this ish"), mount_point=mount, **arguments
        )

    return case


def _sign_with_aes(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    return client.secrets.transit.sign_data(name=KEY, hash_input=TEXT, mount_point=mount)


def _verify(salt_length: str | None = None, **options: Any) -> Callable[[hvac.Client, str], Any]:
    def case(client: hvac.Client, mount: str) -> Any:
        created(client, mount, key_type="ed25519")
        signed = client.secrets.transit.sign_data(
            name=KEY,
            hash_input=b64("hash this ish"),
            hash_algorithm="sha2-256",
            signature_algorithm="pss",
            salt_length=salt_length if salt_length is not None else "auto",
            mount_point=mount,
        )
        arguments = {"hash_algorithm": "sha2-256", "signature_algorithm": "pss", **options}
        return client.secrets.transit.verify_signed_data(
            name=KEY,
            hash_input=b64("hash this ish"),
            signature=signed["data"]["signature"],
            salt_length=salt_length,
            mount_point=mount,
            **arguments,
        )

    return case


def _verify_wrong_message(client: hvac.Client, mount: str) -> Any:
    created(client, mount, key_type="ed25519")
    signed = client.secrets.transit.sign_data(name=KEY, hash_input=TEXT, mount_point=mount)
    return client.secrets.transit.verify_signed_data(
        name=KEY, hash_input=b64("other"), signature=signed["data"]["signature"], mount_point=mount
    )


def _backup(allow_plaintext_backup: bool) -> Callable[[hvac.Client, str], Any]:
    def case(client: hvac.Client, mount: str) -> Any:
        created(client, mount)
        client.secrets.transit.update_key_configuration(
            name=KEY,
            exportable=True,
            allow_plaintext_backup=allow_plaintext_backup,
            mount_point=mount,
        )
        return client.secrets.transit.backup_key(name=KEY, mount_point=mount)

    return case


def _restore(name: str | None, force: bool = False) -> Callable[[hvac.Client, str], Any]:
    def case(client: hvac.Client, mount: str) -> Any:
        created(client, mount)
        client.secrets.transit.update_key_configuration(
            name=KEY, exportable=True, allow_plaintext_backup=True, mount_point=mount
        )
        backup = client.secrets.transit.backup_key(name=KEY, mount_point=mount)["data"]["backup"]
        return client.secrets.transit.restore_key(
            backup=backup, name=name, force=force, mount_point=mount
        )

    return case


def _trim(min_version: int) -> Callable[[hvac.Client, str], Any]:
    def case(client: hvac.Client, mount: str) -> Any:
        created(client, mount)
        for _ in range(10):
            client.secrets.transit.rotate_key(name=KEY, mount_point=mount)
        client.secrets.transit.update_key_configuration(
            name=KEY, min_decryption_version=3, min_encryption_version=9, mount_point=mount
        )
        client.secrets.transit.trim_key(name=KEY, min_version=min_version, mount_point=mount)
        return client.secrets.transit.read_key(name=KEY, mount_point=mount)

    return case


def _forbidden(client: hvac.Client, mount: str) -> Any:
    created(client, mount)
    stranger = hvac.Client(url=client.url, token="not-a-token")
    return stranger.secrets.transit.encrypt_data(name=KEY, plaintext=TEXT, mount_point=mount)


CASES: dict[str, Callable[[hvac.Client, str], Any]] = {
    "create_key success": _create(),
    "create_key auto rotate period field": _create(auto_rotate_period="1h"),
    "create_key ed25519": _create(key_type="ed25519"),
    "create_key aes128-gcm96": _create(key_type="aes128-gcm96"),
    "create_key chacha20-poly1305": _create(key_type="chacha20-poly1305"),
    "create_key unknown type": _create(key_type="kitty-cat-key"),
    "create_key convergent without derived": _create(convergent_encryption=True),
    "create_key auto rotate period under an hour": _create(auto_rotate_period="10m"),
    "read_key success": _read,
    "read_key ed25519": _read_ed25519,
    "read_key missing": _read_missing,
    "list_keys success": _list,
    "list_keys empty": _list_empty,
    "delete_key success": _delete,
    "delete_key not allowed": _delete_not_allowed,
    "update_key_configuration": _config,
    "update_key_configuration min_decryption_version too new": _config_too_new,
    "rotate_key success": _rotate,
    "export_key hmac-key": _export("hmac-key"),
    "export_key encryption-key": _export("encryption-key"),
    "export_key invalid key type": _export("kitty-cat-key"),
    "export_key not exportable": _export_not_exportable,
    "export_key signing-key ed25519 latest": _export_signing_ed25519,
    "encrypt_data success": _encrypt,
    "encrypt_data creates the key": _encrypt_creates,
    "encrypt_data batch with a bad item": _encrypt_batch_with_a_bad_item,
    "encrypt_data with an ed25519 key": _encrypt_with_ed25519,
    "encrypt_data derived without context": _decrypt_derived_without_context,
    "decrypt_data success": _decrypt,
    "decrypt_data batch": _decrypt_batch,
    "decrypt_data derived": _decrypt_derived,
    "decrypt_data no prefix": _decrypt_no_prefix,
    "decrypt_data tampered": _decrypt_tampered,
    "decrypt_data version too new": _decrypt_too_new,
    "rewrap_data success": _rewrap,
    "generate_data_key plaintext": _data_key("plaintext"),
    "generate_data_key wrapped": _data_key("wrapped"),
    "generate_data_key invalid key type": _data_key("kitty-cat-key"),
    "generate_random_bytes success": _random(n_bytes=32),
    "generate_random_bytes hex": _random(n_bytes=16, output_format="hex"),
    "hash_data success": _hash(algorithm="sha2-256", output_format="hex"),
    "hash_data sha3-512 base64": _hash(algorithm="sha3-512", output_format="base64"),
    "hash_data invalid algorithm": _hash(algorithm="meow2-256"),
    "hash_data invalid output_format": _hash(output_format="kitty64"),
    "generate_hmac success": _hmac(algorithm="sha2-256"),
    "generate_hmac sha2-384": _hmac(algorithm="sha2-384"),
    "generate_hmac invalid algorithm": _hmac(algorithm="meow2-256"),
    "verify_signed_data hmac": _verify_hmac,
    "sign_data success": _sign(),
    "sign_data invalid algorithm": _sign(hash_algorithm="meow2-256"),
    "sign_data invalid signature_algorithm": _sign(signature_algorithm="pre-shared kitty cats"),
    "sign_data auto salt length": _sign(salt_length="auto"),
    "sign_data hash salt length": _sign(salt_length="hash"),
    "sign_data invalid string for salt length": _sign(salt_length="foobar"),
    "sign_data invalid negative salt length": _sign(salt_length="-2"),
    "sign_data valid negative salt length": _sign(salt_length="-1"),
    "sign_data zero salt length": _sign(salt_length="0"),
    "sign_data positive salt length": _sign(salt_length="1"),
    "sign_data with an aes key": _sign_with_aes,
    "verify_signed_data success": _verify(),
    "verify_signed_data invalid algorithm": _verify(hash_algorithm="meow2-256"),
    "verify_signed_data invalid signature_algorithm": _verify(
        signature_algorithm="pre-shared kitty cats"
    ),
    "verify_signed_data auto salt length": _verify("auto"),
    "verify_signed_data hash salt length": _verify("hash"),
    "verify_signed_data invalid string for salt length": _verify("foobar"),
    "verify_signed_data invalid negative salt length": _verify("-2"),
    "verify_signed_data valid negative salt length": _verify("-1"),
    "verify_signed_data zero salt length": _verify("0"),
    "verify_signed_data positive salt length": _verify("1"),
    "verify_signed_data wrong message": _verify_wrong_message,
    "backup_key success": _backup(True),
    "backup_key allow_plaintext_backup false": _backup(False),
    "restore_key success": _restore("new_test_ky"),
    "restore_key success with force": _restore("new_test_ky", force=True),
    "restore_key existing key without force": _restore(None),
    "trim_key success": _trim(2),
    "trim_key over min_decryption_version": _trim(4),
    "encrypt_data bad token": _forbidden,
}

# Where cipherd answers otherwise on purpose: (OpenBao's outcome, cipherd's, why).
DIFFERENCES: dict[str, tuple[Any, Any, str]] = {
    "backup_key allow_plaintext_backup false": (
        ("raised", "InternalServerError"),
        ("raised", "InvalidRequest"),
        "a refused request is a 4xx here, never a 500 (OpenBao answers 500)",
    ),
    "restore_key existing key without force": (
        ("raised", "InternalServerError"),
        ("raised", "InvalidRequest"),
        "a name in use is a 4xx here, never a 500 (OpenBao answers 500)",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hvac_transit_case_as_on_openbao(targets: dict[str, Target], case: str) -> None:
    seen = {server: outcome(CASES[case], targets[server]) for server in SERVERS}
    if case in DIFFERENCES:
        openbao, cipherd, _why = DIFFERENCES[case]
        assert (seen["openbao"], seen["cipherd"]) == (openbao, cipherd)
        return
    assert seen["cipherd"] == seen["openbao"]


def test_a_name_beginning_with_an_underscore_on_the_default_mount(
    targets: dict[str, Target],
) -> None:
    """On `transit`, whose keys are the service's own (no prefix before their names), a key
    name begins as Vault's may: with a word character, `_` included."""
    name = "_under-" + secrets.token_hex(4)
    for server in SERVERS:
        client = hvac.Client(url=targets[server].url, token=targets[server].token)
        client.secrets.transit.create_key(name=name, mount_point="transit")
        assert client.secrets.transit.read_key(name=name)["data"]["name"] == name
        sealed = client.secrets.transit.encrypt_data(name=name, plaintext=TEXT)
        ciphertext = sealed["data"]["ciphertext"]
        opened = client.secrets.transit.decrypt_data(name=name, ciphertext=ciphertext)
        assert opened["data"]["plaintext"] == TEXT, server
        assert name in client.secrets.transit.list_keys()["data"]["keys"]


def test_the_cases_cover_every_transit_method() -> None:
    """Every hvac Transit method the cases call is one of those compared."""
    methods = {
        "create_key",
        "read_key",
        "list_keys",
        "update_key_configuration",
        "rotate_key",
        "trim_key",
        "export_key",
        "backup_key",
        "restore_key",
        "encrypt_data",
        "decrypt_data",
        "rewrap_data",
        "generate_data_key",
        "generate_random_bytes",
        "hash_data",
        "generate_hmac",
        "sign_data",
        "verify_signed_data",
        "delete_key",
    }
    source = Path(__file__).read_text()
    assert all(f"transit.{m}(" in source for m in methods)
    assert all(
        any(name.startswith(m) for name in CASES) for m in methods - {"update_key_configuration"}
    )
