"""`Client` and `AsyncClient`: the operations of `cipherd._calls`, grouped by family.

`client.keys.create(...)`, `client.ecies.encrypt(...)`, ...: each family method is an
`operation` over a call builder, which sends the call with the client's connection (one
connection pool per client, reused across calls) and returns the answer read, or for the
asynchronous client an awaitable of it. `*_batch` methods are the `batch` forms of the same
builders: `client.ecies.encrypt_batch("orders", [b"a", b"b"])`.
"""

import functools
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Generic, ParamSpec, TypeVar, cast, overload

import httpx

from cipherd import _calls
from cipherd._calls import batch
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
    jwks = operation(_calls.jwks)
    export = operation(_calls.export_key)
    backup = operation(_calls.backup_key)
    import_backup = operation(_calls.import_backup)
    import_material = operation(_calls.import_material)


class Tokens(Family[SenderT]):
    create = operation(_calls.create_token)
    list = operation(_calls.list_tokens)
    revoke = operation(_calls.revoke_token)
    lookup = operation(_calls.lookup_token)
    lookup_self = operation(_calls.lookup_self)
    renew_self = operation(_calls.renew_self)
    revoke_self = operation(_calls.revoke_self)


class Policies(Family[SenderT]):
    put = operation(_calls.put_policy)
    get = operation(_calls.get_policy)
    list = operation(_calls.list_policies)
    delete = operation(_calls.delete_policy)


class Auth(Family[SenderT]):
    jwt_login = operation(_calls.jwt_login)
    cert_login = operation(_calls.cert_login)
    approle_login = operation(_calls.approle_login)


class AppRole(Family[SenderT]):
    write_role = operation(_calls.approle_write_role)
    read_role = operation(_calls.approle_read_role)
    list_roles = operation(_calls.approle_list_roles)
    delete_role = operation(_calls.approle_delete_role)
    role_id = operation(_calls.approle_role_id)
    secret_id = operation(_calls.approle_secret_id)
    wrapped_secret_id = operation(_calls.approle_wrapped_secret_id)


class Ecies(Family[SenderT]):
    encrypt = operation(_calls.ecies_encrypt)
    encrypt_batch = operation(batch(_calls.ecies_encrypt))
    decrypt = operation(_calls.ecies_decrypt)
    decrypt_batch = operation(batch(_calls.ecies_decrypt))
    encrypt_stream = operation(_calls.ecies_encrypt_stream)
    decrypt_stream = operation(_calls.ecies_decrypt_stream)
    encrypt_to_public_key = operation(_calls.ecies_encrypt_to_public_key)
    datakey = operation(_calls.ecies_datakey)
    datakey_batch = operation(batch(_calls.ecies_datakey))
    rewrap = operation(_calls.ecies_rewrap)
    rewrap_batch = operation(batch(_calls.ecies_rewrap))


class Aez(Family[SenderT]):
    encrypt = operation(_calls.aez_encrypt)
    encrypt_batch = operation(batch(_calls.aez_encrypt))
    decrypt = operation(_calls.aez_decrypt)
    decrypt_batch = operation(batch(_calls.aez_decrypt))
    encrypt_stream = operation(_calls.aez_encrypt_stream)
    decrypt_stream = operation(_calls.aez_decrypt_stream)
    datakey = operation(_calls.aez_datakey)
    datakey_batch = operation(batch(_calls.aez_datakey))
    rewrap = operation(_calls.aez_rewrap)
    rewrap_batch = operation(batch(_calls.aez_rewrap))


class Aead(Family[SenderT]):
    encrypt = operation(_calls.aead_encrypt)
    encrypt_batch = operation(batch(_calls.aead_encrypt))
    decrypt = operation(_calls.aead_decrypt)
    decrypt_batch = operation(batch(_calls.aead_decrypt))
    encrypt_stream = operation(_calls.aead_encrypt_stream)
    decrypt_stream = operation(_calls.aead_decrypt_stream)
    datakey = operation(_calls.aead_datakey)
    datakey_batch = operation(batch(_calls.aead_datakey))
    rewrap = operation(_calls.aead_rewrap)
    rewrap_batch = operation(batch(_calls.aead_rewrap))


class Hpke(Family[SenderT]):
    encrypt = operation(_calls.hpke_encrypt)
    encrypt_batch = operation(batch(_calls.hpke_encrypt))
    decrypt = operation(_calls.hpke_decrypt)
    decrypt_batch = operation(batch(_calls.hpke_decrypt))
    encrypt_stream = operation(_calls.hpke_encrypt_stream)
    decrypt_stream = operation(_calls.hpke_decrypt_stream)
    encrypt_to_public_key = operation(_calls.hpke_encrypt_to_public_key)


