"""The service's own keys: the keyring (`app.ops.root`) and the wrapping key (`app.ops.backup`),
for a token allowed the admin operation `sys` (the wrapping key's public part also for
`backup`); the admin token's rotation, for the admin token (or a token with the `root` policy):
its answer is the new one."""

from typing import Annotated

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from app.http.deps import AdminChange, ServicesDep, Token, admin_of, audit_note
from app.http.operation import operation_id
from app.http.schemas import Base64Bytes
from app.ops import admin_token, backup, root
from app.ops.grants import AdminOperation, Principal
from app.ops.root import KeyringOut
from app.ops.work import in_thread

router = APIRouter(prefix="/v1/sys", tags=["sys"], generate_unique_id_function=operation_id)
System = Annotated[Principal, admin_of(AdminOperation.SYS)]
SystemChange = Annotated[Principal, admin_of(AdminOperation.SYS, change=True)]
WrappingKeyReader = Annotated[Principal, admin_of(AdminOperation.SYS, AdminOperation.BACKUP)]


class AdminToken(BaseModel):
    admin_token: str = Field(description="the new admin token; shown only in this answer")


class WrappingKey(BaseModel):
    public_key: Base64Bytes = Field(
        description="this instance's wrapping key: SEC1 secp256k1 (65 bytes); backups and BYOK "
        "material for it are ECIES-encrypted to it"
    )
    signing_key: Base64Bytes = Field(
        description="the Ed25519 public key (32 bytes) that signs this instance's backups: "
        "another instance imports them once its CIPHERD_BACKUP_SIGNERS names it"
    )


@router.get(
    "/wrapping-key",
    response_model=WrappingKey,
    summary="The public key that backups and key material are encrypted to (admin operation "
    "sys or backup)",
)
async def wrapping_key(services: ServicesDep, _: WrappingKeyReader) -> WrappingKey:
    public_key = await in_thread(backup.wrapping_public_key, services.store)
    signing_key = await in_thread(backup.signing_public_key, services.store)
    return WrappingKey(public_key=public_key, signing_key=signing_key)


@router.get(
    "/keyring", response_model=KeyringOut, summary="The keyring's newest term (admin operation sys)"
)
async def keyring(services: ServicesDep, _: System) -> KeyringOut:
    return await in_thread(root.keyring_status, services.store)


@router.post(
    "/keyring/rotate",
    response_model=KeyringOut,
    summary="Add a keyring term that new key versions use; older ones are rewrapped onto it "
    "in the background (admin operation sys)",
)
async def rotate_keyring(request: Request, services: ServicesDep, _: SystemChange) -> KeyringOut:
    rotated = await in_thread(root.rotate_keyring, services.store)
    audit_note(request.scope).details["term"] = rotated.term
    services.rewrap.wake()
    return rotated


@router.post(
    "/admin-token/rotate",
    response_model=AdminToken,
    summary="Replace the admin token: the former one is refused on every replica from its next "
    "request (admin)",
)
async def rotate_admin_token(services: ServicesDep, _: AdminChange, token: Token) -> AdminToken:
    replacing = services.auth.stored_admin_hash(token)
    return AdminToken(admin_token=await in_thread(admin_token.rotate, services.store, replacing))
