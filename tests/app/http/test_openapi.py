"""openapi.yaml is the app's document, and every operation in it is named and documented."""

from pathlib import Path

import yaml
from fastapi import FastAPI

from app.cli import openapi_yaml

DOCUMENT = Path(__file__).parents[3] / "openapi.yaml"


def test_openapi_yaml_is_current(app: FastAPI) -> None:
    assert DOCUMENT.read_text() == openapi_yaml(app.openapi()), (
        "openapi.yaml is stale: regenerate it with `make openapi`"
    )


def test_every_operation_has_an_id_summary_and_bearer_auth(app: FastAPI) -> None:
    document = yaml.safe_load(openapi_yaml(app.openapi()))
    ids = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            ids.append(operation["operationId"])
            assert operation.get("summary"), (method, path)
            if path not in ("/healthz", "/readyz", "/metrics"):
                assert operation.get("security") == [{"HTTPBearer": []}], (method, path)
    assert len(ids) == len(set(ids))


def test_raw_bodies_are_declared(app: FastAPI) -> None:
    document = app.openapi()
    body = document["paths"]["/v1/ecies/{name}/encrypt"]["post"]["requestBody"]["content"]
    assert set(body) == {"application/json", "application/octet-stream"}
    reference = body["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert reference in document["components"]["schemas"]
