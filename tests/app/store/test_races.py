"""Requests at once from several processes on one database, as replicas and workers send them:
each verb that reads and then writes holds what it promised, on SQLite and on PostgreSQL, where
a row lock on no row locks nothing and a read outside the write is stale by the time it writes.
The stores are this folder's (`conftest.py`), each process another opened on the same database.
"""

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

from app.ops import admin_token, backup, byok, keys, vault_tokens
from app.ops.approle import AppRoles, NewSecretId
from app.ops.errors import Problem
from app.ops.keyring import Keyring
from app.ops.keys import KeyCreate
from app.ops.token_values import hash_token
from app.ops.transit import backup as transit_backup
from app.ops.transit import keys as transit_keys
from app.ops.transit import mounts as transit_mounts
from app.ops.transit.keys import TransitKeyCreate
from app.ops.vault_tokens import VaultTokenRole
from app.settings import Settings
from app.store import KeyStore, MountExistsError, MountNotFoundError
from core import ecies
from tests.app.store.stores import at_once

T = TypeVar("T")
PROCESSES = 8


def together(store: KeyStore, url: str, act: Callable[[KeyStore], T]) -> list[T]:
    """`act` on PROCESSES stores of the database, released at the same moment."""
    barrier = threading.Barrier(PROCESSES)

    def released(on: KeyStore) -> T:
        barrier.wait()
        return act(on)

    return at_once(store, url, released, processes=PROCESSES)


def test_a_transit_key_created_at_once_is_one_key(
    store: KeyStore, store_url: str, settings: Settings
) -> None:
    """Transit's create is idempotent: creations of one name at once (or first encryptions,
    which create it) each answer the key, where all but one were a 400 "already exists"."""
    for attempt in range(3):
        name = f"made-at-once-{attempt}"
        made = together(
            store,
            store_url,
            lambda on: transit_keys.create(on, name, TransitKeyCreate(), settings).name,  # noqa: B023
        )
        assert made == [name] * PROCESSES
        assert store.keys.get(name).latest_version == 1


def test_an_approle_role_written_at_once_keeps_every_field(store: KeyStore, store_url: str) -> None:
    """First writes of one role at once make it once (all but one were a 400 "role_id already
    in use"), and writes of different fields at once keep each (each replaced the whole role
    as it had read it, so most were lost)."""
    fields = ["token_ttl", "token_max_ttl", "secret_id_ttl", "token_num_uses", "token_period"]
    fields += ["secret_id_num_uses", "token_explicit_max_ttl", "token_policies"]
    values = {field: (["a", "b"] if field == "token_policies" else 60) for field in fields}
    for attempt in range(3):
        name = f"role-{attempt}"
        writes = iter(range(PROCESSES))

        def write(on: KeyStore, name: str = name, writes: Iterator[int] = writes) -> None:
            field = fields[next(writes)]
            AppRoles(on, "approle-accessor").write(name, {field: values[field]})

        together(store, store_url, write)
        role = AppRoles(store, "approle-accessor").role(name)
        assert {field: role.settings[field] for field in fields} == values


def test_a_secret_id_made_while_its_role_is_deleted_goes_with_it(
    store: KeyStore, store_url: str
) -> None:
    """A role deleted while secret ids are made for it: each is refused or deleted with the
    role, none left to a role of the same name made again."""
    roles = AppRoles(store, "approle-accessor")
    for attempt in range(3):
        name = f"going-{attempt}"
        roles.write(name, {})
        calls = iter(range(PROCESSES))

        def act(on: KeyStore, name: str = name, calls: Iterator[int] = calls) -> None:
            mine = AppRoles(on, "approle-accessor")
            if next(calls) == 0:
                mine.delete(name)
            else:
                with contextlib.suppress(Problem):  # the role is gone: refused
                    mine.new_secret_id(name, NewSecretId())

        together(store, store_url, act)
        roles.write(name, {})
        assert list(roles.accessors(name)) == []


def test_a_key_made_while_its_mount_is_disabled_is_not_left_active(
    store: KeyStore, store_url: str, settings: Settings
) -> None:
    """Keys made in a Transit mount while it is disabled: each is made first and scheduled
    for deletion with the mount's others, or refused (404 mount-not-found); none stays active
    (4 to 11 of them did, never to be deleted)."""
    for attempt in range(3):
        mounts = transit_mounts.Mounts(store, 0)
        prefix = mounts.enable(f"going-{attempt}", "transit", "").key_prefix
        calls = iter(range(PROCESSES))

        def act(
            on: KeyStore,
            path: str = f"going-{attempt}",
            prefix: str = prefix,
            calls: Iterator[int] = calls,
        ) -> None:
            call = next(calls)
            if call == 0:
                transit_mounts.disable(
                    transit_mounts.Mounts(on, 0), Keyring(on, 0, 0), path, settings
                )
                return
            with contextlib.suppress(MountNotFoundError):
                transit_keys.create(on, f"{prefix}k{call}", TransitKeyCreate(), settings)

        together(store, store_url, act)
        held = store.keys.list(patterns=[f"{prefix}*"])
        assert all(info.state == "pending-deletion" for info in held), held