class Rsa(Family[SenderT]):
    encrypt = operation(_calls.rsa_encrypt)
    encrypt_batch = operation(batch(_calls.rsa_encrypt))
    decrypt = operation(_calls.rsa_decrypt)
    decrypt_batch = operation(batch(_calls.rsa_decrypt))
    encrypt_stream = operation(_calls.rsa_encrypt_stream)
    decrypt_stream = operation(_calls.rsa_decrypt_stream)


class Signatures(Family[SenderT]):
    sign = operation(_calls.sign)
    sign_batch = operation(batch(_calls.sign))
    verify = operation(_calls.verify)
    verify_batch = operation(batch(_calls.verify))
    verify_with_public_key = operation(_calls.verify_with_public_key)


class Jwts(Family[SenderT]):
    sign = operation(_calls.jwt_sign)
    sign_batch = operation(batch(_calls.jwt_sign))


class Hmacs(Family[SenderT]):
    compute = operation(_calls.hmac)
    compute_batch = operation(batch(_calls.hmac))
    verify = operation(_calls.hmac_verify)
    verify_batch = operation(batch(_calls.hmac_verify))


class Fe(Family[SenderT]):
    keygen = operation(_calls.fe_keygen)
    keygen_batch = operation(batch(_calls.fe_keygen))
    encrypt = operation(_calls.fe_encrypt)
    encrypt_batch = operation(batch(_calls.fe_encrypt))
    decrypt = operation(_calls.fe_decrypt)
    decrypt_batch = operation(batch(_calls.fe_decrypt))
    decrypt_many = operation(_calls.fe_decrypt_many)
    functions = operation(_calls.fe_functions)


class Audit(Family[SenderT]):
    list = operation(_calls.list_audit)
    verify = operation(_calls.verify_audit)


class Sys(Family[SenderT]):
    keyring = operation(_calls.keyring)
    rotate_keyring = operation(_calls.rotate_keyring)
    ready = operation(_calls.ready)
    wrapping_key = operation(_calls.wrapping_key)
    signing_key = operation(_calls.signing_key)
    random = operation(_calls.random)
    unwrap = operation(_calls.unwrap)


class _Clients(Generic[SenderT]):
    """What both clients share: the settings, from the arguments or else the environment, and
    the families of operations, bound to the client."""

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
        self._connect()
        client = cast(SenderT, self)
        self.keys: Keys[SenderT] = Keys(client)
        self.tokens: Tokens[SenderT] = Tokens(client)
        self.auth: Auth[SenderT] = Auth(client)
        self.approle: AppRole[SenderT] = AppRole(client)
        self.policies: Policies[SenderT] = Policies(client)
        self.ecies: Ecies[SenderT] = Ecies(client)
        self.aez: Aez[SenderT] = Aez(client)
        self.aead: Aead[SenderT] = Aead(client)
        self.hpke: Hpke[SenderT] = Hpke(client)
        self.rsa: Rsa[SenderT] = Rsa(client)
        self.signatures: Signatures[SenderT] = Signatures(client)
        self.jwt: Jwts[SenderT] = Jwts(client)
        self.hmac: Hmacs[SenderT] = Hmacs(client)
        self.fe: Fe[SenderT] = Fe(client)
        self.audit: Audit[SenderT] = Audit(client)
        self.sys: Sys[SenderT] = Sys(client)

    def _connect(self) -> None:
        """Make the client's connection pool."""
        raise NotImplementedError


class Client(_Clients["Client"]):
    """A synchronous client of one cipherd service.

    `address` (default: CIPHERD_ADDR, else http://127.0.0.1:8000) and `token` (default:
    CIPHERD_TOKEN, or the contents of `token_file` / CIPHERD_TOKEN_FILE); for TLS, `ca_file`
    (CIPHERD_CA_FILE) and a client certificate `client_cert` and `client_key`
    (CIPHERD_CLIENT_CERT_FILE, CIPHERD_CLIENT_KEY_FILE). Use it as a context manager, or
    `close()` it.
    """

    def _connect(self) -> None:
        self._http = httpx.Client(**self.settings.httpx_options())

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


class AsyncClient(_Clients["AsyncClient"]):
    """An asynchronous client: the same families and arguments as `Client`, each method
    awaitable. Use it as an async context manager, or `await aclose()`."""

    def _connect(self) -> None:
        self._http = httpx.AsyncClient(**self.settings.httpx_options())

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
