"""`Client` and `AsyncClient`: the operations of `cipherd._calls`, grouped by family.

`client.keys.create(...)`, `client.ecies.encrypt(...)`, ...: each family method is an
`operation` over a call builder, which sends the call with the client's connection (one
connection pool per client, reused across calls) and returns the answer read, or for the
asynchronous client an awaitable of it.
"""

import functools
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Generic, ParamSpec, TypeVar, overload

import httpx

from cipherd import _calls
from cipherd._transport import Call, Retries, Settings, send_async, send_sync

P = ParamSpec("P")
T = TypeVar("T")
SenderT = TypeVar("SenderT", "Client", "AsyncClient")


class Family(Generic[SenderT]):
    """The operations of one family, bound to a client."""

    def __init__(self, client: SenderT) -> None:
        self._client: SenderT = client


class operation(Generic[P, T]):
    """A call builder as a method: synchronous on a `Client`'s family, awaitable on an
    `AsyncClient`'s."""

    def __init__(self, build: Callable[P, Call[T]]) -> None:
        self.build = build

    @overload
    def __get__(self, family: None, owner: type) -> "operation[P, T]": ...
    @overload
    def __get__(self, family: "Family[Client]", owner: type) -> Callable[P, T]: ...
    @overload
    def __get__(self, family: "Family[AsyncClient]", owner: type) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, family: Any, owner: type) -> Any:
        if family is None:
            return self
        client = family._client
        build = self.build

        @functools.wraps(build)
        def bound(*args: P.args, **kwargs: P.kwargs) -> Any:
            return client._send(build(*args, **kwargs))

        return bound


class Keys(Family[SenderT]):
    create = operation(_calls.create_key)
    list = operation(_calls.list_keys)
    get = operation(_calls.get_key)
    rotate = operation(_calls.rotate_key)
    delete = operation(_calls.delete_key)
    restore = operation(_calls.restore_key)
    update = operation(_calls.update_key)
    trim = operation(_calls.trim_key)
    public = operation(_calls.public_key)
    export = operation(_calls.export_key)
    backup = operation(_calls.backup_key)
    import_backup = operation(_calls.import_backup)
    import_material = operation(_calls.import_material)


class Tokens(Family[SenderT]):
    create = operation(_calls.create_token)
    list = operation(_calls.list_tokens)
    revoke = operation(_calls.revoke_token)


class Ecies(Family[SenderT]):
    encrypt = operation(_calls.ecies_encrypt)
    decrypt = operation(_calls.ecies_decrypt)
    encrypt_stream = operation(_calls.ecies_encrypt_stream)
    decrypt_stream = operation(_calls.ecies_decrypt_stream)
    encrypt_batch = operation(_calls.ecies_encrypt_batch)
    decrypt_batch = operation(_calls.ecies_decrypt_batch)
    encrypt_to_public_key = operation(_calls.ecies_encrypt_to_public_key)
    datakey = operation(_calls.ecies_datakey)
    rewrap = operation(_calls.ecies_rewrap)


class Aez(Family[SenderT]):
    encrypt = operation(_calls.aez_encrypt)
    decrypt = operation(_calls.aez_decrypt)
    encrypt_stream = operation(_calls.aez_encrypt_stream)
    decrypt_stream = operation(_calls.aez_decrypt_stream)
    encrypt_batch = operation(_calls.aez_encrypt_batch)
    decrypt_batch = operation(_calls.aez_decrypt_batch)
    datakey = operation(_calls.aez_datakey)
    rewrap = operation(_calls.aez_rewrap)


class Signatures(Family[SenderT]):
    sign = operation(_calls.sign)
    sign_batch = operation(_calls.sign_batch)
    verify = operation(_calls.verify)
    verify_with_public_key = operation(_calls.verify_with_public_key)


class Hmacs(Family[SenderT]):
    compute = operation(_calls.hmac)
    verify = operation(_calls.hmac_verify)


