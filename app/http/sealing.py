"""Sealing families (AEAD, AEZ, ECIES, HPKE, RSA), declared once: their encrypt, decrypt, data
keys and rewrap, each with its path, scope, raw form and batch (`app.http.operation` makes the
routes). Encrypt, decrypt and rewrap are the same per-item functions in every family, on its
`SealingKey`; a family gives only their request models and summaries."""

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, Field, create_model

from app.http.operation import Family, ItemT, KeyCall, KeyOperation, RawForm, RawQuery, Verb
from app.http.schemas import CiphertextAnswer, PlaintextAnswer
from app.ops.grants import Operation
from app.ops.sealing import SealingKey

# The query's key version in a sealing family's raw encryption and decryption.
ENCRYPTION_VERSION = "the key version to encrypt under; default: the latest"
DECRYPTION_VERSION = "default: the envelope's, or tried from the latest down"

KeyT = TypeVar("KeyT", bound=SealingKey[Any])


class SealingFamily(Family[KeyT]):
    """A family whose keys seal payloads (AEAD, AEZ, ECIES, HPKE, RSA): its encrypt and decrypt
    take JSON or raw bytes, single or in batches, and some also give data keys and rewrap; each
    verb is declared here once, with its path, scope, raw form and batch summary. `params` are
    the family's parameters in a raw request's query; `bare` says what `envelope=false` gives;
    `sealed` is what the family calls an encryption's bytes ("ciphertext" or "payload");
    `to_key` says that one encrypts *to* its keys (their public part), not *with* them."""

    def __init__(
        self,
        name: str,
        key: Callable[[KeyCall], Awaitable[KeyT]],
        *,
        params: type[RawQuery],
        bare: str,
        sealed: str,
        to_key: bool = False,
    ) -> None:
        super().__init__(name, key)
        self.held = f"a server-held {name.upper()} key"
        self.sealed = sealed
        self.to_key = to_key
        # Every verb's answer, named after the family (`EciesCiphertext`, `EciesPlaintext`).
        self.ciphertext = create_model(f"{self.schema_prefix}Ciphertext", __base__=CiphertextAnswer)
        self.plaintext = create_model(f"{self.schema_prefix}Plaintext", __base__=PlaintextAnswer)
        encryption = create_model(
            f"{self.schema_prefix}EncryptQuery",
            __base__=params,
            envelope=(bool, Field(True, description=bare)),
            key_version=(int | None, Field(None, ge=1, description=ENCRYPTION_VERSION)),
        )
        decryption = create_model(
            f"{self.schema_prefix}DecryptQuery",
            __base__=params,
            key_version=(int | None, Field(None, ge=1, description=DECRYPTION_VERSION)),
        )
        self.encryption = RawForm(
            encryption,
            "plaintext",
            "the plaintext; parameters in the query",
            f"the {sealed}, for a raw request",
        )
        self.decryption = RawForm(
            decryption,
            "ciphertext",
            f"the {sealed}; parameters in the query",
            "the plaintext, for a raw request",
        )

    def encrypt(self, item: type[BaseModel], summary: str) -> None:
        """Declare encrypt for items `item` (`plaintext`, `envelope`, `key_version` and the
        family's parameters), its raw form and its batch."""
        answer = self.ciphertext

        def encrypt(key: KeyT, item: Any) -> BaseModel:
            return answer.of(key.encrypt(item.plaintext, item, item.envelope, item.key_version))

        preposition = "to" if self.to_key else "with"
        self.declare(
            encrypt,
            item,
            answer,
            "/{name}/encrypt",
            access=Operation.ENCRYPT,
            summary=summary,
            raw=self.encryption,
            batch=f"Encrypt many plaintexts {preposition} {self.held}",
            hot=True,
        )

    def decrypt(self, item: type[BaseModel], summary: str) -> None:
        """Declare decrypt for items `item` (`ciphertext`, `key_version` and the family's
        parameters), its raw form and its batch."""
        answer = self.plaintext

        def decrypt(key: KeyT, item: Any) -> BaseModel:
            return answer.of(key.decrypt(item.ciphertext, item, item.key_version))

        self.declare(
            decrypt,
            item,
            answer,
            "/{name}/decrypt",
            access=Operation.DECRYPT,
            summary=summary,
            raw=self.decryption,
            batch=f"Decrypt many {self.sealed}s with {self.held}",
            payload="ciphertext",
            hot=True,
        )

    def datakey(self, summary: str) -> Callable[[Verb[KeyT, ItemT]], KeyOperation[KeyT, ItemT]]:
        """Declare `def datakey(key, item) -> answer` and its batch: a family's data keys differ
        in what they carry beside the key."""
        return self.operation(
            "/{name}/datakey",
            access=Operation.ENCRYPT,
            summary=summary,
            batch=f"Many data keys under {self.held}",
            hot=True,
        )

    def rewrap(self, item: type[BaseModel], summary: str) -> None:
        """Declare rewrap for items `item` (`ciphertext`, `key_version`, `envelope` and the
        family's parameters) and its batch."""
        answer = self.ciphertext

        def rewrap(key: KeyT, item: Any) -> BaseModel:
            return answer.of(key.rewrap(item.ciphertext, item, item.key_version, item.envelope))

        self.declare(
            rewrap,
            item,
            answer,
            "/{name}/rewrap",
            access=(Operation.DECRYPT, Operation.ENCRYPT),
            summary=summary,
            batch=f"Rewrap many {self.sealed}s under {self.held}'s latest version",
            payload="ciphertext",
        )
