"""JWT route: a compact JWS of the caller's claims, signed with a server-held signing key
(`app.ops.jwt`); the key set its verifiers read is `GET /v1/keys/{name}/jwks`."""

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from app.http.operation import Family
from app.http.schemas import JsonObject, RequestBody
from app.ops import jwt
from app.ops.grants import Operation
from app.ops.sign import SigningKey

family = Family("jwt", lambda call: call.services.signer.key(call.name))
router: APIRouter = family.router

JwsAlgorithm = Literal[
    "ES256",
    "ES384",
    "ES512",
    "ES256K",
    "EdDSA",
    "PS256",
    "PS384",
    "PS512",
    "RS256",
    "RS384",
    "RS512",
    "ML-DSA-44",
    "ML-DSA-65",
    "ML-DSA-87",
]


class JwtSignRequest(RequestBody):
    claims: JsonObject = Field(description="the token's claims (its payload), a JSON object")
    header: JsonObject | None = Field(
        None,
        description="fields added to the token's header (typ is JWT unless given); alg and "
        "kid are the key's, which the header may repeat but not change",
    )
    alg: JwsAlgorithm | None = Field(
        None,
        description="the key's algorithm: ES256, ES384 or ES512 for ecdsa-p256, -p384, -p521, "
        "ES256K for ecdsa-secp256k1, EdDSA for ed25519, ML-DSA-44, -65 or -87; for RSA PS256 "
        "(the default), PS384, PS512, RS256, RS384 or RS512",
    )


class Jwt(BaseModel):
    jwt: str = Field(description="the compact JWS: header.payload.signature, base64url")
    key_version: int = Field(description="the version that signed, also in the header's kid")


@family.operation(
    "/{name}/sign",
    access=Operation.SIGN,
    summary="A JWT of the given claims, signed with a server-held signing key",
    batch="Sign many JWTs with a server-held signing key",
)
def sign(key: SigningKey, item: JwtSignRequest) -> Jwt:
    token, version = jwt.sign(key, item.claims, item.header, item.alg)
    return Jwt(jwt=token, key_version=version)
