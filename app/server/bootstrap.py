"""First-start secrets of the embedded default: the root key and the admin token; and the
generated root key file's rotation.

When neither the environment nor a file provides them, the first process to start generates them
into the data directory with mode 0600. Creation uses O_EXCL, so several workers starting at once
agree on one value; the file and its directory entry are on disk before the store they open is
made.

A rotation of the generated root key writes the new key to `root-key.staged` (on disk, under a
lock) before the store's rotation commits, and puts it in place of `root-key` after. A process
that opens the store (`open_configured_store`) and finds a staged key no rotation holds settles
it: the store opens under the current key (the rotation never committed: the staged key goes) or
under the staged one (it committed: the staged key takes the place of the current one).
"""

import base64
import binascii
import fcntl
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from app.settings import Settings
from app.store import (
    KeyStore,
    KeyWrapper,
    RootKey,
    RootKeyLoader,
    RootKeyMismatchError,
    open_store,
)
from app.store.journal import sync_directory

ROOT_KEY_BYTES = 32
# What a client can send after "Bearer ": printable ASCII without spaces.
_BEARER_TOKEN = re.compile(r"[\x21-\x7e]+")


class BootstrapError(RuntimeError):
    """The configured root key or admin token is unusable."""


def secure_data_dir(settings: Settings) -> None:
    """Make the data directory and what is already in it readable by its user only: a
    directory made earlier with mode 0755, or files left 0644 by an older release, keep no
    secret from the other users of the machine. What the process creates from then on is
    restricted by its umask (`app.cli` sets 077 for the commands that touch the store).

    Entries of other users are left as they are (chmod would fail on them anyway)."""
    data_dir = settings.data_dir
    entries = [data_dir, *data_dir.rglob("*")] if data_dir.is_dir() else []
    sqlite = settings.sqlite_path
    if sqlite is not None:  # perhaps outside the data directory
        entries += [sqlite.with_name(sqlite.name + suffix) for suffix in ("", "-wal", "-shm")]
    for entry in entries:
        _restrict(entry)


def _restrict(path: Path) -> None:
    """chmod 0700 (a directory) or 0600 (anything else) if this user owns `path`."""
    try:
        info = path.lstat()
        if info.st_uid != os.getuid() or stat.S_ISLNK(info.st_mode):
            return
        path.chmod(0o700 if stat.S_ISDIR(info.st_mode) else 0o600)
    except (FileNotFoundError, NotADirectoryError):  # nothing there: nothing to restrict
        return
    except OSError as exc:
        raise BootstrapError(f"cannot restrict {path} to its owner: {exc.strerror}") from exc


def _read_or_create(path: Path, make_value: Callable[[], str]) -> str:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return _read_when_written(path)
        value = make_value()
        with os.fdopen(fd, "w") as out:
            out.write(value + "\n")
            out.flush()
            os.fsync(out.fileno())
        sync_directory(path.parent)
        return value
    except OSError as exc:
        raise BootstrapError(f"cannot create or read {path}: {exc.strerror}") from exc


def _read_when_written(path: Path) -> str:
    """Read a file another process may have created a moment ago and not yet filled."""
    for _ in range(200):
        text = path.read_text().strip()
        if text:
            return text
        os.sched_yield()
    raise BootstrapError(f"{path} is empty")


def _decode_root_key(text: str, origin: str) -> bytes:
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BootstrapError(f"the root key from {origin} is not valid base64") from exc
    if len(key) != ROOT_KEY_BYTES:
        raise BootstrapError(
            f"the root key from {origin} has {len(key)} bytes where {ROOT_KEY_BYTES} are needed"
        )
    return key


