"""Vault's ACL policies (HCL), in the subset that maps onto cipherd's rules, both ways.

A Vault policy is `path "<path>" { capabilities = [...] }` blocks. The paths that map are
Transit's at any of its mounts (`transit/encrypt/orders-*` with `update` is the operation
`encrypt` on the keys `orders-*` of the mount `transit`, and of no other), and the admin paths
whose family is an admin operation (`auth/token/create` is `tokens`). The paths every token may
use on itself (`auth/token/lookup-self` ...) are taken and mean nothing more. Anything else
(another engine, a path no rule can say, `deny`, a parameter constraint) is refused with a 400
that names it: a policy that cipherd would enforce otherwise than Vault is never stored.
"""

import re
from typing import Any

from pydantic import ValidationError

from app.ops.errors import invalid_input
from app.ops.grants import AdminOperation, Operation
from app.ops.policies import KEY_PATTERN, PolicyDocument, PolicyRule
from app.ops.transit.mounts import PATH_PATTERN

MAX_HCL_BYTES = 64 * 1024
_MOUNT = re.compile(PATH_PATTERN)
MAX_BLOCKS = 100
# A block's capabilities hold no bracket or brace: a scan for them stops at the next block, so
# an unclosed one costs its own length, not the rest of the text's.
_BLOCK = re.compile(
    r'path\s+"(?P<path>[^"\n]{1,256})"\s*\{\s*capabilities\s*=\s*'
    r"\[(?P<caps>[^\]\[{}]*)\]\s*\}",
    re.S,
)
_COMMENT = re.compile(r"(#|//)[^\n]*")
_CAPABILITIES = {"create", "read", "update", "patch", "delete", "list", "sudo", "deny"}
# A Transit verb on an existing key takes `update`; `create` alone is the creation of a missing
# key on its first encryption, which takes the admin token here.
_USE = {"update"}
# The capabilities that write on an admin path (`_grants_admin`).
_ADMIN_WRITE = {"create", "update", "patch", "delete", "sudo"}
# Transit's verbs at `transit/<verb>/<key>`: the capability they need and what they allow.
_TRANSIT = {
    "encrypt": (_USE, (Operation.ENCRYPT,)),
    "decrypt": (_USE, (Operation.DECRYPT,)),
    "sign": (_USE, (Operation.SIGN,)),
    "verify": (_USE, (Operation.VERIFY,)),
    "hmac": (_USE, (Operation.HMAC,)),
    "keys": ({"read"}, (Operation.READ,)),
}
# A key name as a Vault policy globs it: literal, or with one `*` at the end (a prefix).
_VAULT_KEY_GLOB = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*\*?|\*")
# Admin paths (a prefix and its `*`) and the admin operation they are.
_ADMIN = {
    "auth/token": AdminOperation.TOKENS,
    "sys/policies/acl": AdminOperation.POLICIES,
    "sys/policy": AdminOperation.POLICIES,
    "sys/auth": AdminOperation.AUTH,
    "sys/audit": AdminOperation.AUDIT,
    "sys/mounts": AdminOperation.SYS,
}
# The path that grants each admin operation: an admin operation is a whole family here, so a
# block on part of one (`auth/token/create`) is refused rather than stored as all of it.
_FAMILIES = {
    AdminOperation.TOKENS: ("auth/token/*",),
    AdminOperation.POLICIES: ("sys/policies/acl/*", "sys/policy/*"),
    AdminOperation.AUTH: ("sys/auth/*",),
    AdminOperation.AUDIT: ("sys/audit/*",),  # any path of it: reading is all it is
    AdminOperation.SYS: ("sys/mounts/*",),
}
# What every token may do on itself: taken, adding nothing.
_OWN = (
    "auth/token/lookup-self",
    "auth/token/renew-self",
    "auth/token/revoke-self",
    "sys/capabilities-self",
    "sys/wrapping/",
    "sys/tools/hash",
    "cubbyhole/",
)


def parse(text: str) -> PolicyDocument:
    """The rules a Vault policy says (400 for what cipherd cannot say as Vault means it)."""
    if len(text.encode()) > MAX_HCL_BYTES:
        raise invalid_input(f"a policy has at most {MAX_HCL_BYTES} bytes")
    stripped = _COMMENT.sub("", text)
    blocks = list(_BLOCK.finditer(stripped))
    rest = _BLOCK.sub("", stripped).strip()
    if rest:
        raise invalid_input(
            f"failed to parse policy: only path blocks with capabilities map: {rest[:80]!r}"
        )
    if len(blocks) > MAX_BLOCKS:
        raise invalid_input(f"a policy has at most {MAX_BLOCKS} path blocks")
    by_operations: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    admin: set[AdminOperation] = set()
    for block in blocks:
        path = block["path"]
        capabilities = {c.strip().strip('"') for c in block["caps"].split(",") if c.strip()}
        unknown = capabilities - _CAPABILITIES
        if unknown:
            raise invalid_input(
                f'failed to parse policy: path "{path}": invalid capability '
                f'"{sorted(unknown)[0][:32]}"'
            )
        if "deny" in capabilities:
            raise invalid_input(f'path "{path}": deny does not map (a token has what it is given)')
        if path.startswith(_OWN):
            continue
        granted = _admin_operation(path)
        if granted is not None:
            if _grants_admin(path, granted, capabilities):
                admin.add(granted)
            continue
        mount, key, operations = _transit(path, capabilities)
        by_operations.setdefault((mount, tuple(sorted(op.value for op in operations))), []).append(
            key
        )
    try:
        rules = [
            PolicyRule.model_validate(
                {"keys": keys, "operations": list(operations), "mount": mount}
            )
            for (mount, operations), keys in by_operations.items()
            if operations
        ]
    except ValidationError as exc:
        problem = exc.errors()[0]["msg"].removeprefix("Value error, ")
        raise invalid_input(f"a key-name pattern does not map: {problem[:200]}") from None
    return PolicyDocument(rules=rules, admin=sorted(admin), hcl=text)


