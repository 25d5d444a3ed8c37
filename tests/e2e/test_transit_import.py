"""Transit's key import (`bao transit import`, `bao transit import-version`) on cipherd and on a
real OpenBao, compared: the same material made elsewhere, imported into both, makes the same
key, so that what one encrypts, signs or MACs with it the other decrypts, verifies or MACs
alike; an imported key is not rotated by the server unless imported with `allow_rotation`; its
next versions come by `import-version`; and the refusals fail the command on both servers.
"""

import base64
import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from tests.e2e.openbao import bao, running_openbao
from tests.e2e.server import running

pytestmark = pytest.mark.e2e

ADMIN_TOKEN = "transit-import-" + secrets.token_urlsafe(16)
TEXT = base64.b64encode(b"imported elsewhere").decode()


def _pkcs8(
    key: ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey,
) -> bytes:
    return key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


# Material made elsewhere, by Transit type: raw for AEAD and HMAC, PKCS#8 DER otherwise.
MATERIAL = {
    "aes256-gcm96": os.urandom(32),
    "aes128-gcm96": os.urandom(16),
    "chacha20-poly1305": os.urandom(32),
    "hmac": os.urandom(48),
    "ecdsa-p256": _pkcs8(ec.generate_private_key(ec.SECP256R1())),
    "ecdsa-p384": _pkcs8(ec.generate_private_key(ec.SECP384R1())),
    "ed25519": _pkcs8(ed25519.Ed25519PrivateKey.generate()),
    "rsa-2048": _pkcs8(rsa.generate_private_key(65537, 2048)),
}
AEAD = ("aes256-gcm96", "aes128-gcm96", "chacha20-poly1305")
SIGNING = ("ecdsa-p256", "ecdsa-p384", "ed25519", "rsa-2048")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[str, str]]]:
    work = tmp_path_factory.mktemp("transit-import")
    with (
        running(work / "cipherd", env={"CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN}) as cipherd,
        running_openbao(work) as openbao,
    ):
        yield {"openbao": (openbao.url, openbao.token), "cipherd": (cipherd.url, ADMIN_TOKEN)}


def client(server: tuple[str, str]) -> httpx.Client:
    url, token = server
    return httpx.Client(base_url=url, headers={"X-Vault-Token": token}, timeout=30)


def imported(
    server: tuple[str, str], home: Path, name: str, material: bytes, *options: str
) -> subprocess.CompletedProcess[str]:
    key_file = home / f"{name}.b64"
    key_file.write_text(base64.b64encode(material).decode())
    return bao(server, home, "transit", "import", f"transit/keys/{name}", f"@{key_file}", *options)


def data(answer: httpx.Response) -> dict[str, object]:
    assert answer.status_code == 200, answer.text
    found: dict[str, object] = answer.json()["data"]
    return found


def test_the_same_material_makes_the_same_key_on_both(
    servers: dict[str, tuple[str, str]], tmp_path: Path
) -> None:
    suffix = secrets.token_hex(4)
    for server in servers.values():
        for transit_type, material in MATERIAL.items():
            done = imported(
                server, tmp_path, f"{transit_type}-{suffix}", material, f"type={transit_type}"
            )
            assert done.returncode == 0, (server[0], transit_type, done.stderr)
    openbao, ours = client(servers["openbao"]), client(servers["cipherd"])
    for transit_type in MATERIAL:
        name = f"{transit_type}-{suffix}"
        read = [data(c.get(f"/v1/transit/keys/{name}")) for c in (openbao, ours)]
        assert [(r["imported_key"], r["imported_key_allow_rotation"], r["type"]) for r in read] == [
            (True, False, transit_type)
        ] * 2
    for transit_type in AEAD:
        name = f"{transit_type}-{suffix}"
        for sealer, opener in ((openbao, ours), (ours, openbao)):
            sealed = data(sealer.post(f"/v1/transit/encrypt/{name}", json={"plaintext": TEXT}))
            opened = opener.post(
                f"/v1/transit/decrypt/{name}", json={"ciphertext": sealed["ciphertext"]}
            )
            assert data(opened)["plaintext"] == TEXT, (transit_type, sealer.base_url)
    name = f"hmac-{suffix}"
    macs = [
        data(c.post(f"/v1/transit/hmac/{name}", json={"input": TEXT}))["hmac"]
        for c in (openbao, ours)
    ]
    assert macs[0] == macs[1]
    for transit_type in SIGNING:
        name = f"{transit_type}-{suffix}"
        for signer, verifier in ((openbao, ours), (ours, openbao)):
            signature = data(signer.post(f"/v1/transit/sign/{name}", json={"input": TEXT}))
            verdict = verifier.post(
                f"/v1/transit/verify/{name}",
                json={"input": TEXT, "signature": signature["signature"]},
            )
            assert data(verdict)["valid"] is True, (transit_type, signer.base_url)


def test_pss_salt_lengths_in_bytes_verify_both_ways(
    servers: dict[str, tuple[str, str]], tmp_path: Path
) -> None:
    """The same rsa-2048 key on both: a PSS signature with a salt of 20 or 222 bytes (the
    longest with SHA-256) made by either verifies on the other with that `salt_length` and
    with "auto", and not with the digest's length ("hash")."""
    name = f"rsa-salts-{secrets.token_hex(4)}"
    for server in servers.values():
        done = imported(server, tmp_path, name, MATERIAL["rsa-2048"], "type=rsa-2048")
        assert done.returncode == 0, (server[0], done.stderr)
    openbao, ours = client(servers["openbao"]), client(servers["cipherd"])
    for salt_length in ("20", 222):
        for signer, verifier in ((openbao, ours), (ours, openbao)):
            signed = signer.post(
                f"/v1/transit/sign/{name}", json={"input": TEXT, "salt_length": salt_length}
            )
            signature = data(signed)["signature"]
            verdicts = [
                data(
                    verifier.post(
                        f"/v1/transit/verify/{name}",
                        json={"input": TEXT, "signature": signature, "salt_length": checked},
                    )
                )["valid"]
                for checked in (salt_length, "auto", "hash")
            ]
            assert verdicts == [True, True, False], (salt_length, signer.base_url)


def test_prehashed_ecdsa_inputs_of_any_length_verify_both_ways(
    servers: dict[str, tuple[str, str]], tmp_path: Path
) -> None:
    """The same ECDSA key on both: a prehashed input of any length, whatever `hash_algorithm`
    names (`none` too, which Transit takes with `signature_algorithm=pkcs1v15`), signed by
    either verifies on the other (both read its leftmost bits, as many as the curve's order
    has), and a changed input does not; an empty one is refused by both (a 400 here)."""
    lengths = (1, 20, 31, 33, 48, 65, 66, 67, 200)
    for curve in (ec.SECP256R1(), ec.SECP384R1(), ec.SECP521R1()):
        transit_type = f"ecdsa-p{curve.key_size}"
        name = f"{transit_type}-prehashed-{secrets.token_hex(4)}"
        material = _pkcs8(ec.generate_private_key(curve))
        for server in servers.values():
            done = imported(server, tmp_path, name, material, f"type={transit_type}")
            assert done.returncode == 0, (server[0], done.stderr)
        openbao, ours = client(servers["openbao"]), client(servers["cipherd"])
        for length in lengths:
            digest = base64.b64encode(os.urandom(length)).decode()
            changed = base64.b64encode(os.urandom(length)).decode()
            for signer, verifier, options in (
                (openbao, ours, {"hash_algorithm": "sha2-256"}),
                (ours, openbao, {"hash_algorithm": "sha2-256"}),
                (openbao, ours, {"hash_algorithm": "none", "signature_algorithm": "pkcs1v15"}),
                (ours, openbao, {"hash_algorithm": "none", "signature_algorithm": "pkcs1v15"}),
            ):
                signed = signer.post(
                    f"/v1/transit/sign/{name}", json={"input": digest, "prehashed": True, **options}
                )
                signature = data(signed)["signature"]
                verdicts = [
                    data(
                        verifier.post(
                            f"/v1/transit/verify/{name}",
                            json={
                                "input": given,
                                "signature": signature,
                                "prehashed": True,
                                **options,
                            },
                        )
                    )["valid"]
                    for given in (digest, changed)
                ]
                assert verdicts == [True, False], (transit_type, length, signer.base_url)
        refused = [
            server.post(f"/v1/transit/sign/{name}", json={"input": "", "prehashed": True})
            for server in (openbao, ours)
        ]
        # OpenBao's refusal is a 500 ("ecdsa: hash cannot be empty"); the caller's error here.
        assert [r.status_code for r in refused] == [500, 400], [r.text for r in refused]


def test_an_imported_key_rotates_only_by_import_version_unless_allowed(
    servers: dict[str, tuple[str, str]], tmp_path: Path
) -> None:
    suffix = secrets.token_hex(4)
    first, second = os.urandom(32), os.urandom(32)
    next_version = tmp_path / "next.b64"
    next_version.write_text(base64.b64encode(second).decode())
    seen = {}
    for name, server in servers.items():
        fixed, free = f"fixed-{suffix}", f"free-{suffix}"
        outcomes = [
            imported(server, tmp_path, fixed, first).returncode,
            bao(server, tmp_path, "write", "-f", f"transit/keys/{fixed}/rotate").returncode,
            bao(
                server, tmp_path, "write", f"transit/keys/{fixed}/config", "auto_rotate_period=24h"
            ).returncode,
            bao(
                server,
                tmp_path,
                "transit",
                "import-version",
                f"transit/keys/{fixed}",
                f"@{next_version}",
            ).returncode,
            imported(server, tmp_path, free, first, "allow_rotation=true").returncode,
            bao(server, tmp_path, "write", "-f", f"transit/keys/{free}/rotate").returncode,
        ]
        with client(server) as http:
            fixed_key = data(http.get(f"/v1/transit/keys/{fixed}"))
            free_key = data(http.get(f"/v1/transit/keys/{free}"))
            sealed = data(http.post(f"/v1/transit/encrypt/{fixed}", json={"plaintext": TEXT}))
        seen[name] = (
            outcomes,
            (fixed_key["latest_version"], fixed_key["imported_key"]),
            (free_key["latest_version"], free_key["imported_key"]),
            sealed["ciphertext"][:9],
        )
    assert seen["cipherd"] == seen["openbao"]
    assert seen["cipherd"][0][:4] == [0, 2, 0, 0] and seen["cipherd"][1] == (2, True)
    # The second version is the same material on both: each opens the other's encryption.
    with client(servers["openbao"]) as openbao, client(servers["cipherd"]) as ours:
        sealed = data(openbao.post(f"/v1/transit/encrypt/fixed-{suffix}", json={"plaintext": TEXT}))
        opened = ours.post(
            f"/v1/transit/decrypt/fixed-{suffix}", json={"ciphertext": sealed["ciphertext"]}
        )
        assert data(opened)["plaintext"] == TEXT


def test_what_vault_refuses_to_import_fails_on_both(
    servers: dict[str, tuple[str, str]], tmp_path: Path
) -> None:
    """Each refusal fails the command on both servers (OpenBao answers some with a 500, cipherd
    with a 400)."""
    suffix = secrets.token_hex(4)
    seen = {}
    for name, server in servers.items():
        key = f"refused-{suffix}"
        with client(server) as http:
            http.post(f"/v1/transit/keys/made-{suffix}").raise_for_status()
            statuses = [
                imported(server, tmp_path, f"made-{suffix}", os.urandom(32)).returncode,
                imported(
                    server, tmp_path, key, os.urandom(32), "convergent_encryption=false"
                ).returncode,
                imported(
                    server, tmp_path, key, os.urandom(32), "auto_rotate_period=24h"
                ).returncode,
                imported(server, tmp_path, key, os.urandom(20)).returncode,
                imported(server, tmp_path, key, MATERIAL["ecdsa-p256"], "type=ed25519").returncode,
                imported(server, tmp_path, key, os.urandom(32), "type=aez").returncode,
                bao(
                    server,
                    tmp_path,
                    "transit",
                    "import-version",
                    f"transit/keys/made-{suffix}",
                    base64.b64encode(os.urandom(32)).decode(),
                ).returncode,
            ]
            direct = [
                http.post(f"/v1/transit/keys/{key}/import", json=body).status_code
                for body in (
                    {"ciphertext": base64.b64encode(os.urandom(600)).decode()},
                    {
                        "ciphertext": base64.b64encode(os.urandom(600)).decode(),
                        "hash_function": "MD5",
                    },
                    {"ciphertext": "AAAA"},
                )
            ]
            missing = http.get(f"/v1/transit/keys/{key}").status_code
        seen[name] = (statuses, missing)
        if name == "cipherd":
            assert direct == [400, 400, 400]
    assert seen["cipherd"] == seen["openbao"]
    assert all(status != 0 for status in seen["cipherd"][0]) and seen["cipherd"][1] == 404


def test_an_imported_key_moves_both_ways_as_imported(
    servers: dict[str, tuple[str, str]], tmp_path: Path
) -> None:
    """Transit's backup carries the mark: a key imported on OpenBao, restored here, is still
    rotated only by its owner, and so is it once moved back."""
    suffix = secrets.token_hex(4)
    name = f"moving-{suffix}"
    options = ("exportable=true", "allow_plaintext_backup=true")
    assert imported(servers["openbao"], tmp_path, name, os.urandom(32), *options).returncode == 0
    with client(servers["openbao"]) as openbao, client(servers["cipherd"]) as ours:
        backup = data(openbao.get(f"/v1/transit/backup/{name}"))["backup"]
        assert ours.post(f"/v1/transit/restore/{name}", json={"backup": backup}).status_code == 204
        here = data(ours.get(f"/v1/transit/keys/{name}"))
        assert (here["imported_key"], here["imported_key_allow_rotation"]) == (True, False)
        refused = ours.post(f"/v1/transit/keys/{name}/rotate")
        assert "does not allow rotation" in refused.text and refused.status_code == 400
        back = data(ours.get(f"/v1/transit/backup/{name}"))["backup"]
        restored = openbao.post(f"/v1/transit/restore/back-{suffix}", json={"backup": back})
        assert restored.status_code == 204, restored.text
        there = data(openbao.get(f"/v1/transit/keys/back-{suffix}"))
        assert (there["imported_key"], there["imported_key_allow_rotation"]) == (True, False)