def read_root_key_file(path: Path, settings: Settings) -> bytes:
    """A root key from a file holding its base64, as `CIPHERD_ROOT_KEY_FILE` names one: refused
    when its group or others may read or write it (what they read decrypts every key; what
    they write becomes the root of a new store), unless `CIPHERD_ROOT_KEY_FILE_IGNORE_MODE`."""
    try:
        with path.open() as file:
            mode = os.fstat(file.fileno()).st_mode
            text = file.read()
    except OSError as exc:
        raise BootstrapError(f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError:  # its message would show a byte of the key
        raise BootstrapError(
            f"the root key file {path} is not text: it holds the key's base64"
        ) from None
    if mode & 0o077 and not settings.root_key_file_ignore_mode:
        raise BootstrapError(
            f"the root key file {path} is open to its group or others (mode "
            f"{stat.S_IMODE(mode):04o}): make it readable by its owner only (chmod 600), or set "
            "CIPHERD_ROOT_KEY_FILE_IGNORE_MODE=true"
        )
    return _decode_root_key(text, str(path))


def uses_generated_root_key(settings: Settings) -> bool:
    """Whether the root key is the embedded default's, generated into the data directory."""
    return not (settings.root_key or settings.root_key_file or settings.root_key_pkcs11_module)


def _staged(settings: Settings) -> Path:
    return settings.generated_root_key_file.with_name("root-key.staged")


def _promote(settings: Settings) -> None:
    """The staged key in place of the current one, on disk."""
    path = settings.generated_root_key_file
    os.replace(_staged(settings), path)
    sync_directory(path.parent)


@contextmanager
def root_rotation(settings: Settings, key: bytes) -> Iterator[None]:
    """Around the commit of a rotation of the generated root key to `key`: the key staged on
    disk before (under a lock, which keeps `open_configured_store` off it), in place of the
    current one after. If the block raises, the staged key stays for the next opening of the
    store to settle: whether the commit happened may be unknown."""
    staged = _staged(settings)
    try:
        out = os.fdopen(os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w")
    except OSError as exc:
        raise BootstrapError(f"cannot stage the new root key in {staged}: {exc.strerror}") from exc
    with out:
        try:
            fcntl.flock(out, fcntl.LOCK_EX)
            out.write(base64.b64encode(key).decode() + "\n")
            out.flush()
            os.fsync(out.fileno())
            sync_directory(staged.parent)
        except OSError as exc:
            raise BootstrapError(
                f"cannot stage the new root key in {staged}: {exc.strerror}"
            ) from exc
        yield
        try:
            _promote(settings)
        except OSError as exc:
            raise BootstrapError(
                f"the root key was rotated, but {staged} could not replace "
                f"{settings.generated_root_key_file} ({exc.strerror}): the next start does it"
            ) from exc


def open_configured_store(settings: Settings) -> KeyStore:
    """The configured store under its root key, once a rotation of the generated root key that
    stopped between staging and promoting its key (a crash) is settled."""
    url, load_root = settings.resolved_database_url, partial(root_key, settings)
    opener = partial(
        open_store,
        connect_timeout=settings.database_connect_timeout_seconds,
        max_clock_skew=settings.max_clock_skew_seconds,
    )
    if not uses_generated_root_key(settings):
        return opener(url, load_root)
    try:
        held = _staged(settings).open()
    except FileNotFoundError:  # no rotation stopped halfway (nor one settled meanwhile)
        return opener(url, load_root)
    with held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # a rotation is under way: it promotes its key itself
            return opener(url, load_root)
        return _settled(settings, opener, url, load_root)


def _settled(
    settings: Settings,
    opener: Callable[[str, RootKeyLoader], KeyStore],
    url: str,
    load_root: Callable[[], RootKey],
) -> KeyStore:
    """The store, opened under whichever of the current and the staged key opens it; the
    other one goes."""
    staged = _staged(settings)
    try:
        store = opener(url, load_root)
    except RootKeyMismatchError:
        new_key = KeyWrapper(read_root_key_file(staged, settings))
        opener(url, lambda: new_key).close()  # raises as well if it does not open either
        _promote(settings)
        return opener(url, load_root)
    staged.unlink()
    sync_directory(staged.parent)
    return store


def load_root_key(settings: Settings) -> bytes:
    """The 32-byte key that wraps the keyring."""
    if settings.root_key:
        return _decode_root_key(settings.root_key, "CIPHERD_ROOT_KEY")
    if settings.root_key_file:
        return read_root_key_file(settings.root_key_file, settings)
    path = settings.generated_root_key_file
    text = _read_or_create(
        path, lambda: base64.b64encode(secrets.token_bytes(ROOT_KEY_BYTES)).decode()
    )
    return _decode_root_key(text, str(path))


def root_key(settings: Settings, pkcs11_key: str | None = None) -> RootKey:
    """The root key the settings name, as the store uses it: read anew on every call, so that a
    process takes up a rotated root key from the same source. `pkcs11_key` names another key
    on the configured token (the new root of a rotation)."""
    if settings.root_key_pkcs11_module is None:
        if pkcs11_key is not None:
            raise BootstrapError("a PKCS#11 key needs the CIPHERD_ROOT_KEY_PKCS11_* settings")
        given = [
            name
            for name, value in (
                ("TOKEN", settings.root_key_pkcs11_token),
                ("KEY", settings.root_key_pkcs11_key),
                ("PIN_FILE", settings.root_key_pkcs11_pin_file),
            )
            if value
        ]
        if given:  # else a token meant to hold the root key would quietly hold none
            raise BootstrapError(
                "CIPHERD_ROOT_KEY_PKCS11_MODULE is needed with CIPHERD_ROOT_KEY_PKCS11_"
                + ", CIPHERD_ROOT_KEY_PKCS11_".join(given)
            )
        return KeyWrapper(load_root_key(settings))
    from app.server.hsm import Pkcs11RootKey, Pkcs11Settings

    if settings.root_key or settings.root_key_file:
        raise BootstrapError(
            "CIPHERD_ROOT_KEY_PKCS11_MODULE and CIPHERD_ROOT_KEY or CIPHERD_ROOT_KEY_FILE name "
            "two root keys: set one"
        )
    token, key, pin_file = (
        settings.root_key_pkcs11_token,
        pkcs11_key or settings.root_key_pkcs11_key,
        settings.root_key_pkcs11_pin_file,
    )
    for value, name in ((token, "TOKEN"), (key, "KEY"), (pin_file, "PIN_FILE")):
        if not value:
            raise BootstrapError(
                f"CIPHERD_ROOT_KEY_PKCS11_{name} is needed with CIPHERD_ROOT_KEY_PKCS11_MODULE"
            )
    assert token and key and pin_file
    return Pkcs11RootKey(Pkcs11Settings(settings.root_key_pkcs11_module, token, key, pin_file))


def load_admin_token(settings: Settings) -> str | None:
    """The admin bearer token: from the environment, or generated once into the data directory;
    None when `CIPHERD_ADMIN_TOKEN_DISABLED` refuses it."""
    if settings.admin_token_disabled:
        return None
    if settings.admin_token:
        if len(settings.admin_token) < 16:
            raise BootstrapError("CIPHERD_ADMIN_TOKEN must have at least 16 characters")
        if not _BEARER_TOKEN.fullmatch(settings.admin_token):
            # A space, a control character or non-ASCII (a trailing newline from a secret
            # file, say) makes a token no client can present: every admin call would fail.
            raise BootstrapError(
                "CIPHERD_ADMIN_TOKEN may hold only printable ASCII without spaces: "
                "check for a trailing newline or space"
            )
        return settings.admin_token
    return _read_or_create(settings.admin_token_file, lambda: "cda_" + secrets.token_urlsafe(32))
