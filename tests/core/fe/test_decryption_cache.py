"""Decryption from bytes through a `DecryptionCache`, on every scheme and both curves: what it
asks the cache for, what it does when the cache gives nothing, and the work estimates."""

from __future__ import annotations

import random
from typing import Any

import pytest

from core.fe.group import DlogTable
from core.fe.schemes import SCHEMES, Scheme, TableBase


class Keeping:
    """A cache that builds what it is asked for once and keeps it, recording each request;
    with `give=False` it gives nothing, as the service's event loop view of a cold cache."""

    def __init__(self, give: bool = True) -> None:
        self.give = give
        self.tables: dict[tuple[bytes, int, int], DlogTable] = {}
        self.keys: dict[bytes, Any] = {}
        self.asked: list[str] = []

    def table(self, base: TableBase, lo: int, hi: int) -> DlogTable | None:
        self.asked.append("table")
        if not self.give:
            return None
        if (base.id, lo, hi) not in self.tables:
            self.tables[base.id, lo, hi] = DlogTable(base.element(), lo, hi)
        return self.tables[base.id, lo, hi]

    def prepared_key(self, scheme: Scheme, data: bytes) -> Any:
        self.asked.append("key")
        if not self.give:
            return None
        if data not in self.keys:
            self.keys[data] = scheme.prepare(scheme.functional_key(data))
        return self.keys[data]


def _made(scheme: Scheme, rng: random.Random) -> tuple[bytes, bytes, bytes | None, int]:
    """A functional key, a ciphertext and the key version's public part, as bytes, and the
    value the pair decrypts to."""
    secret, public = scheme.setup_bytes(2)
    master = scheme.master_key(secret)
    if scheme.quadratic:
        key = scheme.keygen(master, [[1, 2], [3, 4]], rng)
        ct = scheme.encrypt(scheme.public_key(public or b""), [1, -1], [2, 3], rng)
        value = 1 * (1 * 2 + 2 * 3) - 1 * (3 * 2 + 4 * 3)
    else:
        key = scheme.keygen(master, [3, -4], rng)
        ct = scheme.encrypt(master, [5, 6], rng=rng)
        value = 3 * 5 - 4 * 6
    return key.to_bytes(), ct.to_bytes(), public, value


def test_a_decryption_from_bytes_reuses_what_the_cache_keeps(
    any_scheme: Scheme, rng: random.Random
) -> None:
    key, ct, public, value = _made(any_scheme, rng)
    cache = Keeping()
    for bounds, want in (((-100, 100), value), ((value + 1, value + 9), None)):
        for _ in range(2):
            decrypt = any_scheme.decryptor_for(cache, key, *bounds, public)
            assert decrypt is not None
            assert decrypt(any_scheme.ciphertext(ct)) == want
    assert len(cache.keys) == 1
    # A table per range for the table schemes; bjk and kim search per pair and ask for none.
    assert len(cache.tables) == (0 if any_scheme.searches_per_pair else 2)
    assert cache.asked.count("table") == (0 if any_scheme.searches_per_pair else 4)


def test_nothing_from_the_cache_means_no_decryptor(any_scheme: Scheme, rng: random.Random) -> None:
    """A cache that gives nothing stops the decryption before any work: the key is asked first,
    and without it nothing else is."""
    key, _, public, _ = _made(any_scheme, rng)
    empty = Keeping(give=False)
    assert any_scheme.decryptor_for(empty, key, -100, 100, public) is None
    assert empty.asked == ["key"]


def test_without_a_table_the_table_schemes_do_not_decrypt(
    any_scheme: Scheme, rng: random.Random
) -> None:
    """A key at hand but no table: None for the table schemes, a per-pair search for bjk and
    kim (which need none)."""
    key, ct, public, value = _made(any_scheme, rng)

    class KeyOnly(Keeping):
        def table(self, base: TableBase, lo: int, hi: int) -> DlogTable | None:
            return None

    decrypt = any_scheme.decryptor_for(KeyOnly(), key, -100, 100, public)
    if any_scheme.searches_per_pair:
        assert decrypt is not None and decrypt(any_scheme.ciphertext(ct)) == value
    else:
        assert decrypt is None


def test_tao_needs_its_published_base(rng: random.Random) -> None:
    tao = SCHEMES["ipfe-tao"]
    key, _, public, _ = _made(tao, rng)
    assert public is not None
    with pytest.raises(ValueError, match="published base"):
        tao.decryptor_for(Keeping(), key, -100, 100)


def test_table_bases_are_named_by_curve_and_by_tao_base(rng: random.Random) -> None:
    """Tables of the gT generator are shared by all such schemes of a curve (one id); tao's
    are per published base."""
    opt, lin, tao = (SCHEMES[t] for t in ("ipfe-opt", "ipfe-lin", "ipfe-tao"))
    ids = set()
    for scheme in (opt, lin, opt.on("bn254"), tao, tao):
        key, _, public, _ = _made(scheme, rng)
        cache = Keeping()
        scheme.decryptor_for(cache, key, 0, 1, public)
        ids |= {table_id for table_id, _, _ in cache.tables}
    assert len(ids) == 4  # gT on each curve, and two tao bases


def test_work_estimates() -> None:
    """About one unit per pairing: n + 2 for a decryption, n² / 64 more for a quadratic one,
    and for a search per pair about 2·√(width) / 512 more; n + 1 to make a key or ciphertext."""
    opt, sgp, bjk = (SCHEMES[t] for t in ("ipfe-opt", "qfe-sgp", "ipfe-bjk"))
    assert opt.decrypt_work(10, 0, 2**32) == 12
    assert sgp.decrypt_work(16, 0, 100) == 16 + 2 + 4
    assert bjk.decrypt_work(10, 0, 100) == 13
    assert bjk.decrypt_work(10, 0, 2**32) == 12 + 256 + 1
    assert opt.make_work(10) == bjk.make_work(10) == 11
