"""The Docker image, built from the repository's Dockerfile and run with podman.

No Docker engine or image registry is reachable here: `../shared/containers/local-base-images.sh`
installs podman and makes a local stand-in for `python:3.12-slim` (see docs/operations/docker.md).
The image is built unchanged and run as the documentation tells users to run it, with the host
network and a free port. The compose file cannot be brought up (postgres:16 cannot be pulled), so
it is validated with podman-compose and its cipherd service settings are run against the host's
PostgreSQL instead.
"""

import base64
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import ecies
import httpx
import psycopg
import pytest
import yaml

from tests.e2e.server import wait_for

# One process runs the module, so that the image (a session fixture) is built once, not once
# per test process.
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.xdist_group("docker")]

REPO = Path(__file__).resolve().parents[2]
PREPARE = REPO.parent / "shared" / "containers" / "local-base-images.sh"
COMPOSE_FILE = REPO / "docker" / "compose.yaml"
# A tag of one's own where several checkouts build on one machine.
IMAGE = os.environ.get("CIPHERD_TEST_IMAGE", "cipherd-test")
UID = "10001"
POSTGRES_URL = os.environ.get(
    "CIPHERD_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def podman(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    result = subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} failed:\n{result.stderr}")
    return result


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def image(tmp_path_factory: pytest.TempPathFactory, report_figure: Callable[[str], None]) -> str:
    """podman prepared by the shared script, and the image built from ./Dockerfile."""
    if os.geteuid() != 0:
        pytest.skip("podman on these machines needs root (packages, /etc/containers, runc)")
    if PREPARE.exists():
        work = tmp_path_factory.mktemp("podman-base")
        subprocess.run(["bash", str(PREPARE), str(work)], check=True, timeout=1200)
    if shutil.which("podman") is None:
        pytest.skip(f"podman is not installed and {PREPARE} is not there to install it")
    started = time.monotonic()
    # --format docker: the OCI format has no HEALTHCHECK (Docker always writes this format).
    build = subprocess.run(
        ["podman", "build", "--format", "docker", "--network=host", "-t", IMAGE, str(REPO)],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    seconds = time.monotonic() - started
    size = int(podman("image", "inspect", "--format", "{{.Size}}", IMAGE).stdout)
    base = int(
        podman("image", "inspect", "--format", "{{.Size}}", "python:3.12-slim").stdout.strip()
    )
    report_figure(
        f"{IMAGE}: {size / 1e6:.0f} MB, of which {(size - base) / 1e6:.0f} MB above "
        f"python:3.12-slim ({base / 1e6:.0f} MB here); build {seconds:.0f} s"
    )
    return IMAGE


@dataclass
class Container:
    name: str
    url: str
    token: str

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=30
        )

    def inspect(self, template: str) -> str:
        return podman("inspect", "--format", template, self.name).stdout.strip()

    def wait_until_serving(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.inspect("{{.State.Running}}") != "true":
                logs = podman("logs", self.name, check=False)
                raise AssertionError(f"container {self.name} ended:\n{logs.stdout}{logs.stderr}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"container {self.name} did not answer /healthz in 120 s")


@contextmanager
def running(
    image: str,
    *,
    volume: str | None = None,
    env: dict[str, str] | None = None,
    options: tuple[str, ...] = ("--init",),
    token: str | None = None,
    serve_args: tuple[str, ...] = (),
    port_in_one_word: bool = False,
) -> Iterator[Container]:
    """`podman run --init --network=host IMAGE --port P [serve_args]`, as in
    docs/operations/docker.md (or `--port=P`); removed afterwards."""
    token = token or "docker-admin-" + secrets.token_urlsafe(16)
    port = free_port()
    name = f"cipherd-test-{secrets.token_hex(4)}"
    args = ["run", "-d", "--network=host", "--name", name, *options]
    if volume:
        args += ["-v", f"{volume}:/data"]
    for key, value in {"CIPHERD_ADMIN_TOKEN": token, **(env or {})}.items():
        args += ["-e", f"{key}={value}"]
    port_args = [f"--port={port}"] if port_in_one_word else ["--port", str(port)]
    podman(*args, image, *port_args, *serve_args)
    container = Container(name, f"http://127.0.0.1:{port}", token)
    try:
        container.wait_until_serving()
        yield container
    finally:
        podman("rm", "-f", "-v", "-t", "0", name, check=False)


@pytest.fixture
def volume() -> Iterator[str]:
    name = f"cipherd-test-data-{secrets.token_hex(4)}"
    podman("volume", "create", name)
    yield name
    podman("volume", "rm", "-f", name, check=False)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def create_key(client: httpx.Client, name: str, key_type: str) -> None:
    created = client.post("/v1/keys", json={"name": name, "type": key_type})
    assert created.status_code == 201, created.text


AEZ_PARAMS = {"nonce": b64(b"\x00\x01\x02\x03"), "ad": [b64(b"header")], "tau": 16}


def ecies_encrypt(client: httpx.Client, name: str, plaintext: bytes) -> str:
    sealed = client.post(f"/v1/ecies/{name}/encrypt", json={"plaintext": b64(plaintext)})
    assert sealed.status_code == 200, sealed.text
    return sealed.json()["ciphertext"]


def ecies_decrypt(client: httpx.Client, name: str, ciphertext: str) -> bytes:
    opened = client.post(f"/v1/ecies/{name}/decrypt", json={"ciphertext": ciphertext})
    assert opened.status_code == 200, opened.text
    return base64.b64decode(opened.json()["plaintext"])


def aez_encrypt(client: httpx.Client, name: str, plaintext: bytes) -> str:
    sealed = client.post(
        # The bare bytes (no version envelope), to check their length against AEZ's.
        f"/v1/aez/{name}/encrypt",
        json={"plaintext": b64(plaintext), "envelope": False, **AEZ_PARAMS},
    )
    assert sealed.status_code == 200, sealed.text
    ciphertext = sealed.json()["ciphertext"]
    assert len(base64.b64decode(ciphertext)) == len(plaintext) + AEZ_PARAMS["tau"]
    return ciphertext


def aez_decrypt(client: httpx.Client, name: str, ciphertext: str) -> bytes:
    opened = client.post(f"/v1/aez/{name}/decrypt", json={"ciphertext": ciphertext, **AEZ_PARAMS})
    assert opened.status_code == 200, opened.text
    return base64.b64decode(opened.json()["plaintext"])


def test_image_holds_the_venv_and_no_build_tools(image: str) -> None:
    script = (
        "import importlib.util as u, core.aez._aez as a, core.fe._pairing as p, "
        "core.fe._linalg as m; print(a.__file__, p.__file__, m.__file__, "
        "u.find_spec('pip') is None, u.find_spec('pytest') is None)"
    )
    probe = podman("run", "--rm", "--entrypoint", "python", image, "-c", script)
    *extensions, no_pip, no_pytest = probe.stdout.split()
    assert len(extensions) == 3
    for path in extensions:
        assert path.startswith("/opt/venv/") and path.endswith(".so"), path
    assert (no_pip, no_pytest) == ("True", "True")
    tools = podman(
        "run",
        "--rm",
        "--entrypoint",
        "sh",
        image,
        "-c",
        "command -v gcc cc npm node; ls /src/pyproject.toml /usr/include/stdio.h 2>/dev/null; "
        "find / -xdev -type d \\( -name node_modules -o -path '*/tests/vectors' \\)",
        check=False,
    )
    assert tools.stdout.strip() == ""
    inspected = json.loads(podman("image", "inspect", image).stdout)[0]
    config = inspected["Config"]
    assert config["User"] == "cipherd"
    assert config["Entrypoint"] == ["cipherd", "serve", "--host", "0.0.0.0"]
    assert "8000/tcp" in config["ExposedPorts"]
    assert "/data" in config["Volumes"]
    assert "CIPHERD_DATA_DIR=/data" in config["Env"]
    check = inspected["Healthcheck"]["Test"]
    assert check[:2] == ["CMD", "python"] and "/healthz" in check[-1]


def test_the_healthcheck_finds_a_port_given_as_one_word(image: str) -> None:
    with running(image, port_in_one_word=True) as container:
        assert httpx.get(f"{container.url}/healthz").status_code == 200
        assert podman("healthcheck", "run", container.name, check=False).returncode == 0


def test_serves_ecies_and_aez_as_non_root(image: str, volume: str) -> None:
    with running(image, volume=volume) as container, container.client() as client:
        assert httpx.get(f"{container.url}/healthz").json() == {"status": "ok"}
        # The image's own HEALTHCHECK finds the non-default port on its own.
        assert podman("healthcheck", "run", container.name, check=False).returncode == 0
        assert client.get("/v1/keys").status_code == 200
        assert httpx.get(f"{container.url}/v1/keys").status_code == 401

        create_key(client, "orders", "ecies-secp256k1")
        message = os.urandom(1000)
        assert ecies_decrypt(client, "orders", ecies_encrypt(client, "orders", message)) == message
        # A ciphertext from the real eciespy peer on the host decrypts inside the container.
        public = client.get("/v1/keys/orders/public").json()["public_key"]
        peer = ecies.encrypt(base64.b64decode(public).hex(), b"from the host")
        assert ecies_decrypt(client, "orders", b64(peer)) == b"from the host"

        create_key(client, "session", "aez")
        sealed = aez_encrypt(client, "session", b"hello aez")
        assert aez_decrypt(client, "session", sealed) == b"hello aez"
        tampered = bytearray(base64.b64decode(sealed))
        tampered[0] ^= 1
        rejected = client.post(
            "/v1/aez/session/decrypt", json={"ciphertext": b64(bytes(tampered)), **AEZ_PARAMS}
        )
        assert rejected.status_code == 400

        assert podman("exec", container.name, "id", "-u").stdout.strip() == UID
        owners = podman("exec", container.name, "stat", "-c", "%u %a %n", "/data/root-key")
        assert owners.stdout.split()[:2] == [UID, "600"]


def test_data_survives_restart_and_stop_is_prompt(
    image: str, volume: str, report_figure: Callable[[str], None]
) -> None:
    token = "docker-admin-" + secrets.token_urlsafe(16)
    with running(image, volume=volume, token=token) as first, first.client() as client:
        create_key(client, "kept", "ecies-x25519")
        create_key(client, "kept-aez", "aez")
        ecies_sealed = ecies_encrypt(client, "kept", b"before the restart")
        aez_sealed = aez_encrypt(client, "kept-aez", b"also before")

        started = time.monotonic()
        podman("stop", "--time", "5", first.name)
        stop_seconds = time.monotonic() - started
        # After the 5 s grace time podman would send SIGKILL (exit code 137). uvicorn finishes
        # its shutdown, logs it, and exits 0 or (since 0.29) re-raises the SIGTERM it caught: 143.
        assert first.inspect("{{.State.ExitCode}}") in ("0", "143")
        logs = podman("logs", first.name)
        assert "Finished server process" in logs.stdout + logs.stderr
        report_figure(f"podman stop: {stop_seconds:.2f} s until the container ended (SIGTERM)")

        podman("start", first.name)
        first.wait_until_serving()
        assert ecies_decrypt(client, "kept", ecies_sealed) == b"before the restart"
        assert aez_decrypt(client, "kept-aez", aez_sealed) == b"also before"

    # A new container on the same volume (an upgrade, say) finds the keys and the root key.
    with running(image, volume=volume, token=token) as second, second.client() as client:
        assert ecies_decrypt(client, "kept", ecies_sealed) == b"before the restart"
        assert aez_decrypt(client, "kept-aez", aez_sealed) == b"also before"


def test_two_workers_serve_and_stop_cleanly(image: str, volume: str) -> None:
    """`--workers 2` in the container: the supervisor starts both, each takes connections on
    its own socket, and `podman stop` (SIGTERM through --init) ends them all with status 0."""
    with (
        running(image, volume=volume, serve_args=("--workers", "2")) as container,
        container.client() as client,
    ):
        create_key(client, "both", "ecies-secp256k1")
        message = os.urandom(100)
        assert ecies_decrypt(client, "both", ecies_encrypt(client, "both", message)) == message
        port = int(container.url.rsplit(":", 1)[1])

        def listeners() -> int:
            """Sockets listening on the port inside the container: the first worker answers
            before the second has bound its own, so this is waited for, not read once."""
            tcp = podman("exec", container.name, "cat", "/proc/net/tcp", "/proc/net/tcp6")
            states = [line.split() for line in tcp.stdout.splitlines() if ":" in line]
            return sum(1 for f in states if f[1].endswith(f":{port:04X}") and f[3] == "0A")

        wait_for(lambda: listeners() == 2, 60, "a listening socket for each worker")
        podman("stop", "--time", "10", container.name)
        assert container.inspect("{{.State.ExitCode}}") == "0"
        logs = podman("logs", container.name)
        assert (logs.stdout + logs.stderr).count("Finished server process") == 2


def compose_config(
    password: str, token: str, files: tuple[Path, ...] = (COMPOSE_FILE,), **env: str
) -> dict:
    """The compose files as podman-compose resolves them, with these values in the
    environment."""
    options = [word for path in files for word in ("-f", str(path))]
    resolved = subprocess.run(
        [sys.executable, "-m", "podman_compose", *options, "config"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "POSTGRES_PASSWORD": password, "CIPHERD_ADMIN_TOKEN": token, **env},
    )
    assert resolved.returncode == 0, resolved.stderr
    return yaml.safe_load(resolved.stdout)


def test_compose_file_is_valid_and_complete() -> None:
    config = compose_config("pw-" + secrets.token_hex(8), "compose-admin-token-0123")
    services = config["services"]
    assert set(services) == {"cipherd", "db"}
    db, app = services["db"], services["cipherd"]

    assert db["image"] == "postgres:16"
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])
    data_volume = db["volumes"][0].split(":")
    assert data_volume[1] == "/var/lib/postgresql/data" and data_volume[0] in config["volumes"]

    assert Path(app["build"]["context"]).resolve() == REPO
    assert app["depends_on"]["db"]["condition"] == "service_healthy"
    assert "/readyz" in " ".join(app["healthcheck"]["test"])
    url = urlsplit(app["environment"]["CIPHERD_DATABASE_URL"])
    assert (url.scheme, url.hostname, url.port, url.path) == ("postgresql", "db", 5432, "/cipherd")
    assert url.username == db["environment"]["POSTGRES_USER"]
    assert url.password == db["environment"]["POSTGRES_PASSWORD"]
    assert app["environment"]["CIPHERD_ROOT_KEY_FILE"] == "/run/secrets/cipherd_root_key"
    assert app["secrets"] == ["cipherd_root_key"]
    assert config["secrets"]["cipherd_root_key"]["file"]
    # Published on the host's loopback unless told otherwise.
    assert app["ports"] == ["127.0.0.1:8000:8000"]
    wider = compose_config("pw", "compose-admin-token-0123", CIPHERD_PUBLISH="0.0.0.0:9443")
    assert wider["services"]["cipherd"]["ports"] == ["0.0.0.0:9443:8000"]

    # Without a database password the file refuses to resolve rather than start open.
    missing = subprocess.run(
        [sys.executable, "-m", "podman_compose", "-f", str(COMPOSE_FILE), "config"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={k: v for k, v in os.environ.items() if k != "POSTGRES_PASSWORD"},
    )
    assert missing.returncode != 0
    assert "POSTGRES_PASSWORD" in missing.stderr


def test_compose_tls_file_adds_the_certificate_and_key() -> None:
    tls_file = COMPOSE_FILE.with_name("compose.tls.yaml")
    config = compose_config("pw", "compose-admin-token-0123", (COMPOSE_FILE, tls_file))
    app = config["services"]["cipherd"]
    assert app["environment"]["CIPHERD_TLS_CERT_FILE"] == "/run/secrets/cipherd_tls_cert"
    assert app["environment"]["CIPHERD_TLS_KEY_FILE"] == "/run/secrets/cipherd_tls_key"
    assert app["environment"]["CIPHERD_ROOT_KEY_FILE"] == "/run/secrets/cipherd_root_key"
    assert set(app["secrets"]) == {"cipherd_root_key", "cipherd_tls_cert", "cipherd_tls_key"}
    assert {"cipherd_tls_cert", "cipherd_tls_key"} <= set(config["secrets"])
    assert app["healthcheck"]["test"] == ["CMD", "python", "-m", "app.server.probe", "/readyz"]


def run_options(service: dict) -> tuple[str, ...]:
    """podman run options for the compose service's runtime settings."""
    options: list[str] = ["--init"] if service.get("init") else []
    if service.get("read_only"):
        options.append("--read-only")
    for path in service.get("tmpfs", []):
        options += ["--tmpfs", path]
    for capability in service.get("cap_drop", []):
        options += ["--cap-drop", capability]
    for option in service.get("security_opt", []):
        options += ["--security-opt", option]
    return tuple(options)


@pytest.fixture
def postgres_role() -> Iterator[tuple[str, str]]:
    """A login role with a password and a database it owns, like the compose file's db."""
    name, password = f"cipherd_docker_{secrets.token_hex(4)}", secrets.token_hex(12)
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {name} LOGIN PASSWORD '{password}'")
        admin.execute(f"CREATE DATABASE {name} OWNER {name}")
    try:
        yield name, password
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            admin.execute(f"DROP ROLE IF EXISTS {name}")


@pytest.mark.postgres
def test_compose_settings_run_against_postgres(
    image: str, tmp_path: Path, postgres_role: tuple[str, str]
) -> None:
    role, password = postgres_role
    token = "compose-admin-" + secrets.token_urlsafe(16)
    service = compose_config(password, token)["services"]["cipherd"]
    environment = dict(service["environment"])
    # The compose file's URL, pointed at the host's server instead of the db service.
    compose_url = urlsplit(environment["CIPHERD_DATABASE_URL"])
    host = urlsplit(POSTGRES_URL)
    environment["CIPHERD_DATABASE_URL"] = compose_url._replace(
        netloc=f"{role}:{password}@{host.hostname}:{host.port or 5432}", path=f"/{role}"
    ).geturl()

    # The secret file as compose mounts it, readable by the image's user only.
    root_key = tmp_path / "root-key"
    root_key.write_text(b64(os.urandom(32)) + "\n")
    root_key.chmod(0o400)
    os.chown(root_key, int(UID), int(UID))
    secret = f"{root_key}:{environment['CIPHERD_ROOT_KEY_FILE']}:ro"

    options = (*run_options(service), "-v", secret)
    with running(image, env=environment, options=options, token=token) as container:
        with container.client() as client:
            assert client.get("/readyz").json() == {"status": "ok"}
            create_key(client, "pg-orders", "ecies-ed25519")
            create_key(client, "pg-session", "aez")
            assert (
                ecies_decrypt(
                    client, "pg-orders", ecies_encrypt(client, "pg-orders", b"in postgres")
                )
                == b"in postgres"
            )
            assert (
                aez_decrypt(client, "pg-session", aez_encrypt(client, "pg-session", b"aez too"))
                == b"aez too"
            )
        # The root key came from the secret: none was generated into the data directory.
        listing = podman("exec", container.name, "ls", "-A", "/data").stdout.split()
        assert "root-key" not in listing and "cipherd.sqlite3" not in listing
        # The root filesystem is read-only, as in the compose file.
        assert podman("exec", container.name, "touch", "/opt/x", check=False).returncode != 0

    database = f"postgresql://{role}:{password}@{host.hostname}:{host.port or 5432}/{role}"
    with psycopg.connect(database) as connection:
        names = {row[0] for row in connection.execute("SELECT name FROM keys")}
    assert names == {"pg-orders", "pg-session"}
