"""The service's own keys (`app.ops.root`): the keyring, read and rotated by the admin."""

from fastapi import APIRouter, Request

from app.http.deps import Admin, ServicesDep, audit_note
from app.http.operation import operation_id
from app.ops import root
from app.ops.root import KeyringOut
from app.ops.work import in_thread

router = APIRouter(prefix="/v1/sys", tags=["sys"], generate_unique_id_function=operation_id)


@router.get("/keyring", response_model=KeyringOut, summary="The keyring's newest term (admin)")
async def keyring(services: ServicesDep, _: Admin) -> KeyringOut:
    return await in_thread(root.keyring_status, services.store)


@router.post(
    "/keyring/rotate",
    response_model=KeyringOut,
    summary="Add a keyring term that new key versions use; older ones are rewrapped onto it "
    "in the background (admin)",
)
async def rotate_keyring(request: Request, services: ServicesDep, _: Admin) -> KeyringOut:
    rotated = await in_thread(root.rotate_keyring, services.store)
    audit_note(request.scope).details["term"] = rotated.term
    services.rewrap.wake()
    return rotated
