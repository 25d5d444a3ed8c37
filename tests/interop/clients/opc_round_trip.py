"""Round trips through the client openapi-python-client generates from openapi.yaml.

Type-checked with mypy against the generated package (`cipherd_generated_client`), then run
against the service at CIPHERD_ADDR with the admin token CIPHERD_TOKEN: ECIES as JSON and as raw
bytes, AEZ, and functional encryption. Exits non-zero on the first answer that is not the
expected one.
"""

import base64
import io
import os

from cipherd_generated_client import AuthenticatedClient
from cipherd_generated_client.api.aez import aez_decrypt, aez_encrypt
from cipherd_generated_client.api.ecies import (
    ecies_decrypt,
    ecies_decrypt_raw,
    ecies_encrypt,
    ecies_encrypt_raw,
)
from cipherd_generated_client.api.fe import fe_decrypt, fe_encrypt, fe_keygen
from cipherd_generated_client.api.keys import keys_create_key
from cipherd_generated_client.models import (
    AezCiphertext,
    AezDecryptRequest,
    AezEncryptRequest,
    AezPlaintext,
    EciesCiphertext,
    EciesDecryptRequest,
    EciesEncryptRequest,
    EciesPlaintext,
    FeCiphertext,
    FeDecryptRequest,
    FeEncryptRequest,
    FeFunctionalKey,
    FeKeygenRequest,
    FeResult,
    KeyCreate,
    KeyCreateType,
    KeyOut,
)
from cipherd_generated_client.types import File


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def main() -> None:
    client = AuthenticatedClient(os.environ["CIPHERD_ADDR"], token=os.environ["CIPHERD_TOKEN"])
    with client:
        for name, kind, dimension in (
            ("opc-ecies", KeyCreateType.ECIES_SECP256K1, None),
            ("opc-aez", KeyCreateType.AEZ, None),
            ("opc-fe", KeyCreateType.IPFE_OPT, 3),
        ):
            body = KeyCreate(name=name, type_=kind)
            if dimension is not None:
                body.dimension = dimension
            created = keys_create_key.sync(client=client, body=body)
            assert isinstance(created, KeyOut), created

        message = os.urandom(300)
        sealed = ecies_encrypt.sync(
            "opc-ecies", client=client, body=EciesEncryptRequest(plaintext=b64(message))
        )
        assert isinstance(sealed, EciesCiphertext), sealed
        opened = ecies_decrypt.sync(
            "opc-ecies", client=client, body=EciesDecryptRequest(ciphertext=sealed.ciphertext)
        )
        assert isinstance(opened, EciesPlaintext), opened
        assert base64.b64decode(opened.plaintext) == message

        raw = ecies_encrypt_raw.sync("opc-ecies", client=client, body=File(io.BytesIO(message)))
        assert isinstance(raw, File), raw
        raw_opened = ecies_decrypt_raw.sync("opc-ecies", client=client, body=raw)
        assert isinstance(raw_opened, File), raw_opened
        assert raw_opened.payload.read() == message

        nonce, ad = b64(b"nonce-1"), [b64(b"header")]
        aez_sealed = aez_encrypt.sync(
            "opc-aez",
            client=client,
            body=AezEncryptRequest(plaintext=b64(message), nonce=nonce, ad=ad, tau=16),
        )
        assert isinstance(aez_sealed, AezCiphertext), aez_sealed
        aez_opened = aez_decrypt.sync(
            "opc-aez",
            client=client,
            body=AezDecryptRequest(ciphertext=aez_sealed.ciphertext, nonce=nonce, ad=ad),
        )
        assert isinstance(aez_opened, AezPlaintext), aez_opened
        assert base64.b64decode(aez_opened.plaintext) == message

        functional = fe_keygen.sync("opc-fe", client=client, body=FeKeygenRequest(y=[1, 2, 3]))
        assert isinstance(functional, FeFunctionalKey), functional
        encrypted = fe_encrypt.sync("opc-fe", client=client, body=FeEncryptRequest(x=[4, 5, 6]))
        assert isinstance(encrypted, FeCiphertext), encrypted
        result = fe_decrypt.sync(
            "opc-fe",
            client=client,
            body=FeDecryptRequest(
                functional_key=functional.functional_key,
                ciphertext=encrypted.ciphertext,
                bounds=[0, 100],
            ),
        )
        assert isinstance(result, FeResult), result
        assert result.result == 32, result


if __name__ == "__main__":
    main()
