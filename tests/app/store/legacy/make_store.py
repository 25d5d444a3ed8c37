"""Makes `store.sqlite3`, `root-key` and `expected.json` with the service of commit ffdcc7c, the
last one whose store wraps every key version directly under the root key:

    git worktree add --detach /tmp/cipherd-ffdcc7c ffdcc7c
    (cd /tmp/cipherd-ffdcc7c && python setup.py build_ext --inplace)
    cd /tmp/cipherd-ffdcc7c && python /path/to/this/make_store.py /path/to/this/directory

It drives that commit's REST API in process: keys of several types, some rotated, a token, and
for every version a ciphertext with its plaintext, which the current code must still decrypt.
"""

import base64
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def main(out: Path) -> None:
    work = Path(tempfile.mkdtemp())
    root_key = b64(os.urandom(32))
    token = "legacy-admin-token-" + "0" * 8
    settings = Settings(data_dir=work, root_key=root_key, admin_token=token)
    expected: dict[str, object] = {"admin_token": token, "keys": {}, "ciphertexts": []}
    with TestClient(create_app(settings)) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        ciphertexts: list[dict[str, object]] = expected["ciphertexts"]  # type: ignore[assignment]
        for name, key_type, extra, versions in (
            ("orders", "ecies-secp256k1", {}, 3),
            ("mail", "ecies-x25519", {}, 1),
            ("signing", "ecies-ed25519", {"exportable": True}, 2),
            ("session", "aez", {}, 2),
            ("scores", "ipfe-opt", {"dimension": 3}, 1),
        ):
            made = client.post("/v1/keys", json={"name": name, "type": key_type, **extra})
            assert made.status_code == 201, made.text
            expected["keys"][name] = {"type": key_type, "versions": versions}  # type: ignore[index]
            for version in range(1, versions + 1):
                if version > 1:
                    assert client.post(f"/v1/keys/{name}/rotate").status_code == 200
                if key_type == "ipfe-opt":
                    continue
                plaintext = os.urandom(40)
                record: dict[str, object] = {"key": name, "version": version}
                if key_type == "aez":
                    body = {"plaintext": b64(plaintext), "nonce": b64(b"legacy"), "tau": 16}
                    made = client.post(f"/v1/aez/{name}/encrypt", json=body)
                    record |= {"family": "aez", "nonce": b64(b"legacy"), "tau": 16}
                else:
                    made = client.post(
                        f"/v1/ecies/{name}/encrypt", json={"plaintext": b64(plaintext)}
                    )
                    record["family"] = "ecies"
                assert made.status_code == 200, made.text
                assert made.json()["key_version"] == version
                record |= {"plaintext": b64(plaintext), "ciphertext": made.json()["ciphertext"]}
                ciphertexts.append(record)
        functional = client.post("/v1/fe/scores/keygen", json={"y": [1, 2, 3]})
        encrypted = client.post("/v1/fe/scores/encrypt", json={"x": [4, 5, 6]})
        assert functional.status_code == encrypted.status_code == 200
        ciphertexts.append(
            {
                "family": "fe",
                "key": "scores",
                "version": 1,
                "functional_key": functional.json()["functional_key"],
                "ciphertext": encrypted.json()["ciphertext"],
                "result": 32,
            }
        )
        issued = client.post(
            "/v1/tokens", json={"keys": ["orders"], "operations": ["encrypt", "decrypt"]}
        )
        assert issued.status_code == 201, issued.text
        expected["scoped_token"] = issued.json()["token"]
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(work / "cipherd.sqlite3", out / "store.sqlite3")
    (out / "root-key").write_text(root_key + "\n")
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
