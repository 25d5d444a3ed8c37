"""The releases the adapters were tested against: the service starts with those only, and says
which package is at which release when it refuses."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.server.releases import TESTED, Releases, UnsupportedRelease, installed, require

ROOT = Path(__file__).resolve().parents[3]


def test_a_range_admits_from_its_lowest_up_to_not_including_its_end() -> None:
    fastapi = Releases("fastapi", "0.165.0", "0.166")
    assert fastapi.admits("0.165.0") and fastapi.admits("0.165.3") and fastapi.admits("0.165.0rc1")
    assert not fastapi.admits("0.164.9")
    assert not fastapi.admits("0.166.0") and not fastapi.admits("0.166")
    assert not fastapi.admits("1.0.0")
    assert str(fastapi) == "fastapi >=0.165.0,<0.166"


def test_the_installed_releases_are_the_tested_ones() -> None:
    """What this checkout installs (constraints.txt) is what the adapters were tested against:
    renewing the constraints past a range fails here until the adapter is tested again."""
    for adapter, ranges in TESTED.items():
        require(adapter)
        assert all(r.admits(installed(r.package) or "") for r in ranges), adapter
    assert set(TESTED) == {"app.http.framework", "app.server.uvicorn_internals"}


def _with_release(tmp_path: Path, package: str, release: str) -> dict[str, str]:
    """An environment in which `package` is installed at `release` as far as its metadata
    says (what `pip` and `importlib.metadata` read), its code unchanged."""
    info = tmp_path / "site" / f"{package}-{release}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: {release}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIPHERD_")}
    env["PYTHONPATH"] = str(info.parent)
    env["CIPHERD_DATA_DIR"] = str(tmp_path / "data")
    return env


def _python(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("package", "release", "adapter", "tested"),
    [
        ("fastapi", "0.166.0", "app.http.framework", "fastapi >=0.165.0,<0.166"),
        ("starlette", "1.9.0", "app.http.framework", "starlette >=1.10.0,<1.11"),
        ("uvicorn", "0.55.0", "app.server.uvicorn_internals", "uvicorn >=0.54.0,<0.55"),
    ],
)
def test_serve_refuses_to_start_on_another_release(
    tmp_path: Path, package: str, release: str, adapter: str, tested: str
) -> None:
    env = _with_release(tmp_path, package, release)
    serve = _python(env, "-m", "app", "serve", "--port", "0")
    assert serve.returncode == 1, serve.stderr
    message = serve.stderr.strip().splitlines()[-1]
    assert f"{adapter} was written and tested against" in message
    assert tested in message
    assert f"installed: {package} {release}." in message
    assert not (tmp_path / "data").exists()  # refused before anything was written


def test_the_app_refuses_to_be_built_on_another_release(tmp_path: Path) -> None:
    """`create_app` (what every worker runs, and the tests' clients) checks as well."""
    env = _with_release(tmp_path, "starlette", "1.11.0")
    build = _python(env, "-c", "from app.main import create_app; create_app()")
    assert build.returncode == 1
    assert f"{UnsupportedRelease.__name__}: app.http.framework was written" in build.stderr
    assert "installed: starlette 1.11.0." in build.stderr
