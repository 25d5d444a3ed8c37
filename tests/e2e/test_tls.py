"""`cipherd serve` over TLS, against real clients (curl, httpx, Python's ssl): a CA made here with
`cryptography` signs the server's and a client's certificates; another CA signs an impostor's."""

import datetime
import ipaddress
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.e2e import server as e2e

CURL = shutil.which("curl")


@dataclass
class Issued:
    cert: Path
    key: Path

    def der(self) -> bytes:
        return x509.load_pem_x509_certificate(self.cert.read_bytes()).public_bytes(
            serialization.Encoding.DER
        )


class Authority:
    """A CA of its own, writing PEM files into `directory`."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.name = subject
        self.certificate = (
            self._builder(subject, self.key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                critical=True,
            )
            .sign(self.key, hashes.SHA256())
        )
        self.cert = directory / f"{name}.pem"
        self.cert.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))

    def _builder(
        self, subject: x509.Name, public_key: ec.EllipticCurvePublicKey
    ) -> x509.CertificateBuilder:
        now = datetime.datetime.now(datetime.UTC)
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(getattr(self, "name", subject))
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
        )

    def issue(self, file_name: str, *, server: bool) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, file_name)])
        usage = (
            x509.ExtendedKeyUsageOID.SERVER_AUTH if server else x509.ExtendedKeyUsageOID.CLIENT_AUTH
        )
        builder = self._builder(subject, key.public_key()).add_extension(
            x509.ExtendedKeyUsage([usage]), critical=False
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
        certificate = builder.sign(self.key, hashes.SHA256())
        issued = Issued(self.directory / f"{file_name}.crt", self.directory / f"{file_name}.key")
        issued.cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        issued.key.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return issued


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, object]:
    directory = tmp_path / "pki"
    directory.mkdir()
    ca = Authority(directory, "cipherd-test-ca")
    other = Authority(directory, "impostor-ca")
    return {
        "ca": ca,
        "server": ca.issue("server", server=True),
        "client": ca.issue("client", server=False),
        "impostor": other.issue("impostor", server=False),
        "other": other,
    }


def _tls_args(server: Issued, client_ca: Authority | None) -> list[str]:
    args = ["--tls-cert-file", str(server.cert), "--tls-key-file", str(server.key)]
    if client_ca is not None:
        args += ["--tls-client-ca-file", str(client_ca.cert)]
    return args


def _client_options(ca: Authority, client: Issued | None) -> dict[str, object]:
    context = ssl.create_default_context(cafile=ca.cert)
    if client is not None:
        context.load_cert_chain(client.cert, client.key)
    return {"verify": context}


def _curl(
    server: e2e.Server, *options: str, url: str | None = None
) -> subprocess.CompletedProcess[str]:
    assert CURL is not None
    return subprocess.run(
        [
            CURL,
            "-sS",
            "--max-time",
            "10",
            "-H",
            f"Authorization: Bearer {server.admin_token}",
            *options,
            url or f"{server.url}/v1/keys",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )


def _peer_certificate(port: int, ca: Authority, client: Issued) -> bytes:
    """The DER certificate a new TLS connection to `port` is shown."""
    context = _client_options(ca, client)["verify"]
    assert isinstance(context, ssl.SSLContext)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        certificate = tls.getpeercert(binary_form=True)
    assert certificate is not None
    return certificate


@pytest.mark.skipif(CURL is None, reason="curl is not installed")
@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated")
def test_mutual_tls_answers_only_clients_of_its_ca_and_still_wants_tokens(
    tmp_path: Path, pki: dict[str, object]
) -> None:
    ca, server_cert, client, impostor = pki["ca"], pki["server"], pki["client"], pki["impostor"]
    assert isinstance(ca, Authority) and isinstance(server_cert, Issued)
    assert isinstance(client, Issued) and isinstance(impostor, Issued)
    with e2e.running(
        tmp_path / "data",
        args=_tls_args(server_cert, ca),
        client_options=_client_options(ca, client),
    ) as server:
        port = int(server.url.rsplit(":", 1)[1])
        with server.client() as http:
            assert http.get("/v1/keys").status_code == 200
            assert http.get("/v1/keys", headers={"Authorization": ""}).status_code == 401

        good = _curl(
            server, "--cacert", str(ca.cert), "--cert", str(client.cert), "--key", str(client.key)
        )
        assert good.returncode == 0, good.stderr
        assert '"keys"' in good.stdout

        without = _curl(server, "--cacert", str(ca.cert))
        assert without.returncode != 0 and '"keys"' not in without.stdout
        foreign = _curl(
            server,
            "--cacert",
            str(ca.cert),
            "--cert",
            str(impostor.cert),
            "--key",
            str(impostor.key),
        )
        assert foreign.returncode != 0 and '"keys"' not in foreign.stdout
        for options in (_client_options(ca, None), _client_options(ca, impostor)):
            with pytest.raises(httpx.HTTPError):
                httpx.get(f"{server.url}/v1/keys", timeout=10, **options)  # type: ignore[arg-type]

        plain = _curl(server, url=f"http://127.0.0.1:{port}/v1/keys")
        assert '"keys"' not in plain.stdout
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{port}/v1/keys", timeout=10)

        # TLS 1.2 is the floor: a client that stops at 1.1 gets no handshake, one at 1.2 does.
        for highest, works in ((ssl.TLSVersion.TLSv1_2, True), (ssl.TLSVersion.TLSv1_1, False)):
            context = _client_options(ca, client)["verify"]
            assert isinstance(context, ssl.SSLContext)
            context.maximum_version = highest
            if not works:
                context.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
                context.set_ciphers("ALL:@SECLEVEL=0")
            with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
                if works:
                    with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                        assert tls.version() == "TLSv1.2"
                else:
                    with pytest.raises(ssl.SSLError):
                        context.wrap_socket(raw, server_hostname="127.0.0.1")


def test_server_tls_without_client_ca_takes_any_client(
    tmp_path: Path, pki: dict[str, object]
) -> None:
    ca, server_cert = pki["ca"], pki["server"]
    assert isinstance(ca, Authority) and isinstance(server_cert, Issued)
    env = {
        "CIPHERD_TLS_CERT_FILE": str(server_cert.cert),
        "CIPHERD_TLS_KEY_FILE": str(server_cert.key),
    }
    with (
        e2e.running(tmp_path / "data", env=env, client_options=_client_options(ca, None)) as server,
        server.client() as http,
    ):
        assert http.get("/v1/keys").status_code == 200


def _replace(target: Issued, source: Issued) -> None:
    """Swap the files in place as a deployment tool would: each renamed over the old one."""
    for old, new in ((target.key, source.key), (target.cert, source.cert)):
        staged = old.with_suffix(".new")
        shutil.copyfile(new, staged)
        os.replace(staged, old)


def _wait_for_certificate(
    port: int, ca: Authority, client: Issued, wanted: bytes, connections: int
) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if all(_peer_certificate(port, ca, client) == wanted for _ in range(connections)):
            return
        time.sleep(0.1)
    raise AssertionError("the new certificate was not served")


@pytest.mark.parametrize("workers_count", [1, 2])
def test_sighup_swaps_the_certificate_and_keeps_connections_in_flight(
    tmp_path: Path, pki: dict[str, object], workers_count: int
) -> None:
    ca, first, client = pki["ca"], pki["server"], pki["client"]
    assert isinstance(ca, Authority) and isinstance(first, Issued) and isinstance(client, Issued)
    second = ca.issue("server-renewed", server=True)
    live = Issued(tmp_path / "live.crt", tmp_path / "live.key")
    _replace(live, first)
    first_der, second_der = first.der(), second.der()
    assert first_der != second_der
    with e2e.running(
        tmp_path / "data",
        workers_count=workers_count,
        args=_tls_args(live, ca),
        client_options=_client_options(ca, client),
    ) as server:
        port = int(server.url.rsplit(":", 1)[1])
        with server.client() as http:
            created = http.post("/v1/keys", json={"name": "k", "type": "aez"})
            assert created.status_code == 201, created.text
        assert _peer_certificate(port, ca, client) == first_der

        # A request half sent on one connection, and an idle keep-alive connection, both over
        # the first certificate.
        context = _client_options(ca, client)["verify"]
        assert isinstance(context, ssl.SSLContext)
        in_flight = context.wrap_socket(
            socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="127.0.0.1"
        )
        body = os.urandom(4096)
        in_flight.sendall(
            (
                "POST /v1/aez/k/encrypt HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: Bearer {server.admin_token}\r\n"
                "Content-Type: application/octet-stream\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            ).encode()
            + body[:1000]
        )
        idle = server.client()
        assert idle.get("/v1/keys").status_code == 200

        # A broken pair of files is refused on SIGHUP; the first certificate stays.
        live.key.write_text("not a key\n")
        os.kill(server.process.pid, signal.SIGHUP)
        time.sleep(1.0)
        assert _peer_certificate(port, ca, client) == first_der
        assert "TLS files not reloaded" in server.output()

        _replace(live, second)
        os.kill(server.process.pid, signal.SIGHUP)
        _wait_for_certificate(port, ca, client, second_der, connections=8 * workers_count)

        in_flight.sendall(body[1000:])
        answer = b""
        while chunk := in_flight.recv(65536):
            answer += chunk
        in_flight.close()
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        assert idle.get("/v1/keys").status_code == 200
        idle.close()
        assert server.process.poll() is None
        if workers_count > 1:
            assert len(e2e.workers(server.process.pid)) == workers_count


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--tls-cert-file", "{cert}"], "CIPHERD_TLS_KEY_FILE"),
        (["--tls-cert-file", "{cert}", "--tls-key-file", "{missing}"], "CIPHERD_TLS_KEY_FILE"),
        (["--tls-cert-file", "{cert}", "--tls-key-file", "{other_key}"], "CIPHERD_TLS_CERT_FILE"),
        (
            [
                "--tls-cert-file",
                "{cert}",
                "--tls-key-file",
                "{key}",
                "--tls-client-ca-file",
                "{key}",
            ],
            "CIPHERD_TLS_CLIENT_CA_FILE",
        ),
    ],
)
def test_unusable_tls_files_stop_the_start_in_one_line(
    tmp_path: Path, pki: dict[str, object], flags: list[str], named: str
) -> None:
    server_cert, impostor = pki["server"], pki["impostor"]
    assert isinstance(server_cert, Issued) and isinstance(impostor, Issued)
    paths = {
        "cert": server_cert.cert,
        "key": server_cert.key,
        "other_key": impostor.key,
        "missing": tmp_path / "absent.key",
    }
    args = [flag.format(**paths) for flag in flags]
    result = subprocess.run(
        [sys.executable, "-m", "app", "serve", "--port", str(e2e.free_port()), *args],
        env=e2e._environment(tmp_path / "data", {}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], result.stderr


def _probe(env: dict[str, str], port: int, path: str = "/readyz") -> int:
    full = {k: v for k, v in os.environ.items() if not k.startswith("CIPHERD_")} | env
    return subprocess.run(
        [sys.executable, "-m", "app.server.probe", path, str(port)],
        env=full,
        capture_output=True,
        timeout=30,
    ).returncode


def test_the_container_probe_speaks_tls_and_presents_the_server_certificate(
    tmp_path: Path, pki: dict[str, object]
) -> None:
    ca = pki["ca"]
    assert isinstance(ca, Authority)
    # One certificate for both ends, as the probe needs with a client CA.
    both = _issue_for_both(ca)
    env = {
        "CIPHERD_TLS_CERT_FILE": str(both.cert),
        "CIPHERD_TLS_KEY_FILE": str(both.key),
        "CIPHERD_TLS_CLIENT_CA_FILE": str(ca.cert),
    }
    with e2e.running(
        tmp_path / "data", env=env, client_options=_client_options(ca, both)
    ) as server:
        port = int(server.url.rsplit(":", 1)[1])
        assert _probe(env, port) == 0
        assert _probe({}, port) != 0  # plain HTTP on the TLS port
        without_client_ca = {k: v for k, v in env.items() if k != "CIPHERD_TLS_CLIENT_CA_FILE"}
        assert _probe(without_client_ca, port) != 0  # no client certificate
    with e2e.running(tmp_path / "plain") as server:
        assert _probe({}, int(server.url.rsplit(":", 1)[1])) == 0


def _issue_for_both(ca: Authority) -> Issued:
    """A server certificate that may also authenticate a client."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "both")])
    certificate = (
        ca._builder(subject, key.public_key())
        .add_extension(
            x509.ExtendedKeyUsage(
                [x509.ExtendedKeyUsageOID.SERVER_AUTH, x509.ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca.key, hashes.SHA256())
    )
    issued = Issued(ca.directory / "both.crt", ca.directory / "both.key")
    issued.cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    issued.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return issued
