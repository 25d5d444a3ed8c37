"""The root key file's mode: a file its group or others may read or write is refused (what they
read opens every key; what they write would be the root of a new store), unless
CIPHERD_ROOT_KEY_FILE_IGNORE_MODE says otherwise. The generated root key's rotation: a
`cipherd root rotate` killed right after its commit (which left a data directory whose root key
no longer opened its store) or right before it is settled by the next start."""

import base64
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from app.server.bootstrap import BootstrapError, load_root_key
from app.settings import Settings

KEY = os.urandom(32)


def key_file(tmp_path: Path, mode: int) -> Path:
    path = tmp_path / "root-key"
    path.write_text(base64.b64encode(KEY).decode() + "\n")
    path.chmod(mode)
    return path


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_a_file_private_to_its_owner_is_read(tmp_path: Path, mode: int) -> None:
    settings = Settings(data_dir=tmp_path, root_key_file=key_file(tmp_path, mode))
    assert load_root_key(settings) == KEY


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620, 0o602, 0o660, 0o444, 0o610])
def test_a_file_open_to_group_or_others_is_refused(tmp_path: Path, mode: int) -> None:
    path = key_file(tmp_path, mode)
    with pytest.raises(BootstrapError) as refused:
        load_root_key(Settings(data_dir=tmp_path, root_key_file=path))
    message = str(refused.value)
    assert str(path) in message and f"{mode:04o}" in message
    assert "CIPHERD_ROOT_KEY_FILE_IGNORE_MODE" in message
    assert base64.b64encode(KEY).decode() not in message


def test_the_override_reads_it_anyway(tmp_path: Path) -> None:
    path = key_file(tmp_path, 0o644)
    settings = Settings(data_dir=tmp_path, root_key_file=path, root_key_file_ignore_mode=True)
    assert load_root_key(settings) == KEY


def test_a_symlink_is_judged_by_the_file_it_names(tmp_path: Path) -> None:
    """As a Kubernetes secret volume mounts it: a link to a file whose mode is the volume's."""
    target = key_file(tmp_path, 0o644)
    link = tmp_path / "mounted"
    link.symlink_to(target)
    with pytest.raises(BootstrapError):
        load_root_key(Settings(data_dir=tmp_path, root_key_file=link))
    target.chmod(0o400)
    assert load_root_key(Settings(data_dir=tmp_path, root_key_file=link)) == KEY


# A `cipherd root rotate` that dies by SIGKILL right after its commit, or right before it.
CRASHING_ROTATION = """
import os, signal, sys
from app.ops import root
from app.cli import main

rotate = root.rotate_root

def after(store, new_root):
    rotate(store, new_root)
    os.kill(os.getpid(), signal.SIGKILL)

def before(store, new_root):
    os.kill(os.getpid(), signal.SIGKILL)

root.rotate_root = after if sys.argv[1] == "after" else before
main(["root", "rotate", "--new-root-key-file", sys.argv[2]])
"""


def cipherd(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CIPHERD_")}
    return subprocess.run(
        [sys.executable, *args],
        env={**environment, "CIPHERD_DATA_DIR": str(data_dir), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def rotating(tmp_path: Path) -> tuple[Path, str, Path]:
    """A store with a key, its generated root key, and a new root key in a file."""
    data_dir = tmp_path / "data"
    assert cipherd(data_dir, "-m", "app", "local", "init").returncode == 0
    made = cipherd(data_dir, "-m", "app", "local", "keys", "create", "orders", "aez")
    assert made.returncode == 0, made.stderr
    new_root = key_file(tmp_path, 0o600)
    return data_dir, (data_dir / "root-key").read_text(), new_root


@pytest.mark.parametrize("crash", ["after", "before"])
def test_a_rotation_killed_at_its_commit_is_settled_at_the_next_start(
    rotating: tuple[Path, str, Path], crash: str
) -> None:
    """Killed after the commit, the store is under the new key, which waits on disk beside the
    old one and replaces it; killed before, the staged key goes."""
    data_dir, old_root, new_root = rotating
    crashed = cipherd(data_dir, "-c", CRASHING_ROTATION, crash, str(new_root))
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert (data_dir / "root-key").read_text() == old_root
    assert (data_dir / "root-key.staged").read_text() == new_root.read_text()

    listed = cipherd(data_dir, "-m", "app", "local", "keys", "list")
    assert listed.returncode == 0, listed.stderr
    assert [key["name"] for key in json.loads(listed.stdout)] == ["orders"]
    assert not (data_dir / "root-key.staged").exists()
    settled, other = (new_root.read_text(), old_root) if crash == "after" else (old_root, "")
    assert (data_dir / "root-key").read_text() == settled
    if other:
        refused = cipherd(data_dir, "-m", "app", "local", "keys", "list", CIPHERD_ROOT_KEY=other)
        assert "root key does not open this key store" in refused.stderr


def test_a_staged_key_that_opens_nothing_changes_nothing(rotating: tuple[Path, str, Path]) -> None:
    data_dir, _, new_root = rotating
    stray = data_dir / "root-key.staged"
    stray.write_text(new_root.read_text())
    stray.chmod(0o600)
    (data_dir / "root-key").write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    refused = cipherd(data_dir, "-m", "app", "local", "keys", "list")
    assert refused.returncode == 1
    assert "root key does not open this key store" in refused.stderr
    assert stray.read_text() == new_root.read_text()  # both kept for the operator