def test_imports_of_one_new_name_at_once_make_a_key_and_its_versions(
    store: KeyStore, store_url: str
) -> None:
    """BYOK imports to a name no key has, at once: one makes the key and the others its next
    versions, as one after another would (all but one were a 409 key-exists)."""
    wrapping = backup.wrapping_public_key(store)
    for attempt in range(3):
        name = f"imported-{attempt}"
        wrapped = [ecies.encrypt(wrapping, os.urandom(48)) for _ in range(PROCESSES)]
        calls = iter(range(PROCESSES))

        def act(
            on: KeyStore,
            name: str = name,
            calls: Iterator[int] = calls,
            wrapped: list[bytes] = wrapped,
        ) -> bool:
            return byok.import_material(on, None, name, "aez", wrapped[next(calls)])[1]

        made = together(store, store_url, act)
        assert sorted(made) == [False] * (PROCESSES - 1) + [True]
        assert store.keys.get(name).latest_version == PROCESSES


def test_a_backup_racing_a_trim_holds_the_key_as_it_stood(
    store: KeyStore, store_url: str, settings: Settings
) -> None:
    """Native and Transit backups while the key's old versions are trimmed: each holds the
    versions before the trim or after it, never a 404 for a version trimmed meanwhile (14 of
    24 were)."""
    recipient = backup.wrapping_public_key(store)
    for attempt in range(3):
        name = f"backed-up-{attempt}"
        creation = KeyCreate(name=name, type="aes256-gcm", exportable=True, allow_backup=True)
        keys.create(store, creation, settings)
        for _ in range(3):
            keys.rotate(store, None, name)
        calls = iter(range(PROCESSES))

        def act(on: KeyStore, name: str = name, calls: Iterator[int] = calls) -> None:
            call = next(calls)
            if call == 0:
                on.keys.set_policy(name, lambda key: {"min_decryption_version": 4})
                on.keys.trim(name)
            elif call % 2:
                backup.backup(on, name, recipient)
            else:
                transit_backup.make(on, name, name)

        together(store, store_url, act)
        assert [v.version for v in store.keys.get(name).versions] == [4]


def test_a_token_role_written_at_once_keeps_every_field(store: KeyStore, store_url: str) -> None:
    """A token role's writes each change the fields they give, on the role as stored: writes of
    different fields at once keep them all (7 of 8 were lost)."""
    given = [
        {"allowed_policies": ["a"]},
        {"disallowed_policies": ["b"]},
        {"orphan": True},
        {"renewable": False},
        {"path_suffix": "s"},
        {"token_period": 60},
        {"token_explicit_max_ttl": 120},
        {"token_no_default_policy": True},
    ]
    writes = iter(given)

    def write(on: KeyStore) -> None:
        vault_tokens.write_role(on, "r", VaultTokenRole(**next(writes)))

    together(store, store_url, write)
    role = vault_tokens.read_role(store, "r")
    assert all(role[field] == value for fields in given for field, value in fields.items())


def test_admin_token_rotations_at_once_hand_out_one_token(store: KeyStore, store_url: str) -> None:
    """Rotations of the admin token at once, each by a caller holding the same one: one wins
    and the others are 409s (each handed out a token, and all but the last never worked)."""

    def rotate(on: KeyStore) -> str | None:
        try:
            return admin_token.rotate(on, None)
        except Problem as refused:
            assert refused.status == 409
            return None

    handed_out = [token for token in together(store, store_url, rotate) if token is not None]
    assert len(handed_out) == 1
    assert store.auth_state.read().admin_token_hash == hash_token(handed_out[0])


def test_mounts_of_one_key_prefix_enabled_at_once_are_both_made(
    store: KeyStore, store_url: str
) -> None:
    """`a/x` and `a-x` both ask for the key prefix `a-x.`: enabled at once, each is made, one
    with the next prefix (one was a 400 "path is already in use" for a free path)."""
    for attempt in range(3):
        paths = iter([f"a{attempt}/x", f"a{attempt}-x"] * (PROCESSES // 2))

        def enable(on: KeyStore, paths: Iterator[str] = paths) -> str | None:
            path = next(paths)
            try:
                return transit_mounts.Mounts(on, 0).enable(path, "transit", "").path
            except MountExistsError:  # the same path, enabled by another: one of them stands
                return None

        made = {path for path in together(store, store_url, enable) if path is not None}
        assert made == {f"a{attempt}/x", f"a{attempt}-x"}
        prefixes = [m.key_prefix for m in store.secret_mounts.all() if m.path in made]
        assert len(set(prefixes)) == 2
