"""Vault's capabilities of a token on a path (`sys/capabilities-self` and its kin, which
`bao token capabilities` and hvac's `get_capabilities` ask), read off what the token may do
here: the words a Vault policy would use for what this service would allow at that path.

A path under a Transit mount (`transit/encrypt/orders`, `payments/sign/k`) is `update` when
the token may do the verb on that mount's key (`read` for `keys/<key>`); an admin path is every
capability when the token has the admin operation the service asks for there (`auth/token/...`
and the lease paths: `tokens`; `sys/policies`: `policies`; `auth/<method>/...` and `sys/auth`:
`auth`; ...); a token's own paths are Vault's default policy's; the admin token has `root`.
Anything else is `deny`.
"""

from app.ops import Services, vault_tokens
from app.ops.grants import AdminOperation, Operation, Principal
from app.ops.transit.mounts import resolve
from app.store import AuthState, SecretMount

# A token's own paths, which every token may use (Vault's default policy).
_OWN = {
    "auth/token/lookup-self": ["read"],
    "auth/token/renew-self": ["update"],
    "auth/token/revoke-self": ["update"],
    "sys/capabilities-self": ["update"],
    "sys/wrapping/wrap": ["update"],
    "sys/wrapping/lookup": ["update"],
    "sys/wrapping/unwrap": ["update"],
}
# The service's admin paths (a path itself, or any under it) and the admin operations any of
# which gives it here, the more specific first (the first that holds a path is its).
_ADMIN: dict[str, tuple[AdminOperation, ...]] = {
    "auth/token": (AdminOperation.TOKENS,),
    "sys/capabilities": (AdminOperation.TOKENS,),
    "sys/capabilities-accessor": (AdminOperation.TOKENS,),
    "sys/leases": (AdminOperation.TOKENS,),
    "sys/policies": (AdminOperation.POLICIES,),
    "sys/policy": (AdminOperation.POLICIES,),
    "sys/auth": (AdminOperation.AUTH,),
    "auth": (AdminOperation.AUTH,),
    "sys/audit": (AdminOperation.AUDIT,),
    "sys/mounts": (AdminOperation.SYS,),
    "sys/remount": (AdminOperation.SYS, AdminOperation.AUTH),  # Transit mounts; methods
}
_EVERY = ["create", "delete", "list", "read", "update"]
# Transit's verbs on a key: what they take of it (any one of the sets, all of a set).
_VERBS: dict[str, tuple[tuple[Operation, ...], ...]] = {
    "encrypt": ((Operation.ENCRYPT,),),
    "decrypt": ((Operation.DECRYPT,),),
    "rewrap": ((Operation.DECRYPT, Operation.ENCRYPT),),
    "datakey": ((Operation.ENCRYPT,),),
    "sign": ((Operation.SIGN,),),
    "verify": ((Operation.VERIFY,), (Operation.HMAC,)),  # a signature, or an HMAC
    "hmac": ((Operation.HMAC,),),
    "keys": ((Operation.READ,),),
}
# Transit's verbs of no key, which every token may use here (Vault's default policy gives
# neither), and their kin at sys/tools (`sys/tools/random/16`, `sys/tools/hash/sha2-512`).
_KEYLESS = ("hash", "random")
_TOOLS = tuple(f"sys/tools/{verb}" for verb in _KEYLESS)
_BACKUP = ("backup", "restore")


def capabilities(principal: Principal, path: str, mounts: dict[str, SecretMount]) -> list[str]:
    """The capabilities of `principal` on `path` (below /v1/), Transit's under `mounts` (the
    mount table)."""
    path = path.strip().strip("/")
    if principal.admin:
        return ["root"]
    if path in _OWN:
        return _OWN[path]
    if any(path == tool or path.startswith(tool + "/") for tool in _TOOLS):
        return ["update"]
    found = resolve(mounts, path)
    if found is not None:
        return _transit(principal, found.mount, found.rest.split("/"))
    for prefix, operations in _ADMIN.items():
        if path == prefix or path.startswith(prefix + "/"):
            allowed = any(principal.may(operation) for operation in operations)
            return list(_EVERY) if allowed else ["deny"]
    return ["deny"]


def _transit(principal: Principal, mount: SecretMount, parts: list[str]) -> list[str]:
    verb = parts[0]
    if verb in _KEYLESS:
        return ["update"]
    if verb in _BACKUP:
        return list(_EVERY) if principal.may(AdminOperation.BACKUP) else ["deny"]
    if verb == "datakey":  # datakey/<plaintext or wrapped>/<key>
        if len(parts) != 3 or parts[1] not in ("plaintext", "wrapped"):
            return ["deny"]
        parts = [verb, parts[2]]
    if verb not in _VERBS or len(parts) != 2 or not parts[1]:
        return ["deny"]  # a key's changes (keys/<key>/rotate ...) take the admin token
    key = mount.key_prefix + parts[1]
    if not any(all(principal.allows(op, key) for op in ops) for ops in _VERBS[verb]):
        return ["deny"]
    return ["read"] if verb == "keys" else ["update"]


def named_by_token(services: Services, token: str, state: AuthState) -> Principal | None:
    """The principal `token` stands for (the admin token's too), asked about by another
    (`sys/capabilities`); None for no live token. Off the event loop."""
    return services.auth.principal_named(token, state)


def named_by_accessor(services: Services, accessor: str, state: AuthState) -> Principal | None:
    """The principal of the live token of accessor `accessor` (`sys/capabilities-accessor`);
    None for none (the admin token has no accessor: `state` is unused). Off the event loop."""
    record = vault_tokens.by_accessor(services.store, accessor)
    return None if record is None else services.auth.principal_of_record(record)
