"""KMS's key management actions with boto3 against a real server: every answer parsed by
botocore against its own service model, every documented error as AWS names it."""

import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.e2e.kms import ACCOUNT, REGION, credentials, error_of, kms_client, started
from tests.e2e.server import Server

pytestmark = pytest.mark.e2e

SIGNING = {
    "RSA_2048": ["RSASSA_PSS_SHA_256", "RSASSA_PSS_SHA_384", "RSASSA_PSS_SHA_512"],
    "ECC_NIST_P256": ["ECDSA_SHA_256"],
    "ECC_NIST_P384": ["ECDSA_SHA_384"],
    "ECC_NIST_P521": ["ECDSA_SHA_512"],
    "ECC_SECG_P256K1": ["ECDSA_SHA_256"],
    "ML_DSA_44": ["ML_DSA_SHAKE_256"],
    "ML_DSA_65": ["ML_DSA_SHAKE_256"],
    "ML_DSA_87": ["ML_DSA_SHAKE_256"],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # A short floor on automatic rotation and a frequent maintenance pass, so that an automatic
    # rotation happens within a test (KMS's own floor, 90 days, is checked apart).
    yield from started(
        tmp_path_factory.mktemp("kms-keys"),
        CIPHERD_MIN_AUTO_ROTATE_SECONDS="1",
        CIPHERD_MAINTENANCE_SECONDS="0.2",
    )


@pytest.fixture(scope="module")
def kms(server: Server) -> Any:
    """A client whose token has every operation on every key: all the admin may do."""
    return kms_client(server, credentials(server))


def code(call: Any, *args: Any, **kwargs: Any) -> tuple[str, int]:
    with pytest.raises(ClientError) as exc:
        call(*args, **kwargs)
    return error_of(exc)


def arn(key_id: str) -> str:
    return f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{key_id}"


def test_create_key_symmetric_default(kms: Any, server: Server) -> None:
    before = time.time()
    meta = kms.create_key(Description="orders", Tags=[{"TagKey": "team", "TagValue": "a"}])[
        "KeyMetadata"
    ]
    assert uuid.UUID(meta["KeyId"]).version == 4
    assert meta["Arn"] == arn(meta["KeyId"])
    assert meta["AWSAccountId"] == ACCOUNT
    assert meta["KeySpec"] == meta["CustomerMasterKeySpec"] == "SYMMETRIC_DEFAULT"
    assert meta["KeyUsage"] == "ENCRYPT_DECRYPT"
    assert meta["EncryptionAlgorithms"] == ["SYMMETRIC_DEFAULT"]
    assert (meta["KeyState"], meta["Enabled"], meta["Description"]) == ("Enabled", True, "orders")
    assert before - 5 <= meta["CreationDate"].timestamp() <= time.time() + 5
    # The KeyId is the native name: the native API sees an aes256-gcm key of that name.
    with server.client() as http:
        native = http.get(f"/v1/keys/{meta['KeyId']}").json()
    assert (native["type"], native["enabled"]) == ("aes256-gcm", True)
    assert kms.describe_key(KeyId=meta["KeyId"])["KeyMetadata"] == meta
    assert kms.describe_key(KeyId=meta["Arn"])["KeyMetadata"]["KeyId"] == meta["KeyId"]


@pytest.mark.parametrize(("spec", "algorithms"), sorted(SIGNING.items()))
def test_create_signing_keys(kms: Any, spec: str, algorithms: list[str]) -> None:
    meta = kms.create_key(KeySpec=spec, KeyUsage="SIGN_VERIFY")["KeyMetadata"]
    assert (meta["KeySpec"], meta["KeyUsage"]) == (spec, "SIGN_VERIFY")
    assert meta["SigningAlgorithms"][: len(algorithms)] == algorithms
    assert "EncryptionAlgorithms" not in meta


@pytest.mark.parametrize("bits", [256, 384, 512])
def test_create_hmac_keys(kms: Any, bits: int) -> None:
    meta = kms.create_key(KeySpec=f"HMAC_{bits}", KeyUsage="GENERATE_VERIFY_MAC")["KeyMetadata"]
    assert meta["MacAlgorithms"] == [f"HMAC_SHA_{bits}"]


def test_create_rsa_for_encryption(kms: Any) -> None:
    meta = kms.create_key(KeySpec="RSA_3072", KeyUsage="ENCRYPT_DECRYPT")["KeyMetadata"]
    assert meta["EncryptionAlgorithms"] == ["RSAES_OAEP_SHA_256"]


def test_create_key_refusals(server: Server, kms: Any) -> None:
    assert code(kms.create_key, KeySpec="ECC_NIST_P256", KeyUsage="ENCRYPT_DECRYPT") == (
        "ValidationException",
        400,
    )
    assert code(kms.create_key, Policy='{"Statement": []}')[0] == "UnsupportedOperationException"
    assert code(kms.create_key, Origin="EXTERNAL")[0] == "UnsupportedOperationException"
    too_many = [{"TagKey": f"k{i}", "TagValue": ""} for i in range(51)]
    assert code(kms.create_key, Tags=too_many)[0] == "ValidationException"
    reserved = [{"TagKey": "aws:owner", "TagValue": "x"}]
    assert code(kms.create_key, Tags=reserved)[0] == "TagException"
    unvalidated = kms_client(server, credentials(server), validate=False)
    assert code(unvalidated.create_key, KeySpec="NOT_A_SPEC")[0] == "ValidationException"
    # A token without `create` makes no key.
    reader = kms_client(server, credentials(server, operations=["read"]))
    assert code(reader.create_key) == ("AccessDeniedException", 400)


def test_describe_unknown_and_foreign(kms: Any) -> None:
    unknown = str(uuid.uuid4())
    assert code(kms.describe_key, KeyId=unknown) == ("NotFoundException", 400)
    assert code(kms.describe_key, KeyId="alias/none-such")[0] == "NotFoundException"
    foreign = f"arn:aws:kms:{REGION}:999999999999:key/{unknown}"
    assert code(kms.describe_key, KeyId=foreign)[0] == "NotFoundException"
    assert code(kms.describe_key, KeyId="arn:aws:kms:nonsense")[0] == "InvalidArnException"


def test_native_keys_by_alias(server: Server, kms: Any) -> None:
    """A key made through the native API is `alias/<its name>`, described from its type."""
    with server.client() as http:
        assert http.post("/v1/keys", json={"name": "native-p384", "type": "ecdsa-p384"}).is_success
        assert http.post("/v1/keys", json={"name": "native-aez", "type": "aez"}).is_success
    meta = kms.describe_key(KeyId="alias/native-p384")["KeyMetadata"]
    assert (meta["KeyId"], meta["KeySpec"], meta["KeyUsage"]) == (
        "native-p384",
        "ECC_NIST_P384",
        "SIGN_VERIFY",
    )
    aez = kms.describe_key(KeyId="native-aez")["KeyMetadata"]
    assert "KeySpec" not in aez and aez["KeyState"] == "Enabled"


def test_an_alias_never_takes_the_name_of_a_key_to_come(server: Server) -> None:
    """An alias's name is a key name: a token names only aliases its scope may configure (else
    it could take a name that others' requests then send to its key), and the key of an
    alias's name cannot then be made (it would be reached through the alias's key)."""
    with server.client() as http:
        assert http.post("/v1/keys", json={"name": "squat-mine", "type": "aes256-gcm"}).is_success
        narrow = kms_client(server, credentials(server, keys=["squat-*"]))
        for change, arguments in (
            (narrow.create_alias, {"TargetKeyId": "squat-mine"}),
            (narrow.update_alias, {"TargetKeyId": "squat-mine"}),
            (narrow.delete_alias, {}),
        ):
            denied = code(change, AliasName="alias/payments-to-come", **arguments)
            assert denied == ("AccessDeniedException", 400), change
        answer = http.post("/v1/keys", json={"name": "payments-to-come", "type": "aes256-gcm"})
        assert answer.status_code == 201, answer.text
        narrow.create_alias(AliasName="alias/squat-to-come", TargetKeyId="squat-mine")
        answer = http.post("/v1/keys", json={"name": "squat-to-come", "type": "aes256-gcm"})
        assert answer.status_code == 409, answer.text
        assert "alias/squat-to-come" in answer.json()["detail"]
    described = narrow.describe_key(KeyId="alias/squat-to-come")["KeyMetadata"]
    assert described["KeyId"] == "squat-mine"
    narrow.delete_alias(AliasName="alias/squat-to-come")
    assert code(narrow.describe_key, KeyId="alias/squat-to-come")[0] == "NotFoundException"


def test_a_description_changes_on_a_key_createkey_made(server: Server, kms: Any) -> None:
    made = kms.create_key(Description="before")["KeyMetadata"]["KeyId"]
    assert kms.update_key_description(KeyId=made, Description="after")
    assert kms.describe_key(KeyId=made)["KeyMetadata"]["Description"] == "after"
    assert kms.describe_key(KeyId=made)["KeyMetadata"]["KeySpec"] == "SYMMETRIC_DEFAULT"
    with server.client() as http:
        assert http.post("/v1/keys", json={"name": "no-kms-description", "type": "hmac"}).is_success
    assert code(kms.update_key_description, KeyId="no-kms-description", Description="x") == (
        "UnsupportedOperationException",
        400,
    )


@pytest.mark.parametrize(
    ("action", "members"),
    [("get_key_policy", {"KeyId": "k"}), ("list_grants", {"KeyId": "k"})],
)
def test_an_action_of_aws_not_served_says_so(kms: Any, action: str, members: Any) -> None:
    """Key policies and grants are AWS's: here a token's scope decides (not an unknown action)."""
    with pytest.raises(ClientError) as exc:
        getattr(kms, action)(**members)
    assert error_of(exc) == ("UnsupportedOperationException", 400)
    assert "scope" in exc.value.response["Error"]["Message"]


@pytest.mark.parametrize(
    ("spec", "usage"),
    [("SM2", "SIGN_VERIFY"), ("ML_KEM_768", None), ("ECC_NIST_P256", "KEY_AGREEMENT")],
)
def test_a_key_spec_of_aws_not_made_says_so(kms: Any, spec: str, usage: str | None) -> None:
    members = {"KeySpec": spec} | ({"KeyUsage": usage} if usage else {})
    assert code(kms.create_key, **members) == ("UnsupportedOperationException", 400)


def test_list_keys_pages(server: Server) -> None:
    """Pages of Limit keys the token may read, NextMarker to the next, as botocore's
    paginator follows them."""
    kms = kms_client(server, credentials(server, keys=["page-*"]))
    admin = kms_client(server, credentials(server))
    with server.client() as http:
        for i in range(7):
            assert http.post("/v1/keys", json={"name": f"page-{i}", "type": "hmac"}).is_success
    admin.create_key()  # outside the token's patterns
    first = kms.list_keys(Limit=3)
    assert [k["KeyId"] for k in first["Keys"]] == ["page-0", "page-1", "page-2"]
    assert first["Truncated"] is True and first["NextMarker"] == "page-2"
    assert first["Keys"][0]["KeyArn"] == arn("page-0")
    pages = kms.get_paginator("list_keys").paginate(PaginationConfig={"PageSize": 3})
    listed = [k["KeyId"] for page in pages for k in page["Keys"]]
    assert listed == [f"page-{i}" for i in range(7)]
    # Whose keys: the account's own; none are shared from other accounts.
    own = kms.list_keys(ResourceOwners=["SELF", "OTHER_ACCOUNTS_VIA_RAM"], Limit=3)
    assert own == {**first, "ResponseMetadata": own["ResponseMetadata"]}
    shared = kms.list_keys(ResourceOwners=["OTHER_ACCOUNTS_VIA_RAM"])
    assert (shared["Keys"], shared["Truncated"]) == ([], False)
    assert code(kms.list_keys, ResourceOwners=["ANYONE"])[0] == "ValidationException"


def test_enable_disable(server: Server, kms: Any) -> None:
    key_id = kms.create_key()["KeyMetadata"]["KeyId"]
    kms.disable_key(KeyId=key_id)
    meta = kms.describe_key(KeyId=key_id)["KeyMetadata"]
    assert (meta["KeyState"], meta["Enabled"]) == ("Disabled", False)
    # A disabled key refuses every use, through the native API too.
    with server.client() as http:
        used = http.post(f"/v1/aead/{key_id}/encrypt", json={"plaintext": "aGk="})
    assert (used.status_code, used.json()["type"]) == (409, "urn:cipherd:problem:key-disabled")
    assert code(kms.enable_key_rotation, KeyId=key_id)[0] == "DisabledException"
    kms.enable_key(KeyId=key_id)
    assert kms.describe_key(KeyId=key_id)["KeyMetadata"]["KeyState"] == "Enabled"
    assert code(kms.disable_key, KeyId=str(uuid.uuid4()))[0] == "NotFoundException"


def test_rotation(kms: Any, server: Server) -> None:
    key_id = kms.create_key()["KeyMetadata"]["KeyId"]
    assert kms.get_key_rotation_status(KeyId=key_id)["KeyRotationEnabled"] is False
    kms.enable_key_rotation(KeyId=key_id, RotationPeriodInDays=90)
    status = kms.get_key_rotation_status(KeyId=key_id)
    assert (status["KeyRotationEnabled"], status["RotationPeriodInDays"]) == (True, 90)
    assert status["KeyId"] == arn(key_id)
    created = kms.describe_key(KeyId=key_id)["KeyMetadata"]["CreationDate"].timestamp()
    assert abs(status["NextRotationDate"].timestamp() - (created + 90 * 86400)) < 5
    with server.client() as http:
        assert http.get(f"/v1/keys/{key_id}").json()["auto_rotate_seconds"] == 90 * 86400
    kms.disable_key_rotation(KeyId=key_id)
    assert kms.get_key_rotation_status(KeyId=key_id)["KeyRotationEnabled"] is False
    assert kms.rotate_key_on_demand(KeyId=key_id)["KeyId"] == key_id
    with server.client() as http:
        assert http.get(f"/v1/keys/{key_id}").json()["latest_version"] == 2
    unvalidated = kms_client(server, credentials(server), validate=False)
    assert code(unvalidated.enable_key_rotation, KeyId=key_id, RotationPeriodInDays=30)[0] == (
        "ValidationException"
    )
    # A native period under a day is a whole day in KMS's terms, never 0 (AWS's least is 90).
    with server.client() as http:
        patched = http.patch(f"/v1/keys/{key_id}", json={"auto_rotate_seconds": 3600})
        assert patched.status_code == 200, patched.text
    status = kms.get_key_rotation_status(KeyId=key_id)
    assert (status["KeyRotationEnabled"], status["RotationPeriodInDays"]) == (True, 1)
    signing = kms.create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")["KeyMetadata"]
    for call in (kms.enable_key_rotation, kms.get_key_rotation_status, kms.rotate_key_on_demand):
        assert code(call, KeyId=signing["KeyId"])[0] == "UnsupportedOperationException"


def test_list_key_rotations(kms: Any, server: Server) -> None:
    """Every version after the first, oldest first, as boto3's paginator follows the pages:
    on demand (KMS's and the native API's rotations) or automatic (the maintenance pass's),
    dated when it was made; ALL_KEY_MATERIAL adds the first."""
    key_id = kms.create_key()["KeyMetadata"]["KeyId"]
    assert kms.list_key_rotations(KeyId=key_id)["Rotations"] == []
    kms.rotate_key_on_demand(KeyId=key_id)
    with server.client() as http:
        assert http.post(f"/v1/keys/{key_id}/rotate").is_success
        assert http.patch(f"/v1/keys/{key_id}", json={"auto_rotate_seconds": 1}).is_success
        deadline = time.monotonic() + 30
        while http.get(f"/v1/keys/{key_id}").json()["latest_version"] < 4:
            assert time.monotonic() < deadline, "no automatic rotation within 30 s"
            time.sleep(0.1)
        assert http.patch(f"/v1/keys/{key_id}", json={"auto_rotate_seconds": 0}).is_success
        versions = http.get(f"/v1/keys/{key_id}").json()["versions"]
    pages = kms.get_paginator("list_key_rotations").paginate(
        KeyId=key_id, PaginationConfig={"PageSize": 2}
    )
    listed = [rotation for page in pages for rotation in page["Rotations"]]
    types = [rotation["RotationType"] for rotation in listed]
    assert types[:2] == ["ON_DEMAND", "ON_DEMAND"] and set(types[2:]) == {"AUTOMATIC"}, types
    assert len(listed) == len(versions) - 1
    for rotation, version in zip(listed, versions[1:], strict=True):
        made = datetime.fromisoformat(version["created_at"]).timestamp()
        assert abs(rotation["RotationDate"].timestamp() - made) < 0.01
        assert rotation["KeyId"] == key_id
    assert [r["KeyMaterialState"] for r in listed] == ["NON_CURRENT"] * (len(listed) - 1) + [
        "CURRENT"
    ]
    every = kms.list_key_rotations(KeyId=key_id, IncludeKeyMaterial="ALL_KEY_MATERIAL")
    first = every["Rotations"][0]
    assert "RotationDate" not in first and "RotationType" not in first
    assert every["Rotations"][1:] == listed
    ids = {material["KeyMaterialId"] for material in every["Rotations"]}
    assert len(ids) == len(versions) and all(len(i) == 64 for i in ids)
    first_page = kms.list_key_rotations(KeyId=key_id, Limit=1)
    assert (first_page["Truncated"], first_page["NextMarker"]) == (True, "2")
    assert code(kms.list_key_rotations, KeyId=key_id, Marker="v2") == (
        "InvalidMarkerException",
        400,
    )
    signing = kms.create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")["KeyMetadata"]
    assert code(kms.list_key_rotations, KeyId=signing["KeyId"])[0] == (
        "UnsupportedOperationException"
    )


def test_get_key_last_usage(kms: Any, server: Server) -> None:
    """The newest successful use of a key, by any API, as KMS names it; a read or a failed use
    is none. Its request id is the one the caller was answered with, and its event id names the
    audit record."""
    key_id = kms.create_key()["KeyMetadata"]["KeyId"]
    fresh = kms.get_key_last_usage(KeyId=key_id)
    assert fresh["KeyLastUsage"] == {} and fresh["KeyId"] == arn(key_id)
    assert fresh["TrackingStartDate"] == fresh["KeyCreationDate"]

    def last_use() -> dict[str, Any]:
        usage: dict[str, Any] = kms.get_key_last_usage(KeyId=key_id)["KeyLastUsage"]
        return usage

    sealed = kms.encrypt(KeyId=key_id, Plaintext=b"orders")
    kms.describe_key(KeyId=key_id)
    tampered = sealed["CiphertextBlob"][:-1] + bytes([sealed["CiphertextBlob"][-1] ^ 1])
    assert code(kms.decrypt, CiphertextBlob=tampered)[0] == "InvalidCiphertextException"
    used = last_use()
    assert used["Operation"] == "Encrypt"
    assert used["KmsRequestId"] == sealed["ResponseMetadata"]["RequestId"]
    chain, seq = used["CloudTrailEventId"].split(":")
    with server.client() as http:
        records = http.get("/v1/audit", params={"key": key_id}).json()["records"]
    record = next(r for r in records if (r["chain"], r["seq"]) == (chain, int(seq)))
    assert record["request_id"] == used["KmsRequestId"]
    assert datetime.fromisoformat(record["time"]).timestamp() == pytest.approx(
        used["Timestamp"].timestamp(), abs=0.01
    )
    kms.generate_data_key_without_plaintext(KeyId=key_id, KeySpec="AES_256")
    assert last_use()["Operation"] == "GenerateDataKeyWithoutPlaintext"
    with server.client() as http:  # the native API's use counts alike
        assert http.post(f"/v1/aead/{key_id}/encrypt", json={"plaintext": "aGk="}).is_success
    assert last_use()["Operation"] == "Encrypt"
    mac_key = kms.create_key(KeySpec="HMAC_256", KeyUsage="GENERATE_VERIFY_MAC")["KeyMetadata"]
    mac = kms.generate_mac(KeyId=mac_key["KeyId"], Message=b"m", MacAlgorithm="HMAC_SHA_256")
    kms.verify_mac(
        KeyId=mac_key["KeyId"], Message=b"m", MacAlgorithm="HMAC_SHA_256", Mac=mac["Mac"]
    )
    usage = kms.get_key_last_usage(KeyId=mac_key["KeyId"])["KeyLastUsage"]
    assert usage["Operation"] == "VerifyMac"


def test_deletion(kms: Any, server: Server) -> None:
    key_id = kms.create_key()["KeyMetadata"]["KeyId"]
    before = time.time()
    scheduled = kms.schedule_key_deletion(KeyId=key_id, PendingWindowInDays=7)
    assert scheduled["KeyId"] == arn(key_id)
    assert (scheduled["KeyState"], scheduled["PendingWindowInDays"]) == ("PendingDeletion", 7)
    assert abs(scheduled["DeletionDate"].timestamp() - (before + 7 * 86400)) < 10
    meta = kms.describe_key(KeyId=key_id)["KeyMetadata"]
    assert (meta["KeyState"], meta["Enabled"]) == ("PendingDeletion", False)
    assert meta["DeletionDate"] == scheduled["DeletionDate"]
    # A key pending deletion is in the wrong state for anything but its cancellation.
    assert code(kms.schedule_key_deletion, KeyId=key_id) == ("KMSInvalidStateException", 400)
    assert code(kms.enable_key_rotation, KeyId=key_id)[0] == "KMSInvalidStateException"
    assert code(kms.disable_key, KeyId=key_id)[0] == "KMSInvalidStateException"
    assert code(kms.tag_resource, KeyId=key_id, Tags=[{"TagKey": "a", "TagValue": "b"}])[0] == (
        "KMSInvalidStateException"
    )
    assert code(kms.create_alias, AliasName="alias/doomed", TargetKeyId=key_id)[0] == (
        "KMSInvalidStateException"
    )
    assert kms.cancel_key_deletion(KeyId=key_id)["KeyId"] == arn(key_id)
    meta = kms.describe_key(KeyId=key_id)["KeyMetadata"]
    assert meta["KeyState"] == "Disabled" and "DeletionDate" not in meta
    assert code(kms.cancel_key_deletion, KeyId=key_id)[0] == "KMSInvalidStateException"
    unvalidated = kms_client(server, credentials(server), validate=False)
    for days in (6, 31):
        assert code(unvalidated.schedule_key_deletion, KeyId=key_id, PendingWindowInDays=days)[
            0
        ] == ("ValidationException")


def test_aliases(kms: Any) -> None:
    first = kms.create_key()["KeyMetadata"]["KeyId"]
    second = kms.create_key()["KeyMetadata"]["KeyId"]
    kms.create_alias(AliasName="alias/orders", TargetKeyId=first)
    assert kms.describe_key(KeyId="alias/orders")["KeyMetadata"]["KeyId"] == first
    alias_arn = f"arn:aws:kms:{REGION}:{ACCOUNT}:alias/orders"
    assert kms.describe_key(KeyId=alias_arn)["KeyMetadata"]["KeyId"] == first
    assert code(kms.create_alias, AliasName="alias/orders", TargetKeyId=second) == (
        "AlreadyExistsException",
        400,
    )
    assert code(kms.create_alias, AliasName="alias/aws/mine", TargetKeyId=second)[0] == (
        "InvalidAliasNameException"
    )
    assert code(kms.create_alias, AliasName="alias/x", TargetKeyId="alias/orders")[0] == (
        "ValidationException"
    )
    kms.update_alias(AliasName="alias/orders", TargetKeyId=second)
    assert kms.describe_key(KeyId="alias/orders")["KeyMetadata"]["KeyId"] == second
    listed = kms.list_aliases(KeyId=second)["Aliases"]
    assert [(a["AliasName"], a["TargetKeyId"], a["AliasArn"]) for a in listed] == [
        ("alias/orders", second, alias_arn)
    ]
    assert listed[0]["LastUpdatedDate"] >= listed[0]["CreationDate"]
    assert kms.list_aliases(KeyId=first)["Aliases"] == []
    kms.delete_alias(AliasName="alias/orders")
    assert code(kms.describe_key, KeyId="alias/orders")[0] == "NotFoundException"
    assert code(kms.delete_alias, AliasName="alias/orders")[0] == "NotFoundException"
    assert code(kms.update_alias, AliasName="alias/orders", TargetKeyId=first)[0] == (
        "NotFoundException"
    )


def test_list_aliases_pages(kms: Any) -> None:
    key_id = kms.create_key()["KeyMetadata"]["KeyId"]
    names = [f"alias/paged-{i}" for i in range(5)]
    for name in names:
        kms.create_alias(AliasName=name, TargetKeyId=key_id)
    first = kms.list_aliases(KeyId=key_id, Limit=2)
    assert [a["AliasName"] for a in first["Aliases"]] == names[:2]
    assert first["Truncated"] is True
    pages = kms.get_paginator("list_aliases").paginate(
        KeyId=key_id, PaginationConfig={"PageSize": 2}
    )
    assert [a["AliasName"] for page in pages for a in page["Aliases"]] == names


def test_tags(kms: Any) -> None:
    key_id = kms.create_key(Tags=[{"TagKey": "b", "TagValue": "2"}])["KeyMetadata"]["KeyId"]
    kms.tag_resource(
        KeyId=key_id, Tags=[{"TagKey": "a", "TagValue": "1"}, {"TagKey": "c", "TagValue": ""}]
    )
    tags = kms.list_resource_tags(KeyId=key_id)
    assert tags["Tags"] == [
        {"TagKey": "a", "TagValue": "1"},
        {"TagKey": "b", "TagValue": "2"},
        {"TagKey": "c", "TagValue": ""},
    ]
    assert tags["Truncated"] is False
    page = kms.list_resource_tags(KeyId=key_id, Limit=2)
    assert (page["Truncated"], page["NextMarker"]) == (True, "b")
    rest = kms.list_resource_tags(KeyId=key_id, Marker=page["NextMarker"])
    assert rest["Tags"] == [{"TagKey": "c", "TagValue": ""}]
    kms.untag_resource(KeyId=key_id, TagKeys=["a", "c"])
    assert kms.list_resource_tags(KeyId=key_id)["Tags"] == [{"TagKey": "b", "TagValue": "2"}]
    full = [{"TagKey": f"t{i}", "TagValue": "v"} for i in range(50)]
    assert code(kms.tag_resource, KeyId=key_id, Tags=full)[0] == "LimitExceededException"


def test_scoped_token_denied_on_another_key(server: Server, kms: Any) -> None:
    """A token scoped to one key gets AccessDeniedException on another, for every action."""
    mine = kms.create_key()["KeyMetadata"]["KeyId"]
    other = kms.create_key()["KeyMetadata"]["KeyId"]
    kms.create_alias(AliasName="alias/others", TargetKeyId=other)
    kms.create_alias(AliasName="alias/z-mine", TargetKeyId=mine)
    scoped = kms_client(server, credentials(server, keys=[mine]))
    assert scoped.describe_key(KeyId=mine)["KeyMetadata"]["KeyId"] == mine
    denied = [
        (scoped.describe_key, {"KeyId": other}),
        (scoped.describe_key, {"KeyId": "alias/others"}),
        (scoped.disable_key, {"KeyId": other}),
        (scoped.enable_key_rotation, {"KeyId": other}),
        (scoped.rotate_key_on_demand, {"KeyId": other}),
        (scoped.list_key_rotations, {"KeyId": other}),
        (scoped.schedule_key_deletion, {"KeyId": other}),
        (scoped.tag_resource, {"KeyId": other, "Tags": [{"TagKey": "a", "TagValue": "b"}]}),
        (scoped.list_resource_tags, {"KeyId": other}),
        (scoped.create_alias, {"AliasName": "alias/mine", "TargetKeyId": other}),
        (scoped.update_alias, {"AliasName": "alias/others", "TargetKeyId": mine}),
        (scoped.delete_alias, {"AliasName": "alias/others"}),
    ]
    for call, arguments in denied:
        assert code(call, **arguments) == ("AccessDeniedException", 400), call
    assert [k["KeyId"] for k in scoped.list_keys()["Keys"]] == [mine]
    assert [a["AliasName"] for a in scoped.list_aliases()["Aliases"]] == ["alias/z-mine"]
    # Read only: no management of its own key either.
    reader = kms_client(server, credentials(server, keys=[mine], operations=["read"]))
    assert code(reader.disable_key, KeyId=mine)[0] == "AccessDeniedException"
    assert code(reader.schedule_key_deletion, KeyId=mine)[0] == "AccessDeniedException"
