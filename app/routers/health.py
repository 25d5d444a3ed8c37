"""Liveness, readiness and metrics: the only paths that need no token."""

from fastapi import APIRouter, Response
from pydantic import BaseModel

from app.http.body import json_response
from app.http.deps import ServicesDep
from app.http.operation import operation_id
from app.ops import health

router = APIRouter(tags=["health"], generate_unique_id_function=operation_id)


class Status(BaseModel):
    status: str


_ALIVE = _READY = json_response(Status(status="ok")).body
_UNAVAILABLE = json_response(Status(status="unavailable")).body


@router.get("/healthz", response_model=Status, summary="Liveness: the process answers")
async def healthz() -> Response:
    # Async: an answer known in advance needs no hop to a worker thread.
    return Response(_ALIVE, media_type="application/json")


@router.get(
    "/readyz",
    response_model=Status,
    summary="Readiness: the key store answers and takes writes",
    responses={503: {"model": Status, "description": "the key store cannot be reached or written"}},
)
async def readyz(services: ServicesDep) -> Response:
    # Async: the check runs on a thread of its own (`app.ops.health`), not the request pool.
    if not await health.ready(services.store):
        return Response(_UNAVAILABLE, status_code=503, media_type="application/json")
    return Response(_READY, media_type="application/json")


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
def metrics() -> Response:
    body, content_type = health.metrics_page()
    return Response(body, media_type=content_type)
