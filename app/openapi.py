"""The OpenAPI document: FastAPI's, plus the models only raw-or-JSON bodies refer to.

`openapi.yaml` at the top of the repository is this document as YAML (`cipherd openapi`); a
test fails when the file and the code disagree.
"""

from typing import Any

import yaml
from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic.json_schema import models_json_schema

from app.body import EXTRA_SCHEMA_MODELS


def install_openapi(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title,
                version=app.version,
                summary=app.summary,
                description=DESCRIPTION,
                routes=app.routes,
            )
            _, extra = models_json_schema(
                [(model, "validation") for model in EXTRA_SCHEMA_MODELS],
                ref_template="#/components/schemas/{model}",
            )
            schemas = document.setdefault("components", {}).setdefault("schemas", {})
            for name, schema in extra.get("$defs", {}).items():
                schemas.setdefault(name, schema)
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def openapi_yaml(app: FastAPI) -> str:
    return yaml.safe_dump(app.openapi(), sort_keys=False, allow_unicode=True, width=100)


DESCRIPTION = """\
cipherd holds master keys server-side and performs ECIES (secp256k1, x25519, ed25519;
byte-compatible with eciespy and eciesjs), AEZ v5 and pairing-based functional encryption.

Every key-using call carries `Authorization: Bearer <token>`: the admin token, or a scoped token
issued by `POST /v1/tokens` for key-name patterns and operations. Binary fields are base64.
ECIES and AEZ also take raw `application/octet-stream` bodies with the parameters in the query.
Errors are `application/problem+json` (RFC 9457) with a stable `type`.
"""
