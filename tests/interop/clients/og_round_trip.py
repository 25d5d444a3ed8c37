"""Round trips through the Python client openapi-generator generates from openapi.yaml.

Type-checked with mypy against the generated package (`cipherd_og`), then run against the
service at CIPHERD_ADDR with the admin token CIPHERD_TOKEN: ECIES as JSON and as raw bytes,
AEZ, and functional encryption. Exits non-zero on the first answer that is not the expected one.
"""

import base64
import os

from cipherd_og import (
    AezApi,
    AezDecryptRequest,
    AezEncryptRequest,
    ApiClient,
    Configuration,
    EciesApi,
    EciesDecryptRequest,
    EciesEncryptRequest,
    FeApi,
    FeDecryptRequest,
    FeEncryptRequest,
    FeKeygenRequest,
    KeyCreate,
    KeysApi,
)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def main() -> None:
    settings = Configuration(
        host=os.environ["CIPHERD_ADDR"], access_token=os.environ["CIPHERD_TOKEN"]
    )
    with ApiClient(settings) as client:
        keys = KeysApi(client)
        keys.keys_create_key(KeyCreate(name="og-ecies", type="ecies-secp256k1"))
        keys.keys_create_key(KeyCreate(name="og-aez", type="aez"))
        keys.keys_create_key(KeyCreate(name="og-fe", type="ipfe-opt", dimension=3))

        ecies = EciesApi(client)
        message = os.urandom(300)
        sealed = ecies.ecies_encrypt("og-ecies", EciesEncryptRequest(plaintext=b64(message)))
        opened = ecies.ecies_decrypt("og-ecies", EciesDecryptRequest(ciphertext=sealed.ciphertext))
        assert base64.b64decode(opened.plaintext) == message

        raw = ecies.ecies_encrypt_raw("og-ecies", message)
        assert ecies.ecies_decrypt_raw("og-ecies", raw) == message

        aez = AezApi(client)
        nonce, ad = b64(b"nonce-1"), [b64(b"header")]
        aez_sealed = aez.aez_encrypt(
            "og-aez", AezEncryptRequest(plaintext=b64(message), nonce=nonce, ad=ad, tau=16)
        )
        aez_opened = aez.aez_decrypt(
            "og-aez", AezDecryptRequest(ciphertext=aez_sealed.ciphertext, nonce=nonce, ad=ad)
        )
        assert base64.b64decode(aez_opened.plaintext) == message

        fe = FeApi(client)
        functional = fe.fe_keygen("og-fe", FeKeygenRequest(y=[1, 2, 3]))
        encrypted = fe.fe_encrypt("og-fe", FeEncryptRequest(x=[4, 5, 6]))
        result = fe.fe_decrypt(
            "og-fe",
            FeDecryptRequest(
                functional_key=functional.functional_key,
                ciphertext=encrypted.ciphertext,
                bounds=[0, 100],
            ),
        )
        assert result.result == 32, result


if __name__ == "__main__":
    main()
