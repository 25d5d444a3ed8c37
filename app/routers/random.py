"""Random bytes from the operating system's CSPRNG, for any authenticated caller."""

import os

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field, StrictInt

from app.http.body import json_body, json_response, read_json
from app.http.deps import Caller
from app.http.operation import operation_id
from app.http.problems import ERROR_RESPONSES
from app.http.schemas import Base64Bytes, RequestBody

MAX_RANDOM_BYTES = 4096

router = APIRouter(
    prefix="/v1",
    tags=["random"],
    responses=ERROR_RESPONSES,
    generate_unique_id_function=operation_id,
)


class RandomRequest(RequestBody):
    bytes: StrictInt = Field(ge=1, le=MAX_RANDOM_BYTES, description="how many bytes")


class RandomBytes(BaseModel):
    random: Base64Bytes


@router.post(
    "/random",
    response_model=RandomBytes,
    summary="Random bytes (any valid token)",
    openapi_extra=json_body(RandomRequest),
)
async def random(request: Request, _: Caller) -> Response:
    body = await read_json(request, RandomRequest)  # after the token check
    return json_response(RandomBytes(random=os.urandom(body.bytes)))