class Fe(Family[SenderT]):
    keygen = operation(_calls.fe_keygen)
    keygen_batch = operation(_calls.fe_keygen_batch)
    encrypt = operation(_calls.fe_encrypt)
    encrypt_batch = operation(_calls.fe_encrypt_batch)
    decrypt = operation(_calls.fe_decrypt)
    decrypt_many = operation(_calls.fe_decrypt_many)
    decrypt_batch = operation(_calls.fe_decrypt_batch)
    functions = operation(_calls.fe_functions)


class Audit(Family[SenderT]):
    list = operation(_calls.list_audit)


class Sys(Family[SenderT]):
    keyring = operation(_calls.keyring)
    rotate_keyring = operation(_calls.rotate_keyring)
    ready = operation(_calls.ready)
    wrapping_key = operation(_calls.wrapping_key)
    random = operation(_calls.random)


class Client:
    """A synchronous client of one cipherd service.

    `address` (default: CIPHERD_ADDR, else http://127.0.0.1:8000) and `token` (default:
    CIPHERD_TOKEN, or the contents of `token_file` / CIPHERD_TOKEN_FILE); for TLS, `ca_file`
    (CIPHERD_CA_FILE) and a client certificate `client_cert` and `client_key`
    (CIPHERD_CLIENT_CERT_FILE, CIPHERD_CLIENT_KEY_FILE). Use it as a context manager, or
    `close()` it.
    """

    def __init__(
        self,
        address: str | None = None,
        token: str | None = None,
        *,
        token_file: str | None = None,
        ca_file: str | None = None,
        client_cert: str | None = None,
        client_key: str | None = None,
        timeout: float = 60.0,
        retries: Retries | None = None,
    ) -> None:
        self.settings = Settings.resolve(
            address,
            token,
            token_file=token_file,
            ca_file=ca_file,
            client_cert=client_cert,
            client_key=client_key,
            timeout=timeout,
            retries=retries,
        )
        self._http = httpx.Client(**self.settings.httpx_options())
        self.keys: Keys[Client] = Keys(self)
        self.tokens: Tokens[Client] = Tokens(self)
        self.ecies: Ecies[Client] = Ecies(self)
        self.aez: Aez[Client] = Aez(self)
        self.signatures: Signatures[Client] = Signatures(self)
        self.hmac: Hmacs[Client] = Hmacs(self)
        self.fe: Fe[Client] = Fe(self)
        self.audit: Audit[Client] = Audit(self)
        self.sys: Sys[Client] = Sys(self)

    def _send(self, call: Call[T]) -> T:
        return send_sync(self._http, self.settings, call)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClient:
    """An asynchronous client: the same families and arguments as `Client`, each method
    awaitable. Use it as an async context manager, or `await aclose()`."""

    def __init__(
        self,
        address: str | None = None,
        token: str | None = None,
        *,
        token_file: str | None = None,
        ca_file: str | None = None,
        client_cert: str | None = None,
        client_key: str | None = None,
        timeout: float = 60.0,
        retries: Retries | None = None,
    ) -> None:
        self.settings = Settings.resolve(
            address,
            token,
            token_file=token_file,
            ca_file=ca_file,
            client_cert=client_cert,
            client_key=client_key,
            timeout=timeout,
            retries=retries,
        )
        self._http = httpx.AsyncClient(**self.settings.httpx_options())
        self.keys: Keys[AsyncClient] = Keys(self)
        self.tokens: Tokens[AsyncClient] = Tokens(self)
        self.ecies: Ecies[AsyncClient] = Ecies(self)
        self.aez: Aez[AsyncClient] = Aez(self)
        self.signatures: Signatures[AsyncClient] = Signatures(self)
        self.hmac: Hmacs[AsyncClient] = Hmacs(self)
        self.fe: Fe[AsyncClient] = Fe(self)
        self.audit: Audit[AsyncClient] = Audit(self)
        self.sys: Sys[AsyncClient] = Sys(self)

    def _send(self, call: Call[T]) -> Awaitable[T]:
        return send_async(self._http, self.settings, call)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
