"""Vault's system paths as the `bao` command and hvac use them, on cipherd and on a real
OpenBao, compared: `bao status` and the health options load balancers send, the first steps of
Vault's guides, teardown that may be run twice, token creation as the command sends it (of a
chosen value too), and the
older `sys/policy` paths hvac's policy calls use, what a token's capabilities read as, and mounts
and auth methods moved (`sys/remount`)."""

import base64
import hashlib
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import hvac
import pytest
from hvac import exceptions

from tests.e2e.openbao import bao, running_openbao
from tests.e2e.server import running, wait_for

pytestmark = pytest.mark.e2e

ADMIN_TOKEN = "vault-sys-" + secrets.token_urlsafe(16)
POLICY = 'path "transit/encrypt/orders" {\n  capabilities = ["update"]\n}'


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[str, str]]]:
    work = tmp_path_factory.mktemp("vault-sys")
    env = {"CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN}
    with running(work / "cipherd", env=env) as cipherd, running_openbao(work) as openbao:
        yield {"openbao": (openbao.url, openbao.token), "cipherd": (cipherd.url, ADMIN_TOKEN)}


def test_bao_status_answers_as_on_openbao(
    servers: dict[str, tuple[str, str]], tmp_path: Path
) -> None:
    """`bao status` reads sys/seal-status and sys/leader; hvac's is_initialized sys/init."""
    for server in servers.values():
        done = bao(server, tmp_path, "status")
        assert done.returncode == 0, done.stderr
        assert "HA Enabled      false" in done.stdout
    answers = {
        name: [httpx.get(f"{url}/v1/sys/{path}").json() for path in ("leader", "init")]
        for name, (url, _) in servers.items()
    }
    assert (
        answers["cipherd"] == answers["openbao"] == [{"ha_enabled": False}, {"initialized": True}]
    )
    assert hvac.Client(url=servers["cipherd"][0]).sys.is_initialized()


def test_health_takes_the_options_load_balancers_send(
    servers: dict[str, tuple[str, str]],
) -> None:
    query = "standbyok=true&perfstandbyok=true&sealedcode=503&uninitcode=501&activecode=299"
    statuses = {
        name: httpx.get(f"{url}/v1/sys/health?{query}").status_code
        for name, (url, _) in servers.items()
    }
    assert statuses == {"openbao": 299, "cipherd": 299}
    cipherd = servers["cipherd"][0]
    for url, _ in servers.values():  # a probe's own parameter is ignored, as by Vault
        assert httpx.get(f"{url}/v1/sys/health?cachebuster=17").status_code == 200
        empty = httpx.get(f"{url}/v1/sys/health?activecode=204")
        assert (empty.status_code, empty.content) == (204, b"")
    assert httpx.get(f"{cipherd}/v1/sys/health?standbyok=maybe").status_code == 400
    answer = hvac.Client(url=cipherd).sys.read_health_status(standby_ok=True, method="GET")
    assert answer["initialized"] is True and answer["sealed"] is False


def test_the_first_steps_of_vault_s_guides(tmp_path: Path, servers: dict[str, Any]) -> None:
    """`bao secrets enable transit` starts every Transit guide: transit is always mounted here,
    and enabling it again changes nothing, its keys included."""
    cipherd = servers["cipherd"]
    assert bao(cipherd, tmp_path, "write", "-f", "transit/keys/guide").returncode == 0
    for _ in range(2):
        done = bao(cipherd, tmp_path, "secrets", "enable", "transit")
        assert done.returncode == 0, done.stderr
        assert "Enabled the transit secrets engine at: transit/" in done.stdout
    assert bao(cipherd, tmp_path, "read", "transit/keys/guide").returncode == 0
    other = bao(cipherd, tmp_path, "secrets", "enable", "-path=transit", "kv")
    assert other.returncode == 2  # another engine there is still refused


def test_teardown_may_run_twice(servers: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    seen: dict[str, Any] = {}
    for name, server in servers.items():
        disabled = bao(server, tmp_path, "secrets", "disable", "never-mounted")
        url, token = server
        revoked = httpx.post(
            f"{url}/v1/auth/token/revoke-accessor",
            headers={"X-Vault-Token": token},
            json={"accessor": "never-issued"},
        )
        looked_up = httpx.post(
            f"{url}/v1/auth/token/lookup-accessor",
            headers={"X-Vault-Token": token},
            json={"accessor": "never-issued"},
        )
        seen[name] = (
            disabled.returncode,
            revoked.status_code,
            revoked.json()["warnings"],
            looked_up.status_code,
        )
        assert "invalid accessor" in looked_up.json()["errors"][0]
    assert seen["cipherd"] == seen["openbao"]
    assert seen["cipherd"] == (0, 200, ["No token found with this accessor"], 400)


def test_a_token_made_by_the_bao_command_has_no_warning(
    servers: dict[str, tuple[str, str]], tmp_path: Path
) -> None:
    """The command sends an empty `entity_alias` with every creation."""
    for server in servers.values():
        done = bao(server, tmp_path, "token", "create", "-policy=default", "-ttl=1h")
        assert done.returncode == 0, done.stderr
        assert "WARNING" not in done.stderr + done.stdout, done.stdout
    url, token = servers["cipherd"]
    refused = httpx.post(
        f"{url}/v1/auth/token/create",
        headers={"X-Vault-Token": token},
        json={"entity_alias": "someone"},
    )
    assert refused.status_code == 400


def test_the_bao_command_makes_a_token_of_a_chosen_value(
    servers: dict[str, tuple[str, str]], tmp_path: Path
) -> None:
    """`bao token create -id`: the token is the value, a second one of it fails the command,
    and both servers warn of the choice."""
    for name, server in servers.items():
        value = f"chosen-{name}-" + secrets.token_hex(8)
        args = ("token", "create", f"-id={value}", "-policy=default", "-field=token")
        done = bao(server, tmp_path, *args)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == value and "WARNING" in done.stderr + done.stdout
        again = bao(server, tmp_path, *args)
        assert again.returncode == 2 and "duplicate ID" in again.stderr, (name, again.stderr)


def test_a_use_limited_token_answers_for_itself_on_its_last_use(
    servers: dict[str, tuple[str, str]],
) -> None:
    """A token's last use revokes it, yet that request still answers: lookup-self with
    `num_uses` -1 (the revocation pending) and revoke-self with 204; the next use is a 403."""
    seen = {}
    for name, (url, token) in servers.items():
        client = hvac.Client(url=url, token=token)
        made = [client.auth.token.create(policies=["default"], num_uses=uses) for uses in (2, 1)]
        looking, revoking = (entry["auth"]["client_token"] for entry in made)
        lookups = [
            httpx.get(f"{url}/v1/auth/token/lookup-self", headers={"X-Vault-Token": looking})
            for _ in range(3)
        ]
        revoked = httpx.post(
            f"{url}/v1/auth/token/revoke-self", headers={"X-Vault-Token": revoking}
        )
        after = httpx.get(f"{url}/v1/auth/token/lookup-self", headers={"X-Vault-Token": revoking})
        renewing = client.auth.token.create(policies=["default"], num_uses=1)["auth"]
        renewed = httpx.post(
            f"{url}/v1/auth/token/renew-self",
            headers={"X-Vault-Token": renewing["client_token"]},
        )
        seen[name] = (
            [answer.status_code for answer in lookups],
            [answer.json()["data"]["num_uses"] for answer in lookups[:2]],
            revoked.status_code,
            after.status_code,
            (renewed.status_code, renewed.json()["errors"]),
        )
    assert seen["cipherd"] == seen["openbao"]
    assert seen["cipherd"][:4] == ([200, 200, 403], [1, -1], 204, 403)


def test_an_encryption_that_would_make_a_key_takes_the_create_capability(
    servers: dict[str, tuple[str, str]],
) -> None:
    """A token whose policy gives `update` on `transit/encrypt/*` encrypts under a key there,
    and is refused (403) the encryption that would make a missing one."""
    seen = {}
    for name, (url, token) in servers.items():
        admin = hvac.Client(url=url, token=token)
        admin.sys.create_or_update_policy(
            "encrypter", 'path "transit/encrypt/*" { capabilities = ["update"] }'
        )
        admin.secrets.transit.create_key(name="present")
        scoped = admin.auth.token.create(policies=["encrypter"])["auth"]["client_token"]
        seen[name] = [
            httpx.post(
                f"{url}/v1/transit/encrypt/{key}",
                headers={"X-Vault-Token": scoped},
                json={"plaintext": "aGk="},
            ).status_code
            for key in ("present", "absent-" + secrets.token_hex(4))
        ]
    assert seen["cipherd"] == seen["openbao"] == [200, 403]


def test_policies_through_hvac_s_older_paths(servers: dict[str, tuple[str, str]]) -> None:
    """hvac's policy calls use `sys/policy`; an empty policy is refused. (Names are given in
    lowercase: Vault lowercases them, cipherd keeps their case, as its tokens and its own API
    do.)"""
    seen = {}
    for name, (url, token) in servers.items():
        client = hvac.Client(url=url, token=token)
        client.sys.create_or_update_policy(name="orders-writer", policy=POLICY)
        read = client.sys.read_policy(name="orders-writer")
        modern = client.sys.read_acl_policy(name="orders-writer")["data"]
        listed = client.sys.list_policies()["data"]
        with pytest.raises(exceptions.InvalidRequest):
            client.sys.create_or_update_policy(name="empty", policy="")
        client.sys.delete_policy(name="orders-writer")
        with pytest.raises(exceptions.InvalidPath):
            client.sys.read_policy(name="orders-writer")
        seen[name] = (
            read["name"],
            read["data"]["name"],
            sorted(read) == sorted({*read["data"], *read}),
            modern["name"],
            "orders-writer" in listed["policies"] and listed["keys"] == listed["policies"],
        )
        assert 'path "transit/encrypt/orders"' in read["rules"]
    assert seen["cipherd"] == seen["openbao"]


def test_a_granted_ttl_reads_as_given(servers: dict[str, tuple[str, str]]) -> None:
    """`-ttl=1h` is a lease of 3600 s, and a renewal by 30 minutes one of 1800, as on OpenBao
    (the answer, made a moment after the grant, read 3599 and 1799)."""
    seen = {}
    for name, (url, token) in servers.items():
        client = hvac.Client(url=url, token=token)
        made = client.auth.token.create(policies=["default"], ttl="1h")["auth"]
        renewed = client.auth.token.renew(made["client_token"], increment="30m")["auth"]
        seen[name] = (made["lease_duration"], renewed["lease_duration"])
    assert seen == {"openbao": (3600, 1800), "cipherd": (3600, 1800)}


def test_a_path_not_served_fails_the_bao_command_as_on_openbao(
    servers: dict[str, tuple[str, str]], tmp_path: Path
) -> None:
    """A Vault client (its token header) asking for a path this service does not serve gets
    Vault's error answer, so `bao read` fails (exit 2) rather than print a problem document;
    the service's own clients keep theirs."""
    for server in servers.values():
        done = bao(server, tmp_path, "read", "nonexistent/path")
        assert done.returncode == 2, (done.stdout, done.stderr)
    url, token = servers["cipherd"]
    vault = httpx.get(f"{url}/v1/nonexistent/path", headers={"X-Vault-Token": token})
    assert vault.status_code == 404 and "errors" in vault.json()
    native = httpx.get(f"{url}/v1/nonexistent/path", headers={"Authorization": f"Bearer {token}"})
    assert native.status_code == 404
    assert native.headers["content-type"] == "application/problem+json"


ROOT_NAMESPACES = ("", "/", "root", "root/")


@pytest.mark.parametrize("namespace", ["ns1", "ns1/", "ROOT", *ROOT_NAMESPACES])
def test_only_the_root_namespace_is_served_as_on_openbao(
    servers: dict[str, tuple[str, str]], namespace: str
) -> None:
    """A client set for another namespace gets OpenBao's 404 before anything else, its token
    unread, and never the root namespace's keys in its place; the root's names are served."""
    seen: dict[str, list[int]] = {}
    for name, (url, token) in servers.items():
        for sent_token in (token, "not-a-token"):
            answer = httpx.post(
                f"{url}/v1/transit/encrypt/ns-probe",
                headers={"X-Vault-Token": sent_token, "X-Vault-Namespace": namespace},
                json={"plaintext": "aGk="},
            )
            seen.setdefault(name, []).append(answer.status_code)
            if namespace not in ROOT_NAMESPACES:
                assert answer.json() == {"errors": ["namespace not found"]}, (name, answer.text)
        if namespace in ROOT_NAMESPACES:
            client = hvac.Client(url=url, token=token, namespace=namespace or None)
            assert "transit/" in client.sys.list_mounted_secrets_engines()["data"]
    assert seen["cipherd"] == seen["openbao"]
    assert seen["cipherd"] == ([200, 403] if namespace in ROOT_NAMESPACES else [404, 404])


def test_accessors_and_mounts_read_as_hvac_reads_them(
    servers: dict[str, tuple[str, str]],
) -> None:
    """hvac's `list_accessors` (the method LIST) and `read_mount_configuration` (a mount's
    tuning), and a mount's and an auth method's fields at the top level of the answer as well as
    under `data`, as Vault's older system paths give them. Tuning, which changes nothing here
    (no leases), is refused rather than taken and ignored."""
    seen = {}
    for name, (url, token) in servers.items():
        client = hvac.Client(url=url, token=token)
        made = client.auth.token.create(policies=["default"], ttl="1h")["auth"]["accessor"]
        listed = client.auth.token.list_accessors()["data"]["keys"]
        tuned = client.sys.read_mount_configuration("transit")  # sys/mounts/transit/tune
        mount = client.adapter.get("/v1/sys/mounts/transit")
        method = client.adapter.get("/v1/sys/auth/token")
        seen[name] = (
            made in listed,
            tuned["default_lease_ttl"] == tuned["data"]["default_lease_ttl"] == 2_764_800,
            mount["type"] == mount["data"]["type"] == "transit",
            mount["accessor"] == mount["data"]["accessor"],
            method["type"] == method["data"]["type"] == "token",
        )
    assert seen["cipherd"] == seen["openbao"] == (True, True, True, True, True)
    url, token = servers["cipherd"]
    with pytest.raises(exceptions.InvalidRequest, match="no tuning"):
        hvac.Client(url=url, token=token).sys.tune_mount_configuration("transit", description="x")


READER = POLICY + '\npath "transit/keys/orders" {\n  capabilities = ["read"]\n}'
ASKED = [
    "transit/encrypt/orders",
    "transit/decrypt/orders",
    "transit/encrypt/payroll",
    "transit/keys/orders",
    "auth/token/lookup-self",
    "auth/token/renew-self",
    "sys/wrapping/wrap",
    "sys/mounts",
    "sys/policies/acl/orders-reader",
    "secret/data/app",
]


def test_capabilities_read_as_on_openbao(
    servers: dict[str, tuple[str, str]], tmp_path: Path
) -> None:
    """hvac's `get_capabilities` (`sys/capabilities-self`, or `sys/capabilities` and
    `sys/capabilities-accessor` given a token or an accessor) and `bao token capabilities`:
    a token of a Transit policy, the root token, a token or accessor that names none."""
    seen = {}
    for name, (url, token) in servers.items():
        root = hvac.Client(url=url, token=token)
        root.sys.create_or_update_acl_policy(name="orders-reader", policy=READER)
        made = root.auth.token.create(policies=["orders-reader"])["auth"]
        reader = hvac.Client(url=url, token=made["client_token"])
        own = reader.sys.get_capabilities(paths=ASKED)
        assert own["data"] == {path: own[path] for path in ASKED}
        one = reader.sys.get_capabilities(paths=["transit/encrypt/orders"])["data"]
        by_token = root.sys.get_capabilities(paths=ASKED, token=made["client_token"])["data"]
        by_accessor = root.sys.get_capabilities(paths=ASKED, accessor=made["accessor"])["data"]
        for named, words in (
            ({"token": "no-such-token"}, "invalid token"),
            ({"accessor": "no-such-accessor"}, "invalid accessor"),
        ):
            with pytest.raises(exceptions.InvalidRequest, match=words):
                root.sys.get_capabilities(paths=ASKED, **named)
        with pytest.raises(exceptions.Forbidden):
            reader.sys.get_capabilities(paths=ASKED, token=token)
        commands = [
            bao((url, token), tmp_path, "token", "capabilities", made["client_token"], path).stdout
            for path in ("transit/encrypt/orders", "transit/decrypt/orders")
        ]
        seen[name] = (
            own["data"],
            one,
            by_token == by_accessor == own["data"],
            root.sys.get_capabilities(paths=["transit/encrypt/orders"])["data"],
            root.sys.get_capabilities(paths=["transit/encrypt/orders"], token=token)["data"],
            commands,
        )
    assert seen["cipherd"] == seen["openbao"]
    assert seen["cipherd"][0]["transit/encrypt/orders"] == ["update"]
    assert seen["cipherd"][0]["transit/keys/orders"] == ["read"]
    assert seen["cipherd"][0]["transit/decrypt/orders"] == ["deny"]
    assert seen["cipherd"][4]["capabilities"] == ["root"]
    assert seen["cipherd"][5] == ["update\n", "deny\n"]


def test_mounts_move_as_the_bao_command_and_hvac_move_them(
    servers: dict[str, tuple[str, str]], tmp_path: Path
) -> None:
    """`bao secrets move` and `bao auth move` (which poll `sys/remount/status/:id` until the
    move succeeds) and hvac's `move_backend`: the keys answer at the new path and not at the
    old, an AppRole role logs in at its new path, and the moves' statuses read alike."""
    seen = {}
    for name, server in servers.items():
        url, token = server
        client = hvac.Client(url=url, token=token)
        suffix = secrets.token_hex(3)
        client.sys.enable_secrets_engine("transit", path=f"pay-{suffix}")
        client.secrets.transit.create_key("orders", mount_point=f"pay-{suffix}")
        client.sys.enable_auth_method("approle", path=f"ci-{suffix}")
        client.auth.approle.create_or_update_approle("build", mount_point=f"ci-{suffix}")
        moved = bao(server, tmp_path, "secrets", "move", f"pay-{suffix}", f"payments-{suffix}")
        assert moved.returncode == 0, moved.stderr
        authed = bao(server, tmp_path, "auth", "move", f"auth/ci-{suffix}", f"auth/builds-{suffix}")
        assert authed.returncode == 0, authed.stderr
        answer = client.sys.move_backend(f"payments-{suffix}", f"orders-{suffix}")
        status_path = f"/v1/sys/remount/status/{answer['data']['migration_id']}"

        def settled(path: str = status_path, client: hvac.Client = client) -> Any:
            info = client.adapter.get(path)["data"]["migration_info"]
            return info if info["status"] != "in-progress" else None  # OpenBao's moves queue

        wait_for(settled, 30, "the move's status")
        info = settled()
        old = httpx.get(f"{url}/v1/pay-{suffix}/keys/orders", headers={"X-Vault-Token": token})
        key = client.secrets.transit.read_key("orders", mount_point=f"orders-{suffix}")
        role = client.auth.approle.read_role_id("build", mount_point=f"builds-{suffix}")
        seen[name] = (
            "Success! Finished moving secrets engine" in moved.stdout,
            "Success! Finished moving auth method" in authed.stdout,
            [info[field].replace(suffix, "*") for field in ("source_mount", "target_mount")],
            info["status"],
            key["data"]["name"],
            old.status_code,
            bool(role["data"]["role_id"]),
        )
        client.sys.disable_secrets_engine(f"orders-{suffix}")
        client.sys.disable_auth_method(f"builds-{suffix}")
    assert seen["cipherd"] == seen["openbao"]
    assert seen["cipherd"] == (
        True,
        True,
        ["payments-*/", "orders-*/"],
        "success",
        "orders",
        404,
        True,
    )


def test_the_system_tools_answer_as_on_openbao(
    servers: dict[str, tuple[str, str]], tmp_path: Path
) -> None:
    """`sys/tools/hash` and `sys/tools/random`, through the `bao` command: the same sums, random
    bytes of the length asked, in the format asked, and the same refusals."""
    seen = {}
    for name, server in servers.items():
        sums = [
            bao(server, tmp_path, "write", "-field=sum", f"sys/tools/hash{path}", *args).stdout
            for path, args in (
                ("", ["input=aGVsbG8="]),
                ("/sha3-512", ["input=aGVsbG8=", "format=base64"]),
                ("", ["input=aGVsbG8=", "algorithm=sha2-384"]),
            )
        ]
        # No input: the hash of nothing; Transit's hash refuses it.
        nothing = bao(server, tmp_path, "write", "-f", "-field=sum", "sys/tools/hash/sha2-512")
        sums.append(nothing.stdout)
        no_input = bao(server, tmp_path, "write", "-f", "transit/hash/sha2-512").returncode
        runs = [
            bao(server, tmp_path, "write", "-f", "-field=random_bytes", path, *args)
            for path, args in (
                ("sys/tools/random/24", ["format=hex"]),
                ("sys/tools/random/platform/16", []),
                ("sys/tools/random", ["bytes=8", "format=hex"]),
            )
        ]
        assert [run.returncode for run in runs] == [0, 0, 0], (name, [run.stderr for run in runs])
        drawn = [run.stdout.strip() for run in runs]
        refusals = [
            bao(server, tmp_path, "write", "-f", path, *args).returncode
            for path, args in (
                ("sys/tools/hash/md5", ["input=aGVsbG8="]),
                ("sys/tools/random/elsewhere/16", []),
                ("sys/tools/random/abc", []),
            )
        ]
        seen[name] = (sums, [len(text) for text in drawn], refusals, no_input)
        assert len(bytes.fromhex(drawn[0])) == 24 and len(base64.b64decode(drawn[1])) == 16
    assert seen["cipherd"] == seen["openbao"]
    assert seen["cipherd"][0][0].strip() == hashlib.sha256(b"hello").hexdigest()
    assert seen["cipherd"][0][3].strip() == hashlib.sha512(b"").hexdigest()
    assert seen["cipherd"][3] != 0


def test_lease_revocation_by_prefix_through_the_bao_command(
    servers: dict[str, tuple[str, str]], tmp_path: Path
) -> None:
    """`bao lease revoke -prefix auth/token/create` revokes the tokens made there (tokens are
    the only leases here), as on OpenBao; a path ending in '/' is refused by both. OpenBao's dev
    root token was made there too and goes with them, so this test has an OpenBao of its own."""
    (tmp_path / "openbao").mkdir()
    with running_openbao(tmp_path / "openbao") as openbao:
        _revoke_by_prefix((openbao.url, openbao.token), tmp_path)
    _revoke_by_prefix(servers["cipherd"], tmp_path)


def _revoke_by_prefix(server: tuple[str, str], tmp_path: Path) -> None:
    made = bao(server, tmp_path, "token", "create", "-policy=default", "-field=token")
    assert made.returncode == 0, made.stderr
    done = bao(server, tmp_path, "lease", "revoke", "-prefix", "auth/token/create")
    assert done.returncode == 0, done.stderr
    gone = bao((server[0], made.stdout.strip()), tmp_path, "token", "lookup")
    assert gone.returncode == 2 and "permission denied" in gone.stderr
    url, token = server
    slash = httpx.put(
        f"{url}/v1/sys/leases/revoke-prefix/auth/token/",
        headers={"X-Vault-Token": token},
    )
    assert slash.status_code == 400
    assert "cannot write to a path ending in '/'" in slash.json()["errors"][0]
