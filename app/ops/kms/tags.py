"""KMS's tags on the service's keys: TagResource, UntagResource, ListResourceTags. A key's tags
are its parameter `tags` (key -> value), set under its row lock; they are never secret (AWS
says the same of its own)."""

from typing import Annotated, Any

from pydantic import Field

from app.ops.grants import Operation
from app.ops.kms.actions import KeyIdField, KmsCall, KmsRequest, action
from app.ops.kms.errors import KmsError, pending_deletion
from app.ops.work import in_thread
from app.store import KeyStore

MAX_TAGS = 50
TagKey = Annotated[str, Field(min_length=1, max_length=128)]


class Tag(KmsRequest):
    TagKey: TagKey
    TagValue: Annotated[str, Field(max_length=256)]


TagList = Annotated[list[Tag], Field(max_length=MAX_TAGS)]


def checked_tags(current: dict[str, str], added: list[Tag]) -> dict[str, str]:
    """`current` with `added` set, within AWS's rules (TagException)."""
    tags = dict(current)
    for tag in added:
        if tag.TagKey.lower().startswith("aws:"):
            raise KmsError("TagException", "Tag keys beginning with aws: are reserved.")
        tags[tag.TagKey] = tag.TagValue
    if len(tags) > MAX_TAGS:
        raise KmsError("LimitExceededException", f"A key has at most {MAX_TAGS} tags.")
    return tags


def _retag(store: KeyStore, name: str, arn: str, added: list[Tag], removed: list[str]) -> None:
    """Set and remove tags in one transaction, under the key's row lock."""
    with store.transaction() as held:
        info = held.keys.locked(name)
        if info.state == "pending-deletion":
            raise pending_deletion(arn)
        tags = checked_tags(info.params.get("tags", {}), added)
        for key in removed:
            tags.pop(key, None)
        held.keys.set_params(name, {"tags": tags or None})


class TagResourceRequest(KmsRequest):
    KeyId: KeyIdField
    Tags: TagList


@action("TagResource")
async def tag_resource(call: KmsCall, request: TagResourceRequest) -> dict[str, Any]:
    name = await call.key(request.KeyId, "keys_patch_key", Operation.CONFIGURE, change=True)
    call.note.details["tags"] = sorted(tag.TagKey for tag in request.Tags)
    await in_thread(_retag, call.services.store, name, call.arn(name), request.Tags, [])
    return {}


class UntagResourceRequest(KmsRequest):
    KeyId: KeyIdField
    TagKeys: Annotated[list[TagKey], Field(max_length=MAX_TAGS)]


@action("UntagResource")
async def untag_resource(call: KmsCall, request: UntagResourceRequest) -> dict[str, Any]:
    name = await call.key(request.KeyId, "keys_patch_key", Operation.CONFIGURE, change=True)
    call.note.details["untagged"] = sorted(request.TagKeys)
    await in_thread(_retag, call.services.store, name, call.arn(name), [], request.TagKeys)
    return {}


class ListResourceTagsRequest(KmsRequest):
    KeyId: KeyIdField
    Limit: Annotated[int, Field(ge=1, le=50)] = 50
    Marker: Annotated[str, Field(min_length=1, max_length=1024)] | None = None


@action("ListResourceTags")
async def list_resource_tags(call: KmsCall, request: ListResourceTagsRequest) -> dict[str, Any]:
    """The key's tags by tag key, a page at a time (the marker: the last tag key)."""
    name = await call.key(request.KeyId, "keys_get_key", Operation.READ)
    info = await in_thread(call.services.store.keys.get, name)
    tags = sorted(info.params.get("tags", {}).items())
    after = [item for item in tags if request.Marker is None or item[0] > request.Marker]
    page = after[: request.Limit]
    answer: dict[str, Any] = {
        "Tags": [{"TagKey": key, "TagValue": value} for key, value in page],
        "Truncated": len(after) > len(page),
    }
    if answer["Truncated"]:
        answer["NextMarker"] = page[-1][0]
    return answer
