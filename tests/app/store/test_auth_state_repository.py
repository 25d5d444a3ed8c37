"""The auth state repository on SQLite and PostgreSQL: the generation read, moved, and read at
once (on the event loop) where the store allows it: SQLite's file, never waiting for a lock."""

import threading
from pathlib import Path

from app.store import KeyStore, open_store
from tests.app.store.stores import root


def test_the_generation_moves_and_a_read_at_once_sees_it_on_sqlite_alone(
    store: KeyStore, store_url: str
) -> None:
    before = store.auth_state.read()
    store.auth_state.advance()
    after = store.auth_state.read()
    assert after.generation == before.generation + 1
    at_once = store.auth_state.read_at_once()
    if store_url.startswith("sqlite"):
        assert at_once == after
    else:
        assert at_once is None  # a read across a network is a thread's


def test_a_read_at_once_of_a_store_that_cannot_answer_is_none(tmp_path: Path) -> None:
    """The event loop then leaves the read to a thread, which reports the store's failure."""
    store = open_store(f"sqlite:///{tmp_path / 'store.sqlite3'}", root())
    assert store.auth_state.read_at_once() is not None
    store.close()
    assert store.auth_state.read_at_once() is None


def test_a_sqlite_file_that_does_not_open_is_no_read_at_once(tmp_path: Path) -> None:
    """A thread's first read at once opens its connection; a file that cannot be opened then
    (here a directory in its place) is None, not an error."""
    path = tmp_path / "store.sqlite3"
    store = open_store(f"sqlite:///{path}", root())
    try:
        path.rename(tmp_path / "moved.sqlite3")
        path.mkdir()
        answers: list[object] = []
        reader = threading.Thread(target=lambda: answers.append(store.auth_state.read_at_once()))
        reader.start()
        reader.join()
        assert answers == [None]
    finally:
        store.close()
