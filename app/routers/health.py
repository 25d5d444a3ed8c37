"""Liveness, readiness and metrics: the only paths that need no token."""

import logging

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel

from app.body import json_response
from app.metrics import render_metrics
from app.routing import operation_id

router = APIRouter(tags=["health"], generate_unique_id_function=operation_id)
log = logging.getLogger("cipherd.health")


class Status(BaseModel):
    status: str


_ALIVE = json_response(Status(status="ok")).body


@router.get("/healthz", response_model=Status, summary="Liveness: the process answers")
async def healthz() -> Response:
    # Async: an answer known in advance needs no hop to a worker thread.
    return Response(_ALIVE, media_type="application/json")


@router.get(
    "/readyz",
    response_model=Status,
    summary="Readiness: the key store answers",
    responses={503: {"model": Status, "description": "the key store cannot be reached"}},
)
def readyz(request: Request, response: Response) -> Status:
    try:
        request.app.state.keyring.store.ping()
    except Exception as exc:  # any failure to reach the store means not ready
        log.warning("key store not ready: %s", type(exc).__name__)
        response.status_code = 503
        return Status(status="unavailable")
    return Status(status="ok")


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
def metrics() -> Response:
    body, content_type = render_metrics()
    return Response(body, media_type=content_type)
