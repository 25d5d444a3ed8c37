"""The Python client of a cipherd service.

    import cipherd
    with cipherd.Client("http://127.0.0.1:8000", token="...") as client:
        client.keys.create("orders", "ecies-secp256k1")
        sealed = client.ecies.encrypt("orders", b"hello")
        assert client.ecies.decrypt("orders", sealed.ciphertext).plaintext == b"hello"

This package needs only httpx: it imports nothing of the server. `cipherd.fe_local` (local FE
encryption and decryption) needs the `core` library (the extra `cipherd-client[fe]`), and
imports it only when used.
"""

from importlib.metadata import version

from cipherd._calls import Item
from cipherd._transport import Progress, Retries
from cipherd.client import AsyncClient, Client
from cipherd.errors import *  # noqa: F403 (the exception classes are part of the API)
from cipherd.errors import CipherdError, ProblemError, UnreachableError
from cipherd.models import (
    AuditAnchor,
    AuditFault,
    AuditPage,
    AuditRecord,
    AuditVerification,
    BatchItem,
    Ciphertext,
    DataKey,
    DeletionScheduled,
    ExportedKey,
    FeFunctions,
    FunctionalKey,
    Hmac,
    IssuedToken,
    Jwt,
    Key,
    KeyPage,
    Keyring,
    KeyVersion,
    Plaintext,
    PublicKey,
    ReleasedFunction,
    Signature,
    Streamed,
    Token,
    TokenPage,
)

__version__ = version("cipherd-client")

__all__ = [
    "AsyncClient",
    "AuditAnchor",
    "AuditFault",
    "AuditPage",
    "AuditRecord",
    "AuditVerification",
    "BatchItem",
    "CipherdError",
    "Ciphertext",
    "Client",
    "DataKey",
    "DeletionScheduled",
    "ExportedKey",
    "FeFunctions",
    "FunctionalKey",
    "Hmac",
    "IssuedToken",
    "Item",
    "Jwt",
    "Key",
    "KeyPage",
    "KeyVersion",
    "Keyring",
    "Plaintext",
    "ProblemError",
    "Progress",
    "PublicKey",
    "ReleasedFunction",
    "Retries",
    "Signature",
    "Streamed",
    "Token",
    "TokenPage",
    "UnreachableError",
]
