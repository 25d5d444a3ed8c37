"""Sealing families (AEAD, AEZ, ECIES, HPKE, RSA), declared once: their encrypt, decrypt, data
keys and rewrap, each with its path, scope, raw form and batch (`app.http.operation` makes the
routes)."""

from collections.abc import Awaitable, Callable

from pydantic import Field, create_model

from app.http.operation import Family, ItemT, KeyCall, KeyOperation, KeyT, RawForm, RawQuery, Verb
from app.ops.grants import Operation

# The query's key version in a sealing family's raw encryption and decryption.
ENCRYPTION_VERSION = "the key version to encrypt under; default: the latest"
DECRYPTION_VERSION = "default: the envelope's, or tried from the latest down"


class SealingFamily(Family[KeyT]):
    """A family whose keys seal payloads (AEAD, AEZ, ECIES, HPKE, RSA): its encrypt and decrypt
    take JSON or raw bytes, single or in batches, and some also give data keys and rewrap; each
    verb is declared here once, with its path, scope and raw form. `params` are the family's
    parameters in a raw request's query; `bare` says what `envelope=false` gives; `sealed` is
    what the family calls an encryption's bytes ("ciphertext" or "payload")."""

    def __init__(
        self,
        name: str,
        key: Callable[[KeyCall], Awaitable[KeyT]],
        *,
        params: type[RawQuery],
        bare: str,
        sealed: str,
    ) -> None:
        super().__init__(name, key)
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

    def encrypt(
        self, summary: str, *, batch: str
    ) -> Callable[[Verb[KeyT, ItemT]], KeyOperation[KeyT, ItemT]]:
        """Declare `def encrypt(key, item) -> answer`, its raw form and its batch."""
        return self.operation(
            "/{name}/encrypt",
            access=Operation.ENCRYPT,
            summary=summary,
            raw=self.encryption,
            batch=batch,
            hot=True,
        )

    def decrypt(
        self, summary: str, *, batch: str
    ) -> Callable[[Verb[KeyT, ItemT]], KeyOperation[KeyT, ItemT]]:
        """Declare `def decrypt(key, item) -> answer`, its raw form and its batch."""
        return self.operation(
            "/{name}/decrypt",
            access=Operation.DECRYPT,
            summary=summary,
            raw=self.decryption,
            batch=batch,
            payload="ciphertext",
            hot=True,
        )

    def datakey(
        self, summary: str, *, batch: str
    ) -> Callable[[Verb[KeyT, ItemT]], KeyOperation[KeyT, ItemT]]:
        """Declare `def datakey(key, item) -> answer` and its batch."""
        return self.operation(
            "/{name}/datakey", access=Operation.ENCRYPT, summary=summary, batch=batch, hot=True
        )

    def rewrap(
        self, summary: str, *, batch: str
    ) -> Callable[[Verb[KeyT, ItemT]], KeyOperation[KeyT, ItemT]]:
        """Declare `def rewrap(key, item) -> answer` and its batch."""
        return self.operation(
            "/{name}/rewrap",
            access=(Operation.DECRYPT, Operation.ENCRYPT),
            summary=summary,
            batch=batch,
            payload="ciphertext",
        )
