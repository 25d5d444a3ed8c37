"""KMS's aliases: CreateAlias, UpdateAlias, DeleteAlias, ListAliases. An alias names one key
(`app.store.kms_aliases`); every key is also `alias/<its native name>` without one being made
(`keyids.by_alias`), so no alias may take a key's name. An alias's name is thus a key name (the
part after `alias/`), and changing an alias is configuring both it and its key: the token needs
`configure` on the alias's name and on the key (on both keys, to point it elsewhere), as AWS asks
for permission on the alias and on the key."""

from typing import Annotated, Any

from pydantic import Field

from app.ops.grants import Operation
from app.ops.kms import keyids
from app.ops.kms.actions import KeyIdField, KmsCall, KmsRequest, action
from app.ops.kms.errors import KmsError, not_found, pending_deletion, validation
from app.ops.work import in_thread
from app.store import KeyExistsError, KmsAlias

AliasName = Annotated[str, Field(min_length=1, max_length=256)]


def _checked_alias(call: KmsCall, alias: str) -> str:
    if not keyids.ALIAS_PATTERN.fullmatch(alias):
        raise KmsError(
            "InvalidAliasNameException",
            f"Alias {alias[:256]!r} must begin with alias/ and have 1 to 250 letters, digits, "
            "'/', '_' and '-' after it.",
        )
    if alias.startswith("alias/aws/"):
        raise KmsError("InvalidAliasNameException", "Aliases beginning with alias/aws/ are AWS's.")
    # Else a token could name an alias that others' requests then send to its key.
    call.allow(Operation.CONFIGURE, alias.removeprefix("alias/"))
    return alias


async def _target(call: KmsCall, target_key_id: str) -> str:
    """The native name of an alias's target: a key id or key ARN, not pending deletion."""
    if keyids.direct(target_key_id, call.services.settings.aws_account_id) is None:
        raise validation("TargetKeyId must be a key id or key ARN, not an alias.")
    name = await call.key(target_key_id, "keys_patch_key", Operation.CONFIGURE)
    info = await in_thread(call.services.store.keys.get, name)
    if info.state == "pending-deletion":
        raise pending_deletion(call.arn(name))
    return name


class CreateAliasRequest(KmsRequest):
    AliasName: AliasName
    TargetKeyId: KeyIdField


@action("CreateAlias")
async def create_alias(call: KmsCall, request: CreateAliasRequest) -> dict[str, Any]:
    alias = _checked_alias(call, request.AliasName)
    name = await _target(call, request.TargetKeyId)
    await call.changing()
    call.note.details["alias"] = alias
    try:
        await in_thread(call.services.store.kms_aliases.add, alias, name)
    except KeyExistsError:
        raise KmsError(
            "AlreadyExistsException",
            f"An alias with the name {_alias_arn(call, alias)} already exists",
        ) from None
    return {}


class UpdateAliasRequest(KmsRequest):
    AliasName: AliasName
    TargetKeyId: KeyIdField


async def _existing(call: KmsCall, alias: str) -> KmsAlias:
    """The alias made by CreateAlias, once the token may configure its key."""
    found = await in_thread(call.services.store.kms_aliases.get, _checked_alias(call, alias))
    if found is None:
        raise not_found(f"Alias {_alias_arn(call, alias)} is not found.")
    call.record("keys_patch_key", found.key_name)
    call.allow(Operation.CONFIGURE, found.key_name)
    call.note.details["alias"] = alias
    return found


@action("UpdateAlias")
async def update_alias(call: KmsCall, request: UpdateAliasRequest) -> dict[str, Any]:
    current = await _existing(call, request.AliasName)
    name = await _target(call, request.TargetKeyId)
    await call.changing()
    call.note.details["from"] = current.key_name
    if not await in_thread(call.services.store.kms_aliases.point, current.name, name):
        raise not_found(f"Alias {_alias_arn(call, current.name)} is not found.")
    return {}


class DeleteAliasRequest(KmsRequest):
    AliasName: AliasName


@action("DeleteAlias")
async def delete_alias(call: KmsCall, request: DeleteAliasRequest) -> dict[str, Any]:
    current = await _existing(call, request.AliasName)
    await call.changing()
    if not await in_thread(call.services.store.kms_aliases.delete, current.name):
        raise not_found(f"Alias {_alias_arn(call, current.name)} is not found.")
    return {}


class ListAliasesRequest(KmsRequest):
    KeyId: KeyIdField | None = None
    Limit: Annotated[int, Field(ge=1, le=100)] = 50
    Marker: Annotated[str, Field(min_length=1, max_length=1024)] | None = None


def _readable_page(
    call: KmsCall, key_name: str | None, after: str | None, limit: int
) -> tuple[list[KmsAlias], bool]:
    """Up to `limit` aliases after `after` whose keys the token may read, and whether more
    follow, in one read of `limit` + 1 rows: the store filters by where the token may read
    (`Principal.reach`), and `allows` still decides each of them (one it drops does not end the
    listing: whether more follow is the store's)."""
    principal = call.principal
    scope = principal.reach(Operation.READ)
    rows = call.services.store.kms_aliases.list(after, limit + 1, key_name, scope=scope)
    page = [a for a in rows[:limit] if principal.allows(Operation.READ, a.key_name)]
    return page, len(rows) > limit


@action("ListAliases")
async def list_aliases(call: KmsCall, request: ListAliasesRequest) -> dict[str, Any]:
    """The aliases made by CreateAlias (of one key, with KeyId) whose keys the token may read,
    by name, a page at a time (the marker: the last alias's name)."""
    if request.KeyId is None:
        call.record("keys_list_keys")
        call.allow(Operation.READ, None)
        key_name = None
    else:
        key_name = await call.key(request.KeyId, "keys_get_key", Operation.READ)
    page, more = await in_thread(_readable_page, call, key_name, request.Marker, request.Limit)
    answer: dict[str, Any] = {
        "Aliases": [
            {
                "AliasName": alias.name,
                "AliasArn": _alias_arn(call, alias.name),
                "TargetKeyId": alias.key_name,
                "CreationDate": alias.created_at,
                "LastUpdatedDate": alias.updated_at,
            }
            for alias in page
        ],
        "Truncated": more and bool(page),
    }
    if answer["Truncated"]:
        answer["NextMarker"] = page[-1].name
    return answer


def _alias_arn(call: KmsCall, alias: str) -> str:
    return keyids.alias_arn(call.region, call.services.settings.aws_account_id, alias)
