"""Named policies: write, read, list, delete (the admin operation `policies`;
`app.ops.policies`)."""

from typing import Annotated

from fastapi import APIRouter, Path, Request, status

from app.http.body import json_body, read_json
from app.http.deps import ServicesDep, admin_of, audit_note
from app.http.operation import operation_id
from app.ops import policies
from app.ops.grants import AdminOperation, Principal
from app.ops.identity import POLICY_NAME
from app.ops.policies import PolicyDocument, PolicyList, PolicyOut
from app.ops.work import in_thread

router = APIRouter(
    prefix="/v1/policies", tags=["policies"], generate_unique_id_function=operation_id
)
PolicyName = Annotated[str, Path(pattern=POLICY_NAME, description="the policy's name")]
Reader = Annotated[Principal, admin_of(AdminOperation.POLICIES)]
Writer = Annotated[Principal, admin_of(AdminOperation.POLICIES, change=True)]


@router.post(
    "/{name}",
    response_model=PolicyOut,
    summary="Create or replace a named policy: every token that carries it follows the change "
    "from its next request (admin operation policies)",
    openapi_extra=json_body(PolicyDocument),
)
async def put_policy(
    request: Request, name: PolicyName, services: ServicesDep, _: Writer
) -> PolicyOut:
    document = await read_json(request, PolicyDocument)  # after the token check
    written = await in_thread(policies.put, services.store, name, document)
    audit_note(request.scope).details.update(policy=name, version=written.version)
    return written


@router.get("", response_model=PolicyList, summary="The policies' names (admin operation policies)")
async def list_policies(services: ServicesDep, _: Reader) -> PolicyList:
    return PolicyList(policies=list(await in_thread(policies.names, services.store)))


@router.get("/{name}", response_model=PolicyOut, summary="A policy (admin operation policies)")
async def get_policy(name: PolicyName, services: ServicesDep, _: Reader) -> PolicyOut:
    return await in_thread(policies.get, services.store, name)


@router.delete(
    "/{name}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Delete a policy: the tokens that carry it lose what it gave (admin operation "
    "policies)",
)
async def delete_policy(
    request: Request, name: PolicyName, services: ServicesDep, _: Writer
) -> None:
    await in_thread(policies.delete, services.store, name)
    audit_note(request.scope).details.update(policy=name)