def _admin_operation(path: str) -> AdminOperation | None:
    base = path.rstrip("*").rstrip("/")
    for prefix, operation in _ADMIN.items():
        if base == prefix or base.startswith(prefix + "/"):
            return operation
    return None


def _grants_admin(path: str, operation: AdminOperation, capabilities: set[str]) -> bool:
    """Whether a block on an admin path grants its admin operation: every capability given
    on `audit` (reading and verifying are all it is); on the others, which write too, a write
    capability. A block that only reads them is refused: the operation would give it writes
    Vault does not."""
    if not capabilities:
        return False
    if operation == AdminOperation.AUDIT:
        return True
    family = _FAMILIES[operation]
    if path not in family:
        raise invalid_input(
            f'path "{path}": part of the admin operation {operation.value!r} does not map: '
            f'here it is the whole family, which "{family[0]}" grants'
        )
    if capabilities & _ADMIN_WRITE:
        return True
    raise invalid_input(
        f'path "{path}": reading alone does not map: the admin operation {operation.value!r} '
        "reads and writes together"
    )


_MAPS = (
    f"only <Transit mount>/<verb>/<key name or prefix*> (verbs: {', '.join(_TRANSIT)}) and the "
    "token, policy, auth, audit and mounts admin paths map onto this service's rules"
)


def _transit(path: str, capabilities: set[str]) -> tuple[str, str, tuple[Operation, ...]]:
    """A Transit mount's `<mount>/<verb>/<key names>`: the mount, the key-name pattern in it
    and the operations the capabilities give there."""
    segments = path.split("/")
    if len(segments) < 3:
        raise invalid_input(f'path "{path}": {_MAPS}')
    *parts, verb, key = segments
    mount = "/".join(parts)
    if verb == "rewrap":
        raise invalid_input(
            f'path "{path}": rewrap does not map: here it needs decrypt, which Vault\'s rewrap '
            f"does not give (grant {mount}/decrypt and {mount}/encrypt on the keys for it)"
        )
    if not _MOUNT.fullmatch(mount) or verb not in _TRANSIT:
        raise invalid_input(f'path "{path}": {_MAPS}')
    needed, operations = _TRANSIT[verb]
    if verb == "keys" and capabilities - {"read", "list"}:
        raise invalid_input(
            f'path "{path}": only read maps on {mount}/keys: creating, changing and deleting '
            "keys through Transit take the admin token here"
        )
    if not capabilities & needed:  # stored, it would grant less than Vault reads in it
        hint = " (a listing shows the keys a token may read)" if verb == "keys" else ""
        raise invalid_input(
            f'path "{path}": {", ".join(sorted(capabilities))} grants nothing here; '
            f"{mount}/{verb} takes {' or '.join(sorted(needed))}{hint}"
        )
    if not _VAULT_KEY_GLOB.fullmatch(key) or not re.match(KEY_PATTERN, key):
        raise invalid_input(
            f'path "{path}": {key[:64]!r} does not map: a key name, or a prefix and a trailing '
            "*, the one glob of Vault's"
        )
    return mount, key, operations


def render(document: dict[str, Any]) -> str:
    """A policy written natively, as the Vault policy that says the same. What no path here
    can say (FE's keygen, `public`, key management, `backup`) is listed in a closing comment:
    read as text, the policy never shows less than it grants."""
    if document.get("hcl"):
        return str(document["hcl"])
    verbs = {ops: verb for verb, (_, ops) in _TRANSIT.items() if len(ops) == 1}
    blocks, unsaid = [], []
    for rule in document.get("rules", ()):
        keys, pathless, mount = rule["keys"], [], rule.get("mount")
        for operation in rule["operations"]:
            verb = verbs.get((Operation(operation),))
            if verb is None:
                pathless.append(operation)
                continue
            capability = "read" if verb == "keys" else "update"
            for key in keys:
                blocks.append(_block(f"{mount or 'transit'}/{verb}/{key}", [capability]))
        if pathless:
            unsaid.append(f"{', '.join(pathless)} on the keys {' '.join(keys)}")
        if mount is None:
            unsaid.append(f"the keys {' '.join(keys)} by native name, in every mount")
    for operation in document.get("admin", ()):
        family = _FAMILIES.get(AdminOperation(operation))
        if family is None:
            unsaid.append(f"the admin operation {operation}")
            continue
        blocks.append(_block(family[0], ["create", "read", "update", "delete", "list"]))
    if unsaid:
        lines = "\n".join(f"#   {grant}" for grant in unsaid)
        blocks.append(f"# The policy also grants, with no path that says it:\n{lines}")
    return "\n\n".join(blocks)


def _block(path: str, capabilities: list[str]) -> str:
    listed = ", ".join(f'"{capability}"' for capability in capabilities)
    return f'path "{path}" {{\n  capabilities = [{listed}]\n}}'
